//! What the HTTP model providers (`openai`, `anthropic`) share: one request
//! to one endpoint, its response read whole or as an SSE stream within the
//! timeouts and under cancellation; retries with backoff (`Retry-After`
//! honoured) and failover over a list of targets. The wire format is the
//! provider's: it gives the request bodies, a parser of a whole response and
//! an accumulator of a streamed one.
//!
//! An attempt is retried on 408, 429, 5xx, connect errors, timeouts and a
//! stream cut short, but only while no text delta has reached the caller:
//! once the caller has seen part of an answer, a failure is final. Other 4xx
//! fail at once with the server's message. Cancellation drops the request,
//! which closes its connection.

mod client;

use super::config::HttpSettings;
use super::secret::SecretRef;
use super::stream::clip;
use super::types::{ModelError, ModelProvider, ModelRequest, ModelResponse};
use async_trait::async_trait;
use bytes::Bytes;
use client::HttpClient;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::de::DeserializeOwned;
use std::fmt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Largest SSE event (or unterminated line) accepted, in bytes.
pub const MAX_EVENT: usize = 8 * 1024 * 1024;
/// Most tool calls one response may carry.
pub const MAX_TOOL_CALLS: usize = 256;
/// Most event data one streamed response may carry, in bytes.
pub const MAX_ANSWER: usize = 32 * 1024 * 1024;
/// A provider's wire format: where its requests go and how its answers read.
pub trait Wire: fmt::Debug + Send + Sync + 'static {
    /// The provider kind, for logs and errors.
    const NAME: &'static str;
    /// Timeouts, retries, streaming and extra headers.
    fn settings(&self) -> &HttpSettings;
    /// A streamed answer being assembled.
    type Answer: StreamedAnswer;
    /// The request for each target, in failover order.
    fn targets(&self, req: &ModelRequest, stream: bool) -> Result<Vec<Target>, ModelError>;
    /// Reads a whole (non-streamed) response body.
    fn parse(body: &[u8]) -> Result<ModelResponse, ModelError>;
    /// See [`ModelProvider::honours_role_hints`].
    fn honours_role_hints(&self) -> bool {
        false
    }
    /// See [`ModelProvider::model`]: the first one asked for.
    fn model(&self) -> &str;
}

/// A model provider over HTTP speaking the wire format `W`.
pub struct HttpProvider<W> {
    wire: W,
    http: HttpClient,
}

impl<W: Wire> HttpProvider<W> {
    /// `headers` are the provider's own (credentials marked sensitive).
    pub(crate) fn build(wire: W, headers: HeaderMap) -> Result<Self, ModelError> {
        let http = HttpClient::new(W::NAME, wire.settings().clone(), headers)?;
        Ok(Self { wire, http })
    }
}

impl<W: Wire> fmt::Debug for HttpProvider<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpProvider").field("wire", &self.wire).finish_non_exhaustive()
    }
}

#[async_trait]
impl<W: Wire> ModelProvider for HttpProvider<W> {
    fn name(&self) -> &str {
        W::NAME
    }

    fn model(&self) -> &str {
        self.wire.model()
    }

    fn honours_role_hints(&self) -> bool {
        self.wire.honours_role_hints()
    }

    async fn complete(
        &self,
        req: &ModelRequest,
        deltas: &mpsc::Sender<String>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let targets = self.wire.targets(req, self.http.settings.stream)?;
        self.http.complete::<W::Answer>(&targets, W::parse, deltas, cancel).await
    }
}

/// A request body as bytes.
pub fn body(value: &serde_json::Value) -> Result<Bytes, ModelError> {
    serde_json::to_vec(value).map(Bytes::from).map_err(|e| ModelError::Protocol(e.to_string()))
}

/// The data of one stream event, read as `T`.
pub fn stream_event<T: DeserializeOwned>(data: &str) -> Result<T, ModelError> {
    serde_json::from_str(data)
        .map_err(|e| ModelError::Protocol(format!("bad stream event ({e}): {}", clip(data))))
}

/// A streamed answer being assembled from the data of its SSE events.
pub trait StreamedAnswer: Default + Send {
    /// The event that ends a stream, for the error when it never came.
    const END: &'static str;
    /// Applies one event's data.
    fn apply(&mut self, data: &str) -> Result<Step, ModelError>;
    /// Whether the stream gave a stop reason: enough to stand as a whole
    /// answer should its last event not come.
    fn stopped(&self) -> bool;
    /// The whole response.
    fn into_response(self) -> Result<ModelResponse, ModelError>;
}

/// What one event of a stream brought.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing for the caller (usage, a tool-call fragment, a ping).
    Nothing,
    /// A text delta.
    Text(String),
    /// The stream's last event.
    End,
}

impl From<Option<String>> for Step {
    fn from(text: Option<String>) -> Self {
        text.filter(|t| !t.is_empty()).map_or(Step::Nothing, Step::Text)
    }
}

/// One place to send the request: its URL, the body for it, a name for logs.
#[derive(Debug)]
pub struct Target {
    pub url: String,
    pub body: Bytes,
    pub label: String,
}

/// A provider's misconfiguration, named after it.
pub fn config_error(provider: &str, message: impl fmt::Display) -> ModelError {
    ModelError::Config(format!("{provider}: {message}"))
}

/// `{base}{path}` for each base URL, in order; each must be http(s) and
/// there must be one at least.
pub fn urls(provider: &str, bases: &[String], path: &str) -> Result<Vec<String>, ModelError> {
    if bases.is_empty() {
        return Err(config_error(provider, "no endpoints"));
    }
    bases
        .iter()
        .map(|base| {
            let url = reqwest::Url::parse(base)
                .map_err(|e| config_error(provider, format!("endpoint {base:?}: {e}")))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(config_error(provider, format!("endpoint {base:?} is not http(s)")));
            }
            Ok(format!("{}{path}", base.trim_end_matches('/')))
        })
        .collect()
}

/// A header value holding the secret `key` refers to (after `prefix`),
/// marked sensitive so that it never shows in a debug print.
pub fn secret_header(provider: &str, key: &SecretRef, prefix: &str) -> Result<HeaderValue, ModelError> {
    let mut value = HeaderValue::from_str(&format!("{prefix}{}", key.resolve()?.expose())).map_err(|_| {
        config_error(provider, format!("the API key {} is not a valid header value", key.reference()))
    })?;
    value.set_sensitive(true);
    Ok(value)
}
