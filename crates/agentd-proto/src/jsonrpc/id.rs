//! The request id: kept as the text the request wrote, so that the answer
//! echoes it byte for byte (`1E2` stays `1E2`, not `100.0`; a client
//! matching answers to requests by the id's text finds its own).

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use std::fmt;

/// The longest id accepted, in bytes of its JSON text: an id is a name for
/// a request, not a payload the server should carry into every answer and
/// every frame of a stream.
pub const MAX_ID_BYTES: usize = 256;

/// A request id (a JSON string, number or null) as its JSON text.
#[derive(Clone, Debug)]
pub struct Id(Box<RawValue>);

impl Id {
    /// `null`: the id of an answer to a request whose id could not be read.
    pub fn null() -> Self {
        Id(RawValue::NULL.to_owned())
    }

    /// The id `text` (JSON) is, if it is a valid one; test and tool
    /// support, the server reads ids with the request.
    pub fn from_text(text: &str) -> Option<Self> {
        let raw: &RawValue = serde_json::from_str(text).ok()?;
        Self::from_raw(raw).ok()
    }

    /// The id member's text, or why it cannot be one.
    pub(crate) fn from_raw(raw: &RawValue) -> Result<Self, &'static str> {
        // A raw read lets an escape through unchecked (`"\ud800"`, half a
        // surrogate pair): one that names no character is not echoed.
        // Only an id with an escape pays for the check.
        let text = raw.get();
        if text.starts_with('"') && text.contains('\\') && serde_json::from_str::<String>(text).is_err() {
            return Err("`id` is not a valid JSON string");
        }
        match text.as_bytes().first() {
            Some(b'"' | b'-' | b'0'..=b'9' | b'n') if raw.get().len() <= MAX_ID_BYTES => {
                Ok(Id(raw.to_owned()))
            }
            Some(b'"' | b'-' | b'0'..=b'9') => {
                Err("`id` is longer than this server accepts (256 bytes of JSON)")
            }
            _ => Err("`id` must be a string, number or null"),
        }
    }

    /// The JSON text, as the request wrote it.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for Id {}

/// Written as the request wrote it.
impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// The JSON text.
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

/// The top-level `id` of `body` as its text, when the body is a JSON object
/// that gives it exactly once (an id given twice is no id to answer with).
/// What a `Value` keeps of an id is not its text, hence this read.
/// Reads the whole body without building anything but the id; `None` for
/// a body that is not an object, or is malformed before its end.
pub fn top_level_id(body: &[u8]) -> Option<&RawValue> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let id = de.deserialize_map(TopLevel).ok()?;
    de.end().ok()?;
    id
}

struct TopLevel;

impl<'de> Visitor<'de> for TopLevel {
    type Value = Option<&'de RawValue>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut id, mut seen) = (None, 0);
        while let Some(is_id) = map.next_key_seed(IsId)? {
            if is_id {
                id = Some(map.next_value::<&RawValue>()?);
                seen += 1;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(id.filter(|_| seen == 1))
    }
}

/// Whether a key is `id`, escaped or not.
struct IsId;

impl<'de> DeserializeSeed<'de> for IsId {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for IsId {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == "id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_its_text_within_the_bound() {
        for text in ["1E2", "-0.50", r#""a\u00e9""#, "null", "12345678901234567890123"] {
            assert_eq!(Id::from_text(text).map(|id| id.to_string()).as_deref(), Some(text));
        }
        for text in ["true", "{}", "[1]", r#""\ud800""#] {
            assert!(Id::from_text(text).is_none(), "{text}");
        }
        let long = format!("\"{}\"", "x".repeat(MAX_ID_BYTES - 2));
        assert!(Id::from_text(&long).is_some(), "256 bytes is the bound");
        let longer = format!("\"{}\"", "x".repeat(MAX_ID_BYTES - 1));
        assert!(Id::from_text(&longer).is_none());
        assert!(Id::from_text(&"9".repeat(MAX_ID_BYTES + 1)).is_none());
        let answer =
            serde_json::to_string(&super::super::Success::new(&Id::from_text("1E2").unwrap(), &5)).unwrap();
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":1E2,"result":5}"#);
    }

    #[test]
    fn the_id_given_once_is_found_whatever_else_the_body_holds() {
        let id = |b: &str| top_level_id(b.as_bytes()).map(|r| r.get().to_owned());
        assert_eq!(id(r#"{"a":{"id":1},"id":"x","p":{"k":1,"k":2}}"#).as_deref(), Some(r#""x""#));
        assert_eq!(id(r#"{"\u0069d": 1E2 }"#).as_deref(), Some("1E2"));
        assert_eq!(id(r#"{"id":1,"id":1}"#), None);
        // Refused with the first repeated member, before a bad id is read.
        let e = crate::jsonrpc::parse_request_within(
            br#"{"a":1,"a":2,"id":"\ud800"}"#,
            crate::JsonLimits::default(),
        )
        .unwrap_err();
        assert_eq!(e.id, Id::null(), "an id that is no JSON string is not echoed");
        assert_eq!(id(r#"{"a":1}"#), None);
        assert_eq!(id(r#"[{"id":1}]"#), None);
        assert_eq!(id(r#"{"id":1,"a":"#), None);
    }
}
