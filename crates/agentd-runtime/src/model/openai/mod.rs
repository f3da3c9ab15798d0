//! The `openai` model: any OpenAI-compatible Chat Completions endpoint,
//! streamed (SSE) or not, with the retries and failover across endpoints of
//! [`super::http`].

mod sse;
mod wire;

use super::config::{HttpSettings, OpenAiConfig};
use super::http::{HttpProvider, Target, Wire, body, config_error, secret_header, urls};
use super::types::{ModelError, ModelRequest, ModelResponse};
use reqwest::header::{AUTHORIZATION, HeaderMap};

/// The `openai` provider.
pub type OpenAiProvider = HttpProvider<ChatCompletions>;

/// Chat Completions at each endpoint in turn.
#[derive(Debug)]
pub struct ChatCompletions {
    config: OpenAiConfig,
    /// `{base}/chat/completions` of each endpoint, in failover order.
    urls: Vec<String>,
}

impl OpenAiProvider {
    /// Checks the configuration and resolves its secrets (the API key and
    /// secret header values), so a missing key fails at start, not at the
    /// first call.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let urls = urls(ChatCompletions::NAME, &config.endpoints, "/chat/completions")?;
        if config.model.trim().is_empty() {
            return Err(config_error(ChatCompletions::NAME, "no model name"));
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            headers.insert(AUTHORIZATION, secret_header(ChatCompletions::NAME, key, "Bearer ")?);
        }
        HttpProvider::build(ChatCompletions { config, urls }, headers)
    }
}

impl Wire for ChatCompletions {
    const NAME: &'static str = "openai";
    type Answer = sse::Accumulator;

    fn settings(&self) -> &HttpSettings {
        &self.config.http
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    fn targets(&self, req: &ModelRequest, stream: bool) -> Result<Vec<Target>, ModelError> {
        let body = body(&wire::request_body(&self.config.model, req, stream))?;
        Ok(self
            .urls
            .iter()
            .map(|url| Target { url: url.clone(), body: body.clone(), label: url.clone() })
            .collect())
    }

    fn parse(body: &[u8]) -> Result<ModelResponse, ModelError> {
        wire::parse_completion(body)
    }

    fn honours_role_hints(&self) -> bool {
        self.config.reminder_role_hints
    }
}
