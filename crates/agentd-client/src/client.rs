//! A JSON-RPC client of one A2A endpoint: unary calls and the SSE streams
//! of streaming methods, with `A2A-Version`, an optional bearer token (a
//! sensitive header, never logged) and requested extensions.

use crate::error::{ClientError, RpcError};
use crate::jsonrpc::{request, result_of};
use crate::sse::{ReadError, SseDecoder, SseReader};
use agentd_proto::PROTOCOL_VERSION;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Response, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::time::Duration;

/// The largest answer (or stream event) read unless the user sets another.
pub const DEFAULT_MAX_ANSWER: usize = 64 * 1024 * 1024;
/// How much of an error body is read for its message.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// How many characters of a non-A2A error body an error keeps.
const ERROR_SNIPPET: usize = 200;

#[derive(Clone, Debug)]
pub struct Client {
    http: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    timeout: Option<Duration>,
    max_answer: usize,
}

impl Client {
    /// A client of the JSON-RPC interface at `endpoint`, over `http` (whose
    /// connect timeout, redirect policy and user agent it keeps).
    pub fn new(http: reqwest::Client, endpoint: Url) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("a2a-version"), HeaderValue::from_static(PROTOCOL_VERSION));
        Self { http, endpoint, headers, timeout: None, max_answer: DEFAULT_MAX_ANSWER }
    }

    /// Sends `Authorization: Bearer <token>` (surrounding blanks trimmed).
    pub fn with_bearer(mut self, token: &str) -> Result<Self, ClientError> {
        self.headers.insert(AUTHORIZATION, bearer(token)?);
        Ok(self)
    }

    /// Requests these extensions (`A2A-Extensions`) on every call.
    pub fn with_extensions(mut self, uris: &[&str]) -> Result<Self, ClientError> {
        if !uris.is_empty() {
            let v = HeaderValue::from_str(&uris.join(", "))
                .map_err(|_| ClientError::BadHeader("an extension URI"))?;
            self.headers.insert(HeaderName::from_static("a2a-extensions"), v);
        }
        Ok(self)
    }

    /// The deadline of each unary call (streams have none).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The largest answer, and the largest stream event, accepted.
    pub fn with_max_answer(mut self, bytes: usize) -> Self {
        self.max_answer = bytes;
        self
    }

    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }

    /// A unary call; the `result` decoded as `T`.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, ClientError> {
        let mut rb = self.post(method, params);
        if let Some(t) = self.timeout {
            rb = rb.timeout(t);
        }
        let resp = self.send(rb).await?;
        let status = resp.status().as_u16();
        let body = read_bounded(resp, self.max_answer).await?;
        result_of(serde_json::from_slice(&body).map_err(ClientError::NotJson)?, status)
    }

    /// A streaming call: the `result` of every event, decoded as `T`. An
    /// error the server found before opening the stream comes as a plain
    /// JSON-RPC answer, and is this call's error.
    pub async fn stream<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<EventStream<T>, ClientError> {
        let rb = self.post(method, params).header(ACCEPT, "text/event-stream");
        let resp = self.send(rb).await?;
        let status = resp.status().as_u16();
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        let mut stream = EventStream { reader: None, pending: VecDeque::new(), _result: PhantomData };
        if is_sse {
            let body = resp.bytes_stream().boxed();
            stream.reader = Some(SseReader::new(body, SseDecoder::new(self.max_answer)));
        } else {
            let body = read_bounded(resp, self.max_answer).await?;
            let v = serde_json::from_slice(&body).map_err(ClientError::NotJson)?;
            stream.pending.push_back(result_of(v, status)?);
        }
        Ok(stream)
    }

    /// Posts a prepared request body and returns the answer's status and
    /// bytes undecoded: a load generator measures the server, not this
    /// client's parsing.
    pub async fn post_raw(&self, body: Vec<u8>) -> Result<(u16, Vec<u8>), ClientError> {
        let rb = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let resp = rb.send().await.map_err(ClientError::Transport)?;
        let status = resp.status().as_u16();
        Ok((status, read_bounded(resp, self.max_answer).await?))
    }

    /// A call's request, with the current span's trace context (a delegation
    /// joins the delegating turn's trace).
    fn post(&self, method: &str, params: &impl Serialize) -> reqwest::RequestBuilder {
        let rb = self.http.post(self.endpoint.clone()).headers(self.headers.clone());
        crate::trace::inject(rb).json(&request(1, method, params))
    }

    /// Sends; a non-2xx answer is an error saying what the server said.
    async fn send(&self, rb: reqwest::RequestBuilder) -> Result<Response, ClientError> {
        let resp = rb.send().await.map_err(ClientError::Transport)?;
        let status = resp.status().as_u16();
        if resp.status().is_success() {
            return Ok(resp);
        }
        // Some errors (401, 413, …) are answered before JSON-RPC dispatch:
        // an A2A error body, but not HTTP 200.
        let body = read_bounded(resp, MAX_ERROR_BODY).await.unwrap_or_default();
        if let Ok(v) = serde_json::from_slice::<Value>(&body)
            && let Some(e) = v.get("error").and_then(|e| RpcError::from_wire(e, status))
        {
            return Err(ClientError::Refused(e));
        }
        let body = String::from_utf8_lossy(&body).chars().take(ERROR_SNIPPET).collect();
        Err(ClientError::Status { status, body })
    }
}

/// `Bearer <token>`, marked sensitive (kept out of `Debug` output).
pub(crate) fn bearer(token: &str) -> Result<HeaderValue, ClientError> {
    let mut v = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| ClientError::BadHeader("the token"))?;
    v.set_sensitive(true);
    Ok(v)
}

/// Reads a body of at most `cap` bytes.
pub(crate) async fn read_bounded(mut resp: Response, cap: usize) -> Result<Vec<u8>, ClientError> {
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(ClientError::BrokenOff)? {
        if buf.len() + chunk.len() > cap {
            return Err(ClientError::TooLarge(cap));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

/// The events of one streaming call.
pub struct EventStream<T> {
    reader: Option<SseReader<BoxStream<'static, reqwest::Result<bytes::Bytes>>>>,
    pending: VecDeque<T>,
    _result: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> EventStream<T> {
    /// The next event's `result`; `None` once the server closed the
    /// stream. An error frame is an error.
    pub async fn next(&mut self) -> Result<Option<T>, ClientError> {
        if let Some(ev) = self.pending.pop_front() {
            return Ok(Some(ev));
        }
        let Some(reader) = self.reader.as_mut() else { return Ok(None) };
        let event = match reader.next().await {
            Ok(Some(event)) => event,
            Ok(None) => return Ok(None),
            Err(ReadError::Body(e)) => return Err(ClientError::BrokenOff(e)),
            Err(ReadError::Sse(e)) => return Err(ClientError::Sse(e)),
        };
        let v: Value = serde_json::from_str(&event.data).map_err(ClientError::NotJson)?;
        result_of(v, 200).map(Some)
    }
}
