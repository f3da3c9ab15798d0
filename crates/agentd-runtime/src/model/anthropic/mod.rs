//! The `anthropic` model: the Anthropic Messages API spoken natively
//! (`POST {endpoint}/v1/messages` with `x-api-key` and `anthropic-version`),
//! streamed (SSE) or not, with the retries of [`super::http`] and failover
//! across the endpoints, then across the fallback models.

mod sse;
mod wire;

use super::config::AnthropicConfig;
use super::http::{HttpClient, Target, config_error, secret_header, urls};
use super::types::{ModelError, ModelProvider, ModelRequest, ModelResponse};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::fmt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const NAME: &str = "anthropic";
/// The API version every request names (a configured `anthropic-version`
/// header replaces it).
pub const API_VERSION: &str = "2023-06-01";

pub struct AnthropicProvider {
    config: AnthropicConfig,
    /// `{base}/v1/messages` of each endpoint, in failover order.
    urls: Vec<String>,
    http: HttpClient,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// Checks the configuration and resolves its secrets (the API key and
    /// secret header values), so a missing key fails at start, not at the
    /// first call.
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let urls = urls(NAME, &config.endpoints, "/v1/messages")?;
        if config.model.trim().is_empty() {
            return Err(config_error(NAME, "no model name"));
        }
        if config.fallback_models.iter().any(|m| m.trim().is_empty()) {
            return Err(config_error(NAME, "an empty name in fallback_models"));
        }
        if config.max_tokens == 0 {
            return Err(config_error(NAME, "max_tokens must be at least 1"));
        }
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("anthropic-version"), HeaderValue::from_static(API_VERSION));
        if let Some(key) = &config.api_key {
            headers.insert(HeaderName::from_static("x-api-key"), secret_header(NAME, key, "")?);
        }
        let http = HttpClient::new(NAME, config.http.clone(), headers)?;
        Ok(Self { config, urls, http })
    }

    /// The model, then the fallback models, in failover order.
    fn models(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.config.model.as_str())
            .chain(self.config.fallback_models.iter().map(String::as_str))
    }
}

#[async_trait]
impl ModelProvider for AnthropicProvider {
    fn name(&self) -> &str {
        NAME
    }

    async fn complete(
        &self,
        req: &ModelRequest,
        deltas: &mpsc::Sender<String>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        let mut targets = Vec::new();
        for model in self.models() {
            let body = wire::request_body(model, self.config.max_tokens, req, self.http.stream());
            let body =
                Bytes::from(serde_json::to_vec(&body).map_err(|e| ModelError::Protocol(e.to_string()))?);
            for url in &self.urls {
                targets.push(Target {
                    url: url.clone(),
                    body: body.clone(),
                    label: format!("{model} at {url}"),
                });
            }
        }
        self.http.complete::<sse::Accumulator>(&targets, wire::parse_message, deltas, cancel).await
    }
}
