//! Signing of webhook bridge deliveries. A channel with a secret gets two
//! headers on every attempt:
//!
//! * `X-Agentd-Timestamp`: the attempt's time, Unix seconds;
//! * `X-Agentd-Signature`: `sha256=<hex>`, the HMAC-SHA256 under the
//!   secret of `<timestamp>.<raw body>`.
//!
//! A receiver recomputes the HMAC over the timestamp header, a `.` and the
//! body bytes as received, compares in constant time, and refuses a
//! timestamp too far from its clock (replays). [`verify`] does exactly that.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

pub const SIGNATURE_HEADER: &str = "x-agentd-signature";
pub const TIMESTAMP_HEADER: &str = "x-agentd-timestamp";

/// A channel's signing secret. `Debug` never shows it.
#[derive(Clone)]
pub struct SigningKey(Vec<u8>);

impl SigningKey {
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        Self(secret.into())
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningKey(***)")
    }
}

/// The signing secrets of bridge channels, by channel name.
#[derive(Clone, Default)]
pub struct BridgeSecrets(Arc<HashMap<String, SigningKey>>);

impl BridgeSecrets {
    pub fn new(secrets: HashMap<String, SigningKey>) -> Self {
        Self(Arc::new(secrets))
    }

    pub fn get(&self, channel: &str) -> Option<&SigningKey> {
        self.0.get(channel)
    }
}

impl fmt::Debug for BridgeSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&String> = self.0.keys().collect();
        names.sort();
        f.debug_tuple("BridgeSecrets").field(&names).finish()
    }
}

fn mac(key: &SigningKey, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length; this cannot fail.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&key.0).unwrap_or_else(|_| unreachable!());
    m.update(timestamp.as_bytes());
    m.update(b".");
    m.update(body);
    m
}

/// The `X-Agentd-Signature` value for `body` sent at `timestamp`.
pub fn sign(key: &SigningKey, timestamp: i64, body: &[u8]) -> String {
    let tag = mac(key, &timestamp.to_string(), body).finalize().into_bytes();
    format!("sha256={}", hex::encode(tag))
}

/// Checks a delivery as a receiver should: the signature matches the
/// timestamp and body, and the timestamp is within `tolerance_secs` of `now`.
pub fn verify(
    key: &SigningKey,
    timestamp: &str,
    signature: &str,
    body: &[u8],
    now: i64,
    tolerance_secs: i64,
) -> Result<(), String> {
    let sent: i64 = timestamp.trim().parse().map_err(|_| "the timestamp is not a number".to_owned())?;
    if (now - sent).abs() > tolerance_secs {
        return Err(format!("the timestamp is {}s from now", (now - sent).abs()));
    }
    let hex_tag =
        signature.trim().strip_prefix("sha256=").ok_or("the signature does not start with sha256=")?;
    let tag = hex::decode(hex_tag).map_err(|_| "the signature is not hex".to_owned())?;
    mac(key, timestamp.trim(), body).verify_slice(&tag).map_err(|_| "the signature does not match".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_and_bind_body_and_time() {
        let key = SigningKey::new("s3cret");
        let sig = sign(&key, 1_700_000_000, b"{\"a\":1}");
        assert!(sig.starts_with("sha256=") && sig.len() == 7 + 64, "{sig}");
        assert_eq!(verify(&key, "1700000000", &sig, b"{\"a\":1}", 1_700_000_010, 300), Ok(()));
        assert!(verify(&key, "1700000000", &sig, b"{\"a\":2}", 1_700_000_010, 300).is_err(), "body changed");
        assert!(verify(&key, "1700000001", &sig, b"{\"a\":1}", 1_700_000_010, 300).is_err(), "time changed");
        assert!(
            verify(&SigningKey::new("other"), "1700000000", &sig, b"{\"a\":1}", 1_700_000_010, 300).is_err()
        );
        assert!(verify(&key, "1700000000", &sig, b"{\"a\":1}", 1_700_009_999, 300).is_err(), "too old");
        assert!(verify(&key, "x", &sig, b"", 0, 300).is_err());
        assert!(verify(&key, "1700000000", "md5=00", b"", 1_700_000_000, 300).is_err());
        assert_eq!(format!("{key:?}"), "SigningKey(***)");
    }

    #[test]
    fn a_known_vector_matches() {
        // HMAC-SHA256(key = "key", message = "1.body"), computed with Python's hmac module.
        let sig = sign(&SigningKey::new("key"), 1, b"body");
        assert_eq!(sig, "sha256=91b5374b153842ad05b2c4eab9349b8321b14703165bd3fb8b034dfb8be98ae5");
    }
}
