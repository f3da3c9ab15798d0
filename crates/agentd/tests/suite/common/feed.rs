//! The events feed (`agentd.events/SubscribeToEvents`) as a client reads
//! it: every frame is validated against the published schema.

use super::annotations::validator;
use super::{Binding, Daemon, Events};
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::sync::OnceLock;

pub const EVENTS: &str = "https://agentd.dev/a2a/ext/events";
pub const METHOD: &str = "agentd.events/SubscribeToEvents";

fn frames_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| validator("events"))
}

/// A feed on `d`, activating `extensions` (comma-separated).
pub async fn feed_with(d: &Daemon, params: Value, extensions: &str) -> (HeaderMap, Feed) {
    let (h, ev) = d.stream_with(Binding::JsonRpc, METHOD, params, &[("A2A-Extensions", extensions)]).await;
    assert!(ev.sse.is_sse(), "the feed is an SSE stream");
    (h, Feed(ev))
}

pub async fn feed(d: &Daemon, params: Value) -> Feed {
    feed_with(d, params, EVENTS).await.1
}

pub struct Feed(pub Events);

impl Feed {
    /// The next frame's `result`, validated against the published schema.
    pub async fn frame(&mut self) -> Option<Value> {
        let v = self.0.next().await?;
        let errors: Vec<String> = frames_validator().iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "a feed frame violates the published schema: {errors:?}\n{v}");
        Some(v)
    }
    pub async fn hello(&mut self) -> Value {
        let f = self.frame().await.expect("hello");
        f.get("hello").cloned().unwrap_or_else(|| panic!("the first frame is hello: {f}"))
    }
    pub async fn event(&mut self) -> Value {
        let f = self.frame().await.expect("an event");
        f.get("event").cloned().unwrap_or_else(|| panic!("expected an event: {f}"))
    }
    /// Events until one satisfies `last` (included).
    pub async fn until(&mut self, last: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let e = self.event().await;
            let done = last(&e);
            out.push(e);
            if done {
                return out;
            }
        }
    }
}

pub fn seq(e: &Value) -> u64 {
    e["seq"].as_u64().expect("seq")
}
