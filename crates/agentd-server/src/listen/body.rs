//! A request body with a deadline: the whole body must arrive within the
//! body read timeout of the first read of it (not of the head: a request
//! waiting for its share of the body budget is held up by the server, not
//! by the client). tower-http's `TimeoutBody` times each frame, which a
//! client sending a byte at a time never trips; this bounds the total.
//!
//! It also says whether it was read to its end ([`BodyRead`]): an answer
//! given before (a refusal of the credentials, of the declared length) is
//! sent with `Connection: close`. hyper could not reuse the connection
//! anyway unless the rest of the body had already arrived, and would close
//! it unannounced, racing a client that sends its next request on it.

use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// The error a body reports when its deadline passed.
#[derive(Debug)]
pub struct BodyTimedOut(pub Duration);

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the request body did not arrive within {} ms", self.0.as_millis())
    }
}

impl std::error::Error for BodyTimedOut {}

impl BodyTimedOut {
    /// The wire error, the same on every binding: RequestTimeout (HTTP 408,
    /// gRPC DEADLINE_EXCEEDED) naming the setting.
    pub fn to_a2a(&self) -> agentd_proto::A2aError {
        agentd_proto::A2aError::new(agentd_proto::ErrorKind::RequestTimeout, self.to_string())
            .with_meta("limit", "server.body_read_timeout_ms")
            .with_meta("limitValue", self.0.as_millis().to_string())
    }
}

pub struct DeadlineBody {
    inner: Incoming,
    /// Set at the first read.
    deadline: Option<Pin<Box<Sleep>>>,
    limit: Duration,
    read: BodyRead,
}

impl DeadlineBody {
    /// The body, and what tells whether it was read to its end.
    pub fn new(inner: Incoming, limit: Duration) -> (Self, BodyRead) {
        let read = BodyRead::default();
        (Self { inner, deadline: None, limit, read: read.clone() }, read)
    }
}

/// Whether a request's body was read to its end.
#[derive(Clone, Debug, Default)]
pub struct BodyRead(Arc<AtomicBool>);

impl BodyRead {
    pub fn to_end(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

impl Body for DeadlineBody {
    type Data = bytes::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            if frame.is_none() || self.inner.is_end_stream() {
                self.read.0.store(true, Ordering::Release);
            }
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        let limit = self.limit;
        let deadline = self.deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyTimedOut(limit))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
