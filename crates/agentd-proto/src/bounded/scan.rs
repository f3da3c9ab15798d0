//! [`super::parse`]'s checks without building the document: the same
//! calls into the same parser, counted the same way, so a document this
//! accepts is one `parse` accepts. It also tells whether every object's
//! keys are plain (no escapes) and distinct: only such a document reads
//! the same whether it is decoded from its text or from its `Value`, and
//! a document with a repeated key must reach `parse`, which refuses it
//! naming the member (a struct read from text would word it otherwise,
//! and a map read from text would keep the later member).

use super::{JsonLimits, State};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::cell::{Cell, RefCell};
use std::fmt;

/// Past this many keys in one object the keys are not compared (the cost
/// would grow with the square of the count) and the document counts as
/// not plain.
const MAX_COMPARED_KEYS: usize = 32;

/// Whether `bytes` is one JSON document within `limits` whose keys are all
/// plain and distinct. `false` says nothing more: the document may be
/// malformed, over a limit, or just have an escaped or repeated key.
pub fn plain_within(bytes: &[u8], limits: JsonLimits) -> bool {
    let state = State::new(limits);
    let scan = Scan { state, keys: RefCell::new(Vec::with_capacity(16)), plain: Cell::new(true) };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let read = Seed { scan: &scan, depth: 0 }.deserialize(&mut de).and_then(|()| de.end());
    read.is_ok() && scan.plain.get() && scan.state.exceeded.get().is_none()
}

struct Scan<'de> {
    state: State,
    /// The keys of the objects being read, innermost last.
    keys: RefCell<Vec<&'de str>>,
    plain: Cell<bool>,
}

impl Scan<'_> {
    /// Stops the read: the document is not plain, whatever the rest holds.
    fn not_plain<E: de::Error>(&self) -> Result<(), E> {
        self.plain.set(false);
        Err(E::custom("not plain"))
    }
}

#[derive(Clone, Copy)]
struct Seed<'s, 'de> {
    scan: &'s Scan<'de>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Seed<'_, 'de> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Seed<'_, '_> {
    fn enter<E: de::Error>(self) -> Result<Self, E> {
        let state = &self.scan.state;
        state.count()?;
        if self.depth >= state.limits.max_depth {
            return state.fail(super::Exceeded::Depth(state.limits.max_depth));
        }
        Ok(Seed { scan: self.scan, depth: self.depth + 1 })
    }
}

impl<'de> Visitor<'de> for Seed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scan.state.count()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scan.state.count()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scan.state.count()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scan.state.count()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.scan.state.count()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scan.state.count()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scan.state.count()
    }
    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        let start = self.scan.keys.borrow().len();
        while let Some(key) = map.next_key_seed(Key)? {
            {
                let mut keys = self.scan.keys.borrow_mut();
                match key {
                    Some(k) if keys.len() - start < MAX_COMPARED_KEYS && !keys[start..].contains(&k) => {
                        keys.push(k)
                    }
                    _ => return self.scan.not_plain(),
                }
            }
            map.next_value_seed(inner)?;
        }
        self.scan.keys.borrow_mut().truncate(start);
        Ok(())
    }
}

/// A key as the input lends it: `None` when it had to be unescaped.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<&'de str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Option<&'de str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: JsonLimits = JsonLimits { max_depth: 3, max_values: 10 };

    #[test]
    fn plain_documents_are_those_parse_accepts_with_plain_distinct_keys() {
        assert!(plain_within(br#"{"a":[1,-2,3.5],"b":{"a":null},"c":"x\n"}"#, L));
        assert!(plain_within(b" [[[]]] ", L));
        for not in [
            &br#"{"a":1,"a":2}"#[..],
            br#"{"a":{"b":1,"b":2}}"#,
            br#"{"\u0061":1}"#,
            b"[[[[]]]]",
            b"[1,2,3,4,5,6,7,8,9,10]",
            b"{",
            b"[1,]",
            b"{} x",
            b"",
        ] {
            assert!(!plain_within(not, L), "{}", String::from_utf8_lossy(not));
            // What `parse` makes of it is beside the point: the caller reads such a document with `parse`.
        }
        let wide: String =
            format!("{{{}}}", (0..40).map(|i| format!("\"k{i}\":0")).collect::<Vec<_>>().join(","));
        let roomy = JsonLimits { max_depth: 3, max_values: 100 };
        assert!(super::super::parse(wide.as_bytes(), roomy).is_ok());
        assert!(!plain_within(wide.as_bytes(), roomy), "too many keys to compare");
    }

    #[test]
    fn keys_of_sibling_objects_do_not_collide() {
        assert!(plain_within(
            br#"{"a":{"a":{"a":1}},"b":{"a":2}}"#,
            JsonLimits { max_depth: 4, max_values: 10 }
        ));
    }
}
