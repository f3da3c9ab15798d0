//! Small serde helpers for ProtoJSON rules that serde does not have built in.

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serializer};

mod proto_enum;
mod wire_name;
pub use proto_enum::{EnumWire, ProtoEnum};
pub(crate) use wire_name::wire_name_enum;
pub use wire_name::{WireName, wire_name};

/// ProtoJSON treats `null` as "field absent": use with `#[serde(default)]`.
pub fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// proto3 `bool` fields: omitted when false.
pub fn is_false(b: &bool) -> bool {
    !*b
}

/// `bytes` fields: standard base64 with padding out; standard or URL-safe,
/// padded or not, in.
pub fn b64_serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Decodes any base64 flavour ProtoJSON allows.
pub fn b64_decode(text: &str) -> Result<Vec<u8>, String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let t = text.trim();
    for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        if let Ok(v) = engine.decode(t) {
            return Ok(v);
        }
    }
    Err("not valid base64".into())
}

/// `int32` fields, as the ProtoJSON mapping reads them (see [`integer`]).
pub fn opt_i32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    opt_int(d, "a 32-bit integer")
}

/// `uint32` fields, as the ProtoJSON mapping reads them (see [`integer`]).
pub fn opt_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    opt_int(d, "an unsigned 32-bit integer")
}

fn opt_int<'de, D, T>(d: D, what: &str) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<i64>,
{
    use serde::de::Error;
    let Some(v) = Option::<serde_json::Value>::deserialize(d)? else { return Ok(None) };
    if v.is_null() {
        return Ok(None);
    }
    let n = integer(&v).map_err(|why| D::Error::custom(format!("expected {what}; {why}")))?;
    T::try_from(n).map(Some).map_err(|_| D::Error::custom(format!("expected {what}; {n} is out of range")))
}

/// The integer a ProtoJSON 32-bit integer field holds, following the
/// protobuf JSON mapping (<https://protobuf.dev/programming-guides/json/>:
/// "Either numbers or strings are accepted") as its conformance suite pins
/// it (`conformance/binary_json_conformance_suite.cc`): a JSON number with
/// an integral value in any notation (`5`, `100000.000`, `1e5`,
/// `2.147483647e9`), or a string holding exactly such a JSON number
/// (`"2147483647"`); "String values must follow the same syntax rule", so
/// `" 1"` and `"1 "` fail, as `+1`, `01`, `-01` and `0.5` do. Go's protojson
/// (`unmarshalInt`) reads a string the same way: surrounding space refused,
/// the rest one JSON number token, so `"1e2"` is 100. C++ and Python are
/// laxer (`absl::SimpleAtoi`, Python's `int()`), which the suite does not
/// allow. A JSON number is read as a double first (serde_json), so one
/// that is not integral only beyond 17 significant digits is taken as the
/// integer it rounds to.
fn integer(v: &serde_json::Value) -> Result<i64, String> {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                return Ok(i);
            }
            if n.is_u64() {
                return Err(format!("{n} is out of range"));
            }
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() != 0.0 {
                return Err(format!("{n} is not an integer"));
            }
            // Integral and within ±2^63 (or out of range either way).
            if f.abs() < 9.2e18 { Ok(f as i64) } else { Err(format!("{n} is out of range")) }
        }
        serde_json::Value::String(s) => json_integer(s),
        _ => Err("a number or a string holding one is required".into()),
    }
}

/// The integer a JSON number token (RFC 8259 §6) denotes, computed exactly
/// from its digits. Written by hand: no parser crate both checks the JSON
/// number grammar of a string and keeps `1e5`/`1.0` exact.
fn json_integer(s: &str) -> Result<i64, String> {
    let not_number = || format!("{s:?} is not a JSON number (no spaces, `+` sign or leading zeros)");
    let digits_at = |b: &[u8]| b.iter().take_while(|c| c.is_ascii_digit()).count();
    let b = s.as_bytes();
    let (negative, rest) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    let n = digits_at(rest);
    if n == 0 || (n > 1 && rest[0] == b'0') {
        return Err(not_number());
    }
    let (int, rest) = rest.split_at(n);
    let (frac, rest) = match rest.first() {
        Some(b'.') => {
            let n = digits_at(&rest[1..]);
            if n == 0 {
                return Err(not_number());
            }
            (&rest[1..=n], &rest[1 + n..])
        }
        _ => (&rest[..0], rest),
    };
    let exponent: i64 = match rest.first() {
        None => 0,
        Some(b'e' | b'E') => {
            let (sign, digits) = match rest.get(1) {
                Some(b'-') => (-1, &rest[2..]),
                Some(b'+') => (1, &rest[2..]),
                _ => (1, &rest[1..]),
            };
            if digits.is_empty() || digits_at(digits) != digits.len() {
                return Err(not_number());
            }
            // Saturates: any exponent this large is out of range anyway.
            let e = digits.iter().fold(0i64, |e, d| (e * 10 + i64::from(d - b'0')).min(1_000_000));
            sign * e
        }
        Some(_) => return Err(not_number()),
    };
    // value = significant digits × 10^scale
    let all: Vec<u8> = int.iter().chain(frac).copied().skip_while(|d| *d == b'0').collect();
    if all.is_empty() {
        return Ok(0);
    }
    let mut scale = exponent - frac.len() as i64;
    let mut significant = all.as_slice();
    if scale < 0 {
        let drop = usize::try_from(-scale).unwrap_or(usize::MAX);
        if drop > significant.len() || significant[significant.len() - drop..].iter().any(|d| *d != b'0') {
            return Err(format!("{s:?} is not an integer"));
        }
        significant = &significant[..significant.len() - drop];
        scale = 0;
    }
    let out_of_range = || format!("{s:?} is out of range");
    if significant.len() as i64 + scale > 19 {
        return Err(out_of_range());
    }
    let mut value: i128 = 0;
    for d in significant {
        value = value * 10 + i128::from(d - b'0');
    }
    value *= 10i128.pow(scale as u32);
    if negative {
        value = -value;
    }
    i64::try_from(value).map_err(|_| out_of_range())
}

/// `bool` fields may arrive as `"true"`/`"false"` strings from query strings.
pub fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    use serde::de::Error;
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Bool(b)) => Ok(Some(b)),
        Some(serde_json::Value::String(s)) if s == "true" => Ok(Some(true)),
        Some(serde_json::Value::String(s)) if s == "false" => Ok(Some(false)),
        Some(_) => Err(D::Error::custom("expected true or false")),
    }
}

/// Plain `bool` (proto3, default false), null and strings tolerated.
pub fn bool_default<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(opt_bool(d)?.unwrap_or(false))
}

/// Plain `int32` (proto3, default 0): null is 0, numbers as [`opt_i32`].
pub fn i32_default<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    Ok(opt_i32(d)?.unwrap_or(0))
}
