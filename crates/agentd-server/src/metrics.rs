//! `GET /metrics` (the Prometheus text format) and the request metrics the
//! bindings record through [`crate::dispatch::execute`].
//!
//! Who may scrape: anyone when the listener serving the scrape is bound to
//! loopback or `metrics.public` is set (the daemon decides: `open`);
//! otherwise an operator, authenticated as for any A2A call (bearer token,
//! JWT or client certificate). Metrics name no task, but they tell how
//! busy the agent is and which tools it calls: not for every user.

use crate::auth::PeerIdentity;
use crate::errors::{rest_error, unauthenticated};
use crate::operation::OperationKind;
use crate::params::authenticate;
use crate::state::AppState;
use agentd_proto::{A2aError, ErrorKind};
use axum::Extension;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use std::time::Instant;

pub const METRICS_PATH: &str = "/metrics";

/// The binding a request came in on (a label of the request metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    JsonRpc = 0,
    Rest = 1,
    Grpc = 2,
}

impl Binding {
    fn label(self) -> &'static str {
        match self {
            Binding::JsonRpc => "jsonrpc",
            Binding::Rest => "rest",
            Binding::Grpc => "grpc",
        }
    }
}

/// Records one request that reached its operation: its method, binding,
/// outcome (`ok` or the error's kind) and time since `started`.
pub(crate) fn record(
    state: &AppState,
    kind: OperationKind,
    binding: Binding,
    error: Option<ErrorKind>,
    started: Instant,
) {
    let secs = started.elapsed().as_secs_f64();
    let requests = &state.engine.metrics().requests;
    match error {
        // The slot of a (method, binding) pair: its histogram is resolved once.
        None => {
            requests.observe_ok(kind as usize * 3 + binding as usize, kind.method(), binding.label(), secs)
        }
        Some(e) => requests.observe(kind.method(), binding.label(), outcome(e), secs),
    }
}

/// The outcome label of an error: its kind in snake case.
fn outcome(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::TaskNotFound => "task_not_found",
        ErrorKind::TaskNotCancelable => "task_not_cancelable",
        ErrorKind::PushNotificationNotSupported => "push_notification_not_supported",
        ErrorKind::UnsupportedOperation => "unsupported_operation",
        ErrorKind::ContentTypeNotSupported => "content_type_not_supported",
        ErrorKind::InvalidAgentResponse => "invalid_agent_response",
        ErrorKind::ExtendedAgentCardNotConfigured => "extended_agent_card_not_configured",
        ErrorKind::ExtensionSupportRequired => "extension_support_required",
        ErrorKind::VersionNotSupported => "version_not_supported",
        ErrorKind::ExtensionNotActivated => "extension_not_activated",
        ErrorKind::ParseError => "parse_error",
        ErrorKind::InvalidRequest => "invalid_request",
        ErrorKind::MethodNotFound => "method_not_found",
        ErrorKind::InvalidParams => "invalid_params",
        ErrorKind::Internal => "internal",
        ErrorKind::Unauthenticated => "unauthenticated",
        ErrorKind::PermissionDenied => "permission_denied",
        ErrorKind::PayloadTooLarge => "payload_too_large",
        ErrorKind::RequestTimeout => "request_timeout",
        ErrorKind::Unavailable => "unavailable",
    }
}

/// Whether scrapes of a listener need no credentials.
#[derive(Clone, Copy, Debug)]
struct Open(bool);

/// The `/metrics` route; `open`: scrapes need no credentials.
pub(crate) fn routes(open: bool) -> axum::Router<AppState> {
    axum::Router::new().route(METRICS_PATH, get(scrape).layer(Extension(Open(open))))
}

/// A router serving `/metrics` alone, for `--metrics-listen`.
pub fn app(state: AppState, open: bool) -> axum::Router {
    routes(open).with_state(state)
}

async fn scrape(
    State(state): State<AppState>,
    Extension(Open(open)): Extension<Open>,
    peer: Option<Extension<PeerIdentity>>,
    headers: HeaderMap,
) -> Response {
    if !open {
        match authenticate(&state, &headers, peer.as_ref().map(|p| &p.0)).await {
            Ok(p) if p.is_operator() => {}
            Ok(p) => {
                return rest_error(&A2aError::new(
                    ErrorKind::PermissionDenied,
                    format!(
                        "{} may not read the metrics: an operator may (or set metrics.public, \
                         or scrape a loopback metrics listener)",
                        p.id
                    ),
                ));
            }
            Err(f) => return unauthenticated(&state.auth, &f),
        }
    }
    let mut r = (StatusCode::OK, state.engine.metrics().encode()).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(agentd_metrics::CONTENT_TYPE));
    r
}
