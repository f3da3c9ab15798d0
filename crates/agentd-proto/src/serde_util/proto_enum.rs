//! Reading a proto enum: a name, a number, or null for the default. The
//! name is looked up as the input lends it (no `String`, no `Value`); the
//! errors read as they did when the member was first read into a `Value`.

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};
use std::fmt;

/// What an enum member held.
pub enum EnumWire<'a> {
    Name(&'a str),
    Number(i64),
}

/// The visitor of the enum `name`: `lookup` finds the variant.
pub struct ProtoEnum<F> {
    name: &'static str,
    lookup: F,
}

impl<T: Default, F: Fn(EnumWire) -> Option<T>> ProtoEnum<F> {
    pub fn new(name: &'static str, lookup: F) -> Self {
        Self { name, lookup }
    }

    fn number<E: de::Error>(self, n: Number) -> Result<T, E> {
        n.as_i64()
            .and_then(|i| (self.lookup)(EnumWire::Number(i)))
            .ok_or_else(|| E::custom(format!("unknown {} number {}", self.name, n)))
    }

    /// Any other JSON value, shown as JSON.
    fn other<E: de::Error>(self, v: Value) -> Result<T, E> {
        Err(E::custom(format!("expected a {} name, got {}", self.name, v)))
    }
}

impl<'de, T: Default, F: Fn(EnumWire) -> Option<T>> Visitor<'de> for ProtoEnum<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} name or number", self.name)
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.lookup)(EnumWire::Name(v))
            .ok_or_else(|| E::custom(format!("unknown {} value `{}`", self.name, v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.number(v.into())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.number(v.into())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        // As a `Value` reads it: a float JSON cannot hold is null.
        match Number::from_f64(v) {
            Some(n) => self.number(n),
            None => Ok(T::default()),
        }
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        self.other(Value::Bool(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        let v = Value::deserialize(SeqAccessDeserializer::new(seq))?;
        self.other(v)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        let v = Value::deserialize(MapAccessDeserializer::new(map))?;
        self.other(v)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Role, TaskState};
    use serde_json::{Value, json};

    /// How the enums were read before: through a `Value`.
    fn via_value(v: &Value) -> Result<Role, String> {
        match v {
            Value::Null => Ok(Role::default()),
            Value::String(s) => Role::from_name(s).ok_or_else(|| format!("unknown Role value `{s}`")),
            Value::Number(n) => {
                n.as_i64().and_then(Role::from_number).ok_or_else(|| format!("unknown Role number {n}"))
            }
            other => Err(format!("expected a Role name, got {other}")),
        }
    }

    #[test]
    fn names_numbers_and_errors_read_as_through_a_value() {
        for v in [
            json!(null),
            json!("ROLE_AGENT"),
            json!("role_agent"),
            json!(1),
            json!(-1),
            json!(9),
            json!(1.0),
            json!(2.5),
            json!(18446744073709551615u64),
            json!(true),
            json!([1, "a", {"b": null}]),
            json!({"a": [1.5]}),
        ] {
            let want = via_value(&v);
            let from_value = serde_json::from_value::<Role>(v.clone()).map_err(|e| e.to_string());
            assert_eq!(from_value, want, "{v}");
            let from_text = serde_json::from_str::<Role>(&v.to_string()).map_err(|e| {
                let at = format!(" at line {} column {}", e.line(), e.column());
                e.to_string().strip_suffix(&at).map(str::to_owned).unwrap_or_else(|| e.to_string())
            });
            assert_eq!(from_text, want, "{v}");
        }
        assert_eq!(serde_json::from_str::<TaskState>("\"TASK_STATE_WORKING\"").unwrap(), TaskState::Working);
    }
}
