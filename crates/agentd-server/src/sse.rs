//! Server-sent events for the two streaming methods. Each event is one JSON
//! document on one `data:` line; keep-alive comments flow while a task
//! waits. JSON-RPC wraps each payload in a response envelope with the
//! request id; REST sends the bare StreamResponse. An error after the
//! stream opened is an `event: error` frame, then the stream closes.
//!
//! The events feed frames `hello`, `event` and `goodbye` the same way; at
//! shutdown it passes on what was already committed, then says goodbye.

use crate::admission::StreamSlot;
use crate::dispatch::EventSource;
use crate::state::AppState;
use agentd_core::{EventFeed, FeedItem};
use agentd_proto::ext::events::{Frame, Goodbye, GoodbyeReason};
use agentd_proto::{A2aError, StreamResponse, jsonrpc};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream::{self, Stream};
use serde_json::Value;
use std::convert::Infallible;

/// How the payloads are framed.
#[derive(Clone)]
pub enum Framing {
    JsonRpc { id: Value },
    Rest,
}

impl Framing {
    fn data(&self, ev: &StreamResponse) -> String {
        match self {
            Framing::JsonRpc { id } => {
                serde_json::to_string(&jsonrpc::Success::new(id, ev)).unwrap_or_default()
            }
            Framing::Rest => serde_json::to_string(ev).unwrap_or_default(),
        }
    }
    fn frame(&self, f: &Frame) -> String {
        match self {
            Framing::JsonRpc { id } => jsonrpc::success(id, f).to_string(),
            Framing::Rest => serde_json::to_string(f).unwrap_or_default(),
        }
    }
    fn error(&self, e: &A2aError) -> String {
        match self {
            Framing::JsonRpc { id } => jsonrpc::failure(id, e).to_string(),
            Framing::Rest => e.to_rest().to_string(),
        }
    }
}

enum Phase {
    Running(EventSource),
    /// The feed after its `hello`.
    Feed(Box<EventFeed>),
    /// Shutting down: what is already committed (until the instant), then
    /// `goodbye`.
    FeedDraining(Box<EventFeed>, tokio::time::Instant),
    Done,
}

/// How long a closing feed waits for the next event already committed,
/// and at most in all (writes may go on while the daemon stops).
const DRAIN_WAIT: std::time::Duration = std::time::Duration::from_millis(100);
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

fn goodbye(framing: &Framing, feed: &EventFeed, reason: GoodbyeReason) -> Event {
    Event::default().data(framing.frame(&Frame::Goodbye(Goodbye { seq: feed.position(), reason })))
}

fn events(
    state: AppState,
    source: EventSource,
    framing: Framing,
) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(Phase::Running(source), move |phase| {
        let framing = framing.clone();
        let shutdown = state.shutdown.clone();
        async move {
            match phase {
                Phase::Done => None,
                Phase::Running(EventSource::One(ev)) => {
                    Some((Ok(Event::default().data(framing.data(&ev))), Phase::Done))
                }
                Phase::Running(EventSource::Feed(feed)) => {
                    let hello = Frame::Hello(feed.hello().clone());
                    Some((Ok(Event::default().data(framing.frame(&hello))), Phase::Feed(feed)))
                }
                Phase::Feed(mut feed) => {
                    let next = tokio::select! {
                        n = feed.next() => n,
                        () = shutdown.cancelled() => {
                            let until = tokio::time::Instant::now() + DRAIN_LIMIT;
                            let closing = Event::default().comment("closing");
                            return Some((Ok(closing), Phase::FeedDraining(feed, until)));
                        }
                    };
                    let frame = match next? {
                        Ok(FeedItem::Event(ev)) => {
                            let data = framing.frame(&Frame::Event(ev));
                            return Some((Ok(Event::default().data(data)), Phase::Feed(feed)));
                        }
                        Ok(FeedItem::Lagged) => goodbye(&framing, &feed, GoodbyeReason::Lagged),
                        Err(e) => {
                            Event::default().event("error").data(framing.error(&crate::errors::json(e)))
                        }
                    };
                    Some((Ok(frame), Phase::Done))
                }
                Phase::FeedDraining(mut feed, until) => {
                    let wait = until.min(tokio::time::Instant::now() + DRAIN_WAIT);
                    match tokio::time::timeout_at(wait, feed.next()).await {
                        Ok(Some(Ok(FeedItem::Event(ev)))) => {
                            let data = framing.frame(&Frame::Event(ev));
                            Some((Ok(Event::default().data(data)), Phase::FeedDraining(feed, until)))
                        }
                        _ => Some((Ok(goodbye(&framing, &feed, GoodbyeReason::Shutdown)), Phase::Done)),
                    }
                }
                Phase::Running(EventSource::Task(mut evs)) => {
                    let next = tokio::select! {
                        // Events already published go out before a shutdown
                        // ends the stream: a task's final status among them.
                        biased;
                        n = evs.next() => n,
                        () = shutdown.cancelled() => None,
                    };
                    match next? {
                        Ok(ev) => Some((
                            Ok(Event::default().data(framing.data(&ev))),
                            Phase::Running(EventSource::Task(evs)),
                        )),
                        Err(e) => Some((
                            Ok(Event::default().event("error").data(framing.error(&crate::errors::json(e)))),
                            Phase::Done,
                        )),
                    }
                }
            }
        }
    })
}

/// The stream as an SSE response; `slot` (its place under the stream cap)
/// is held until the stream ends.
pub fn response(
    state: &AppState,
    source: EventSource,
    framing: Framing,
    slot: Option<StreamSlot>,
) -> Response {
    let keep_alive = KeepAlive::new().interval(state.config.keep_alive).text("keep-alive");
    let frames = events(state.clone(), source, framing).map(move |f| {
        let _held = &slot;
        f
    });
    let mut r = Sse::new(frames).keep_alive(keep_alive).into_response();
    let h = r.headers_mut();
    h.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    r
}
