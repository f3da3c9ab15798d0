//! The JSON-RPC 2.0 binding: POST on the interface URL (with or without a
//! trailing slash). Errors are JSON-RPC error objects with HTTP 200, but
//! a body that could not be read (too large, too slow, broken) keeps the
//! table's HTTP status, as an unauthenticated call keeps its 401; a
//! streaming method answers with SSE once it validated, and with a plain
//! error object before that.

use crate::auth::{PeerAddr, PeerIdentity};
use crate::dispatch::{Outcome, execute};
use crate::errors::{json_bytes_response, json_response, jsonrpc_error, unauthenticated};
use crate::operation::{OperationKind, method_not_found};
use crate::params::{authenticate, budget_holder, service_params};
use crate::routes::{read_body, with_extensions};
use crate::sse::{self, Framing};
use crate::state::AppState;
use agentd_proto::jsonrpc::{self as rpc};
use agentd_proto::validate::Params;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::Value;

/// Takes the request whole rather than through the `HeaderMap` and `Uri`
/// extractors, which clone them, on every request.
pub async fn handle(State(state): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let (headers, uri) = (&parts.headers, &parts.uri);
    let peer = parts.extensions.get::<PeerIdentity>();
    let principal = match authenticate(&state, headers, peer).await {
        Ok(p) => p,
        Err(f) => return unauthenticated(&state.auth, &f),
    };
    // The share of the body budget is held until the answer is built.
    let holder = budget_holder(&state, &principal, parts.extensions.get::<PeerAddr>());
    let (bytes, _share) = match read_body(&state, &holder, headers, body).await {
        Ok(b) => b,
        Err(e) => {
            let mut r = jsonrpc_error(&rpc::Id::null(), &e);
            *r.status_mut() = StatusCode::from_u16(e.kind.codes().http).unwrap_or(StatusCode::BAD_REQUEST);
            return r;
        }
    };
    let req = match rpc::parse_request_lent(&bytes, state.config.json) {
        Ok(r) => r,
        Err(env) => return jsonrpc_error(&env.id, &env.error),
    };
    let Some(id) = req.id else { return notification(&req.method) };
    let ctx = match service_params(&state, principal, headers, uri.query(), &req.method) {
        Ok(c) => c,
        Err(e) => return jsonrpc_error(&id, &e),
    };
    // The request's head is not needed past here. Its headers and URI share
    // the buffer hyper read it into: held while the operation waits (a
    // fan-out's subscriptions queue on one task's lock), they keep that
    // buffer, and hyper reads on into a new one: 8 KiB more per request.
    drop(parts);
    let kind = OperationKind::from_method(&req.method);
    let slot = match kind.map(|k| state.admission.stream_for(k, state.engine.metrics(), &holder)).transpose()
    {
        Ok(s) => s.flatten(),
        Err(e) => return with_extensions(jsonrpc_error(&id, &e), &ctx.activated),
    };
    let params = req.params.unwrap_or_else(|| Params::Value(Value::Object(Default::default())));
    // Decoded before anything is awaited: the params are lent from the
    // body, which is let go of once they are read.
    let op = kind.ok_or_else(|| method_not_found(&req.method)).and_then(|k| k.decode(params, &ctx));
    drop(bytes);
    let outcome = async {
        execute(&state, crate::metrics::Binding::JsonRpc, &ctx, op?).await.map_err(crate::errors::json)
    };
    let response = match outcome.await {
        Ok(Outcome::Value(reply)) => {
            let prefix = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"#, id);
            let answer = reply.into_json(prefix.as_bytes(), b"}");
            match answer.and_then(|json| crate::answers::hold(&state.admission, &holder, json)) {
                Ok(json) => json_bytes_response(StatusCode::OK, json),
                Err(e) => jsonrpc_error(&id, &e),
            }
        }
        Ok(Outcome::Done) => json_response(StatusCode::OK, &rpc::Success::new(&id, &Value::Null)),
        Ok(Outcome::Stream(src)) => sse::response(&state, src, Framing::JsonRpc { id }, slot, holder),
        Err(e) => jsonrpc_error(&id, &e),
    };
    with_extensions(response, &ctx.activated)
}

/// A valid request without an `id` is a notification, which JSON-RPC 2.0
/// (§4.1) forbids answering. Every A2A method is a call whose answer
/// (a task, an error) is its point, and A2A defines no notification form
/// of any: one is not run, so that a client that left the id out starts,
/// cancels or deletes nothing it cannot hear about. HTTP still needs a
/// status: 204, no body.
fn notification(method: &str) -> Response {
    tracing::debug!(method, "a JSON-RPC notification (no id) was not run: A2A methods are calls");
    StatusCode::NO_CONTENT.into_response()
}
