//! Every request gets an id: the client's `X-Request-Id` when it sends a
//! usable one, else a fresh UUID. The id goes back in the response's
//! `X-Request-Id` and names the `request` span everything done for the
//! request runs in, so each log line (an internal error, a failed commit,
//! the debug line per request) says which request it belongs to. With
//! tracing on, the span is the call's OpenTelemetry server span and its
//! `trace_id` is on every line too (`trace.rs`).
//!
//! A tower layer of its own rather than `axum::middleware::from_fn`: it is
//! on every request's path, and `from_fn` clones the whole inner router and
//! boxes a second future per request, which showed in the benchmark.

use axum::response::Response;
use http::HeaderValue;
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use tracing::Instrument;

pub const HEADER: &str = "x-request-id";

/// Longest client-given id kept; a longer or odd one is replaced.
const MAX_LEN: usize = 128;

/// The client's id when it is 1..=128 visible ASCII characters.
fn given<B>(req: &http::Request<B>) -> Option<String> {
    let v = req.headers().get(HEADER)?.to_str().ok()?;
    let ok = !v.is_empty() && v.len() <= MAX_LEN && v.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| v.to_owned())
}

/// A fresh id: a UUID (version 4 layout) made of 128 random bits drawn once
/// per process plus a counter, so no request pays for the system's random
/// source and no two requests of a process share an id.
fn fresh() -> String {
    static SEED: LazyLock<u128> = LazyLock::new(|| uuid::Uuid::new_v4().as_u128());
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let bits = SEED.wrapping_add(u128::from(n));
    let id = uuid::Builder::from_random_bytes(bits.to_be_bytes()).into_uuid();
    id.hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()).to_owned()
}

/// The layer: the span around the handler, the header on the answer,
/// and at debug level one line per request (method, path, status, time to
/// the response head; a stream's head comes first).
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestIdLayer;

impl<S> tower::Layer<S> for RequestIdLayer {
    type Service = RequestId<S>;
    fn layer(&self, inner: S) -> RequestId<S> {
        RequestId { inner }
    }
}

#[derive(Clone, Debug)]
pub struct RequestId<S> {
    inner: S,
}

impl<S> RequestId<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S, B> tower::Service<http::Request<B>> for RequestId<S>
where
    S: tower::Service<http::Request<B>, Response = Response>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let id = given(&req).unwrap_or_else(fresh);
        let span = tracing::info_span!(
            "request",
            id = %id,
            trace_id = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
            otel.name = tracing::field::Empty,
        );
        crate::trace::join(&span, &req);
        // What the debug line needs is copied only when it will be written.
        let line = tracing::enabled!(tracing::Level::DEBUG)
            .then(|| (req.method().clone(), req.uri().path().to_owned(), std::time::Instant::now()));
        let answer = span.in_scope(|| self.inner.call(req)).instrument(span.clone());
        Box::pin(async move {
            let mut resp = answer.await?;
            crate::trace::responded(&span, resp.status());
            if let Ok(v) = HeaderValue::from_str(&id) {
                resp.headers_mut().insert(HEADER, v);
            }
            if let Some((method, path, start)) = line {
                let ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
                span.in_scope(
                    || tracing::debug!(%method, %path, status = resp.status().as_u16(), ms, "request"),
                );
            }
            Ok(resp)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_are_distinct_uuids() {
        let a = fresh();
        let b = fresh();
        assert_ne!(a, b);
        for id in [&a, &b] {
            let u = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(u.get_version_num(), 4, "{id}");
            assert_eq!(id, &u.hyphenated().to_string());
        }
    }
}
