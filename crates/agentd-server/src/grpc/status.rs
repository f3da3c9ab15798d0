//! An [`A2aError`] as a gRPC status: the table's canonical code, the
//! message, and a `google.rpc.Status` in `grpc-status-details-bin` carrying
//! ErrorInfo (reason, domain `a2a-protocol.org`, metadata) and, for
//! validation errors, a BadRequest with the field violations.

use agentd_proto::{A2aError, ERROR_DOMAIN, GrpcCode};
use std::collections::HashMap;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

/// The [`Code`] of the table's gRPC code (`ErrorKind::codes().grpc`); no
/// catch-all arm, so a new code cannot ship unmapped.
pub fn code(c: GrpcCode) -> Code {
    match c {
        GrpcCode::InvalidArgument => Code::InvalidArgument,
        GrpcCode::DeadlineExceeded => Code::DeadlineExceeded,
        GrpcCode::NotFound => Code::NotFound,
        GrpcCode::PermissionDenied => Code::PermissionDenied,
        GrpcCode::FailedPrecondition => Code::FailedPrecondition,
        GrpcCode::Unimplemented => Code::Unimplemented,
        GrpcCode::Internal => Code::Internal,
        GrpcCode::Unavailable => Code::Unavailable,
        GrpcCode::Unauthenticated => Code::Unauthenticated,
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
    fn every_kind_has_the_same_code_on_grpc_and_in_rest_bodies() {
        for &k in ErrorKind::ALL {
            let g = k.codes().grpc;
            // `INVALID_ARGUMENT` is tonic's `InvalidArgument`.
            let camel: String =
                g.as_str().split('_').map(|w| w[..1].to_owned() + &w[1..].to_ascii_lowercase()).collect();
            assert_eq!(format!("{:?}", code(g)), camel, "{k:?}");
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
