//! Decoding request parameters with errors that name the field, and the
//! REQUIRED-field checks of §5.7 that serde cannot express.

use crate::error::{A2aError, FieldViolation};
use crate::strict::ObjectsOnly;
use crate::types::{Message, Role};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes `params` into `T`; a failure is InvalidParams naming the path of
/// the offending member (e.g. `message.parts[0]`). Message-typed members
/// must be JSON objects ([`ObjectsOnly`]): an array is not a message.
pub fn decode<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    serde_path_to_error::deserialize::<_, T>(ObjectsOnly(params)).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() { "params".to_owned() } else { path };
        A2aError::invalid_field(&field, e.inner().to_string())
    })
}

/// Decodes from raw JSON bytes (REST bodies); malformed JSON is a ParseError.
pub fn decode_bytes<T: DeserializeOwned>(body: &[u8]) -> Result<T, A2aError> {
    let v: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        serde_json::from_slice(body)
            .map_err(|e| A2aError::new(crate::ErrorKind::ParseError, format!("Invalid JSON payload: {e}")))?
    };
    if !v.is_object() {
        return Err(A2aError::invalid_field("body", "the request body must be a JSON object"));
    }
    decode(v)
}

/// REQUIRED members of a client Message (§4.1.4, §5.7).
pub fn message(prefix: &str, m: &Message, out: &mut Vec<FieldViolation>) {
    let mut bad = |f: &str, d: &str| {
        out.push(FieldViolation { field: format!("{prefix}.{f}"), description: d.to_owned() })
    };
    if m.message_id.trim().is_empty() {
        bad("messageId", "is required");
    }
    if m.role == Role::Unspecified {
        bad("role", "is required (ROLE_USER or ROLE_AGENT)");
    }
    if m.parts.is_empty() {
        bad("parts", "at least one part is required");
    }
}

/// `historyLength` must not be negative.
pub fn history_length(field: &str, n: Option<i32>, out: &mut Vec<FieldViolation>) {
    if let Some(n) = n
        && n < 0
    {
        out.push(FieldViolation { field: field.to_owned(), description: "must not be negative".into() });
    }
}

/// Turns collected violations into a result.
pub fn finish(violations: Vec<FieldViolation>) -> Result<(), A2aError> {
    if violations.is_empty() { Ok(()) } else { Err(A2aError::invalid_fields(violations)) }
}
