//! JSON written into a buffer of exactly its size. A buffer grown by
//! doubling ends up to twice the document, and while it grows the old and
//! the new allocation live together: for a document of megabytes (a task
//! holding a big message) that is most of the request's peak memory. One
//! pass counts the bytes, the second writes them; serializing is cheap next
//! to what the over-allocation costs.

use serde::Serialize;
use std::io;

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
}
