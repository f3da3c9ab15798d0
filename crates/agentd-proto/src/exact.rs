//! JSON written into a buffer of exactly its size. A buffer grown by
//! doubling ends up to twice the document, and while it grows the old and
//! the new allocation live together: for a document of megabytes (a task
//! holding a big message) that is most of the request's peak memory.
//!
//! A document up to [`SCRATCH_CAP`] is written once into a per-thread
//! scratch buffer and copied out at its size (one allocation, one pass). A
//! bigger one stops filling the scratch at the cap and is written in two
//! passes instead: one counts the bytes, the second writes them into a
//! buffer of that size.

use serde::Serialize;
use std::cell::RefCell;
use std::io;

/// The largest document written through the per-thread scratch buffer
/// (which therefore never holds more than twice this: it grows by doubling).
pub const SCRATCH_CAP: usize = 64 * 1024;

/// Counts what is written to it.
struct Count(usize);

impl io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Appends to a buffer until it would pass `SCRATCH_CAP`, then fails.
struct Capped<'a>(&'a mut Vec<u8>);

impl io::Write for Capped<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.0.len() + buf.len() > SCRATCH_CAP {
            return Err(io::Error::other("over the scratch cap"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The length of `v` as compact JSON.
pub fn json_len<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<usize> {
    let mut c = Count(0);
    serde_json::to_writer(&mut c, v)?;
    Ok(c.0)
}

/// `prefix`, `v` as compact JSON, `suffix`, in one allocation of that size.
pub fn to_vec_framed<T: Serialize + ?Sized>(
    prefix: &[u8],
    v: &T,
    suffix: &[u8],
) -> serde_json::Result<Vec<u8>> {
    if let Some(done) = through_scratch(prefix, v, suffix) {
        return done;
    }
    let mut out = Vec::with_capacity(prefix.len() + json_len(v)? + suffix.len());
    out.extend_from_slice(prefix);
    serde_json::to_writer(&mut out, v)?;
    out.extend_from_slice(suffix);
    Ok(out)
}

/// The framed document written once into the scratch buffer and copied
/// out; `None` when it is over the cap (or the scratch is in use: a
/// `Serialize` that serializes something itself).
fn through_scratch<T: Serialize + ?Sized>(
    prefix: &[u8],
    v: &T,
    suffix: &[u8],
) -> Option<serde_json::Result<Vec<u8>>> {
    SCRATCH.with(|cell| {
        let mut buf = cell.try_borrow_mut().ok()?;
        buf.clear();
        let mut w = Capped(&mut buf);
        io::Write::write_all(&mut w, prefix).ok()?;
        match serde_json::to_writer(&mut w, v) {
            Ok(()) => {}
            Err(e) if e.is_io() => return None,
            Err(e) => return Some(Err(e)),
        }
        io::Write::write_all(&mut w, suffix).ok()?;
        Some(Ok(buf.as_slice().to_vec()))
    })
}

/// `v` as compact JSON in one allocation of its size.
pub fn to_vec<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<Vec<u8>> {
    to_vec_framed(b"", v, b"")
}

/// [`to_vec`] as a `String`.
pub fn to_string<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    // serde_json writes only valid UTF-8; the check costs no copy.
    String::from_utf8(to_vec(v)?).map_err(serde::ser::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_bytes_as_serde_json_in_a_buffer_of_their_size() {
        let v = json!({"a": [1, "two", {"three": null}], "é": "\u{1F600}\"\\"});
        let bytes = to_vec(&v).unwrap();
        assert_eq!(bytes, serde_json::to_vec(&v).unwrap());
        assert_eq!(bytes.capacity(), bytes.len());
        assert_eq!(to_string(&v).unwrap(), v.to_string());
        let framed = to_vec_framed(b"{\"r\":", &v, b"}").unwrap();
        assert_eq!(framed, format!("{{\"r\":{v}}}").into_bytes());
        assert_eq!(framed.capacity(), framed.len());
    }

    #[test]
    fn a_document_over_the_scratch_cap_comes_out_the_same_at_its_size() {
        let v = json!({"big": "x".repeat(SCRATCH_CAP * 3), "n": [1, 2, 3]});
        let framed = to_vec_framed(b"[", &v, b"]").unwrap();
        assert_eq!(framed, format!("[{v}]").into_bytes());
        assert_eq!(framed.capacity(), framed.len());
        let near = json!("y".repeat(SCRATCH_CAP - 2));
        assert_eq!(to_vec(&near).unwrap(), serde_json::to_vec(&near).unwrap(), "exactly at the cap");
        let over = json!("y".repeat(SCRATCH_CAP - 1));
        assert_eq!(to_vec(&over).unwrap(), serde_json::to_vec(&over).unwrap(), "one byte over");
    }

    #[test]
    fn a_serializer_that_serializes_inside_gets_the_same_bytes() {
        struct Nested;
        impl Serialize for Nested {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&to_string(&json!({"inner": true})).map_err(serde::ser::Error::custom)?)
            }
        }
        assert_eq!(to_string(&Nested).unwrap(), serde_json::to_string(&Nested).unwrap());
    }

    #[test]
    fn an_error_is_the_serializers_not_the_caps() {
        let mut m = std::collections::BTreeMap::new();
        m.insert(vec![1u8], 1);
        assert!(!to_vec(&m).unwrap_err().is_io(), "a non-string key is refused as such");
    }
}
