//! Small serde helpers for ProtoJSON rules that serde does not have built in.

use base64::Engine as _;
use serde::{Deserialize, Deserializer, Serializer};

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

/// `int32` fields arrive as numbers or as numeric strings (ProtoJSON allows both).
pub fn opt_i32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    use serde::de::Error;
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => n
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| D::Error::custom("expected a 32-bit integer")),
        Some(serde_json::Value::String(s)) => {
            s.trim().parse::<i32>().map(Some).map_err(|_| D::Error::custom("expected a 32-bit integer"))
        }
        Some(_) => Err(D::Error::custom("expected a 32-bit integer")),
    }
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

/// Plain `int32` (proto3, default 0), null and numeric strings tolerated.
pub fn i32_default<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    Ok(opt_i32(d)?.unwrap_or(0))
}
