//! The model port: the chat request and response types every provider speaks,
//! the error type, and the `ModelProvider` trait the agent loop calls.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Who wrote a message of the conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl ChatRole {
    /// The role's name on the wire (`system`, `developer`, `user`, `assistant`, `tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            ChatRole::System => "system",
            ChatRole::Developer => "developer",
            ChatRole::User => "user",
            ChatRole::Assistant => "assistant",
            ChatRole::Tool => "tool",
        }
    }
}

/// One message of the model input. An assistant message may carry the tool
/// calls the model asked for; a tool message answers one of them by id, and
/// says whether the call failed (`is_error`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

impl ChatMessage {
    /// A message of `role` with text only.
    pub fn new(role: ChatRole, content: impl Into<String>) -> Self {
        Self { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None, is_error: false }
    }
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(ChatRole::System, content)
    }
    pub fn developer(content: impl Into<String>) -> Self {
        Self::new(ChatRole::Developer, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(ChatRole::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(ChatRole::Assistant, content)
    }
    /// The assistant turn that asked for `tool_calls` (its text may be empty).
    pub fn assistant_with_tools(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self { tool_calls, ..Self::assistant(content) }
    }
    /// The result of the tool call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { tool_call_id: Some(tool_call_id.into()), ..Self::new(ChatRole::Tool, content) }
    }
    /// The error the tool call `tool_call_id` ended with.
    pub fn tool_error(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { is_error: true, ..Self::tool_result(tool_call_id, content) }
    }
}

/// A tool the model may call; `parameters` is a JSON Schema of its arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// A call the model asked for. `arguments` is the raw JSON text the model
/// produced: the caller parses (and may reject) it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// One model call: the conversation (system message first), the tools on
/// offer, and an optional cap on the answer's length.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub messages: Vec<ChatMessage>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// Tokens a call consumed, as the provider reports (or estimates) them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

/// The whole answer of one call. `finish_reason` is the provider's word for
/// why it stopped (`stop`, `tool_calls`, `length`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish_reason: String,
}

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The caller's cancellation token fired; the request was abandoned.
    #[error("model call cancelled")]
    Cancelled,
    /// The server did not answer (or went silent mid-stream) within the timeout.
    #[error("model call timed out")]
    Timeout,
    /// The server refused the request; `message` is the server's own words.
    #[error("model server answered HTTP {status}: {message}")]
    Http { status: u16, message: String },
    /// The server's answer could not be understood.
    #[error("model protocol error: {0}")]
    Protocol(String),
    /// The provider is misconfigured (bad URL, missing secret, bad script).
    #[error("model configuration error: {0}")]
    Config(String),
    /// The model cannot answer at all (unreachable, script exhausted).
    #[error("model unavailable: {0}")]
    Unavailable(String),
}

/// A source of model answers.
#[async_trait]
pub trait ModelProvider: Send + Sync + 'static {
    /// The provider kind (`echo`, `scripted`, `openai`), for logs.
    fn name(&self) -> &str;

    /// The model asked for (`gen_ai.request.model` on the call's span); empty
    /// where the provider has no model name.
    fn model(&self) -> &str {
        ""
    }

    /// Whether reminders may be placed by their `roleHint` (a mid-conversation
    /// system or developer message); otherwise every reminder goes in the
    /// user-role block after the conversation.
    fn honours_role_hints(&self) -> bool {
        false
    }

    /// Streams text deltas into `deltas` as they arrive (in order), returns
    /// the whole response. The caller drains `deltas` while the call runs
    /// (a full channel makes the provider wait); a closed receiver is not
    /// an error. Deltas are never retracted: a provider that retries does
    /// so only before its first delta.
    /// Returns promptly with `ModelError::Cancelled` when `cancel` fires,
    /// abandoning any in-flight HTTP request.
    async fn complete(
        &self,
        req: &ModelRequest,
        deltas: &mpsc::Sender<String>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError>;
}
