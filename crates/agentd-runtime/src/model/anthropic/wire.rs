//! The Messages API on the wire: the request body we send and the
//! non-streamed response we read.
//!
//! The API has no system role and wants user and assistant turns to
//! alternate: system and developer messages go to the top-level `system`
//! field; each message becomes content blocks, tool results are user-role
//! `tool_result` blocks, and consecutive messages of one role are merged
//! into one. Tool results follow the assistant turn that asked for them, so
//! they lead their user message (any text after them), as the API requires.

use crate::model::types::{ChatMessage, ChatRole, ModelError, ModelRequest, ModelResponse, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The JSON body of `POST {base}/v1/messages`. `max_tokens` is the
/// request's own cap, else the configured one (the API requires one).
pub fn request_body(model: &str, max_tokens: u32, req: &ModelRequest, stream: bool) -> Value {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in &req.messages {
        let (role, blocks) = match m.role {
            ChatRole::System | ChatRole::Developer => {
                system.extend(Some(m.content.as_str()).filter(|s| !s.is_empty()));
                continue;
            }
            ChatRole::User => ("user", text_block(&m.content)),
            ChatRole::Assistant => ("assistant", assistant_blocks(m)),
            ChatRole::Tool => ("user", vec![tool_result(m)]),
        };
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ if blocks.is_empty() => {}
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Value> =
        turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect();
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_output_tokens.unwrap_or(max_tokens),
        "messages": messages,
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    if stream {
        body["stream"] = json!(true);
    }
    body
}

/// A text block, or none for an empty text (the API refuses empty blocks).
fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() { Vec::new() } else { vec![json!({"type": "text", "text": text})] }
}

/// The assistant's text, then a `tool_use` block per call. Arguments that
/// are not a JSON object (the model's own mistake, answered by a tool
/// error) are sent as `{}`: the API takes only an object.
fn assistant_blocks(m: &ChatMessage) -> Vec<Value> {
    let mut blocks = text_block(&m.content);
    for c in &m.tool_calls {
        let input = match serde_json::from_str::<Value>(&c.arguments) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::Object(Map::new()),
        };
        blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    blocks
}

fn tool_result(m: &ChatMessage) -> Value {
    let mut block = json!({"type": "tool_result", "tool_use_id": m.tool_call_id.as_deref().unwrap_or("")});
    if !m.content.is_empty() {
        block["content"] = json!(m.content);
    }
    if m.is_error {
        block["is_error"] = json!(true);
    }
    block
}

/// `usage` of a message (or of a stream's `message_start`/`message_delta`).
/// Input tokens count the cached ones too: they are part of the context.
#[derive(Debug, Default, Deserialize)]
pub struct WireUsage {
    pub input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

impl WireUsage {
    /// The input tokens, if this usage reports them.
    pub fn input(&self) -> Option<u64> {
        let parts = [self.input_tokens, self.cache_creation_input_tokens, self.cache_read_input_tokens];
        parts.iter().any(Option::is_some).then(|| parts.iter().flatten().sum())
    }
}

/// A content block of a response. Kinds we do not use (thinking, server
/// tools) are skipped.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct Message {
    content: Option<Vec<Block>>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

/// Reads a whole (non-streamed) response body.
pub fn parse_message(body: &[u8]) -> Result<ModelResponse, ModelError> {
    let m: Message = serde_json::from_slice(body)
        .map_err(|e| ModelError::Protocol(format!("response is not a message: {e}")))?;
    let content = m.content.ok_or_else(|| ModelError::Protocol("response has no content".into()))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block {
            Block::Text { text: t } => text.push_str(&t),
            Block::ToolUse { id, name, input } => {
                let arguments = if input.is_null() { "{}".to_owned() } else { input.to_string() };
                tool_calls.push(tool_call(tool_calls.len(), id, name, arguments)?);
            }
            Block::Other => {}
        }
    }
    let usage = m.usage.unwrap_or_default();
    let usage =
        Usage { input_tokens: usage.input().unwrap_or(0), output_tokens: usage.output_tokens.unwrap_or(0) };
    Ok(ModelResponse { text, finish_reason: stop_reason(m.stop_reason, &tool_calls), tool_calls, usage })
}

/// A tool call from a `tool_use` block: a name is required, arguments
/// default to `{}`.
pub fn tool_call(index: usize, id: String, name: String, arguments: String) -> Result<ToolCall, ModelError> {
    if name.is_empty() || id.is_empty() {
        return Err(ModelError::Protocol(format!("tool_use block {index} has no name or id")));
    }
    let arguments = if arguments.trim().is_empty() { "{}".to_owned() } else { arguments };
    Ok(ToolCall { id, name, arguments })
}

/// The API's stop reason (`end_turn`, `tool_use`, `max_tokens`, ...), or
/// `tool_use` / `end_turn` when it gave none.
pub fn stop_reason(given: Option<String>, tool_calls: &[ToolCall]) -> String {
    given
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| if tool_calls.is_empty() { "end_turn" } else { "tool_use" }.to_owned())
}
