//! JSON read with bounds counted while parsing: nesting depth and the
//! number of values. A request body is small on the wire but each value
//! costs tens of bytes once parsed (and again in every copy made of it), so
//! a body within the size limit can still cost hundreds of times its size.
//! The count stops the parse at the first value over the limit, before the
//! rest is built. serde_json offers only a fixed recursion limit (128) and
//! no count, hence this visitor; it builds the same `Value` serde_json
//! would (same number handling), but refuses an object that names a member
//! twice: RFC 8259 leaves the meaning of such an object to each reader
//! (serde_json keeps the later member, other readers the first), so a
//! proxy or logger in front of the daemon could act on another request
//! than the one the daemon runs.

use crate::error::{A2aError, ErrorKind, FieldViolation};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::{Cell, RefCell};
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

/// Why a document was refused: not JSON at all, over a limit, or naming a
/// member twice in one object.
#[derive(Debug)]
pub enum BoundedError {
    Syntax(serde_json::Error),
    Limit(Exceeded),
    /// The path of the repeated member from the document's root
    /// (`params.message.messageId`, `parts[0].text`).
    Duplicate(String),
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
            // The text is JSON by RFC 8259's grammar (so not a parse error)
            // but not a request whose meaning is settled: the request as a
            // whole is refused, as JSON-RPC's invalid request.
            BoundedError::Duplicate(path) => {
                let description = "the member is given more than once in its object";
                let mut e =
                    A2aError::new(ErrorKind::InvalidRequest, format!("duplicate JSON member `{path}`: {description}"));
                e.violations.push(FieldViolation { field: path.clone(), description: description.to_owned() });
                e.with_meta("member", path)
            }
        }
    }
}

/// Parses `bytes` as one JSON document within `limits`.
pub fn parse(bytes: &[u8], limits: JsonLimits) -> Result<Value, BoundedError> {
    let state = State::new(limits);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Seed { state: &state, depth: 0 }.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    if let Some(path) = state.duplicate.take() {
        return Err(BoundedError::Duplicate(path));
    }
    match (parsed, state.exceeded.get()) {
        (_, Some(limit)) => Err(BoundedError::Limit(limit)),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(BoundedError::Syntax(e)),
    }
}

/// Past this many bytes a key is cut short in a duplicate's path: the path
/// names the member, it does not echo a megabyte of key.
const MAX_KEY_IN_PATH: usize = 64;

struct State {
    limits: JsonLimits,
    left: Cell<usize>,
    exceeded: Cell<Option<Exceeded>>,
    /// The path of a repeated member, built from the inside out as the
    /// read unwinds (so it costs nothing unless a member is repeated).
    duplicate: RefCell<Option<String>>,
}

impl State {
    fn new(limits: JsonLimits) -> Self {
        State {
            limits,
            left: Cell::new(limits.max_values),
            exceeded: Cell::new(None),
            duplicate: RefCell::new(None),
        }
    }
    fn repeated<T, E: de::Error>(&self, key: &str) -> Result<T, E> {
        *self.duplicate.borrow_mut() = Some(shortened(key).into_owned());
        Err(E::custom("duplicate JSON member"))
    }
    /// Puts the member or element a repeated member was found in before
    /// the path found so far.
    fn within(&self, step: Step<'_>) {
        if let Some(path) = self.duplicate.borrow_mut().as_mut() {
            let step = match step {
                Step::Key(k) => shortened(k),
                Step::Index(i) => format!("[{i}]").into(),
            };
            let dot = if path.starts_with('[') { "" } else { "." };
            *path = format!("{step}{dot}{path}");
        }
    }
}

enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn shortened(key: &str) -> std::borrow::Cow<'_, str> {
    if key.len() <= MAX_KEY_IN_PATH {
        return key.into();
    }
    let cut = (0..=MAX_KEY_IN_PATH).rev().find(|&i| key.is_char_boundary(i)).unwrap_or(0);
    format!("{}…", &key[..cut]).into()
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
        loop {
            match seq.next_element_seed(inner) {
                Ok(Some(v)) => out.push(v),
                Ok(None) => return Ok(Value::Array(out)),
                Err(e) => {
                    self.state.within(Step::Index(out.len()));
                    return Err(e);
                }
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = match map.next_value_seed(inner) {
                Ok(v) => v,
                Err(e) => {
                    self.state.within(Step::Key(&k));
                    return Err(e);
                }
            };
            // The lookup the insertion makes anyway tells a repeated key.
            match out.entry(k) {
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(v);
                }
                serde_json::map::Entry::Occupied(slot) => return self.state.repeated(slot.key()),
            }
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
        let text = r#"{"a":[1,-2,3.5],"b":{"c":null},"a2":"x","a3":"y"}"#;
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
    fn a_member_named_twice_is_refused_with_its_path() {
        let roomy = JsonLimits { max_depth: 8, max_values: 100 };
        for (text, path) in [
            (r#"{"a":1,"a":2}"#, "a"),
            (r#"{"a":1,"\u0061":2}"#, "a"),
            (r#"{"p":{"m":{"id":"x","id":"x"}}}"#, "p.m.id"),
            (r#"{"p":[{"t":1},{"t":1,"t":1}]}"#, "p[1].t"),
            (r#"[[0,{"k":[{"z":0,"z":0}]}]]"#, "[0][1].k[0].z"),
        ] {
            match parse(text.as_bytes(), roomy) {
                Err(BoundedError::Duplicate(p)) => assert_eq!(p, path, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
        let e = parse(br#"{"p":{"m":1,"m":1}}"#, roomy).unwrap_err().to_a2a();
        assert_eq!(e.kind, ErrorKind::InvalidRequest);
        assert!(e.message.contains("`p.m`"), "{}", e.message);
        assert_eq!(e.violations[0].field, "p.m");
        // The same name in sibling objects is no repetition.
        assert!(parse(br#"{"a":{"k":1},"b":{"k":1},"k":[{"k":1},{"k":2}]}"#, roomy).is_ok());
        // A long key is named, not echoed whole.
        let long = "k".repeat(10_000);
        let text = format!(r#"{{"{long}":1,"{long}":2}}"#);
        let Err(BoundedError::Duplicate(p)) = parse(text.as_bytes(), roomy) else { panic!() };
        assert!(p.len() < 100 && p.ends_with('…'), "{p}");
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
