//! The `openai` model: any OpenAI-compatible Chat Completions endpoint,
//! streamed (SSE) or not, with the retries and failover across endpoints of
//! [`super::http`].

pub(crate) mod sse;
mod wire;

use super::config::OpenAiConfig;
use super::http::{HttpClient, Target, config_error, secret_header, urls};
use super::types::{ModelError, ModelProvider, ModelRequest, ModelResponse};
use async_trait::async_trait;
use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use std::fmt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const NAME: &str = "openai";

pub struct OpenAiProvider {
    config: OpenAiConfig,
    /// `{base}/chat/completions` of each endpoint, in failover order.
    urls: Vec<String>,
    http: HttpClient,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// Checks the configuration and resolves its secrets (the API key and
    /// secret header values), so a missing key fails at start, not at the
    /// first call.
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let urls = urls(NAME, &config.endpoints, "/chat/completions")?;
        if config.model.trim().is_empty() {
            return Err(config_error(NAME, "no model name"));
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = &config.api_key {
            headers.insert(AUTHORIZATION, secret_header(NAME, key, "Bearer ")?);
        }
        let http = HttpClient::new(NAME, config.http.clone(), headers)?;
        Ok(Self { config, urls, http })
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        NAME
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
        let body = wire::request_body(&self.config.model, req, self.http.stream());
        let body = Bytes::from(serde_json::to_vec(&body).map_err(|e| ModelError::Protocol(e.to_string()))?);
        let targets: Vec<Target> = self
            .urls
            .iter()
            .map(|url| Target { url: url.clone(), body: body.clone(), label: url.clone() })
            .collect();
        self.http.complete::<sse::Accumulator>(&targets, wire::parse_completion, deltas, cancel).await
    }
}
