//! JSON read with bounds counted while parsing: nesting depth and the
//! number of values. A request body is small on the wire but each value
//! costs tens of bytes once parsed (and again in every copy made of it), so
//! a body within the size limit can still cost hundreds of times its size.
//! The count stops the parse at the first value over the limit, before the
//! rest is built. serde_json offers only a fixed recursion limit (128) and
//! no count, hence this visitor; it builds the same `Value` serde_json
//! would (same number handling, later duplicate keys win).

use crate::error::{A2aError, ErrorKind};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

mod scan;
pub use scan::plain_within;

/// Bounds on one JSON document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonLimits {
    /// Deepest nesting of arrays and objects (the top-level object is 1).
    pub max_depth: usize,
    /// Most values in the document: every scalar, array and object counts one.
    pub max_values: usize,
}

impl Default for JsonLimits {
    fn default() -> Self {
        // About 14 MiB at the daemon's peak for a body of small numbers
        // (some 700 bytes a value across its copies, measured).
        Self { max_depth: 64, max_values: 20_000 }
    }
}

/// The limit a document exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exceeded {
    Depth(usize),
    Values(usize),
}

/// Why a document was refused: not JSON at all, or over a limit.
#[derive(Debug)]
pub enum BoundedError {
    Syntax(serde_json::Error),
    Limit(Exceeded),
}

impl BoundedError {
    /// The wire error: ParseError for bad JSON, InvalidParams on the
    /// `body` naming the limit (and the configuration key that raises it) for one exceeded.
    pub fn to_a2a(&self) -> A2aError {
        match self {
            BoundedError::Syntax(e) => A2aError::new(ErrorKind::ParseError, format!("Invalid JSON payload: {e}")),
            BoundedError::Limit(Exceeded::Depth(n)) => A2aError::invalid_field(
                "body",
                format!("the request nests JSON deeper than this server accepts ({n} levels, server.max_json_depth)"),
            )
            .with_meta("limit", "server.max_json_depth")
            .with_meta("limitValue", n.to_string()),
            BoundedError::Limit(Exceeded::Values(n)) => A2aError::invalid_field(
                "body",
                format!("the request holds more JSON values than this server accepts ({n}, server.max_json_values)"),
            )
            .with_meta("limit", "server.max_json_values")
            .with_meta("limitValue", n.to_string()),
        }
    }
}

/// Parses `bytes` as one JSON document within `limits`.
pub fn parse(bytes: &[u8], limits: JsonLimits) -> Result<Value, BoundedError> {
    let state = State { limits, left: Cell::new(limits.max_values), exceeded: Cell::new(None) };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Seed { state: &state, depth: 0 }.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    match (parsed, state.exceeded.get()) {
        (_, Some(limit)) => Err(BoundedError::Limit(limit)),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(BoundedError::Syntax(e)),
    }
}

struct State {
    limits: JsonLimits,
    left: Cell<usize>,
    exceeded: Cell<Option<Exceeded>>,
}

impl State {
    fn count<E: de::Error>(&self) -> Result<(), E> {
        match self.left.get().checked_sub(1) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => self.fail(Exceeded::Values(self.limits.max_values)),
        }
    }
    fn fail<T, E: de::Error>(&self, limit: Exceeded) -> Result<T, E> {
        self.exceeded.set(Some(limit));
        Err(E::custom("JSON limit exceeded"))
    }
}

#[derive(Clone, Copy)]
struct Seed<'a> {
    state: &'a State,
    /// Containers around the value being read.
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl Seed<'_> {
    /// The seed for the members of a container at this value, counting it.
    fn enter<E: de::Error>(self) -> Result<Self, E> {
        self.state.count()?;
        if self.depth >= self.state.limits.max_depth {
            return self.state.fail(Exceeded::Depth(self.state.limits.max_depth));
        }
        Ok(Seed { state: self.state, depth: self.depth + 1 })
    }
    fn scalar<E: de::Error>(self, v: Value) -> Result<Value, E> {
        self.state.count()?;
        Ok(v)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.scalar(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.scalar(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.scalar(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.scalar(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.scalar(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.scalar(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.scalar(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.scalar(Value::Null)
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(inner)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(inner)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: JsonLimits = JsonLimits { max_depth: 3, max_values: 10 };

    #[test]
    fn within_the_limits_it_is_what_serde_json_reads() {
        let text = r#"{"a":[1,-2,3.5],"b":{"c":null},"a2":"x","a2":"y"}"#;
        let want: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parse(text.as_bytes(), L).unwrap(), want);
        assert_eq!(parse(b"[[[]]]", L).unwrap(), serde_json::json!([[[]]]));
    }

    #[test]
    fn depth_and_count_are_refused_at_the_first_value_over() {
        assert!(matches!(parse(b"[[[[]]]]", L), Err(BoundedError::Limit(Exceeded::Depth(3)))));
        assert!(matches!(
            parse(b"[1,2,3,4,5,6,7,8,9,10]", L),
            Err(BoundedError::Limit(Exceeded::Values(10)))
        ));
        assert!(parse(b"[1,2,3,4,5,6,7,8,9]", L).is_ok(), "ten values is the limit");
        let e = parse(b"[1,2,3,4,5,6,7,8,9,10]", L).unwrap_err().to_a2a();
        assert_eq!(e.kind, ErrorKind::InvalidParams);
        assert!(e.message.contains("server.max_json_values") && e.message.contains("10"), "{}", e.message);
    }

    #[test]
    fn syntax_errors_stay_parse_errors() {
        for bad in [&b"{"[..], b"[1,]", b"{} x", b""] {
            let e = parse(bad, L).unwrap_err();
            assert!(matches!(e, BoundedError::Syntax(_)), "{bad:?}");
            assert_eq!(e.to_a2a().kind, ErrorKind::ParseError);
        }
    }
}
