//! Decoding request parameters with errors that name the field, and the
//! REQUIRED-field checks of §5.7 that serde cannot express.

use crate::error::{A2aError, FieldViolation};
use crate::strict::ObjectsOnly;
use crate::types::{Message, Role};
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

/// Decodes `params` into `T`; a failure is InvalidParams naming the path of
/// the offending member (e.g. `message.parts[0]`). Message-typed members
/// must be JSON objects ([`ObjectsOnly`]): an array is not a message.
pub fn decode<T: DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    serde_path_to_error::deserialize::<_, T>(ObjectsOnly(params))
        .map_err(|e| invalid(&e, e.inner().to_string()))
}

/// Request parameters as a binding has them: a `Value`, or the text of a
/// JSON object lent from the request body (decoded straight into the
/// request's type, no `Value` built on the way).
#[derive(Clone, Debug)]
pub enum Params<'a> {
    Value(Value),
    Text(&'a RawValue),
}

impl Params<'_> {
    /// [`decode`] from either form, with the same outcome. The text must
    /// hold no duplicate keys (a `Value` keeps the later one, a struct read
    /// from text refuses them): [`crate::bounded::plain_within`] checks it.
    pub fn decode<T: DeserializeOwned>(self) -> Result<T, A2aError> {
        match self {
            Params::Value(v) => decode(v),
            Params::Text(raw) => {
                let mut de = serde_json::Deserializer::from_str(raw.get());
                // A refusal is worded by the `Value` reading: the text reader
                // words some otherwise (an enum given `5` is "expected value"
                // there, "invalid type: integer `5`, …" from a `Value`).
                T::deserialize(ObjectsOnly(&mut de)).or_else(|_| decode(Params::Text(raw).into_value()?))
            }
        }
    }

    /// The params as a `Value`.
    pub fn into_value(self) -> Result<Value, A2aError> {
        match self {
            Params::Value(v) => Ok(v),
            Params::Text(raw) => serde_json::from_str(raw.get()).map_err(|e| {
                A2aError::new(crate::ErrorKind::ParseError, format!("Invalid JSON payload: {e}"))
            }),
        }
    }
}

/// InvalidParams naming the member a decode failed at; a member the
/// request lacks is named itself, as required.
fn invalid<E>(e: &serde_path_to_error::Error<E>, description: String) -> A2aError {
    let path = e.path().to_string();
    let root = path == "." || path.is_empty();
    match missing_member(&description) {
        Some(member) if root => A2aError::invalid_field(member, REQUIRED),
        Some(member) => A2aError::invalid_field(&format!("{path}.{member}"), REQUIRED),
        None if root => A2aError::invalid_field("params", description),
        None => A2aError::invalid_field(&path, description),
    }
}

/// What a violation says of a member the request lacks.
const REQUIRED: &str = "is required";

/// The member serde's "missing field `x`" names.
fn missing_member(description: &str) -> Option<&str> {
    description.strip_prefix("missing field `")?.strip_suffix('`')
}

/// One step of the path [`decode_at`] reports: a JSON member or a list index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathStep {
    Member(String),
    Index(usize),
}

/// Where a value failed to decode (empty: the value itself) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeFailure {
    pub path: Vec<PathStep>,
    pub description: String,
}

/// [`decode`] for a value nested in a request (a payload inside
/// metadata): the failure's path as steps, for the caller to put under
/// where the value sat.
pub fn decode_at<T: DeserializeOwned>(value: Value) -> Result<T, DecodeFailure> {
    use serde_path_to_error::Segment;
    serde_path_to_error::deserialize::<_, T>(ObjectsOnly(value)).map_err(|e| {
        let mut path: Vec<PathStep> = e
            .path()
            .iter()
            .map(|s| match s {
                Segment::Seq { index } => PathStep::Index(*index),
                Segment::Map { key } => PathStep::Member(key.clone()),
                Segment::Enum { variant } => PathStep::Member(variant.clone()),
                Segment::Unknown => PathStep::Member("?".into()),
            })
            .collect();
        let mut description = e.inner().to_string();
        if let Some(member) = missing_member(&description) {
            path.push(PathStep::Member(member.to_owned()));
            description = REQUIRED.to_owned();
        }
        DecodeFailure { path, description }
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

/// REQUIRED members of a client Message (§4.1.4, §5.7), and its role.
pub fn message(prefix: &str, m: &Message, out: &mut Vec<FieldViolation>) {
    for (f, d) in message_problems(m) {
        out.push(FieldViolation { field: format!("{prefix}.{f}"), description: d.to_owned() });
    }
}

/// The REQUIRED members a client Message lacks, and a role that is not
/// the client's (§4.1.5: ROLE_USER is client to server): each member's
/// name and why.
pub fn message_problems(m: &Message) -> impl Iterator<Item = (&'static str, &'static str)> {
    [
        m.message_id.trim().is_empty().then_some(("messageId", "is required")),
        (m.role == Role::Unspecified).then_some(("role", "is required (ROLE_USER)")),
        // ROLE_AGENT is the server's: taken from a client, it would be
        // stored as the agent's own words and replayed to its model so.
        (m.role == Role::Agent).then_some(("role", "a client's message has role ROLE_USER")),
        m.parts.is_empty().then_some(("parts", "at least one part is required")),
    ]
    .into_iter()
    .flatten()
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
