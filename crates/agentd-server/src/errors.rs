//! Wire errors: the one place an engine error ([`agentd_core::Error`])
//! becomes an [`A2aError`], and where an [`A2aError`] becomes bytes on
//! HTTP (but for the refusal of a connection over a cap, which
//! `listen/mod.rs` writes before HTTP is spoken). JSON-RPC errors go out
//! with HTTP 200 (the envelope carries the error), except before the
//! envelope is read: a caller not authenticated gets 401 (as on REST) and
//! a body that could not be read the table's HTTP status. REST errors go
//! out with the table's HTTP status and a google.rpc.Status body. Both as
//! `application/json`, which every official client decodes.

use agentd_core::{Error, Naming};
use agentd_proto::{A2aError, FieldViolation, jsonrpc};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

pub const JSON: &str = "application/json";

/// An engine error as a client sees it, its field paths named as the
/// binding names fields: the kind's codes come from the one table
/// (`ErrorKind::codes`). A store failure reaches the client as a bare
/// internal error; its cause goes to the log.
pub fn from_core(e: Error, naming: Naming) -> A2aError {
    let mut out = match &e {
        Error::Invalid(invalid) => {
            let violations = invalid
                .violations
                .iter()
                .map(|v| FieldViolation { field: v.field.render(naming), description: v.description.clone() })
                .collect();
            A2aError { message: invalid.message(naming), ..A2aError::invalid_fields(violations) }
        }
        Error::Store(cause) => {
            tracing::error!(error = %cause, "internal error");
            A2aError::internal()
        }
        other => A2aError::new(other.kind(), other.to_string()),
    };
    for (k, v) in e.metadata() {
        out.metadata.insert(k.to_owned(), v);
    }
    out
}

/// [`from_core`] for the JSON bindings (JSON-RPC, REST): ProtoJSON names.
pub fn json(e: Error) -> A2aError {
    from_core(e, Naming::Json)
}

/// [`from_core`] for gRPC: the proto's own (snake_case) field names.
pub fn grpc(e: Error) -> A2aError {
    from_core(e, Naming::Proto)
}

pub fn json_response<T: serde::Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    json_bytes_response(status, serde_json::to_vec(body).unwrap_or_default())
}

/// A body already serialized as JSON.
pub fn json_bytes_response(status: StatusCode, json: impl IntoResponse) -> Response {
    (status, [(header::CONTENT_TYPE, HeaderValue::from_static(JSON))], json).into_response()
}

pub fn jsonrpc_error(id: &jsonrpc::Id, e: &A2aError) -> Response {
    json_bytes_response(StatusCode::OK, jsonrpc::failure(id, e).into_bytes())
}

pub fn rest_error(e: &A2aError) -> Response {
    let status = StatusCode::from_u16(e.kind.codes().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &e.to_rest())
}

/// 401 before dispatch, with the challenge the configured schemes imply
/// (503 when the token's issuer cannot be reached to check it).
pub fn unauthenticated(auth: &crate::auth::Authenticator, failure: &crate::auth::AuthFailure) -> Response {
    if let crate::auth::AuthFailure::Unavailable(_) = failure {
        return rest_error(&A2aError::new(agentd_proto::ErrorKind::Unavailable, failure.message()));
    }
    let e = A2aError::new(agentd_proto::ErrorKind::Unauthenticated, failure.message());
    let mut r = rest_error(&e);
    if let Ok(v) = HeaderValue::from_str(&auth.challenge(failure)) {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_core::FieldPath;
    use agentd_proto::{ErrorKind, TaskState};

    #[test]
    fn engine_errors_reach_json_clients_as_before() {
        assert_eq!(json(Error::task_not_found("t1")), A2aError::task_not_found("t1"));
        let e = Error::invalid(FieldPath::of("message.parts"), "at least one part is required");
        assert_eq!(json(e), A2aError::invalid_field("message.parts", "at least one part is required"));
        let e = json(Error::NotCancelable { id: "t1".into(), state: TaskState::Completed });
        assert_eq!(e.kind, ErrorKind::TaskNotCancelable);
        assert_eq!(e.message, "task \"t1\" is TASK_STATE_COMPLETED and can no longer be canceled");
        assert_eq!(e.metadata.get("taskId").map(String::as_str), Some("t1"));
        assert_eq!(
            json(Error::PushNotSupported(None)),
            A2aError::of(ErrorKind::PushNotificationNotSupported)
        );
        assert_eq!(json(Error::internal()), A2aError::internal());
    }

    #[test]
    fn grpc_names_message_fields_in_snake_case() {
        let e = Error::invalid(FieldPath::of("configuration.taskPushNotificationConfig.url"), "is required");
        let wire = grpc(e);
        assert_eq!(wire.violations[0].field, "configuration.task_push_notification_config.url");
        assert_eq!(wire.message, "configuration.task_push_notification_config.url: is required");
    }
}
