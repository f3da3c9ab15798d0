//! The router: one listener for the three bindings and the card.

use crate::admission::BodyShare;
use crate::card::{CARD_PATH, JSONRPC_PATH, REST_PATH};
use crate::ext_docs::{self, EXT_PATH};
use crate::extensions::Activated;
use crate::listen::BodyTimedOut;
use crate::state::AppState;
use crate::{jsonrpc, rest};
use agentd_proto::{A2aError, ErrorKind};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use http::{HeaderMap, HeaderValue, StatusCode, header};

/// One listener for every binding: gRPC by `content-type`, then HTTP by path;
/// cross-site and rebound requests to the A2A endpoints refused first
/// (`same_origin.rs`).
pub fn app(state: AppState) -> Router {
    bindings(state.clone())
        .layer(axum::middleware::from_fn_with_state(state, crate::same_origin::check))
        .layer(crate::request_id::RequestIdLayer)
}

/// What a listener serves: [`app`]'s router, and JSON-RPC's POSTs (nearly
/// every call) straight to their handler under the same request id and
/// same-origin check: past the router's two route matches (the gRPC split,
/// then the path), each cloning the matched route's boxed service and
/// boxing its future, which showed in the benchmark. Anything else, a gRPC
/// call to the same path included, goes through the router.
#[derive(Clone)]
pub struct App {
    router: Router,
    jsonrpc: Option<crate::request_id::RequestId<DirectJsonRpc>>,
}

impl App {
    /// The bindings and the card: [`app`], and JSON-RPC's POSTs direct.
    pub fn bindings(state: AppState) -> Self {
        let jsonrpc = Some(crate::request_id::RequestId::new(DirectJsonRpc(state.clone())));
        Self { router: app(state), jsonrpc }
    }

    /// `router` alone.
    pub fn router(router: Router) -> Self {
        Self { router, jsonrpc: None }
    }

    pub async fn call(mut self, req: http::Request<Body>) -> Result<Response, std::convert::Infallible> {
        use tower::Service;
        match &mut self.jsonrpc {
            Some(direct) if is_jsonrpc_post(&req) => direct.call(req).await,
            _ => self.router.call(req).await,
        }
    }
}

/// A POST to the JSON-RPC endpoint that is not a gRPC call.
fn is_jsonrpc_post(req: &http::Request<Body>) -> bool {
    let path = req.uri().path();
    let endpoint = path.strip_prefix(JSONRPC_PATH).is_some_and(|rest| rest.is_empty() || rest == "/");
    let grpc = req
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|ct| ct.as_bytes().starts_with(b"application/grpc"));
    req.method() == http::Method::POST && endpoint && !grpc
}

/// JSON-RPC's handler behind the same-origin check, as its route has it.
#[derive(Clone)]
pub struct DirectJsonRpc(AppState);

impl tower::Service<http::Request<Body>> for DirectJsonRpc {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let state = self.0.clone();
        Box::pin(async move {
            if let Some(refused) = crate::same_origin::refusal(&state, &req) {
                return Ok(refused);
            }
            Ok(jsonrpc::handle(State(state), req).await)
        })
    }
}

#[cfg(feature = "grpc")]
fn bindings(state: AppState) -> Router {
    let grpc = crate::grpc::router(state.clone());
    Router::new().fallback_service(crate::grpc::ByContentType { http: http_app(state), grpc })
}

#[cfg(not(feature = "grpc"))]
fn bindings(state: AppState) -> Router {
    http_app(state)
}

fn http_app(state: AppState) -> Router {
    Router::new()
        .route(CARD_PATH, get(card))
        .route(JSONRPC_PATH, post(jsonrpc::handle))
        .route(&format!("{JSONRPC_PATH}/"), post(jsonrpc::handle))
        .route(&format!("{REST_PATH}/{{*rest}}"), any(rest::handle))
        // The bare base path names no operation: a JSON 404 like any other.
        .route(REST_PATH, any(rest::handle))
        .route(&format!("{REST_PATH}/"), any(rest::handle))
        .route(crate::auth::RESOURCE_METADATA_PATH, get(resource_metadata))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(crate::readiness::handle))
        .route(&format!("{EXT_PATH}/{{name}}"), get(ext_docs::readme))
        .route(&format!("{EXT_PATH}/{{name}}/schema.json"), get(ext_docs::schema_json))
        .route(&format!("{EXT_PATH}/{{name}}/examples/{{file}}"), get(ext_docs::example))
        .merge(crate::console::routes())
        .merge(crate::metrics::routes(state.config.metrics_open))
        .with_state(state)
}

/// The public card, with HTTP caching (`If-None-Match` → 304).
async fn card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let c = &state.card;
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        // Weak comparison (RFC 9110 §13.1.2): `W/"x"` matches `"x"`.
        .is_some_and(|v| {
            v.split(',').map(|t| t.trim()).any(|t| t.trim_start_matches("W/") == c.etag || t == "*")
        });
    let mut r = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, c.json.clone()).into_response()
    };
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(crate::errors::JSON));
    let pairs = [
        (header::CACHE_CONTROL, format!("public, max-age={}", c.max_age_secs)),
        (header::ETAG, c.etag.clone()),
        (header::LAST_MODIFIED, c.last_modified.clone()),
    ];
    for (k, v) in pairs {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(k, v);
        }
    }
    r
}

/// RFC 9728 protected-resource metadata: which authorization servers
/// issue tokens for this agent. 404 without JWT issuers.
async fn resource_metadata(State(state): State<AppState>) -> Response {
    match &state.card.resource_metadata {
        Some(doc) => {
            let mut r = crate::errors::json_bytes_response(StatusCode::OK, doc.clone());
            let max_age = format!("public, max-age={}", state.card.max_age_secs);
            if let Ok(v) = HeaderValue::from_str(&max_age) {
                r.headers_mut().insert(header::CACHE_CONTROL, v);
            }
            r
        }
        None => crate::errors::rest_error(&A2aError::new(
            ErrorKind::MethodNotFound,
            "this agent takes no tokens of an authorization server: it has no protected-resource metadata",
        )),
    }
}

/// Reads a request body up to the body limit, holding a share of the
/// body budget counted against `holder` (returned with the bytes: keep it
/// until the request is answered; see [`crate::params::budget_holder`]). A declared `Content-Length` over the limit is refused before
/// anything is read; a body that does not arrive within the body read
/// timeout is RequestTimeout.
pub async fn read_body(
    state: &AppState,
    holder: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, BodyShare), A2aError> {
    let limit = state.config.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit));
    }
    // An unknown length may be anything up to the limit.
    let bytes = declared.map_or(limit, |n| n as usize);
    let share =
        state.admission.body(holder, crate::admission::charge(bytes, state.config.json.max_values)).await;
    match collect(body, limit, declared).await {
        Ok(bytes) => Ok((bytes, share)),
        Err(e) if caused_by::<http_body_util::LengthLimitError>(&*e) => Err(too_large(limit)),
        Err(e) => match cause::<BodyTimedOut>(&*e) {
            Some(t) => Err(t.to_a2a()),
            None => Err(A2aError::new(
                ErrorKind::InvalidRequest,
                format!("the request body could not be read: {e}"),
            )),
        },
    }
}

/// The body's bytes, at most `limit`. With a declared length they go
/// straight into one buffer of that size: collecting the frames first and
/// joining them after (what `to_bytes` does) holds the body twice.
async fn collect(body: Body, limit: usize, declared: Option<u64>) -> Result<Bytes, axum::BoxError> {
    use http_body_util::BodyExt as _;
    let mut body = http_body_util::Limited::new(body, limit);
    let mut buf = Vec::with_capacity(declared.map_or(0, |n| usize::try_from(n).unwrap_or(limit).min(limit)));
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            buf.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(buf))
}

fn too_large(limit: usize) -> A2aError {
    A2aError::new(
        ErrorKind::PayloadTooLarge,
        format!("the request body is larger than this server accepts ({limit} bytes)"),
    )
    .with_meta("limitBytes", limit.to_string())
}

/// The first error of type `E` in `e`'s source chain (errors of bodies
/// come wrapped once per body layer).
pub(crate) fn cause<'a, E: std::error::Error + 'static>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a E> {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(found) = err.downcast_ref::<E>() {
            return Some(found);
        }
        cur = err.source();
    }
    None
}

fn caused_by<E: std::error::Error + 'static>(e: &(dyn std::error::Error + 'static)) -> bool {
    cause::<E>(e).is_some()
}

/// Echoes the activated extensions in the `A2A-Extensions` response header.
pub fn with_extensions(mut r: Response, activated: &Activated) -> Response {
    if let Some(v) = activated.header_value().and_then(|v| HeaderValue::from_str(&v).ok()) {
        r.headers_mut().insert("a2a-extensions", v);
    }
    r
}
