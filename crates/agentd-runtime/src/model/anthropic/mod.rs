//! The `anthropic` model: the Anthropic Messages API spoken natively
//! (`POST {endpoint}/v1/messages` with `x-api-key` and `anthropic-version`),
//! streamed (SSE) or not, with the retries of [`super::http`] and failover
//! across the endpoints, then across the fallback models.

mod sse;
mod wire;

use super::config::{AnthropicConfig, HttpSettings};
use super::http::{HttpProvider, Target, Wire, body, config_error, secret_header, urls};
use super::types::{ModelError, ModelRequest, ModelResponse};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// The API version every request names (a configured `anthropic-version`
/// header replaces it).
pub const API_VERSION: &str = "2023-06-01";

/// The `anthropic` provider.
pub type AnthropicProvider = HttpProvider<Messages>;

/// The Messages API: each model in turn, at each endpoint in turn.
#[derive(Debug)]
pub struct Messages {
    config: AnthropicConfig,
    /// `{base}/v1/messages` of each endpoint, in failover order.
    urls: Vec<String>,
}

impl AnthropicProvider {
    /// Checks the configuration and resolves its secrets (the API key and
    /// secret header values), so a missing key fails at start, not at the
    /// first call.
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let bad = |m: &str| Err(config_error(Messages::NAME, m));
        let urls = urls(Messages::NAME, &config.endpoints, "/v1/messages")?;
        if config.model.trim().is_empty() {
            return bad("no model name");
        }
        if config.fallback_models.iter().any(|m| m.trim().is_empty()) {
            return bad("an empty name in fallback_models");
        }
        if config.max_tokens == 0 {
            return bad("max_tokens must be at least 1");
        }
        let mut headers = HeaderMap::new();
        headers.insert(HeaderName::from_static("anthropic-version"), HeaderValue::from_static(API_VERSION));
        if let Some(key) = &config.api_key {
            headers.insert(HeaderName::from_static("x-api-key"), secret_header(Messages::NAME, key, "")?);
        }
        HttpProvider::build(Messages { config, urls }, headers)
    }
}

impl Wire for Messages {
    const NAME: &'static str = "anthropic";
    type Answer = sse::Accumulator;

    fn targets(&self, req: &ModelRequest, stream: bool) -> Result<Vec<Target>, ModelError> {
        let c = &self.config;
        let mut targets = Vec::new();
        for model in std::iter::once(&c.model).chain(&c.fallback_models) {
            let body = body(&wire::request_body(model, c.max_tokens, req, stream))?;
            for url in &self.urls {
                targets.push(Target {
                    url: url.clone(),
                    body: body.clone(),
                    label: format!("{model} at {url}"),
                });
            }
        }
        Ok(targets)
    }

    fn parse(body: &[u8]) -> Result<ModelResponse, ModelError> {
        wire::parse_message(body)
    }

    fn settings(&self) -> &HttpSettings {
        &self.config.http
    }

    fn model(&self) -> &str {
        &self.config.model
    }
}
