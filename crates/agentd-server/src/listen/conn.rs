//! One accepted connection: HTTP/1.1 or HTTP/2 (prior knowledge, for
//! gRPC) served by hyper, with the timeouts hyper does not apply itself.
//!
//! - A request head must arrive within `header_read_timeout` (hyper's own
//!   timer on HTTP/1.1; here before the first request on both versions, so
//!   a silent connection or one that never finishes its HTTP/2 preface is
//!   closed too).
//! - A body must arrive within `body_read_timeout` of its head.
//! - A connection with nothing in flight for `idle_timeout` is shut down
//!   gracefully, and dropped if it is still there after another such
//!   period. A response in flight (an SSE stream included) keeps it open:
//!   streams have their own keep-alive and cap.

use super::body::DeadlineBody;
use super::caps::Admitted;
use crate::auth::PeerIdentity;
use crate::state::ConnectionLimits;
use axum::Router;
use axum::body::Body;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::Service;

/// The hyper builder for every connection.
pub fn builder(limits: &ConnectionLimits) -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    b.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.http2_keep_alive)
        .keep_alive_timeout(limits.http2_keep_alive);
    b
}

/// Requests in flight on one connection (a response counts until its body
/// is done or dropped), and when that count last changed.
///
/// Atomics rather than a channel the idle wait listens on: a request's
/// start and end only count and stamp the time, and the idle wait re-arms
/// its one timer when it fires and finds the connection was used since,
/// instead of every request waking it to arm a fresh timer.
#[derive(Clone)]
struct InFlight(Arc<Activity>);

struct Activity {
    /// Requests in flight.
    n: AtomicUsize,
    /// Whether a request was ever made on the connection.
    served: AtomicBool,
    /// When `n` last changed, in microseconds since `epoch`.
    changed_us: AtomicU64,
    epoch: Instant,
}

struct Busy(InFlight);

impl InFlight {
    fn new() -> Self {
        let a = Activity {
            n: AtomicUsize::new(0),
            served: AtomicBool::new(false),
            changed_us: AtomicU64::new(0),
            epoch: Instant::now(),
        };
        Self(Arc::new(a))
    }

    fn stamp(&self) {
        let us = u64::try_from(self.0.epoch.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.0.changed_us.store(us, Ordering::Relaxed);
    }

    fn enter(&self) -> Busy {
        self.0.served.store(true, Ordering::Relaxed);
        self.0.n.fetch_add(1, Ordering::AcqRel);
        self.stamp();
        Busy(self.clone())
    }

    /// Resolves after `first` (if nothing was ever in flight) or `idle`
    /// with nothing in flight; any request start or end restarts the wait.
    async fn quiet_for(&self, first: Duration, idle: Duration) {
        let a = &self.0;
        loop {
            let wait = if a.served.load(Ordering::Relaxed) { idle } else { first };
            // Busy now: look again a whole period later.
            if a.n.load(Ordering::Acquire) > 0 {
                tokio::time::sleep(wait).await;
                continue;
            }
            // Read after the count: the stamp of the request that ended last.
            let quiet_at = a.epoch + Duration::from_micros(a.changed_us.load(Ordering::Relaxed)) + wait;
            if Instant::now() >= quiet_at {
                return;
            }
            tokio::time::sleep_until(quiet_at).await;
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.stamp();
        (self.0).0.n.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that counts as in flight until it is done or dropped.
struct Tracked {
    inner: Body,
    _busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// How long a stopping daemon's connection with nothing in flight has to
/// write what is queued before it is dropped.
const STOP_FLUSH: Duration = Duration::from_millis(500);

/// Serves one connection until it closes, times out or the daemon stops.
/// `peer`: who the connection's client certificate names, set on each of
/// its requests.
#[allow(clippy::too_many_arguments)]
pub async fn serve<S>(
    stream: S,
    peer: Option<PeerIdentity>,
    router: Router,
    builder: Arc<auto::Builder<TokioExecutor>>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    stopped: CancellationToken,
    _admitted: Admitted,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let in_flight = InFlight::new();
    let counter = in_flight.clone();
    let body_limit = limits.body_read_timeout;
    let svc = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let busy = counter.enter();
        let mut req = req.map(|b| {
            if hyper::body::Body::is_end_stream(&b) {
                Body::new(b)
            } else {
                Body::new(DeadlineBody::new(b, body_limit))
            }
        });
        if let Some(p) = &peer {
            req.extensions_mut().insert(p.clone());
        }
        let mut router = router.clone();
        async move {
            let resp = router.call(req).await?;
            Ok::<_, std::convert::Infallible>(resp.map(|inner| Tracked { inner, _busy: busy }))
        }
    });
    let conn = builder.serve_connection(TokioIo::new(stream), svc);
    tokio::pin!(conn);
    let mut closing = false;
    // After `stopped` (the daemon's work is over, its streams ended) a
    // connection closes once its graceful shutdown has written what its
    // ended responses left queued (a stream's last frame, HTTP/2's GOAWAY),
    // or `STOP_FLUSH` after nothing is in flight, without waiting for a
    // peer to go away. A response counts as done when hyper took its last
    // frame, before that frame is on the wire: closing at once would cut it.
    let mut stopping = false;
    loop {
        let (first, idle) = match stopping {
            true => (STOP_FLUSH, STOP_FLUSH),
            false => (limits.header_read_timeout, limits.idle_timeout),
        };
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = shutdown.cancelled(), if !closing => {
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            () = stopped.cancelled(), if !stopping => {
                if !closing {
                    conn.as_mut().graceful_shutdown();
                    closing = true;
                }
                stopping = true;
            }
            () = in_flight.quiet_for(first, idle) => {
                if closing {
                    // Asked to close a period ago and still here, with
                    // nothing in flight: a peer that does not read.
                    return;
                }
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
        }
    }
}
