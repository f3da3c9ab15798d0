//! The model-provider layer: the port the agent loop calls (`ModelProvider`
//! and its request/response types) and its providers: `echo` (offline
//! default), `scripted` (replays a script, records requests), `openai`
//! (any OpenAI-compatible Chat Completions endpoint) and `anthropic` (the
//! Messages API); the last two share their HTTP, retry and failover
//! machinery (`http`). See `docs/models.md`.

mod anthropic;
mod config;
mod echo;
mod http;
pub(crate) mod openai;
pub mod reminder;
mod retry;
mod script;
mod scripted;
mod secret;
mod stream;
mod types;

pub use anthropic::{API_VERSION as ANTHROPIC_API_VERSION, AnthropicProvider};
pub use config::{AnthropicConfig, Headers, HttpSettings, ModelConfig, ModelKind, OpenAiConfig};
pub use echo::{EchoProvider, echo_answer};
pub use openai::OpenAiProvider;
pub use script::{ScriptError, ScriptStep, ScriptToolCall};
pub use scripted::ScriptedProvider;
pub use secret::{Secret, SecretRef};
pub use types::{
    ChatMessage, ChatRole, ModelError, ModelProvider, ModelRequest, ModelResponse, ToolCall, ToolSpec, Usage,
};

use std::sync::Arc;

/// Builds the provider a configuration names. Fails on a
/// `scripted` model without a readable script, or an `openai` or
/// `anthropic` model whose endpoints, model name or secrets are missing or
/// malformed.
pub fn from_config(config: ModelConfig) -> Result<Arc<dyn ModelProvider>, ModelError> {
    match config.kind {
        ModelKind::Echo => Ok(Arc::new(EchoProvider)),
        ModelKind::Scripted => {
            let path = config
                .script
                .ok_or_else(|| ModelError::Config("the scripted model needs `script: PATH`".into()))?;
            let mut provider = ScriptedProvider::from_file(path)?;
            if let Some(to) = config.record_to {
                provider = provider.with_record_to(to);
            }
            if config.resume {
                provider = provider.resuming()?;
            }
            Ok(Arc::new(provider))
        }
        ModelKind::Openai => Ok(Arc::new(OpenAiProvider::new(config.openai)?)),
        ModelKind::Anthropic => Ok(Arc::new(AnthropicProvider::new(config.anthropic)?)),
    }
}
