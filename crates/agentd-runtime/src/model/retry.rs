//! Retry policy: which failures are worth another attempt, how long to wait
//! (exponential backoff with jitter, or the server's `Retry-After`), and the
//! server's own error message out of an error body.

use super::stream::clip;
use agentd_client::Backoff;
use reqwest::header::HeaderMap;
use std::time::Duration;

/// Whether an HTTP status is worth retrying: 408, 429 and every 5xx
/// (Anthropic's 529 "overloaded" among them).
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500..=599)
}

/// The delay before retry number `attempt` (from 0): `base · 2^attempt`
/// capped at `max`, then jittered to between half and all of it. A
/// `Retry-After` from the server replaces it, capped at `max`.
pub fn delay(attempt: u32, base: Duration, max: Duration, retry_after: Option<Duration>) -> Duration {
    match retry_after {
        Some(d) => d.min(max),
        None => Backoff::equal_jitter(base, max).delay(attempt),
    }
}

/// `retry-after-ms` (OpenAI) or `Retry-After` in seconds (both APIs); an HTTP date is ignored.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    get("retry-after-ms")
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
        .or_else(|| get("retry-after").and_then(|s| Duration::try_from_secs_f64(s).ok()))
}

/// The server's error message: `error.message`, `error` (a string),
/// `message` or `detail` of a JSON body, else the body's text, clipped.
pub fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) {
        let found = [
            v.pointer("/error/message"),
            v.get("error").filter(|e| e.is_string()),
            v.get("message"),
            v.get("detail"),
        ];
        if let Some(m) = found.into_iter().flatten().next() {
            return match m.as_str() {
                Some(s) => clip(s),
                None => clip(&m.to_string()),
            };
        }
    }
    let text = text.trim();
    if text.is_empty() { "(empty body)".to_owned() } else { clip(text) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_replaces_the_backoff_within_its_cap() {
        let (base, max) = (Duration::from_millis(100), Duration::from_secs(1));
        assert_eq!(delay(0, base, max, Some(Duration::from_secs(60))), max);
        assert_eq!(delay(5, base, max, Some(Duration::from_millis(3))), Duration::from_millis(3));
        assert!(delay(0, base, max, None) <= base, "the first retry waits at most the base");
    }

    #[test]
    fn error_messages_from_common_shapes() {
        assert_eq!(error_message(br#"{"error":{"message":"bad model","type":"x"}}"#), "bad model");
        assert_eq!(error_message(br#"{"error":"nope"}"#), "nope");
        assert_eq!(error_message(br#"{"detail":"missing"}"#), "missing");
        assert_eq!(error_message(b"plain text\n"), "plain text");
        assert_eq!(error_message(b""), "(empty body)");
    }
}
