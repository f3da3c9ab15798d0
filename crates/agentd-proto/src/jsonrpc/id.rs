//! The request id of a body whose envelope could not be read as a whole.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// The top-level `id` of `body` as its text, when the body is a JSON object
/// that gives it exactly once (an id given twice is no id to answer with).
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
    fn the_id_given_once_is_found_whatever_else_the_body_holds() {
        let id = |b: &str| top_level_id(b.as_bytes()).map(|r| r.get().to_owned());
        assert_eq!(id(r#"{"a":{"id":1},"id":"x","p":{"k":1,"k":2}}"#).as_deref(), Some(r#""x""#));
        assert_eq!(id(r#"{"\u0069d": 1E2 }"#).as_deref(), Some("1E2"));
        assert_eq!(id(r#"{"id":1,"id":1}"#), None);
        assert_eq!(id(r#"{"a":1}"#), None);
        assert_eq!(id(r#"[{"id":1}]"#), None);
        assert_eq!(id(r#"{"id":1,"a":"#), None);
    }
}
