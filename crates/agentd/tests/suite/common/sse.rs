//! A minimal SSE reader for tests: yields each event's `data` as JSON.

use futures::StreamExt;
use serde_json::Value;
use std::time::Duration;

pub struct SseStream {
    pub status: u16,
    pub content_type: String,
    body: Option<futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>>,
    buf: String,
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
            buf: String::new(),
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
            if let Some(i) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..i + 2).collect();
                let mut data = String::new();
                let mut event = None;
                for line in frame.lines() {
                    if let Some(d) = line.strip_prefix("data:") {
                        data.push_str(d.trim_start());
                    } else if let Some(e) = line.strip_prefix("event:") {
                        event = Some(e.trim().to_owned());
                    }
                }
                if data.is_empty() {
                    continue; // a comment (keep-alive)
                }
                let v: Value = serde_json::from_str(&data).expect("SSE data is JSON");
                super::annotations::check(&v);
                return Some((event, v));
            }
            let body = self.body.as_mut()?;
            match body.next().await {
                Some(Ok(chunk)) => {
                    let s = String::from_utf8_lossy(&chunk).replace("\r\n", "\n");
                    self.raw.push_str(&s);
                    self.buf.push_str(&s);
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
