//! A small JSON-RPC client of a running daemon: unary calls and the SSE
//! streams of SendStreamingMessage / SubscribeToTask.
//!
//! The SSE reader is written by hand rather than taken from a crate: the
//! daemon sends one JSON document per `data:` line and an `event: error`
//! frame before it closes, so all a client needs is to split lines, join
//! `data:` values and skip comments (keep-alives). The eventsource crates
//! add reconnection with `Last-Event-ID`, which A2A does not use (a client
//! resubscribes explicitly with SubscribeToTask), and would be one more
//! dependency for about forty lines.

use super::ClientOpts;
use super::exit::{self, Exit};
use agentd_proto::PROTOCOL_VERSION;
use anyhow::{Context, anyhow, bail};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::time::Duration;

pub struct Client {
    http: reqwest::Client,
    /// The base URL as given (for messages).
    base: String,
    /// `<base>/a2a/jsonrpc`.
    endpoint: String,
    token: Option<String>,
    /// Extension URIs requested in `A2A-Extensions`.
    extensions: Vec<String>,
}

impl Client {
    pub fn new(opts: &ClientOpts) -> anyhow::Result<Self> {
        let base = opts.url.trim().trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base).with_context(|| format!("--url {base:?} is not a URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            bail!("--url {base:?} must be an http:// or https:// URL");
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .context("cannot build the HTTP client")?;
        let endpoint = format!("{base}/a2a/jsonrpc");
        let token = opts.token.clone().filter(|t| !t.trim().is_empty());
        Ok(Self { http, base, endpoint, token, extensions: Vec::new() })
    }

    /// Requests these extensions on every call.
    pub fn with_extensions(mut self, uris: &[&str]) -> Self {
        self.extensions = uris.iter().map(|u| (*u).to_owned()).collect();
        self
    }

    /// A unary call; returns the `result` member.
    pub async fn call(&self, method: &str, params: &impl Serialize) -> anyhow::Result<Value> {
        let resp = self.post(method, params, false).await?;
        let mut body: Value =
            resp.json().await.map_err(|_| self.not_agentd("did not answer with JSON-RPC"))?;
        if let Some(e) = body.get("error") {
            return Err(rpc_error(e));
        }
        match body.get_mut("result") {
            Some(r) => Ok(r.take()),
            None => Err(self.not_agentd("answered without a JSON-RPC result or error")),
        }
    }

    /// A streaming call; yields the `result` of every event.
    pub async fn stream(&self, method: &str, params: &impl Serialize) -> anyhow::Result<EventStream> {
        let resp = self.post(method, params, true).await?;
        let is_sse = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        let mut stream = EventStream {
            resp: None,
            parser: SseParser::default(),
            pending: VecDeque::new(),
            base: self.base.clone(),
        };
        if is_sse {
            stream.resp = Some(resp);
        } else {
            // An error found before the stream opened comes as a plain
            // JSON-RPC response.
            let mut body: Value =
                resp.json().await.map_err(|_| self.not_agentd("did not answer with JSON-RPC"))?;
            if let Some(e) = body.get("error") {
                return Err(rpc_error(e));
            }
            if let Some(r) = body.get_mut("result") {
                stream.pending.push_back(r.take());
            }
        }
        Ok(stream)
    }

    async fn post(
        &self,
        method: &str,
        params: &impl Serialize,
        stream: bool,
    ) -> anyhow::Result<reqwest::Response> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut rb = self.http.post(&self.endpoint).header("A2A-Version", PROTOCOL_VERSION).json(&body);
        if stream {
            rb = rb.header(reqwest::header::ACCEPT, "text/event-stream");
        }
        if let Some(t) = &self.token {
            rb = rb.bearer_auth(t);
        }
        if !self.extensions.is_empty() {
            rb = rb.header("A2A-Extensions", self.extensions.join(", "));
        }
        let resp = rb.send().await.map_err(|e| self.transport_error(&e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        // 401 (and a few others) are answered before JSON-RPC dispatch, with
        // an error body but not HTTP 200.
        let text = resp.text().await.unwrap_or_default();
        if let Ok(v) = serde_json::from_str::<Value>(&text)
            && let Some(e) = v.get("error").filter(|e| e.is_object())
        {
            return Err(rpc_error(e));
        }
        let snippet: String = text.chars().take(200).collect();
        Err(self.not_agentd(&format!("answered HTTP {status}: {}", snippet.trim())))
    }

    /// The answer does not look like agentd's: name the URL and say so.
    fn not_agentd(&self, what: &str) -> anyhow::Error {
        anyhow!(
            "{} {what}\n  {} may not be an agentd daemon: check --url (AGENTD_URL).",
            self.endpoint,
            self.base
        )
    }

    fn transport_error(&self, e: &reqwest::Error) -> anyhow::Error {
        let cause = root_cause(e);
        if e.is_connect() || e.is_timeout() {
            let message = format!(
                "could not reach agentd at {}: {cause}\n  \
                 Is the daemon running? Start it with `agentd serve`, or point --url (AGENTD_URL) at it.",
                self.base
            );
            Exit { code: exit::UNREACHABLE, message }.into()
        } else {
            anyhow!("request to {} failed: {cause}", self.endpoint)
        }
    }
}

/// The innermost cause, which says what actually went wrong
/// ("Connection refused") without reqwest's wrapping.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// `<message> (<code>, <reason>)` from a JSON-RPC error object, or from the
/// `{code, status, message, details}` body of an error sent before dispatch.
fn rpc_error(e: &Value) -> anyhow::Error {
    let message = e["message"].as_str().unwrap_or("the daemon reported an error without a message");
    let rest_shaped = e["status"].is_string();
    let code = match &e["code"] {
        Value::Null => "no code".to_owned(),
        c if rest_shaped => format!("HTTP {c}"),
        c => c.to_string(),
    };
    let details = e.get("data").or_else(|| e.get("details")).and_then(Value::as_array);
    let reason = details.into_iter().flatten().find_map(|d| {
        let is_info = d["@type"].as_str().is_some_and(|t| t.ends_with("google.rpc.ErrorInfo"));
        if is_info { d["reason"].as_str() } else { None }
    });
    let mut text = match reason {
        Some(r) => format!("{message} ({code}, {r})"),
        None => format!("{message} ({code})"),
    };
    if reason == Some("UNAUTHENTICATED") {
        text.push_str("\n  Pass the daemon's bearer token with --token or AGENTD_TOKEN.");
    }
    RpcError { reason: reason.unwrap_or_default().to_owned(), text }.into()
}

/// An error the daemon answered with; `reason` is its ErrorInfo reason
/// (`TASK_NOT_FOUND`, …) or empty.
#[derive(Debug)]
pub struct RpcError {
    pub reason: String,
    text: String,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for RpcError {}

/// Whether the daemon refused with this ErrorInfo reason.
pub fn is_reason(e: &anyhow::Error, reason: &str) -> bool {
    e.chain().filter_map(|c| c.downcast_ref::<RpcError>()).any(|r| r.reason == reason)
}

/// The events of one SSE response, as JSON-RPC `result` values.
pub struct EventStream {
    resp: Option<reqwest::Response>,
    parser: SseParser,
    pending: VecDeque<Value>,
    base: String,
}

impl EventStream {
    /// The next event's `result`; `None` once the daemon closed the stream.
    /// An error frame becomes an error.
    pub async fn next(&mut self) -> anyhow::Result<Option<Value>> {
        loop {
            if let Some(v) = self.pending.pop_front() {
                return Ok(Some(v));
            }
            if let Some(data) = self.parser.next_data() {
                let mut v: Value = serde_json::from_str(&data)
                    .with_context(|| format!("an event from {} is not JSON", self.base))?;
                if let Some(e) = v.get("error") {
                    return Err(rpc_error(e));
                }
                match v.get_mut("result") {
                    Some(r) => return Ok(Some(r.take())),
                    None => bail!("an event from {} has neither result nor error", self.base),
                }
            }
            let Some(resp) = self.resp.as_mut() else {
                return Ok(None);
            };
            match resp.chunk().await {
                Ok(Some(bytes)) => self.parser.push(&bytes),
                Ok(None) => self.resp = None,
                Err(e) => bail!("the event stream from {} broke off: {}", self.base, root_cause(&e)),
            }
        }
    }
}

/// Incremental `text/event-stream` parsing: bytes in, the `data` of each
/// complete event out. Event names are not needed: an error frame carries
/// a JSON-RPC `error` member, which the caller checks.
#[derive(Default)]
struct SseParser {
    buf: Vec<u8>,
    data: Option<String>,
}

impl SseParser {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    fn next_data(&mut self) -> Option<String> {
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.buf.drain(..=i).collect();
            let raw = raw.strip_suffix(b"\n").unwrap_or(&raw);
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let line = String::from_utf8_lossy(raw);
            if line.is_empty() {
                // A blank line ends the event; one without data (a bare
                // `event:` or only comments) is dropped.
                if let Some(d) = self.data.take() {
                    return Some(d);
                }
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (&*line, ""),
            };
            if field == "data" {
                match &mut self.data {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => self.data = Some(value.to_owned()),
                }
            }
            // `:` comments (keep-alives), `event:`, `id:`, `retry:` are skipped.
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &mut SseParser) -> Vec<String> {
        std::iter::from_fn(|| p.next_data()).collect()
    }

    #[test]
    fn events_split_across_chunks_and_crlf() {
        let mut p = SseParser::default();
        p.push(b"data: {\"a\"");
        assert!(all(&mut p).is_empty());
        p.push(b":1}\r\n\r\n: keep-alive\n\nevent: error\ndata: {\"b\":2}\n\n");
        assert_eq!(all(&mut p), vec![r#"{"a":1}"#, r#"{"b":2}"#]);
    }

    #[test]
    fn multi_line_data_is_joined_and_incomplete_events_wait() {
        let mut p = SseParser::default();
        p.push(b"data:x\ndata: y\n\ndata: z\n");
        assert_eq!(all(&mut p), vec!["x\ny"]);
        p.push(b"\n");
        assert_eq!(all(&mut p), vec!["z"]);
    }

    #[test]
    fn multibyte_text_split_mid_character_survives() {
        let mut p = SseParser::default();
        let frame = "data: \"héllo\"\n\n".as_bytes();
        p.push(&frame[..9]);
        p.push(&frame[9..]);
        assert_eq!(all(&mut p), vec!["\"héllo\""]);
    }

    #[test]
    fn errors_read_as_message_code_and_reason() {
        let e = json!({"code": -32001, "message": "task \"x\" not found", "data": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}
        ]});
        assert_eq!(rpc_error(&e).to_string(), "task \"x\" not found (-32001, TASK_NOT_FOUND)");
        let e = json!({"code": -32602, "message": "id: is required"});
        assert_eq!(rpc_error(&e).to_string(), "id: is required (-32602)");
        let e = json!({"code": 401, "status": "UNAUTHENTICATED", "message": "the bearer token is not valid", "details": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "UNAUTHENTICATED"}
        ]});
        let text = rpc_error(&e).to_string();
        assert!(text.starts_with("the bearer token is not valid (HTTP 401, UNAUTHENTICATED)"), "{text}");
        assert!(text.contains("--token"), "{text}");
    }
}
