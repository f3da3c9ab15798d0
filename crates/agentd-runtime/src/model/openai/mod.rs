//! The `openai` model: any OpenAI-compatible Chat Completions endpoint,
//! streamed (SSE) or not, with retries (exponential backoff with jitter,
//! `Retry-After` honoured) and failover across endpoints in order.
//!
//! An attempt is retried on 408, 429, 5xx, connect errors, timeouts and a
//! stream cut short, but only while no text delta has reached the caller:
//! once the caller has seen part of an answer, a failure is final. Other 4xx
//! fail at once with the server's message. Cancellation drops the request,
//! which closes its connection.

mod retry;
pub(crate) mod sse;
mod wire;

use super::config::OpenAiConfig;
use super::stream::{send_delta, sleep};
use super::types::{ModelError, ModelProvider, ModelRequest, ModelResponse};
use agentd_client::describe;
use agentd_client::sse::{SseDecoder, SseError};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Largest non-streamed response body accepted.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// Longest wait for a TCP (and TLS) connection, if `timeout` is longer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of an error body is read for its message.
const MAX_ERROR_BODY: usize = 64 * 1024;

pub struct OpenAiProvider {
    config: OpenAiConfig,
    /// `{base}/chat/completions` of each endpoint, in failover order.
    urls: Vec<String>,
    /// Every request's headers; the secret ones are marked sensitive.
    headers: HeaderMap,
    client: reqwest::Client,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

/// A failed attempt, and whether another attempt may help.
struct Failure {
    error: ModelError,
    retry: bool,
    after: Option<Duration>,
}

impl Failure {
    fn fatal(error: ModelError) -> Self {
        Self { error, retry: false, after: None }
    }
    fn transient(error: ModelError) -> Self {
        Self { error, retry: true, after: None }
    }
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Self {
        let retry = matches!(error, ModelError::Timeout);
        Self { error, retry, after: None }
    }
}

impl OpenAiProvider {
    /// Checks the configuration and resolves its secrets (the API key and
    /// secret header values), so a missing key fails at start, not at the
    /// first call.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let bad = |m: String| ModelError::Config(format!("openai: {m}"));
        if config.endpoints.is_empty() {
            return Err(bad("no endpoints".into()));
        }
        if config.model.trim().is_empty() {
            return Err(bad("no model name".into()));
        }
        if config.timeout.is_zero() {
            return Err(bad("timeout must be positive".into()));
        }
        let mut urls = Vec::new();
        for base in &config.endpoints {
            let url = reqwest::Url::parse(base).map_err(|e| bad(format!("endpoint {base:?}: {e}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(bad(format!("endpoint {base:?} is not http(s)")));
            }
            urls.push(format!("{}/chat/completions", base.trim_end_matches('/')));
        }
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let accept = if config.stream { "text/event-stream, application/json" } else { "application/json" };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        for (name, value) in &config.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| bad(format!("bad header name {name:?}")))?;
            let (value, secret) = match super::config::SecretRef::parse(value) {
                Ok(r) => (r.resolve()?.expose().to_owned(), true),
                Err(_) => (value.clone(), false),
            };
            let mut value =
                HeaderValue::from_str(&value).map_err(|_| bad(format!("bad value for header {name}")))?;
            value.set_sensitive(secret);
            headers.insert(name, value);
        }
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", key.resolve()?.expose()))
                .map_err(|_| bad(format!("the API key {} is not a valid header value", key.reference())))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.timeout.min(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| bad(format!("HTTP client: {e}")))?;
        Ok(Self { config, urls, headers, client })
    }

    /// One request to one endpoint. `emitted` becomes true once a delta has
    /// gone to the caller (after which the call must not be retried).
    async fn attempt(
        &self,
        url: &str,
        body: Bytes,
        deltas: &mpsc::Sender<String>,
        cancel: &CancellationToken,
        emitted: &mut bool,
    ) -> Result<ModelResponse, Failure> {
        let timeout = self.config.timeout;
        let send = self.client.post(url).headers(self.headers.clone()).body(body).send();
        let resp = guard(cancel, timeout, send).await?.map_err(|e| transport(url, &e))?;
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            let after = retry::retry_after(resp.headers());
            let body = read_body(resp, MAX_ERROR_BODY, true, cancel, timeout).await?;
            let error = ModelError::Http { status, message: retry::error_message(&body) };
            return Err(Failure { error, retry: retry::retryable_status(status), after });
        }
        let content_type = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let is_sse = content_type.starts_with("text/event-stream")
            || (self.config.stream && !content_type.starts_with("application/json"));
        if !is_sse {
            let body = read_body(resp, MAX_BODY, false, cancel, timeout).await?;
            let response = wire::parse_completion(&body).map_err(Failure::fatal)?;
            send_delta(deltas, cancel, response.text.clone()).await?;
            *emitted = !response.text.is_empty();
            return Ok(response);
        }
        // Read chunk by chunk, so that the timeout is between chunks: a
        // server's keep-alive comments show it is still working.
        let mut stream = resp.bytes_stream();
        let mut decoder = SseDecoder::new(sse::MAX_EVENT);
        let mut acc = sse::Accumulator::default();
        let protocol = |e: SseError| Failure::fatal(ModelError::Protocol(e.to_string()));
        while !acc.done() {
            let events = match guard(cancel, timeout, stream.next()).await? {
                Some(Ok(bytes)) => decoder.push(&bytes).map_err(protocol)?,
                Some(Err(e)) => {
                    let e = ModelError::Unavailable(format!("the stream from {url} broke: {}", describe(&e)));
                    return Err(Failure::transient(e));
                }
                None => {
                    if let Some(event) = decoder.finish().map_err(protocol)? {
                        acc.apply(&event.data).map_err(Failure::fatal)?;
                    }
                    break;
                }
            };
            for event in events {
                if let Some(text) = acc.apply(&event.data).map_err(Failure::fatal)? {
                    send_delta(deltas, cancel, text).await?;
                    *emitted = true;
                }
                if acc.done() {
                    break;
                }
            }
        }
        if !acc.finished() {
            let e = ModelError::Protocol(format!("the stream from {url} ended before [DONE]"));
            return Err(Failure::transient(e));
        }
        acc.into_response().map_err(Failure::fatal)
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn honours_role_hints(&self) -> bool {
        self.config.reminder_role_hints
    }

    async fn complete(
        &self,
        req: &ModelRequest,
        deltas: &mpsc::Sender<String>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let body = wire::request_body(&self.config.model, req, self.config.stream);
        let body = Bytes::from(serde_json::to_vec(&body).map_err(|e| ModelError::Protocol(e.to_string()))?);
        let c = &self.config;
        let mut last = None;
        for (i, url) in self.urls.iter().enumerate() {
            for attempt in 0..=c.max_retries {
                if cancel.is_cancelled() {
                    return Err(ModelError::Cancelled);
                }
                let mut emitted = false;
                let failure = match self.attempt(url, body.clone(), deltas, cancel, &mut emitted).await {
                    Ok(response) => return Ok(response),
                    Err(f) => f,
                };
                if !failure.retry || emitted {
                    return Err(failure.error);
                }
                tracing::warn!(endpoint = %url, attempt, error = %failure.error, "model request failed");
                if attempt < c.max_retries {
                    sleep(retry::delay(attempt, c.backoff_base, c.max_backoff, failure.after), cancel)
                        .await?;
                }
                last = Some(failure.error);
            }
            if let Some(next) = self.urls.get(i + 1) {
                tracing::warn!(from = %url, to = %next, "model endpoint failing over");
            }
        }
        Err(last.unwrap_or_else(|| ModelError::Unavailable("no endpoint".into())))
    }
}

/// Runs `fut` unless `cancel` fires (→ Cancelled) or `timeout` passes (→ Timeout).
async fn guard<F: Future>(
    cancel: &CancellationToken,
    timeout: Duration,
    fut: F,
) -> Result<F::Output, Failure> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Failure::fatal(ModelError::Cancelled)),
        r = tokio::time::timeout(timeout, fut) => r.map_err(|_| Failure::transient(ModelError::Timeout)),
    }
}

/// Reads a body of at most `cap` bytes within `timeout`. Past the cap it is
/// cut (`truncate`) or refused.
async fn read_body(
    resp: reqwest::Response,
    cap: usize,
    truncate: bool,
    cancel: &CancellationToken,
    timeout: Duration,
) -> Result<Vec<u8>, Failure> {
    let url = resp.url().to_string();
    let read = async move {
        let mut stream = resp.bytes_stream();
        let mut body = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                Failure::transient(ModelError::Unavailable(format!("reading from {url}: {}", describe(&e))))
            })?;
            if body.len() + chunk.len() > cap {
                if truncate {
                    body.extend_from_slice(&chunk[..cap - body.len()]);
                    return Ok(body);
                }
                return Err(Failure::fatal(ModelError::Protocol(format!(
                    "response larger than {cap} bytes"
                ))));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    guard(cancel, timeout, read).await?
}

/// A request that got no response: connect errors, resets, timeouts.
fn transport(url: &str, e: &reqwest::Error) -> Failure {
    let error = if e.is_timeout() {
        ModelError::Timeout
    } else if e.is_connect() {
        ModelError::Unavailable(format!("cannot connect to {url}: {}", describe(e)))
    } else {
        ModelError::Unavailable(format!("request to {url} failed: {}", describe(e)))
    };
    Failure::transient(error)
}
