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
//! - A connection whose writes have been blocked for `idle_timeout` (its
//!   peer reads nothing while the socket's buffers are full) is dropped,
//!   and with it the response it holds.

use super::body::DeadlineBody;
use super::caps::Admitted;
use crate::auth::{PeerAddr, PeerIdentity};
use crate::state::ConnectionLimits;
use axum::body::Body;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
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

/// The hyper builders, configured alike: `auto` reads a connection's first
/// bytes to tell HTTP/2's preface from HTTP/1.1; `h1` and `h2` serve a
/// connection whose version [`sniff`] already told. `h1` is hyper's own:
/// its connection is less than half the size of the auto builder's, which
/// has room for an HTTP/2 one.
pub struct Builders {
    auto: auto::Builder<TokioExecutor>,
    h1: http1::Builder,
    h2: auto::Builder<TokioExecutor>,
}

pub fn builders(limits: &ConnectionLimits) -> Builders {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1().timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    b.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.http2_keep_alive)
        .keep_alive_timeout(limits.http2_keep_alive);
    let mut h1 = http1::Builder::new();
    h1.timer(TokioTimer::new()).header_read_timeout(limits.header_read_timeout);
    Builders { h1, h2: b.clone().http2_only(), auto: b }
}

/// A connection being served, boxed at the size of its own kind.
enum Served<H1, Auto> {
    H1(Pin<Box<H1>>),
    Auto(Pin<Box<Auto>>),
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<I, S, B> Served<http1::Connection<I, S>, auto::Connection<'_, I, S, TokioExecutor>>
where
    S: hyper::service::Service<http::Request<Incoming>, Response = http::Response<B>>,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<BoxError>,
    TokioExecutor: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        match self {
            Served::H1(c) => c.as_mut().poll(cx).map_err(BoxError::from),
            Served::Auto(c) => c.as_mut().poll(cx),
        }
    }

    fn graceful_shutdown(&mut self) {
        match self {
            Served::H1(c) => c.as_mut().graceful_shutdown(),
            Served::Auto(c) => c.as_mut().graceful_shutdown(),
        }
    }
}

/// The HTTP version of a connection, when known before hyper reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    H1,
    H2,
}

/// What an HTTP/2 connection with prior knowledge sends first.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The version a plain TCP connection speaks, from the bytes it sent first,
/// peeked (not consumed); `None` when those are too few to tell (a part of
/// the preface) or the peer closed: the auto builder then reads them.
///
/// Why not always the auto builder: it reads the first bytes itself and
/// hands them back to hyper, whose first read then returns only those, and
/// whose second grows the HTTP/1.1 read buffer from 8 to 16 KiB for the
/// connection's life (8 KiB more per open SSE stream).
pub async fn sniff(stream: &tokio::net::TcpStream) -> Option<Version> {
    let mut first = [0u8; H2_PREFACE.len()];
    let n = stream.peek(&mut first).await.ok()?;
    if n == 0 {
        None
    } else if first[..n] != H2_PREFACE[..n] {
        Some(Version::H1)
    } else if n == H2_PREFACE.len() {
        Some(Version::H2)
    } else {
        None
    }
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
/// `version`: the HTTP version, if [`sniff`] told it; `peer`: who the
/// connection's client certificate names, and `addr`: where it comes from,
/// set on each of its requests.
#[allow(clippy::too_many_arguments)]
pub async fn serve<S>(
    stream: S,
    version: Option<Version>,
    peer: Option<PeerIdentity>,
    addr: std::net::IpAddr,
    app: crate::routes::App,
    builders: Arc<Builders>,
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
        let mut read = None;
        let http1 = req.version() < http::Version::HTTP_2;
        let mut req = req.map(|b| {
            if hyper::body::Body::is_end_stream(&b) {
                Body::new(b)
            } else {
                let (body, to_end) = DeadlineBody::new(b, body_limit);
                read = Some(to_end);
                Body::new(body)
            }
        });
        if let Some(p) = &peer {
            req.extensions_mut().insert(p.clone());
        }
        req.extensions_mut().insert(PeerAddr(addr.to_canonical()));
        let app = app.clone();
        // Boxed: hyper keeps room for a request's future for the
        // connection's life, an SSE stream's included; a box is that room's
        // size only while a request is being answered.
        Box::pin(async move {
            let mut resp = app.call(req).await?;
            if http1 && read.is_some_and(|r| !r.to_end()) {
                // Answered before its body was read: see `body.rs`.
                resp.headers_mut().insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
            }
            Ok::<_, std::convert::Infallible>(resp.map(|inner| Tracked { inner, _busy: busy }))
        })
    });
    let writes = WriteClock::new();
    let io = TokioIo::new(Progress { inner: stream, clock: writes.clone() });
    let mut conn = match version {
        Some(Version::H1) => Served::H1(Box::pin(builders.h1.serve_connection(io, svc))),
        Some(Version::H2) => Served::Auto(Box::pin(builders.h2.serve_connection(io, svc))),
        None => Served::Auto(Box::pin(builders.auto.serve_connection(io, svc))),
    };
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
            r = std::future::poll_fn(|cx| conn.poll(cx)) => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = shutdown.cancelled(), if !closing => {
                conn.graceful_shutdown();
                closing = true;
            }
            () = stopped.cancelled(), if !stopping => {
                if !closing {
                    conn.graceful_shutdown();
                    closing = true;
                }
                stopping = true;
            }
            () = writes.blocked_for(limits.idle_timeout) => {
                tracing::debug!("the peer read nothing for the idle timeout while a response waited: dropped");
                return;
            }
            () = in_flight.quiet_for(first, idle) => {
                if closing {
                    // Asked to close a period ago and still here, with
                    // nothing in flight: a peer that does not read.
                    return;
                }
                conn.graceful_shutdown();
                closing = true;
            }
        }
    }
}

/// When the connection's writes last found its socket full and made no
/// progress since, in microseconds after `epoch` (0: they are not blocked).
#[derive(Clone)]
struct WriteClock(Arc<(AtomicU64, Instant)>);

impl WriteClock {
    fn new() -> Self {
        Self(Arc::new((AtomicU64::new(0), Instant::now())))
    }

    fn now_us(&self) -> u64 {
        u64::try_from(self.0.1.elapsed().as_micros()).unwrap_or(u64::MAX).max(1)
    }

    /// A write could not go on: the blocked time starts, if not running.
    fn blocked(&self) {
        let _ = self.0.0.compare_exchange(0, self.now_us(), Ordering::Relaxed, Ordering::Relaxed);
    }

    /// A write went on.
    fn moved(&self) {
        self.0.0.store(0, Ordering::Relaxed);
    }

    /// Resolves once writes have been blocked for `limit` without a byte
    /// going out; looks again every `limit` otherwise.
    async fn blocked_for(&self, limit: Duration) {
        loop {
            let since = self.0.0.load(Ordering::Relaxed);
            if since == 0 {
                tokio::time::sleep(limit).await;
                continue;
            }
            let at = self.0.1 + Duration::from_micros(since) + limit;
            if Instant::now() >= at {
                return;
            }
            tokio::time::sleep_until(at).await;
        }
    }
}

/// The connection's stream, telling `clock` whether its writes go on.
struct Progress<S> {
    inner: S,
    clock: WriteClock,
}

impl<S> Progress<S> {
    /// A write's outcome: bytes out are progress, a full socket is not.
    fn wrote(&self, r: Poll<std::io::Result<usize>>) -> Poll<std::io::Result<usize>> {
        match &r {
            Poll::Pending => self.clock.blocked(),
            Poll::Ready(Ok(n)) if *n > 0 => self.clock.moved(),
            Poll::Ready(_) => {}
        }
        r
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Progress<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Progress<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.wrote(r)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.wrote(r)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // A flush that waits (TLS records queued) is a blocked write; one
        // that is done says nothing of the writes before it.
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        if r.is_pending() {
            self.clock.blocked();
        }
        r
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// What `sniff` tells of a connection that sent `first` (and closed
    /// its side if `close`), and the bytes then left to read.
    async fn sniffed(first: &[u8], close: bool) -> (Option<Version>, Vec<u8>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let mut client = TcpStream::connect(listener.local_addr().expect("addr")).await.expect("connect");
        let (mut server, _) = listener.accept().await.expect("accept");
        client.write_all(first).await.expect("write");
        if close {
            client.shutdown().await.expect("shutdown");
        }
        let version = sniff(&server).await;
        let mut left = vec![0; first.len()];
        server.read_exact(&mut left).await.expect("read");
        (version, left)
    }

    #[tokio::test]
    async fn the_version_is_told_from_the_first_bytes_without_consuming_them() {
        let h1 = b"POST /a2a/jsonrpc HTTP/1.1\r\nhost: x\r\n\r\n";
        assert_eq!(sniffed(h1, false).await, (Some(Version::H1), h1.to_vec()));
        let h2 = [H2_PREFACE, b"\0\0\0\x04\0\0\0\0\0"].concat();
        assert_eq!(sniffed(&h2, false).await, (Some(Version::H2), h2.clone()));
        // A method that starts as the preface does is HTTP/1.1 at its first difference.
        assert_eq!(sniffed(b"PRIX", false).await.0, Some(Version::H1));
        // Part of the preface, then nothing: the auto builder reads on.
        assert_eq!(sniffed(&H2_PREFACE[..10], true).await, (None, H2_PREFACE[..10].to_vec()));
        assert_eq!(sniffed(b"", true).await.0, None);
    }
}
