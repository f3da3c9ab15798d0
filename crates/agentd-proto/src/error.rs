//! The one error table. Every error any binding sends is an [`A2aError`]; its
//! [`ErrorKind`] decides the JSON-RPC code, HTTP status, gRPC status and
//! ErrorInfo reason in [`ErrorKind::codes`], an exhaustive match with no
//! catch-all arm, so a new kind cannot ship unmapped.

use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Every kind of error a client can receive (A2A §3.3.2, §5.4 of v1.0.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    // A2A-specific errors.
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    /// An extension's method called without activating the extension
    /// (agentd's own reason on JSON-RPC's method-not-found code).
    ExtensionNotActivated,
    // JSON-RPC standard errors.
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    // Generic categories.
    Unauthenticated,
    PermissionDenied,
    PayloadTooLarge,
    /// The request (its body) did not arrive within the server's deadline.
    RequestTimeout,
    Unavailable,
}

/// The gRPC canonical status codes the table uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GrpcCode {
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    PermissionDenied,
    FailedPrecondition,
    Unimplemented,
    Internal,
    Unavailable,
    Unauthenticated,
}

impl GrpcCode {
    /// The canonical name, also `error.status` in REST bodies.
    pub const fn as_str(self) -> &'static str {
        match self {
            GrpcCode::InvalidArgument => "INVALID_ARGUMENT",
            GrpcCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            GrpcCode::NotFound => "NOT_FOUND",
            GrpcCode::PermissionDenied => "PERMISSION_DENIED",
            GrpcCode::FailedPrecondition => "FAILED_PRECONDITION",
            GrpcCode::Unimplemented => "UNIMPLEMENTED",
            GrpcCode::Internal => "INTERNAL",
            GrpcCode::Unavailable => "UNAVAILABLE",
            GrpcCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

/// Compares with a canonical name (`error.status` as read from a body).
impl PartialEq<&str> for GrpcCode {
    fn eq(&self, name: &&str) -> bool {
        self.as_str() == *name
    }
}

/// The codes of one [`ErrorKind`] on every binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCodes {
    pub jsonrpc: i32,
    pub http: u16,
    pub grpc: GrpcCode,
    /// ErrorInfo `reason`; `None` for generic errors that carry none.
    pub reason: Option<&'static str>,
    /// The message used when the caller gives none.
    pub message: &'static str,
}

impl ErrorKind {
    /// Every kind, for tables and tests that must cover them all.
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::TaskNotFound,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::InvalidAgentResponse,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::VersionNotSupported,
        ErrorKind::ExtensionNotActivated,
        ErrorKind::ParseError,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
        ErrorKind::Unauthenticated,
        ErrorKind::PermissionDenied,
        ErrorKind::PayloadTooLarge,
        ErrorKind::RequestTimeout,
        ErrorKind::Unavailable,
    ];

    pub const fn codes(self) -> ErrorCodes {
        const fn c(
            jsonrpc: i32,
            http: u16,
            grpc: GrpcCode,
            reason: Option<&'static str>,
            message: &'static str,
        ) -> ErrorCodes {
            ErrorCodes { jsonrpc, http, grpc, reason, message }
        }
        use ErrorKind::*;
        use GrpcCode as G;
        match self {
            TaskNotFound => c(-32001, 404, G::NotFound, Some("TASK_NOT_FOUND"), "Task not found"),
            TaskNotCancelable => {
                c(-32002, 400, G::FailedPrecondition, Some("TASK_NOT_CANCELABLE"), "Task cannot be canceled")
            }
            PushNotificationNotSupported => c(
                -32003,
                400,
                G::FailedPrecondition,
                Some("PUSH_NOTIFICATION_NOT_SUPPORTED"),
                "Push notifications are not supported",
            ),
            UnsupportedOperation => c(
                -32004,
                400,
                G::FailedPrecondition,
                Some("UNSUPPORTED_OPERATION"),
                "This operation is not supported",
            ),
            ContentTypeNotSupported => c(
                -32005,
                400,
                G::InvalidArgument,
                Some("CONTENT_TYPE_NOT_SUPPORTED"),
                "Incompatible content types",
            ),
            InvalidAgentResponse => {
                c(-32006, 500, G::Internal, Some("INVALID_AGENT_RESPONSE"), "Invalid agent response")
            }
            ExtendedAgentCardNotConfigured => c(
                -32007,
                400,
                G::FailedPrecondition,
                Some("EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
                "Extended agent card is not configured",
            ),
            ExtensionSupportRequired => c(
                -32008,
                400,
                G::FailedPrecondition,
                Some("EXTENSION_SUPPORT_REQUIRED"),
                "A required extension was not requested",
            ),
            VersionNotSupported => c(
                -32009,
                400,
                G::FailedPrecondition,
                Some("VERSION_NOT_SUPPORTED"),
                "Protocol version not supported",
            ),
            ExtensionNotActivated => c(
                -32601,
                404,
                G::Unimplemented,
                Some(crate::ext::events::NOT_ACTIVATED),
                "The method belongs to an extension the request did not activate",
            ),
            ParseError => c(-32700, 400, G::InvalidArgument, None, "Invalid JSON payload"),
            // Validation errors carry a reason too (the §10.6 rule applied to the
            // error name): REST clients such as a2a-python map errors by reason only.
            InvalidRequest => c(
                -32600,
                400,
                G::InvalidArgument,
                Some("INVALID_REQUEST"),
                "Request payload validation error",
            ),
            MethodNotFound => c(-32601, 404, G::Unimplemented, None, "Method not found"),
            InvalidParams => c(-32602, 400, G::InvalidArgument, Some("INVALID_PARAMS"), "Invalid parameters"),
            Internal => c(-32603, 500, G::Internal, None, "Internal error"),
            Unauthenticated => {
                c(-31401, 401, G::Unauthenticated, Some("UNAUTHENTICATED"), "Authentication required")
            }
            PermissionDenied => {
                c(-31403, 403, G::PermissionDenied, Some("PERMISSION_DENIED"), "Permission denied")
            }
            PayloadTooLarge => {
                c(-32600, 413, G::InvalidArgument, Some("PAYLOAD_TOO_LARGE"), "Request body too large")
            }
            RequestTimeout => {
                c(-32600, 408, G::DeadlineExceeded, Some("REQUEST_TIMEOUT"), "Request not received in time")
            }
            Unavailable => c(-32603, 503, G::Unavailable, Some("UNAVAILABLE"), "Service unavailable"),
        }
    }
}

/// One entry of a `google.rpc.BadRequest`: the field that is wrong and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldViolation {
    pub field: String,
    pub description: String,
}

/// An error as a client sees it: a kind, a human message, ErrorInfo metadata
/// and, for validation errors, the violated fields.
#[derive(Clone, Debug, PartialEq)]
pub struct A2aError {
    pub kind: ErrorKind,
    pub message: String,
    /// ErrorInfo metadata (string values only, as `map<string,string>`).
    pub metadata: BTreeMap<String, String>,
    pub violations: Vec<FieldViolation>,
    /// Overrides the table's ErrorInfo reason (extension-defined reasons).
    pub reason: Option<String>,
}

impl std::fmt::Display for A2aError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl std::error::Error for A2aError {}

impl A2aError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            metadata: BTreeMap::new(),
            violations: Vec::new(),
            reason: None,
        }
    }
    pub fn of(kind: ErrorKind) -> Self {
        Self::new(kind, kind.codes().message)
    }
    pub fn with_meta(mut self, k: &str, v: impl Into<String>) -> Self {
        self.metadata.insert(k.to_owned(), v.into());
        self
    }
    pub fn with_reason(mut self, reason: &str) -> Self {
        self.reason = Some(reason.to_owned());
        self
    }
    pub fn task_not_found(id: &str) -> Self {
        Self::new(ErrorKind::TaskNotFound, format!("task {id:?} not found")).with_meta("taskId", id)
    }
    /// InvalidParams naming one field.
    pub fn invalid_field(field: &str, description: impl Into<String>) -> Self {
        let description = description.into();
        let mut e = Self::new(ErrorKind::InvalidParams, format!("{field}: {description}"));
        e.violations.push(FieldViolation { field: field.to_owned(), description });
        e
    }
    /// InvalidParams listing several violations.
    pub fn invalid_fields(violations: Vec<FieldViolation>) -> Self {
        let message = violations
            .iter()
            .map(|v| format!("{}: {}", v.field, v.description))
            .collect::<Vec<_>>()
            .join("; ");
        Self { violations, ..Self::new(ErrorKind::InvalidParams, message) }
    }
    pub fn internal() -> Self {
        Self::of(ErrorKind::Internal)
    }

    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref().or(self.kind.codes().reason)
    }

    /// The typed detail objects (`google.rpc.ErrorInfo`, `google.rpc.BadRequest`).
    pub fn details(&self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(reason) = self.reason() {
            let mut info = json!({
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": crate::ERROR_DOMAIN,
            });
            if !self.metadata.is_empty() {
                info["metadata"] = json!(self.metadata);
            }
            out.push(info);
        }
        if !self.violations.is_empty() {
            let v: Vec<Value> = self
                .violations
                .iter()
                .map(|v| json!({"field": v.field, "description": v.description}))
                .collect();
            out.push(json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": v,
            }));
        }
        out
    }

    /// The JSON-RPC `error` member: `{code, message, data: [details]}`.
    pub fn to_jsonrpc(&self) -> Value {
        let mut e = json!({"code": self.kind.codes().jsonrpc, "message": self.message});
        let details = self.details();
        if !details.is_empty() {
            e["data"] = Value::Array(details);
        }
        e
    }

    /// The HTTP+JSON body: `{"error": {code, status, message, details}}` (AIP-193).
    pub fn to_rest(&self) -> Value {
        let c = self.kind.codes();
        json!({"error": {
            "code": c.http,
            "status": c.grpc.as_str(),
            "message": self.message,
            "details": self.details(),
        }})
    }
}
