//! Server-sent events for the two streaming methods. Each event is one JSON
//! document on one `data:` line; keep-alive comments flow while a task
//! waits. JSON-RPC wraps each payload in a response envelope with the
//! request id; REST sends the bare StreamResponse. An error after the
//! stream opened is an `event: error` frame, then the stream closes.
//!
//! The events feed frames `hello`, `event` and `goodbye` the same way; at
//! shutdown it passes on what was already committed, then says goodbye.
//!
//! An open stream costs memory for as long as it waits, so each is one
//! state machine in one allocation, and a task's event is serialized once
//! for all its streams: a stream copies that JSON into its frame.

use crate::admission::StreamSlot;
use crate::answers::{Budgeted, Refusal};
use crate::dispatch::EventSource;
use crate::state::AppState;
use agentd_core::slots::Published;
use agentd_core::{EventFeed, FeedItem, TaskEvents};
use agentd_proto::ext::events::{Frame, Goodbye, GoodbyeReason};
use agentd_proto::{A2aError, jsonrpc};
use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::{self, Stream};
use http::HeaderValue;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// How the payloads are framed.
#[derive(Clone)]
pub enum Framing {
    JsonRpc { id: jsonrpc::Id },
    Rest,
}

impl Framing {
    fn frame(&self, f: &Frame) -> String {
        match self {
            Framing::JsonRpc { id } => jsonrpc::success(id, f),
            Framing::Rest => serde_json::to_string(f).unwrap_or_default(),
        }
    }
    fn error(&self, e: &A2aError) -> String {
        match self {
            Framing::JsonRpc { id } => jsonrpc::failure(id, e),
            Framing::Rest => e.to_rest().to_string(),
        }
    }
}

const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// How one stream writes its frames.
struct Frames {
    framing: Framing,
    /// What goes before an event's JSON: `data: `, and for JSON-RPC the
    /// envelope up to its `result` (as `jsonrpc::Success` writes it).
    head: Box<[u8]>,
}

impl Frames {
    fn new(framing: Framing) -> Self {
        let head = match &framing {
            Framing::JsonRpc { id } => format!(r#"data: {{"jsonrpc":"2.0","id":{id},"result":"#),
            Framing::Rest => "data: ".to_owned(),
        };
        Self { framing, head: head.into_bytes().into_boxed_slice() }
    }

    /// The frame of a task's event (or a direct message).
    fn event(&self, ev: &Published) -> Bytes {
        let Some(json) = ev.json() else {
            // What an event with empty data is.
            return Bytes::from_static(b"\n");
        };
        let tail: &[u8] = match self.framing {
            Framing::JsonRpc { .. } => b"}\n\n",
            Framing::Rest => b"\n\n",
        };
        let mut b = Vec::with_capacity(self.head.len() + json.len() + tail.len());
        b.extend_from_slice(&self.head);
        b.extend_from_slice(json);
        b.extend_from_slice(tail);
        Bytes::from(b)
    }

    fn frame(&self, f: &Frame) -> Bytes {
        sse_event(None, &self.framing.frame(f))
    }

    fn error(&self, e: &A2aError) -> Bytes {
        sse_event(Some("error"), &self.framing.error(e))
    }

    fn goodbye(&self, feed: &EventFeed, reason: GoodbyeReason) -> Bytes {
        self.frame(&Frame::Goodbye(Goodbye { seq: feed.position(), reason }))
    }
}

/// One SSE event: an `event:` line if named, then `data` on one `data:`
/// line (compact JSON has no line breaks), then the blank line.
fn sse_event(name: Option<&str>, data: &str) -> Bytes {
    let mut b = String::with_capacity(data.len() + 24);
    if let Some(name) = name {
        b.push_str("event: ");
        b.push_str(name);
        b.push('\n');
    }
    if !data.is_empty() {
        b.push_str("data: ");
        b.push_str(data);
        b.push('\n');
    }
    b.push('\n');
    Bytes::from(b)
}

/// What a feed needs besides its source.
struct Common {
    frames: Frames,
    shutdown: CancellationToken,
}

/// The frames of a task's events (the shutdown is watched by
/// [`Framed`]).
fn task_frames(events: Box<TaskEvents>, frames: Frames) -> impl Stream<Item = Bytes> + Send {
    stream::unfold(Some((events, frames)), |state| async move {
        let (mut evs, frames) = state?;
        match evs.next().await? {
            Ok(ev) => Some((frames.event(&ev), Some((evs, frames)))),
            Err(e) => Some((frames.error(&crate::errors::json(e)), None)),
        }
    })
}

enum FeedPhase {
    Hello,
    Live,
    /// Shutting down: what is already committed (until the instant), then
    /// `goodbye`.
    Draining(Instant),
}

/// How long a closing feed waits for the next event already committed,
/// and at most in all (writes may go on while the daemon stops).
const DRAIN_WAIT: Duration = Duration::from_millis(100);
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// The frames of the events feed: `hello`, its events, `goodbye`.
fn feed_frames(feed: Box<EventFeed>, c: Common) -> impl Stream<Item = Bytes> + Send {
    stream::unfold(Some((feed, c, FeedPhase::Hello)), |state| async move {
        let (mut feed, c, phase) = state?;
        match phase {
            FeedPhase::Hello => {
                let hello = c.frames.frame(&Frame::Hello(feed.hello().clone()));
                Some((hello, Some((feed, c, FeedPhase::Live))))
            }
            FeedPhase::Live => {
                let next = tokio::select! {
                    n = feed.next() => n,
                    () = c.shutdown.cancelled() => {
                        let closing = Bytes::from_static(b": closing\n\n");
                        let until = Instant::now() + DRAIN_LIMIT;
                        return Some((closing, Some((feed, c, FeedPhase::Draining(until)))));
                    }
                };
                let last = match next? {
                    Ok(FeedItem::Event(ev)) => {
                        let frame = c.frames.frame(&Frame::Event(ev));
                        return Some((frame, Some((feed, c, FeedPhase::Live))));
                    }
                    Ok(FeedItem::Lagged) => c.frames.goodbye(&feed, GoodbyeReason::Lagged),
                    Err(e) => c.frames.error(&crate::errors::json(e)),
                };
                Some((last, None))
            }
            FeedPhase::Draining(until) => {
                let wait = until.min(Instant::now() + DRAIN_WAIT);
                match tokio::time::timeout_at(wait, feed.next()).await {
                    Ok(Some(Ok(FeedItem::Event(ev)))) => {
                        let frame = c.frames.frame(&Frame::Event(ev));
                        Some((frame, Some((feed, c, FeedPhase::Draining(until)))))
                    }
                    _ => Some((c.frames.goodbye(&feed, GoodbyeReason::Shutdown), None)),
                }
            }
        }
    })
}

/// `frames` with a keep-alive comment whenever none went out for
/// `interval`, and, for a task's stream, its end at a shutdown once no
/// frame is ready (events already published go out first: a task's final
/// status among them). The frames are polled, never dropped, while a
/// comment goes out: a task's next event may be in the middle of
/// committing its creation.
///
/// Both waits are armed once per stream, not once per frame: fanning an
/// event out to thousands of streams would otherwise re-register thousands
/// of timers, and as many waiters on the one shutdown token's lock. The
/// timer is moved on only when it fires.
struct Framed<S> {
    frames: Pin<Box<S>>,
    shutdown: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    timer: Pin<Box<tokio::time::Sleep>>,
    interval: Duration,
    /// When the last frame or comment went out.
    last: Instant,
}

impl<S> Framed<S> {
    fn new(frames: S, interval: Duration, shutdown: Option<CancellationToken>) -> Self {
        let last = Instant::now();
        let timer = Box::pin(tokio::time::sleep_until(last + interval));
        let shutdown = shutdown.map(|t| Box::pin(t.cancelled_owned()));
        Self { frames: Box::pin(frames), shutdown, timer, interval, last }
    }
}

impl<S: Stream<Item = Bytes>> Stream for Framed<S> {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = this.frames.as_mut().poll_next(cx) {
            this.last = Instant::now();
            return Poll::Ready(frame);
        }
        if let Some(shutdown) = &mut this.shutdown
            && shutdown.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        loop {
            std::task::ready!(this.timer.as_mut().poll(cx));
            let (now, due) = (Instant::now(), this.last + this.interval);
            if now >= due {
                this.last = now;
                this.timer.as_mut().reset(now + this.interval);
                return Poll::Ready(Some(Bytes::from_static(KEEP_ALIVE)));
            }
            // A frame went out since the timer was set.
            this.timer.as_mut().reset(due);
        }
    }
}

/// The frames as a response body; `slot` is held until the body is dropped.
fn body(frames: impl Stream<Item = Bytes> + Send + 'static, slot: Option<StreamSlot>) -> Body {
    let frames = frames.map(move |b| {
        let _held = &slot;
        Ok::<_, Infallible>(hyper::body::Frame::data(b))
    });
    Body::new(http_body_util::StreamBody::new(frames))
}

/// The stream as an SSE response; `slot` (its place under the stream cap)
/// is held until the stream ends. Each big frame takes a share of the
/// answer budget for `holder` until it is written; one that finds none
/// ends the stream with an error frame saying so (`answers.rs`).
pub fn response(
    state: &AppState,
    source: EventSource,
    framing: Framing,
    slot: Option<StreamSlot>,
    holder: String,
) -> Response {
    let refusal_framing = framing.clone();
    let refusal: Refusal =
        Box::new(move |e| hyper::body::Frame::data(sse_event(Some("error"), &refusal_framing.error(e))));
    let (frames, shutdown) = (Frames::new(framing), state.shutdown.clone());
    let interval = state.config.keep_alive;
    let body = match source {
        EventSource::One(ev) => {
            let frame = frames.event(&Published::new(*ev));
            body(stream::once(std::future::ready(frame)), slot)
        }
        EventSource::Task(events) => {
            body(Framed::new(task_frames(events, frames), interval, Some(shutdown)), slot)
        }
        EventSource::Feed(feed) => {
            body(Framed::new(feed_frames(feed, Common { frames, shutdown }), interval, None), slot)
        }
    };
    let body = Body::new(Budgeted::new(body, state.admission.clone(), holder, refusal));
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_proto::{Part, StreamResponse, TaskState, TaskStatus, TaskStatusUpdateEvent};
    use axum::response::IntoResponse;
    use axum::response::sse::{Event, Sse};
    use http_body_util::BodyExt;

    fn status_update() -> StreamResponse {
        let mut status = TaskStatus { state: TaskState::Working, ..TaskStatus::default() };
        status.message = Some(agentd_proto::Message {
            message_id: "m".into(),
            parts: vec![Part::text("a \"quoted\"\nline, é, \u{1F600}")],
            ..agentd_proto::Message::default()
        });
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status,
            metadata: None,
        })
    }

    /// The bytes axum's SSE body writes for `event`.
    async fn axum_frame(event: Event) -> Bytes {
        let body = Sse::new(stream::iter([Ok::<_, Infallible>(event)])).into_response().into_body();
        body.collect().await.expect("body").to_bytes()
    }

    #[tokio::test]
    async fn an_event_is_framed_as_its_whole_envelope_serialized_per_stream_was() {
        let ev = Published::new(status_update());
        for id in ["7", "\"a\\\"b\\nc\u{7f}\"", "null", "1.5", "-3", "1E2", "\"\\u00e9\""] {
            let id = jsonrpc::Id::from_text(id).expect("id");
            let whole = serde_json::to_string(&jsonrpc::Success::new(&id, &*ev)).expect("json");
            let framed = Frames::new(Framing::JsonRpc { id }).event(&ev);
            assert_eq!(framed, axum_frame(Event::default().data(whole)).await);
        }
        let rest = Frames::new(Framing::Rest).event(&ev);
        let whole = serde_json::to_string(&*ev).expect("json");
        assert_eq!(rest, axum_frame(Event::default().data(whole)).await);
    }

    #[tokio::test]
    async fn errors_comments_and_keep_alives_are_framed_as_axum_frames_them() {
        let e = A2aError::new(agentd_proto::ErrorKind::Internal, "line one\nline two");
        for framing in [Framing::JsonRpc { id: jsonrpc::Id::from_text("1").expect("id") }, Framing::Rest] {
            let data = framing.error(&e);
            let ours = Frames::new(framing).error(&e);
            assert_eq!(ours, axum_frame(Event::default().event("error").data(data)).await);
        }
        assert_eq!(KEEP_ALIVE, axum_frame(Event::default().comment("keep-alive")).await);
        assert_eq!(&b": closing\n\n"[..], axum_frame(Event::default().comment("closing")).await);
        assert_eq!(sse_event(None, ""), axum_frame(Event::default().data("")).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_keep_alive_goes_out_after_an_interval_without_frames() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Bytes>();
        let mut s = Framed::new(rx, Duration::from_secs(10), None);
        let t0 = Instant::now();
        tokio::time::advance(Duration::from_secs(6)).await;
        tx.unbounded_send(Bytes::from_static(b"a")).expect("send");
        assert_eq!(s.next().await.as_deref(), Some(&b"a"[..]));
        // The timer set at the start fires at 10 s, 4 s after the frame: the
        // comment waits for 16 s (paused time jumps to each timer).
        assert_eq!(s.next().await.as_deref(), Some(KEEP_ALIVE));
        assert_eq!(t0.elapsed(), Duration::from_secs(16));
        assert_eq!(s.next().await.as_deref(), Some(KEEP_ALIVE));
        assert_eq!(t0.elapsed(), Duration::from_secs(26));
        tx.unbounded_send(Bytes::from_static(b"b")).expect("send");
        drop(tx);
        assert_eq!(s.next().await.as_deref(), Some(&b"b"[..]));
        assert_eq!(s.next().await, None, "the stream ends with its frames");
        assert_eq!(t0.elapsed(), Duration::from_secs(26));
    }

    #[tokio::test(start_paused = true)]
    async fn a_shutdown_ends_a_stream_after_the_frames_already_ready() {
        let (tx, rx) = futures::channel::mpsc::unbounded::<Bytes>();
        let token = CancellationToken::new();
        let mut s = Framed::new(rx, Duration::from_secs(10), Some(token.clone()));
        tx.unbounded_send(Bytes::from_static(b"a")).expect("send");
        tx.unbounded_send(Bytes::from_static(b"b")).expect("send");
        token.cancel();
        assert_eq!(s.next().await.as_deref(), Some(&b"a"[..]));
        assert_eq!(s.next().await.as_deref(), Some(&b"b"[..]));
        assert_eq!(s.next().await, None, "ended, with its frames' source still open");
        drop(tx);
    }
}
