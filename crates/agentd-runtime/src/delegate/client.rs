//! A JSON-RPC client of one A2A peer: reads its card, picks the JSONRPC
//! interface, and makes unary calls and SSE streams with `A2A-Version: 1.0`
//! and the peer's bearer token (a sensitive header, never logged).

use super::peers::Peer;
use crate::model::openai::sse::SseDecoder;
use agentd_proto::{AgentCard, PROTOCOL_VERSION, StreamResponse};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use reqwest::{Client, Response, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::time::Duration;

/// The binding name of JSON-RPC interfaces in a card.
const JSONRPC_BINDING: &str = "JSONRPC";
/// The largest card or unary answer read, in bytes.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A peer's JSON-RPC endpoint, found through its card.
pub(crate) struct PeerClient {
    http: Client,
    peer: Peer,
    endpoint: Url,
    pub streaming: bool,
    timeout: Duration,
}

impl PeerClient {
    /// Fetches the card and picks its JSON-RPC interface (a 1.x one first).
    pub(crate) async fn connect(http: &Client, peer: &Peer, timeout: Duration) -> Result<Self, String> {
        let url = peer.card_url()?;
        let mut rb = http.get(url).timeout(timeout).header(ACCEPT, "application/json");
        if let Some(v) = bearer(peer)? {
            rb = rb.header(AUTHORIZATION, v);
        }
        let resp = rb.send().await.map_err(|e| format!("cannot fetch its agent card: {}", describe(&e)))?;
        if !resp.status().is_success() {
            return Err(format!("its agent card answered HTTP {}", resp.status()));
        }
        let card: AgentCard =
            read_json(resp).await.map_err(|e| format!("its agent card is not valid: {e}"))?;
        let jsonrpc: Vec<_> = card
            .supported_interfaces
            .iter()
            .filter(|i| i.protocol_binding.eq_ignore_ascii_case(JSONRPC_BINDING))
            .collect();
        let chosen = jsonrpc.iter().find(|i| i.protocol_version.starts_with("1.")).or(jsonrpc.first());
        let Some(interface) = chosen else {
            let offered: Vec<&str> =
                card.supported_interfaces.iter().map(|i| i.protocol_binding.as_str()).collect();
            return Err(format!("its card offers no JSONRPC interface (offered: [{}])", offered.join(", ")));
        };
        // A relative interface URL is read against the base URL.
        let endpoint = peer
            .base
            .join(&interface.url)
            .map_err(|e| format!("its JSONRPC interface URL {:?} is not a URL: {e}", interface.url))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(format!("its JSONRPC interface URL {endpoint} is not http(s)"));
        }
        // The token is for the configured peer: a card (maybe tampered
        // with) may not send it elsewhere.
        if peer.token.is_some() && endpoint.origin() != peer.base.origin() {
            return Err(format!(
                "its card puts the JSONRPC interface at {}, another origin than the configured URL; \
                 credentials are only sent to the configured origin (set a2a.peers[{}].url to it)",
                endpoint.origin().ascii_serialization(),
                peer.name
            ));
        }
        Ok(Self {
            http: http.clone(),
            peer: peer.clone(),
            endpoint,
            streaming: card.capabilities.streaming == Some(true),
            timeout,
        })
    }

    fn request(&self, method: &str, params: &impl Serialize) -> Result<reqwest::RequestBuilder, String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut rb = self
            .http
            .post(self.endpoint.clone())
            .header("A2A-Version", PROTOCOL_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .json(&body);
        if let Some(v) = bearer(&self.peer)? {
            rb = rb.header(AUTHORIZATION, v);
        }
        Ok(rb)
    }

    /// A unary call; the `result` member decoded as `T`.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, String> {
        let resp = self
            .request(method, params)?
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| format!("{method} failed: {}", describe(&e)))?;
        let body = checked(resp, method).await?;
        let v: Value = read_json(body).await.map_err(|e| format!("{method}: {e}"))?;
        result_of(v, method)
    }

    /// A streaming call: the events of the SSE answer, or the error the
    /// peer answered before opening the stream.
    pub(crate) async fn stream(&self, method: &str, params: &impl Serialize) -> Result<PeerStream, String> {
        let resp = self
            .request(method, params)?
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| format!("{method} failed: {}", describe(&e)))?;
        let resp = checked(resp, method).await?;
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        let mut stream = PeerStream { resp: None, decoder: SseDecoder::default(), pending: VecDeque::new() };
        if is_sse {
            stream.resp = Some(resp);
        } else {
            let v: Value = read_json(resp).await.map_err(|e| format!("{method}: {e}"))?;
            stream.pending.push_back(result_of(v, method)?);
        }
        Ok(stream)
    }
}

/// The events of one SSE answer.
pub(crate) struct PeerStream {
    resp: Option<Response>,
    decoder: SseDecoder,
    pending: VecDeque<StreamResponse>,
}

impl PeerStream {
    /// The next event; `None` when the peer closed the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<StreamResponse>, String> {
        loop {
            if let Some(ev) = self.pending.pop_front() {
                return Ok(Some(ev));
            }
            let Some(resp) = self.resp.as_mut() else {
                return Ok(None);
            };
            let datas = match resp.chunk().await {
                Ok(Some(bytes)) => self.decoder.push(&bytes).map_err(|e| format!("the event stream: {e}"))?,
                Ok(None) => {
                    self.resp = None;
                    self.decoder.finish().map_err(|e| format!("the event stream: {e}"))?.into_iter().collect()
                }
                Err(e) => return Err(format!("the event stream broke off: {}", describe(&e))),
            };
            for data in datas {
                let v: Value =
                    serde_json::from_str(&data).map_err(|e| format!("an event is not JSON: {e}"))?;
                self.pending.push_back(result_of(v, "SendStreamingMessage")?);
            }
        }
    }
}

fn bearer(peer: &Peer) -> Result<Option<HeaderValue>, String> {
    let Some(token) = &peer.token else {
        return Ok(None);
    };
    let mut v = HeaderValue::from_str(&format!("Bearer {}", token.expose().trim()))
        .map_err(|_| "its credentials have characters not allowed in an HTTP header".to_owned())?;
    v.set_sensitive(true);
    Ok(Some(v))
}

/// A 2xx response, or an error that says what the peer answered.
async fn checked(resp: Response, method: &str) -> Result<Response, String> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let text = resp.text().await.unwrap_or_default();
    let detail = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| text.chars().take(200).collect());
    let hint = if status.as_u16() == 401 { " (check the peer's credentials in a2a.peers)" } else { "" };
    Err(format!("{method} answered HTTP {status}{hint}: {}", detail.trim()))
}

/// The `result` of a JSON-RPC response, or its error as text.
fn result_of<T: DeserializeOwned>(mut v: Value, method: &str) -> Result<T, String> {
    if let Some(e) = v.get("error") {
        let message = e["message"].as_str().unwrap_or("an error without a message");
        return Err(format!("{method} was refused: {message} ({})", e["code"]));
    }
    match v.get_mut("result") {
        Some(r) => serde_json::from_value(r.take()).map_err(|e| format!("{method}: unexpected result: {e}")),
        None => Err(format!("{method}: the answer has neither result nor error")),
    }
}

/// Reads a JSON body of bounded size.
async fn read_json<T: DeserializeOwned>(mut resp: Response) -> Result<T, String> {
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("reading the answer: {}", describe(&e)))? {
        if buf.len() + chunk.len() > MAX_BODY {
            return Err(format!("the answer is larger than {MAX_BODY} bytes"));
        }
        buf.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&buf).map_err(|e| format!("not the expected JSON: {e}"))
}

/// A reqwest error with its causes, without the URL.
fn describe(e: &reqwest::Error) -> String {
    let mut out = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "could not connect".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}
