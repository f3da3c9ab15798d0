//! An SSE reader for tests over `agentd_client`'s decoder: yields each
//! event's name and `data` as JSON, and keeps the raw text for framing
//! assertions.

use agentd_client::sse::{SseDecoder, SseEvent};
use futures::StreamExt;
use serde_json::Value;
use std::collections::VecDeque;
use std::time::Duration;

pub struct SseStream {
    pub status: u16,
    pub content_type: String,
    body: Option<futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>>,
    decoder: SseDecoder,
    ready: VecDeque<SseEvent>,
    /// Raw frames seen (comments included), for framing assertions.
    pub raw: String,
}

impl SseStream {
    pub fn new(r: reqwest::Response) -> SseStream {
        let status = r.status().as_u16();
        let content_type =
            r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        SseStream {
            status,
            content_type,
            body: Some(r.bytes_stream().boxed()),
            decoder: SseDecoder::default(),
            ready: VecDeque::new(),
            raw: String::new(),
        }
    }

    pub fn is_sse(&self) -> bool {
        self.content_type.starts_with("text/event-stream")
    }

    /// The JSON body of a non-streamed answer (an error before the stream).
    pub async fn plain_body(&mut self) -> Value {
        let mut text = String::new();
        if let Some(mut b) = self.body.take() {
            while let Some(Ok(chunk)) = b.next().await {
                text.push_str(&String::from_utf8_lossy(&chunk));
            }
        }
        let v = serde_json::from_str(&text).unwrap_or(Value::Null);
        super::annotations::check(&v);
        v
    }

    /// The next event's data, `None` when the stream closed. Panics after
    /// `timeout` without an event.
    pub async fn next_timeout(&mut self, timeout: Duration) -> Option<(Option<String>, Value)> {
        tokio::time::timeout(timeout, self.next_event()).await.expect("SSE event timed out")
    }

    pub async fn next(&mut self) -> Option<Value> {
        self.next_timeout(Duration::from_secs(20)).await.map(|(_, v)| v)
    }

    async fn next_event(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            if let Some(ev) = self.ready.pop_front() {
                let v: Value = serde_json::from_str(&ev.data).expect("SSE data is JSON");
                super::annotations::check(&v);
                return Some((ev.event, v));
            }
            let body = self.body.as_mut()?;
            match body.next().await {
                Some(Ok(chunk)) => {
                    self.raw.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
                    self.ready.extend(self.decoder.push(&chunk).expect("a well-formed event stream"));
                }
                _ => return None,
            }
        }
    }

    /// All remaining events until the stream closes.
    pub async fn collect(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(v) = self.next().await {
            out.push(v);
        }
        out
    }

    /// Whether the stream stays open (no event, no close) for `d`.
    pub async fn stays_open_for(&mut self, d: Duration) -> bool {
        tokio::time::timeout(d, self.next_event()).await.is_err()
    }
}
