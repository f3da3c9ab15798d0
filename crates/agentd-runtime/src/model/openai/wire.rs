//! Chat Completions on the wire: the request body we send, and the
//! non-streamed response we read. Every member we read is optional, so a
//! server's omissions are tolerated; a wrong type is a protocol error.

use crate::model::types::{ChatMessage, ChatRole, ModelError, ModelRequest, ModelResponse, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

/// The JSON body of `POST {base}/chat/completions`.
pub fn request_body(model: &str, req: &ModelRequest, stream: bool) -> Value {
    let mut body = json!({
        "model": model,
        "messages": req.messages.iter().map(message).collect::<Vec<_>>(),
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters,
                }})
            })
            .collect();
    }
    if let Some(n) = req.max_output_tokens {
        body["max_tokens"] = json!(n);
    }
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn message(m: &ChatMessage) -> Value {
    let mut v = json!({"role": m.role.as_str(), "content": m.content});
    if m.role == ChatRole::Assistant && !m.tool_calls.is_empty() {
        if m.content.is_empty() {
            v["content"] = Value::Null;
        }
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// `usage` of a response or of the last stream chunk.
#[derive(Debug, Default, Deserialize)]
pub struct WireUsage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

impl WireUsage {
    pub fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
        }
    }
}

/// Tool-call arguments: a JSON string as the spec says, or (from lenient
/// servers) a JSON value, which is written out as text.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Arguments {
    Text(String),
    Json(Value),
}

impl Arguments {
    pub fn into_text(self) -> String {
        match self {
            Arguments::Text(s) => s,
            Arguments::Json(v) => v.to_string(),
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct WireFunction {
    pub name: Option<String>,
    pub arguments: Option<Arguments>,
}

#[derive(Debug, Deserialize)]
struct Completion {
    choices: Option<Vec<Choice>>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    content: Option<String>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    id: Option<String>,
    function: Option<WireFunction>,
}

/// Reads a whole (non-streamed) response body.
pub fn parse_completion(body: &[u8]) -> Result<ModelResponse, ModelError> {
    let c: Completion = serde_json::from_slice(body)
        .map_err(|e| ModelError::Protocol(format!("response is not a chat completion: {e}")))?;
    let choice = c
        .choices
        .and_then(|v| v.into_iter().next())
        .ok_or_else(|| ModelError::Protocol("response has no choices".into()))?;
    let message = choice.message.ok_or_else(|| ModelError::Protocol("choice has no message".into()))?;
    let mut tool_calls = Vec::new();
    for (i, call) in message.tool_calls.unwrap_or_default().into_iter().enumerate() {
        let f =
            call.function.ok_or_else(|| ModelError::Protocol(format!("tool call {i} has no function")))?;
        tool_calls.push(finish_call(
            i,
            call.id.unwrap_or_default(),
            f.name.unwrap_or_default(),
            f.arguments,
        )?);
    }
    Ok(ModelResponse {
        text: message.content.unwrap_or_default(),
        finish_reason: finish_reason(choice.finish_reason, &tool_calls),
        tool_calls,
        usage: c.usage.map(|u| u.usage()).unwrap_or_default(),
    })
}

/// A complete tool call from its parts: a missing id becomes `call_<n>`,
/// missing arguments `{}`, a missing name is a protocol error.
pub fn finish_call(
    index: usize,
    id: String,
    name: String,
    arguments: Option<Arguments>,
) -> Result<ToolCall, ModelError> {
    if name.is_empty() {
        return Err(ModelError::Protocol(format!("tool call {index} has no function name")));
    }
    let id = if id.is_empty() { format!("call_{index}") } else { id };
    let arguments =
        arguments.map(Arguments::into_text).filter(|a| !a.is_empty()).unwrap_or_else(|| "{}".into());
    Ok(ToolCall { id, name, arguments })
}

/// The server's finish reason, or `tool_calls` / `stop` when it gave none.
pub fn finish_reason(given: Option<String>, tool_calls: &[ToolCall]) -> String {
    given
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| if tool_calls.is_empty() { "stop" } else { "tool_calls" }.to_owned())
}
