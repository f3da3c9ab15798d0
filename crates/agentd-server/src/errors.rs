//! Wire error responses: the only place an [`A2aError`] becomes bytes.
//! JSON-RPC errors go out with HTTP 200 (the envelope carries the error);
//! REST errors with the table's HTTP status and a google.rpc.Status body.
//! Both as `application/json`, which every official client decodes.

use agentd_proto::{A2aError, jsonrpc};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

pub const JSON: &str = "application/json";

pub fn json_response<T: serde::Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    json_bytes_response(status, serde_json::to_vec(body).unwrap_or_default())
}

/// A body already serialized as JSON.
pub fn json_bytes_response(status: StatusCode, json: Vec<u8>) -> Response {
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static(JSON))], json).into_response()
}

pub fn jsonrpc_error(id: &Value, e: &A2aError) -> Response {
    json_response(StatusCode::OK, &jsonrpc::failure(id, e))
}

pub fn rest_error(e: &A2aError) -> Response {
    let status = StatusCode::from_u16(e.kind.codes().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &e.to_rest())
}

/// 401 before dispatch, with the challenge the card's scheme implies.
pub fn unauthenticated(missing: bool) -> Response {
    let (msg, challenge) = if missing {
        ("this agent requires a bearer token (Authorization: Bearer <token>)", "Bearer realm=\"agentd\"")
    } else {
        ("the bearer token is not valid", "Bearer realm=\"agentd\", error=\"invalid_token\"")
    };
    let e = A2aError::new(agentd_proto::ErrorKind::Unauthenticated, msg);
    let mut r = rest_error(&e);
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
    r
}
