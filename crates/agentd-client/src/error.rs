//! What can go wrong talking to an A2A server, typed so that each caller
//! can say it in its own words (the CLI to a person at a terminal, a
//! delegation to the model that asked for it).

use crate::describe::describe;
use crate::sse::SseError;
use serde_json::Value;

/// The `@type` of the detail that carries an error's reason.
const ERROR_INFO: &str = "google.rpc.ErrorInfo";

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server refused: a JSON-RPC `error` (in an answer or a stream
    /// frame), or an A2A error body sent with a non-2xx status.
    #[error("{0}")]
    Refused(RpcError),
    /// A non-2xx answer without an A2A error body.
    #[error("HTTP {status}: {body}")]
    Status {
        status: u16,
        /// The first characters of the body.
        body: String,
    },
    /// No answer: the request could not be sent, or none came in time.
    #[error("{}", describe(.0))]
    Transport(#[source] reqwest::Error),
    /// The answer or stream broke off while it was being read.
    #[error("the answer broke off: {}", describe(.0))]
    BrokenOff(#[source] reqwest::Error),
    /// The answer (or a stream event) is not JSON.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// A JSON-RPC answer with neither `result` nor `error`.
    #[error("the answer has neither result nor error")]
    NoResult,
    /// The `result` is not of the type the method returns.
    #[error("unexpected result: {0}")]
    UnexpectedResult(#[source] serde_json::Error),
    /// The answer is larger than the client accepts.
    #[error("the answer is larger than {0} bytes")]
    TooLarge(usize),
    /// The event stream cannot be decoded.
    #[error("the event stream: {0}")]
    Sse(#[from] SseError),
    /// A header value given to the client cannot be sent.
    #[error("{0} has characters not allowed in an HTTP header")]
    BadHeader(&'static str),
}

impl ClientError {
    /// The server's refusal, if that is what this is.
    pub fn refusal(&self) -> Option<&RpcError> {
        match self {
            ClientError::Refused(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the server refused with this ErrorInfo reason.
    pub fn has_reason(&self, reason: &str) -> bool {
        self.refusal().and_then(|e| e.reason.as_deref()) == Some(reason)
    }
}

/// An error the server answered with: the JSON-RPC `error` member
/// (`{code, message, data}`) or an HTTP+JSON error body
/// (`{code, status, message, details}`).
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The HTTP status it came with (200 for a JSON-RPC error).
    pub http_status: u16,
    /// The JSON-RPC code, or the HTTP status of an HTTP+JSON body.
    pub code: Option<i64>,
    /// The canonical status name of an HTTP+JSON body (`UNAUTHENTICATED`).
    pub status: Option<String>,
    pub message: Option<String>,
    /// The ErrorInfo `reason` (`TASK_NOT_FOUND`, …).
    pub reason: Option<String>,
    /// The typed details as sent (`data` or `details`).
    pub details: Vec<Value>,
}

impl RpcError {
    /// Reads an error object; `None` when `v` is not one.
    pub fn from_wire(v: &Value, http_status: u16) -> Option<Self> {
        let o = v.as_object()?;
        let details: Vec<Value> =
            o.get("data").or_else(|| o.get("details")).and_then(Value::as_array).cloned().unwrap_or_default();
        let reason = details.iter().find_map(|d| {
            let is_info = d["@type"].as_str().is_some_and(|t| t.ends_with(ERROR_INFO));
            if is_info { d["reason"].as_str().map(str::to_owned) } else { None }
        });
        Some(Self {
            http_status,
            code: o.get("code").and_then(Value::as_i64),
            status: o.get("status").and_then(Value::as_str).map(str::to_owned),
            message: o.get("message").and_then(Value::as_str).map(str::to_owned),
            reason,
            details,
        })
    }
}

/// `<message> (<code>, <reason>)`; an HTTP+JSON error's code is shown as
/// `HTTP <status>`.
impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = self.message.as_deref().unwrap_or("an error without a message");
        let code = match self.code {
            None => "no code".to_owned(),
            Some(c) if self.status.is_some() => format!("HTTP {c}"),
            Some(c) => c.to_string(),
        };
        match &self.reason {
            Some(r) => write!(f, "{message} ({code}, {r})"),
            None => write!(f, "{message} ({code})"),
        }
    }
}

impl std::error::Error for RpcError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_read_as_message_code_and_reason() {
        let e = json!({"code": -32001, "message": "task \"x\" not found", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}
        ]});
        let e = RpcError::from_wire(&e, 200).unwrap();
        assert_eq!(e.to_string(), "task \"x\" not found (-32001, TASK_NOT_FOUND)");
        assert!(ClientError::Refused(e).has_reason("TASK_NOT_FOUND"));
        let e = json!({"code": -32602, "message": "id: is required"});
        assert_eq!(RpcError::from_wire(&e, 200).unwrap().to_string(), "id: is required (-32602)");
        let e = json!({"code": 401, "status": "UNAUTHENTICATED", "message": "the bearer token is not valid", "details": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "UNAUTHENTICATED"}
        ]});
        let e = RpcError::from_wire(&e, 401).unwrap();
        assert_eq!(e.to_string(), "the bearer token is not valid (HTTP 401, UNAUTHENTICATED)");
        assert_eq!(e.http_status, 401);
        assert_eq!(
            RpcError::from_wire(&json!({}), 200).unwrap().to_string(),
            "an error without a message (no code)"
        );
        assert!(RpcError::from_wire(&json!("oops"), 200).is_none());
    }
}
