//! An [`A2aError`] as a gRPC status: the table's canonical code, the
//! message, and a `google.rpc.Status` in `grpc-status-details-bin` carrying
//! ErrorInfo (reason, domain `a2a-protocol.org`, metadata) and, for
//! validation errors, a BadRequest with the field violations.

use agentd_proto::{A2aError, ERROR_DOMAIN};
use std::collections::HashMap;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

/// The [`Code`] of a canonical status name (`ErrorKind::codes().grpc`).
pub fn code(name: &str) -> Code {
    match name {
        "OK" => Code::Ok,
        "CANCELLED" => Code::Cancelled,
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
        "NOT_FOUND" => Code::NotFound,
        "ALREADY_EXISTS" => Code::AlreadyExists,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "ABORTED" => Code::Aborted,
        "OUT_OF_RANGE" => Code::OutOfRange,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "INTERNAL" => Code::Internal,
        "UNAVAILABLE" => Code::Unavailable,
        "DATA_LOSS" => Code::DataLoss,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        _ => Code::Unknown,
    }
}

pub fn to_status(e: &A2aError) -> Status {
    let mut details = ErrorDetails::new();
    if let Some(reason) = e.reason() {
        let metadata: HashMap<String, String> =
            e.metadata.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        details.set_error_info(reason, ERROR_DOMAIN, metadata);
    }
    if !e.violations.is_empty() {
        let v: Vec<FieldViolation> =
            e.violations.iter().map(|v| FieldViolation::new(&v.field, &v.description)).collect();
        details.set_bad_request(v);
    }
    Status::with_error_details(code(e.kind.codes().grpc), e.message.clone(), details)
}

impl From<super::wkt::FieldError> for Status {
    fn from(e: super::wkt::FieldError) -> Self {
        to_status(&e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_proto::ErrorKind;

    #[test]
    fn every_kind_maps_to_a_known_code() {
        for &k in ErrorKind::ALL {
            assert_ne!(code(k.codes().grpc), Code::Unknown, "{k:?}");
        }
    }

    #[test]
    fn details_carry_error_info_and_bad_request() {
        let s = to_status(&A2aError::task_not_found("t1"));
        assert_eq!(s.code(), Code::NotFound);
        let d = s.get_error_details();
        let info = d.error_info().expect("ErrorInfo");
        assert_eq!(info.reason, "TASK_NOT_FOUND");
        assert_eq!(info.domain, "a2a-protocol.org");
        assert_eq!(info.metadata.get("taskId").map(String::as_str), Some("t1"));

        let s = to_status(&A2aError::invalid_field("message.parts", "at least one part is required"));
        assert_eq!(s.code(), Code::InvalidArgument);
        let d = s.get_error_details();
        let br = d.bad_request().expect("BadRequest");
        assert_eq!(br.field_violations[0].field, "message.parts");
        assert_eq!(d.error_info().map(|i| i.reason.as_str()), Some("INVALID_PARAMS"));
    }
}
