//! `google.protobuf.Struct`, `Value` and `Timestamp` against the JSON and
//! time types of `agentd-proto`, and the error a malformed field becomes.

use agentd_proto::{A2aError, Metadata, Timestamp};
use prost_types::value::Kind;
use serde_json::{Map, Number, Value};

/// A field of an incoming message that cannot be converted: its path in
/// ProtoJSON names (`message.parts[0].data`) and why. Becomes
/// InvalidParams, so INVALID_ARGUMENT with a BadRequest naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub description: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, description: impl Into<String>) -> Self {
        Self { field: field.into(), description: description.into() }
    }

    /// Puts the path under the enclosing field. Built only on the error path.
    pub fn under(mut self, parent: &str) -> Self {
        self.field = match self.field.as_str() {
            "" => parent.to_owned(),
            f if f.starts_with('[') => format!("{parent}{f}"),
            f => format!("{parent}.{f}"),
        };
        self
    }
}

impl From<FieldError> for A2aError {
    fn from(e: FieldError) -> Self {
        A2aError::invalid_field(&e.field, e.description)
    }
}

/// Converts every element, naming `name[i]` in an error.
pub fn each<T, U>(
    items: Vec<T>,
    name: &str,
    f: impl Fn(T) -> Result<U, FieldError>,
) -> Result<Vec<U>, FieldError> {
    items.into_iter().enumerate().map(|(i, x)| f(x).map_err(|e| e.under(&format!("{name}[{i}]")))).collect()
}

/// Converts an optional message, naming `name` in an error.
pub fn opt<T, U>(
    v: Option<T>,
    name: &str,
    f: impl Fn(T) -> Result<U, FieldError>,
) -> Result<Option<U>, FieldError> {
    v.map(|x| f(x).map_err(|e| e.under(name))).transpose()
}

/// `google.protobuf.Struct` → JSON object.
pub fn struct_in(s: prost_types::Struct) -> Result<Metadata, FieldError> {
    let mut out = Map::new();
    for (k, v) in s.fields {
        let v = value_in(v).map_err(|e| e.under(&k))?;
        out.insert(k, v);
    }
    Ok(out)
}

/// An optional Struct field named `name`.
pub fn metadata_in(s: Option<prost_types::Struct>, name: &str) -> Result<Option<Metadata>, FieldError> {
    opt(s, name, struct_in)
}

/// JSON object → `google.protobuf.Struct`.
pub fn struct_out(m: Metadata) -> prost_types::Struct {
    prost_types::Struct { fields: m.into_iter().map(|(k, v)| (k, value_out(v))).collect() }
}

pub fn metadata_out(m: Option<Metadata>) -> Option<prost_types::Struct> {
    m.map(struct_out)
}

/// Integral doubles up to 2^53 become JSON integers, so `42` stays `42`.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// `google.protobuf.Value` → JSON. A Value with no kind, or a number JSON
/// cannot carry (NaN, ±Infinity), is malformed.
pub fn value_in(v: prost_types::Value) -> Result<Value, FieldError> {
    Ok(match v.kind {
        None => return Err(FieldError::new("", "a google.protobuf.Value must have a kind")),
        Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::NumberValue(n)) => {
            if !n.is_finite() {
                return Err(FieldError::new("", "a number must be finite (JSON has no NaN or Infinity)"));
            }
            if n.fract() == 0.0 && n.abs() <= MAX_EXACT {
                // Exact: |n| ≤ 2^53 fits i64 without rounding.
                Value::Number(Number::from(n as i64))
            } else {
                Number::from_f64(n).map(Value::Number).unwrap_or(Value::Null)
            }
        }
        Some(Kind::StructValue(s)) => Value::Object(struct_in(s)?),
        Some(Kind::ListValue(l)) => Value::Array(each(l.values, "", value_in)?),
    })
}

/// JSON → `google.protobuf.Value`. Numbers become doubles (what the type
/// carries); integers past 2^53 lose precision, as in every ProtoJSON peer.
pub fn value_out(v: Value) -> prost_types::Value {
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(a) => {
            Kind::ListValue(prost_types::ListValue { values: a.into_iter().map(value_out).collect() })
        }
        Value::Object(o) => Kind::StructValue(struct_out(o)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// `google.protobuf.Timestamp` → [`Timestamp`], accepted as the JSON
/// bindings accept its text: years 0001 to 9999 (the proto's range, and
/// all RFC 3339 can write), nanos below a second. A time outside would be
/// stored and then answered on the JSON bindings as no RFC 3339 time.
pub fn timestamp_in(t: prost_types::Timestamp) -> Result<Timestamp, FieldError> {
    Timestamp::from_unix(t.seconds, t.nanos).map_err(|why| FieldError::new("", why))
}

pub fn timestamp_out(t: Timestamp) -> prost_types::Timestamp {
    // `timestamp_subsec_nanos` is below 2·10^9 (leap seconds), so it fits.
    prost_types::Timestamp { seconds: t.0.timestamp(), nanos: t.0.timestamp_subsec_nanos() as i32 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_values_round_trip_through_struct() {
        let v = json!({"s": "x", "n": 42, "f": 1.5, "neg": -7, "b": true, "z": null,
                       "l": [1, "two", [3.25], {"k": {}}], "o": {"deep": {"er": [null]}}});
        let Value::Object(m) = v.clone() else { unreachable!() };
        assert_eq!(Value::Object(struct_in(struct_out(m)).unwrap()), v);
    }

    #[test]
    fn malformed_values_name_their_path() {
        let bad = prost_types::Value { kind: None };
        let s = prost_types::Struct {
            fields: [(
                "a".to_owned(),
                prost_types::Value {
                    kind: Some(Kind::ListValue(prost_types::ListValue {
                        values: vec![value_out(json!(1)), bad],
                    })),
                },
            )]
            .into(),
        };
        let e = metadata_in(Some(s), "metadata").unwrap_err();
        assert_eq!(e.field, "metadata.a[1]");
        let nan = prost_types::Value { kind: Some(Kind::NumberValue(f64::NAN)) };
        assert!(value_in(nan).is_err());
    }

    #[test]
    fn timestamps_round_trip_and_reject_bad_nanos() {
        let t = Timestamp::parse("2026-03-12T10:20:30.456Z").unwrap();
        assert_eq!(timestamp_in(timestamp_out(t)).unwrap(), t);
        assert!(timestamp_in(prost_types::Timestamp { seconds: 0, nanos: -1 }).is_err());
        assert!(timestamp_in(prost_types::Timestamp { seconds: i64::MAX, nanos: 0 }).is_err());
    }

    #[test]
    fn timestamps_are_held_to_the_years_rfc_3339_can_write() {
        let ts = |seconds, nanos| timestamp_in(prost_types::Timestamp { seconds, nanos });
        // 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z, the proto's bounds.
        let (first, last) = (-62_135_596_800, 253_402_300_799);
        assert_eq!(ts(first, 0).unwrap(), Timestamp::parse("0001-01-01T00:00:00Z").unwrap());
        assert_eq!(ts(last, 999_999_999).unwrap(), Timestamp::parse("9999-12-31T23:59:59.999Z").unwrap());
        for (seconds, nanos) in [(first - 1, 999_999_999), (last + 1, 0), (0, 1_000_000_000), (0, i32::MIN)] {
            let e = ts(seconds, nanos).expect_err("out of range");
            assert!(e.description.starts_with("out of range"), "{seconds}, {nanos}: {}", e.description);
        }
        // What the JSON bindings read from the same instant: truncated to the millisecond.
        assert_eq!(ts(0, 1_999_999).unwrap(), Timestamp::parse("1970-01-01T00:00:00.001999Z").unwrap());
    }
}
