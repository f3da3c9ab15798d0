//! A request body with a deadline: the whole body must arrive within the
//! body read timeout of the first read of it (not of the head: a request
//! waiting for its share of the body budget is held up by the server, not
//! by the client). tower-http's `TimeoutBody` times each frame, which a
//! client sending a byte at a time never trips; this bounds the total.

use hyper::body::{Body, Frame, Incoming, SizeHint};
use std::pin::Pin;
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
}

impl DeadlineBody {
    pub fn new(inner: Incoming, limit: Duration) -> Self {
        Self { inner, deadline: None, limit }
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
