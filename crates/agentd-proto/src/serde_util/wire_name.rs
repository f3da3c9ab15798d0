//! Reading a unit-only enum that is a string on the wire, and nothing else.
//! Serde's derive also takes the externally tagged form (`{"user": null}`),
//! which no schema of ours allows; these enums implement `Deserialize` with
//! [`wire_name`] instead.

use serde::Deserializer;
use serde::de::{self, Visitor};
use std::fmt;

/// A unit-only enum and its wire names.
pub trait WireName: Copy + 'static {
    /// Every variant's wire name, in the order of [`WireName::ALL`].
    const NAMES: &'static [&'static str];
    /// Every variant.
    const ALL: &'static [Self];
}

/// Reads `T` from a string that is one of its names; anything else is refused
/// with serde's usual wording (`unknown variant`, `invalid type`).
pub fn wire_name<'de, D: Deserializer<'de>, T: WireName>(d: D) -> Result<T, D::Error> {
    d.deserialize_str(Names::<T>(std::marker::PhantomData))
}

struct Names<T>(std::marker::PhantomData<T>);

impl<T: WireName> Visitor<'_> for Names<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "one of `{}`", T::NAMES.join("`, `"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        T::NAMES
            .iter()
            .position(|n| *n == v)
            .map(|i| T::ALL[i])
            .ok_or_else(|| E::unknown_variant(v, T::NAMES))
    }
}

/// Implements [`WireName`] and `Deserialize` for a unit-only enum from its
/// variants and their wire names (the names `Serialize` writes: a test of
/// each enum checks they agree).
macro_rules! wire_name_enum {
    ($ty:ty { $($variant:ident = $name:literal),+ $(,)? }) => {
        impl $crate::serde_util::WireName for $ty {
            const NAMES: &'static [&'static str] = &[$($name),+];
            const ALL: &'static [Self] = &[$(<$ty>::$variant),+];
        }
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::serde_util::wire_name(d)
            }
        }
    };
}
pub(crate) use wire_name_enum;

#[cfg(test)]
mod tests {
    #[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
    #[serde(rename_all = "lowercase")]
    enum Hint {
        System,
        User,
    }
    wire_name_enum!(Hint { System = "system", User = "user" });

    fn read(json: &str) -> Result<Hint, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn a_name_is_read_and_the_tagged_form_is_refused() {
        assert_eq!(read(r#""user""#), Ok(Hint::User));
        assert_eq!(read(r#""system""#), Ok(Hint::System));
        let tagged = read(r#"{"user":null}"#).unwrap_err();
        assert!(tagged.starts_with("invalid type: map, expected one of `system`, `user`"), "{tagged}");
        let unknown = read(r#""admin""#).unwrap_err();
        assert!(unknown.starts_with("unknown variant `admin`, expected `system` or `user`"), "{unknown}");
        assert!(read("3").unwrap_err().starts_with("invalid type: integer `3`"));
        assert!(read("null").is_err());
    }
}
