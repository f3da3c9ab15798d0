//! The envelope read without building the request as a `Value`: the
//! members are lent from the body and `params` stays text until the method
//! is known and its type decodes it. Taken only for a body
//! [`bounded::plain_within`] passes (valid, within the limits, plain
//! distinct keys), which reads the same from its text as from its `Value`;
//! any other body goes through [`super::parse_request_within`], which also
//! words every error.

use super::{EnvelopeError, Id, Request};
use crate::bounded::{self, JsonLimits};
use crate::validate::Params;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A request whose envelope is valid, its method and params lent from the
/// body where they could be.
#[derive(Debug)]
pub struct LentRequest<'a> {
    /// String, number or null; echoed as received. `None`: a notification.
    pub id: Option<Id>,
    pub method: Cow<'a, str>,
    /// `None` when the member is absent or null.
    pub params: Option<Params<'a>>,
}

impl From<Request> for LentRequest<'_> {
    fn from(r: Request) -> Self {
        LentRequest { id: r.id, method: Cow::Owned(r.method), params: r.params.map(Params::Value) }
    }
}

/// [`super::parse_request_within`], the same outcome for every body, with
/// params left as text when that reads the same.
pub fn parse_request_lent(body: &[u8], limits: JsonLimits) -> Result<LentRequest<'_>, EnvelopeError> {
    if bounded::plain_within(body, limits)
        && let Some(read) = envelope(body)
    {
        return read;
    }
    super::parse_request_within(body, limits).map(LentRequest::from)
}

/// `None` when the body is not read here after all (it cannot be, once
/// [`bounded::plain_within`] passed it; then the `Value` path answers).
fn envelope(body: &[u8]) -> Option<Result<LentRequest<'_>, EnvelopeError>> {
    let invalid = |id: Id, msg: &str| {
        Some(Err(EnvelopeError {
            id,
            error: crate::A2aError::new(crate::ErrorKind::InvalidRequest, msg.to_owned()),
        }))
    };
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(b'[') => return invalid(Id::null(), "batch requests are not supported"),
        _ => return invalid(Id::null(), "a JSON-RPC request must be an object"),
    }
    let m: Members = serde_json::from_slice(body).ok()?;
    let id = match m.id.map(Id::from_raw) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(why)) => return invalid(Id::null(), why),
    };
    let or_null = |id: Option<Id>| id.unwrap_or_else(Id::null);
    if m.jsonrpc.and_then(string).as_deref() != Some("2.0") {
        return invalid(or_null(id), "`jsonrpc` must be \"2.0\"");
    }
    let method = match m.method.and_then(string) {
        Some(m) if !m.is_empty() => m,
        _ => return invalid(or_null(id), "`method` must be a non-empty string"),
    };
    let params = match m.params.map(|p| (p, p.get().as_bytes()[0])) {
        None | Some((_, b'n')) => None,
        Some((p, b'{')) => Some(Params::Text(p)),
        Some(_) => return invalid(or_null(id), "`params` must be an object"),
    };
    Some(Ok(LentRequest { id, method, params }))
}

/// A JSON string's value, lent when it holds no escape.
fn string(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    let inner = text.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(text).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// The envelope's members as their text (a body read here names each once).
#[derive(Default)]
struct Members<'a> {
    id: Option<&'a RawValue>,
    jsonrpc: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
}

impl<'de> de::Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MembersVisitor)
    }
}

struct MembersVisitor;

impl<'de> Visitor<'de> for MembersVisitor {
    type Value = Members<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
        let mut m = Members::default();
        // Lent keys only: a body with an escaped key is not read here.
        while let Some(key) = map.next_key::<&'de str>()? {
            let slot = match key {
                "id" => &mut m.id,
                "jsonrpc" => &mut m.jsonrpc,
                "method" => &mut m.method,
                "params" => &mut m.params,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests;
