//! Helpers every provider shares: sending deltas and sleeping while honouring
//! cancellation, cutting a text into a few deltas, estimating token counts,
//! clipping a server's text for an error message.

use super::types::{ModelError, ModelRequest};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Sends one text delta, waiting for room in the channel but not past a
/// cancellation. A receiver that went away is ignored: the caller may have
/// stopped listening and still want the whole response.
pub async fn send_delta(
    deltas: &mpsc::Sender<String>,
    cancel: &CancellationToken,
    text: String,
) -> Result<(), ModelError> {
    if text.is_empty() {
        return Ok(());
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ModelError::Cancelled),
        _ = deltas.send(text) => Ok(()),
    }
}

/// Sleeps for `d` unless `cancel` fires first.
pub async fn sleep(d: Duration, cancel: &CancellationToken) -> Result<(), ModelError> {
    if d.is_zero() {
        return if cancel.is_cancelled() { Err(ModelError::Cancelled) } else { Ok(()) };
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ModelError::Cancelled),
        _ = tokio::time::sleep(d) => Ok(()),
    }
}

/// Cuts `text` into at most `max` deltas at word boundaries (whitespace
/// stays with the word before it), so that concatenating them gives `text`.
pub fn split_deltas(text: &str, max: usize) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let words: Vec<&str> = text.split_inclusive(char::is_whitespace).collect();
    let max = max.clamp(1, words.len());
    let per = words.len().div_ceil(max);
    words.chunks(per).map(|c| c.concat()).collect()
}

/// A deterministic token estimate (whitespace-separated words), for the
/// offline providers.
pub fn estimate_tokens(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// The estimated input tokens of a whole request.
pub fn estimate_request_tokens(req: &ModelRequest) -> u64 {
    req.messages
        .iter()
        .map(|m| {
            estimate_tokens(&m.content)
                + m.tool_calls.iter().map(|c| estimate_tokens(&c.arguments) + 1).sum::<u64>()
        })
        .sum()
}

/// The first characters of `s`, for error messages.
pub fn clip(s: &str) -> String {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_text_and_bounds_count() {
        for (text, max) in [("a b c d e f g", 3), ("one", 4), ("a  b\nc ", 2), ("x y", 10)] {
            let parts = split_deltas(text, max);
            assert_eq!(parts.concat(), text);
            assert!(!parts.is_empty() && parts.len() <= max, "{parts:?}");
        }
        assert!(split_deltas("", 3).is_empty());
        assert_eq!(split_deltas("a b c d e f", 3), ["a b ", "c d ", "e f"]);
    }
}
