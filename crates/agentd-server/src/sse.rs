//! Server-sent events for the two streaming methods. Each event is one JSON
//! document on one `data:` line; keep-alive comments flow while a task
//! waits. JSON-RPC wraps each payload in a response envelope with the
//! request id; REST sends the bare StreamResponse. An error after the
//! stream opened is an `event: error` frame, then the stream closes.

use crate::dispatch::EventSource;
use crate::state::AppState;
use agentd_proto::{A2aError, StreamResponse, jsonrpc};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
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
    fn error(&self, e: &A2aError) -> String {
        match self {
            Framing::JsonRpc { id } => jsonrpc::failure(id, e).to_string(),
            Framing::Rest => e.to_rest().to_string(),
        }
    }
}

enum Phase {
    Running(EventSource),
    Done,
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
                Phase::Running(EventSource::Task(mut evs)) => {
                    let next = tokio::select! {
                        n = evs.next() => n,
                        () = shutdown.cancelled() => None,
                    };
                    match next? {
                        Ok(ev) => Some((
                            Ok(Event::default().data(framing.data(&ev))),
                            Phase::Running(EventSource::Task(evs)),
                        )),
                        Err(e) => {
                            Some((Ok(Event::default().event("error").data(framing.error(&e))), Phase::Done))
                        }
                    }
                }
            }
        }
    })
}

pub fn response(state: &AppState, source: EventSource, framing: Framing) -> Response {
    let keep_alive = KeepAlive::new().interval(state.config.keep_alive).text("keep-alive");
    let mut r = Sse::new(events(state.clone(), source, framing)).keep_alive(keep_alive).into_response();
    let h = r.headers_mut();
    h.insert(http::header::CACHE_CONTROL, http::HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", http::HeaderValue::from_static("no"));
    r
}
