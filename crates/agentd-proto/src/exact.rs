//! JSON written into a buffer of exactly its size. A buffer grown by
//! doubling ends up to twice the document, and while it grows the old and
//! the new allocation live together: for a document of megabytes (a task
//! holding a big message) that is most of the request's peak memory.
//!
//! A document up to [`SCRATCH`] bytes (a request's answer, a task row, an
//! event, nearly always) is written once into a buffer its thread keeps and
//! copied out at its size. A bigger one is written twice: one pass counts
//! the bytes, the second writes them; serializing again is cheap next to
//! what the over-allocation would cost.

use serde::Serialize;
use std::cell::RefCell;
use std::io;

/// The largest document written through the thread's scratch buffer, and
/// that buffer's size (allocated on a thread's first use).
pub const SCRATCH: usize = 16 * 1024;

thread_local! {
    static SCRATCH_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Appends to the scratch buffer until it would pass [`SCRATCH`].
struct Bounded<'a> {
    buf: &'a mut Vec<u8>,
    overflowed: bool,
}

// serde_json writes token by token through `write_all` (a quote, a colon,
// a key): it is inlined into each of them, so that a token of a known
// length is a store, not a call and a `memcpy`. The serializer holds this
// writer itself, not `&mut` to it: std's forwarding `impl Write for &mut W`
// was not inlined, and each token cost two calls.
impl io::Write for Bounded<'_> {
    #[inline(always)]
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.write_all(b).map(|()| b.len())
    }
    #[inline(always)]
    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        if self.buf.len() + b.len() > SCRATCH {
            self.overflowed = true;
            return Err(io::Error::other("past the scratch buffer"));
        }
        self.buf.extend_from_slice(b);
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The thread's scratch buffer, empty and allotted; `None` while it is in
/// use further up this thread's stack.
fn take_scratch(cell: &RefCell<Vec<u8>>) -> Option<std::cell::RefMut<'_, Vec<u8>>> {
    let mut buf = cell.try_borrow_mut().ok()?;
    buf.clear();
    if buf.capacity() < SCRATCH {
        buf.reserve_exact(SCRATCH);
    }
    Some(buf)
}

/// `f` of `v`'s compact JSON when it fits in [`SCRATCH`] bytes, written
/// once into the thread's scratch buffer; `f` given back when it does not
/// (or the buffer is in use further up this thread's stack).
fn in_scratch<T, R, F>(v: &T, f: F) -> Result<serde_json::Result<R>, F>
where
    T: Serialize + ?Sized,
    F: FnOnce(&[u8]) -> R,
{
    SCRATCH_BUF.with(|cell| {
        let Some(mut buf) = take_scratch(cell) else { return Err(f) };
        let mut ser = serde_json::Serializer::new(Bounded { buf: &mut buf, overflowed: false });
        let written = v.serialize(&mut ser);
        let overflowed = ser.into_inner().overflowed;
        match written {
            Ok(()) => Ok(Ok(f(&buf))),
            Err(_) if overflowed => Err(f),
            Err(e) => Ok(Err(e)),
        }
    })
}

/// `f` of `v` as compact JSON when that is at most [`SCRATCH`] bytes;
/// `None`, at the cost of writing the first [`SCRATCH`] bytes, when it is
/// more (or the scratch buffer is in use further up this thread's stack).
pub fn if_small<T: Serialize + ?Sized, R>(
    v: &T,
    f: impl FnOnce(&[u8]) -> R,
) -> Option<serde_json::Result<R>> {
    in_scratch(v, f).ok()
}

/// `f` of one JSON object with the members of `head`, then those of
/// `tail` (each serializing as an object), and of the offset in it where
/// `head`'s members end: a member put there comes after them. `None` as
/// for [`if_small`]. Written once into the scratch buffer: `tail`'s opening
/// brace becomes the comma after `head`'s members, or, when `tail` has no
/// members, `head`'s closing brace is kept.
pub fn if_small_joined<H, T, R>(
    head: &H,
    tail: &T,
    f: impl FnOnce(&[u8], usize) -> R,
) -> Option<serde_json::Result<R>>
where
    H: Serialize + ?Sized,
    T: Serialize + ?Sized,
{
    SCRATCH_BUF.with(|cell| {
        let mut buf = take_scratch(cell)?;
        if let Err(e) = append_object(&mut buf, head, "head")? {
            return Some(Err(e));
        }
        let end = buf.len() - 1;
        buf.truncate(end);
        if let Err(e) = append_object(&mut buf, tail, "tail")? {
            return Some(Err(e));
        }
        if buf.len() == end + 2 {
            // No members: `head`'s closing brace again.
            buf.truncate(end + 1);
            buf[end] = b'}';
        } else if end == 1 {
            // No members before: no comma either.
            buf.remove(end);
        } else {
            buf[end] = b',';
        }
        Some(Ok(f(&buf, end)))
    })
}

/// Appends `part`'s JSON to the scratch buffer `buf`: `None` when it
/// would pass [`SCRATCH`], an error when it is not a JSON object.
fn append_object<T: Serialize + ?Sized>(
    buf: &mut Vec<u8>,
    part: &T,
    what: &str,
) -> Option<serde_json::Result<()>> {
    let start = buf.len();
    let mut ser = serde_json::Serializer::new(Bounded { buf, overflowed: false });
    let written = part.serialize(&mut ser);
    let bounded = ser.into_inner();
    if let Err(e) = written {
        return (!bounded.overflowed).then_some(Err(e));
    }
    let json = &bounded.buf[start..];
    let is_object = json.len() >= 2 && json[0] == b'{' && json[json.len() - 1] == b'}';
    Some(if is_object {
        Ok(())
    } else {
        Err(serde::ser::Error::custom(format!("the {what} is not a JSON object")))
    })
}

/// `f` of `v` as compact JSON: from the scratch buffer when it fits there,
/// else from a buffer of its exact size.
pub fn with_json<T: Serialize + ?Sized, R>(v: &T, f: impl FnOnce(&[u8]) -> R) -> serde_json::Result<R> {
    match in_scratch(v, f) {
        Ok(r) => r,
        Err(f) => Ok(f(&to_vec_counted(b"", v, b"")?)),
    }
}

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
    let framed = |json: &[u8]| {
        let mut out = Vec::with_capacity(prefix.len() + json.len() + suffix.len());
        out.extend_from_slice(prefix);
        out.extend_from_slice(json);
        out.extend_from_slice(suffix);
        out
    };
    match in_scratch(v, framed) {
        Ok(r) => r,
        Err(_) => to_vec_counted(prefix, v, suffix),
    }
}

/// [`to_vec_framed`] in two passes: the length counted, then written.
fn to_vec_counted<T: Serialize + ?Sized>(prefix: &[u8], v: &T, suffix: &[u8]) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(prefix.len() + json_len(v)? + suffix.len());
    out.extend_from_slice(prefix);
    serde_json::to_writer(&mut out, v)?;
    out.extend_from_slice(suffix);
    Ok(out)
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

    /// Past the scratch buffer, the counted path gives the same bytes, and
    /// the buffer is left as it was allotted.
    #[test]
    fn documents_past_the_scratch_buffer_are_written_at_their_size() {
        for len in [SCRATCH - 10, SCRATCH - 2, SCRATCH - 1, SCRATCH, SCRATCH * 3] {
            let v = json!("x".repeat(len));
            let framed = to_vec_framed(b"[", &v, b"]").unwrap();
            assert_eq!(framed, format!("[{v}]").into_bytes(), "{len}");
            assert_eq!(framed.capacity(), framed.len(), "{len}");
            assert_eq!(with_json(&v, <[u8]>::len).unwrap(), len + 2, "{len}");
            let small = if_small(&v, <[u8]>::len).map(Result::unwrap);
            assert_eq!(small, (len + 2 <= SCRATCH).then_some(len + 2), "{len}");
        }
        assert_eq!(SCRATCH_BUF.with(|b| b.borrow().capacity()), SCRATCH, "the scratch buffer did not grow");
    }

    #[test]
    fn two_objects_joined_into_one_with_the_offset_where_the_first_ends() {
        let joined = |h: serde_json::Value, t: serde_json::Value| {
            if_small_joined(&h, &t, |json, at| (String::from_utf8(json.to_vec()).unwrap(), at)).unwrap()
        };
        let (json, at) = joined(json!({"a": {"b": "}"}}), json!({"c": [1]})).unwrap();
        assert_eq!(json, r#"{"a":{"b":"}"},"c":[1]}"#);
        assert_eq!(&json[..at], r#"{"a":{"b":"}"}"#);
        let (json, at) = joined(json!({"a": 1}), json!({})).unwrap();
        assert_eq!((json.as_str(), at), (r#"{"a":1}"#, 6));
        let (json, at) = joined(json!({}), json!({"c": 2})).unwrap();
        assert_eq!((json.as_str(), at), (r#"{"c":2}"#, 1));
        assert!(joined(json!([1]), json!({})).is_err(), "a head that is no object");
        assert!(joined(json!({"a": 1}), json!("x")).is_err(), "a tail that is no object");
        let big = json!({"x": "y".repeat(SCRATCH)});
        assert!(if_small_joined(&json!({"a": 1}), &big, |_, _| ()).is_none(), "past the scratch buffer");
    }

    /// A `Serialize` that serializes inside itself finds the buffer taken
    /// and goes the counted way; an error of the value is the caller's.
    #[test]
    fn nested_use_and_errors() {
        struct Nested;
        impl Serialize for Nested {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let inner = to_string(&json!({"in": 1})).map_err(serde::ser::Error::custom)?;
                s.serialize_str(&inner)
            }
        }
        assert_eq!(to_string(&Nested).unwrap(), r#""{\"in\":1}""#);
        struct Fails;
        impl Serialize for Fails {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("no"))
            }
        }
        assert!(to_vec(&Fails).is_err());
        assert!(with_json(&Fails, |_| ()).is_err());
    }
}
