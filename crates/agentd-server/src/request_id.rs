//! Every request gets an id: the client's `X-Request-Id` when it sends a
//! usable one, else a fresh UUID. The id goes back in the response's
//! `X-Request-Id` and names the `request` span everything done for the
//! request runs in, so each log line (an internal error, a failed commit,
//! the debug line per request) says which request it belongs to.

use axum::response::Response;
use http::HeaderValue;
use tracing::Instrument;

pub const HEADER: &str = "x-request-id";

/// Longest client-given id kept; a longer or odd one is replaced.
const MAX_LEN: usize = 128;

/// The client's id when it is 1..=128 visible ASCII characters.
fn given(req: &axum::extract::Request) -> Option<String> {
    let v = req.headers().get(HEADER)?.to_str().ok()?;
    let ok = !v.is_empty() && v.len() <= MAX_LEN && v.bytes().all(|b| b.is_ascii_graphic());
    ok.then(|| v.to_owned())
}

/// The middleware: the span around the handler, the header on the answer,
/// and at debug level one line per request (method, path, status, time to
/// the response head; a stream's head comes first).
pub async fn layer(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let id = given(&req).unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let span = tracing::info_span!("request", id = %id);
    // What the debug line needs is copied only when it will be written.
    let line = tracing::enabled!(tracing::Level::DEBUG)
        .then(|| (req.method().clone(), req.uri().path().to_owned(), std::time::Instant::now()));
    let mut resp = next.run(req).instrument(span.clone()).await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert(HEADER, v);
    }
    if let Some((method, path, start)) = line {
        let ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        span.in_scope(|| tracing::debug!(%method, %path, status = resp.status().as_u16(), ms, "request"));
    }
    resp
}
