//! `text/event-stream` decoding (the WHATWG event-stream format): bytes in,
//! events out, with a cap on the size of one event so a peer cannot make a
//! reader buffer without end.
//!
//! Written here rather than taken from a crate: the eventsource crates own
//! the HTTP request and reconnect with `Last-Event-ID`, which neither A2A
//! (a client resubscribes with SubscribeToTask) nor the OpenAI stream uses,
//! and none caps the size of an event. Decoding itself is a page of code.

use futures::{Stream, StreamExt};
use std::collections::VecDeque;

/// The cap a decoder gets unless its user sets one.
pub const DEFAULT_MAX_EVENT: usize = 16 * 1024 * 1024;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// The `id:` field, if the event had one.
    pub id: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Why a stream cannot be decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("an event is larger than {limit} bytes")]
    TooLarge { limit: usize },
    #[error("the stream is not UTF-8")]
    NotUtf8,
}

/// Incremental decoding. Lines end with LF, CRLF or CR (also when the
/// chunk boundary falls between CR and LF); `:` lines are comments; a
/// blank line dispatches the event, unless it has no data.
#[derive(Debug)]
pub struct SseDecoder {
    max_event: usize,
    line: Vec<u8>,
    /// The last byte seen was a CR: an LF right after it ends nothing.
    after_cr: bool,
    event: Option<String>,
    id: Option<String>,
    data: String,
    has_data: bool,
    /// Bytes kept for the current event's fields (the open line aside).
    held: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_EVENT)
    }
}

impl SseDecoder {
    /// A decoder refusing any event (or unterminated line) over `max_event` bytes.
    pub fn new(max_event: usize) -> Self {
        Self {
            max_event,
            line: Vec::new(),
            after_cr: false,
            event: None,
            id: None,
            data: String::new(),
            has_data: false,
            held: 0,
        }
    }

    /// Feeds bytes; returns every event they complete.
    pub fn push(&mut self, mut bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        while !bytes.is_empty() {
            let Some(end) = bytes.iter().position(|b| matches!(b, b'\n' | b'\r')) else {
                self.hold(bytes)?;
                break;
            };
            self.hold(&bytes[..end])?;
            let crlf = bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n');
            self.after_cr = bytes[end] == b'\r' && end + 1 == bytes.len();
            bytes = &bytes[end + if crlf { 2 } else { 1 }..];
            let line = std::mem::take(&mut self.line);
            if let Some(ev) = self.line_done(&line)? {
                events.push(ev);
            }
        }
        Ok(events)
    }

    /// The stream ended: the event left without its blank line, if any.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        let line = std::mem::take(&mut self.line);
        if !line.is_empty() {
            self.line_done(&line)?;
        }
        Ok(self.dispatch())
    }

    fn hold(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.held + self.line.len() + bytes.len() > self.max_event {
            return Err(SseError::TooLarge { limit: self.max_event });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn line_done(&mut self, raw: &[u8]) -> Result<Option<SseEvent>, SseError> {
        if raw.is_empty() {
            return Ok(self.dispatch());
        }
        let line = std::str::from_utf8(raw).map_err(|_| SseError::NotUtf8)?;
        let (field, value) = match line.split_once(':') {
            Some(("", _)) => return Ok(None), // a comment (keep-alive)
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        let kept = value.len();
        match field {
            "data" => {
                self.held += kept + 1;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => {
                self.held += kept;
                self.event = Some(value.to_owned());
            }
            "id" if !value.contains('\0') => {
                self.held += kept;
                self.id = Some(value.to_owned());
            }
            // `retry:` is for reconnecting readers; unknown fields are ignored.
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        self.held = 0;
        let data = std::mem::take(&mut self.data);
        let event = self.event.take();
        let id = self.id.take();
        std::mem::replace(&mut self.has_data, false)
            .then_some(SseEvent { event, id, data })
            .filter(|e| !e.data.is_empty())
    }
}

/// Why reading events from a byte stream stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReadError<E> {
    /// The byte stream failed (a connection reset, a timeout).
    #[error("the stream broke off")]
    Body(#[source] E),
    #[error(transparent)]
    Sse(#[from] SseError),
}

/// The events of any byte stream (an HTTP body, a test's chunks).
pub struct SseReader<S> {
    body: Option<S>,
    decoder: SseDecoder,
    ready: VecDeque<SseEvent>,
}

impl<S, B, E> SseReader<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    pub fn new(body: S, decoder: SseDecoder) -> Self {
        Self { body: Some(body), decoder, ready: VecDeque::new() }
    }

    /// The next event; `None` once the stream ended. Cancel-safe: a chunk
    /// is decoded in the same poll that receives it.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, ReadError<E>> {
        loop {
            if let Some(ev) = self.ready.pop_front() {
                return Ok(Some(ev));
            }
            let Some(body) = self.body.as_mut() else { return Ok(None) };
            match body.next().await {
                Some(Ok(chunk)) => self.ready.extend(self.decoder.push(chunk.as_ref())?),
                Some(Err(e)) => {
                    self.body = None;
                    return Err(ReadError::Body(e));
                }
                None => {
                    self.body = None;
                    return Ok(self.decoder.finish()?);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(evs: Vec<SseEvent>) -> Vec<String> {
        evs.into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn split_lines_crlf_comments_and_multiline_data() {
        let mut d = SseDecoder::default();
        let mut got = data(d.push(b": keep-alive\r\n\r\ndata: {\"a\"").unwrap());
        got.extend(data(d.push(b":1}\r\n\r\nevent: x\ndata: one\ndata: two\n\n").unwrap()));
        got.extend(data(d.push(b"data:[DONE]").unwrap()));
        got.extend(d.finish().unwrap().map(|e| e.data));
        assert_eq!(got, ["{\"a\":1}", "one\ntwo", "[DONE]"]);
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let stream =
            "event: error\r\nid: 7\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\n: ping\n\ndata:x\rdata: y\r\r";
        let want = vec![
            SseEvent { event: Some("error".into()), id: Some("7".into()), data: "{\"b\":\n2}".into() },
            SseEvent { event: None, id: None, data: "x\ny".into() },
        ];
        for cut in 0..=stream.len() {
            let mut d = SseDecoder::default();
            let mut got = d.push(&stream.as_bytes()[..cut]).unwrap();
            got.extend(d.push(&stream.as_bytes()[cut..]).unwrap());
            got.extend(d.finish().unwrap());
            assert_eq!(got, want, "cut at {cut}");
        }
    }

    #[test]
    fn multibyte_text_split_mid_character_survives() {
        let frame = "data: \"héllo\"\n\n".as_bytes();
        let mut d = SseDecoder::default();
        assert!(d.push(&frame[..8]).unwrap().is_empty());
        assert_eq!(data(d.push(&frame[8..]).unwrap()), ["\"héllo\""]);
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        let mut d = SseDecoder::default();
        assert!(d.push(b"event: x\n\ndata:\n\n: c\n\nid: 1\n\n").unwrap().is_empty());
        // The fields of a dropped event do not leak into the next one.
        assert_eq!(d.push(b"data: z\n\n").unwrap(), [SseEvent { data: "z".into(), ..Default::default() }]);
    }

    #[test]
    fn an_event_over_the_cap_is_refused_even_in_small_chunks() {
        let mut d = SseDecoder::new(16);
        assert!(d.push(b"data: 0123456789\n\n").is_ok(), "an event at the cap passes");
        let mut d = SseDecoder::new(16);
        d.push(b"data: 012345\n").unwrap();
        assert_eq!(d.push(b"data: 56789\n"), Err(SseError::TooLarge { limit: 16 }), "lines add up");
        let mut d = SseDecoder::new(16);
        let mut refused = false;
        for _ in 0..100 {
            if d.push(b"xx").is_err() {
                refused = true;
                break;
            }
        }
        assert!(refused, "a line that never ends is refused");
        // The cap is per event: many small events pass, and so do comments.
        let mut d = SseDecoder::new(16);
        for _ in 0..100 {
            assert_eq!(d.push(b"data: 0123456789\n\n: keep-alive\n").unwrap().len(), 1);
        }
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        assert_eq!(SseDecoder::default().push(b"data: \xff\xfe\n\n"), Err(SseError::NotUtf8));
    }

    #[tokio::test]
    async fn reader_decodes_a_byte_stream_and_reports_its_failure() {
        let chunks: Vec<Result<&[u8], &str>> =
            vec![Ok(b"data: a\n"), Ok(b"\ndata: b\n\ndata: c"), Ok(b"\n\n"), Err("reset")];
        let mut r = SseReader::new(futures::stream::iter(chunks), SseDecoder::default());
        for want in ["a", "b", "c"] {
            assert_eq!(r.next().await.unwrap().unwrap().data, want);
        }
        assert!(matches!(r.next().await, Err(ReadError::Body("reset"))));
        assert!(r.next().await.unwrap().is_none());
        let chunks: Vec<Result<&[u8], &str>> = vec![Ok(b"data: last")];
        let mut r = SseReader::new(futures::stream::iter(chunks), SseDecoder::default());
        assert_eq!(r.next().await.unwrap().unwrap().data, "last", "an unterminated last event counts");
    }
}
