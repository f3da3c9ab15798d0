//! Anthropic Messages answers for the scriptable model server of
//! `model_support`: SSE events as the API frames them (`event:` and `data:`
//! lines), whole messages, errors in the API's shape, and a test config.

#![allow(dead_code)]

use crate::model_support::{Reply, fast_http};
use agentd_runtime::model::AnthropicConfig;
use serde_json::{Value, json};
use std::time::Duration;

/// One SSE event as the API sends it.
pub fn event(data: Value) -> String {
    format!("event: {}\ndata: {data}\n\n", data["type"].as_str().unwrap())
}

pub fn message_start(input_tokens: u64) -> String {
    event(json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }}))
}

/// A text block at `index`, streamed as `parts`.
pub fn text_block(index: usize, parts: &[&str]) -> Vec<String> {
    let mut out = vec![event(
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    )];
    out.extend(parts.iter().map(|p| {
        event(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}))
    }));
    out.push(event(json!({"type": "content_block_stop", "index": index})));
    out
}

/// A `tool_use` block at `index`, its input streamed as `json_parts`.
pub fn tool_block(index: usize, id: &str, name: &str, json_parts: &[&str]) -> Vec<String> {
    let start = json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}});
    let mut out = vec![event(start)];
    out.extend(json_parts.iter().map(|p| {
        event(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "input_json_delta", "partial_json": p}}))
    }));
    out.push(event(json!({"type": "content_block_stop", "index": index})));
    out
}

/// `message_delta` with the stop reason and output tokens, then `message_stop`.
pub fn message_end(stop_reason: &str, output_tokens: u64) -> Vec<String> {
    vec![
        event(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}})),
        event(json!({"type": "message_stop"})),
    ]
}

pub fn ping() -> String {
    event(json!({"type": "ping"}))
}

/// A whole streamed text answer of `parts`, a ping among them.
pub fn stream_text(parts: &[&str]) -> Reply {
    let mut pieces = vec![message_start(12), ping()];
    pieces.extend(text_block(0, parts));
    pieces.extend(message_end("end_turn", parts.len() as u64));
    Reply::SseRaw(pieces)
}

/// A streamed answer that asks for one tool call after some text.
pub fn stream_tool_use(text: &str, id: &str, name: &str, json_parts: &[&str]) -> Reply {
    let mut pieces = vec![message_start(20)];
    pieces.extend(text_block(0, &[text]));
    pieces.extend(tool_block(1, id, name, json_parts));
    pieces.extend(message_end("tool_use", 9));
    Reply::SseRaw(pieces)
}

/// A non-streamed message with these content blocks.
pub fn message(content: Value, stop_reason: &str) -> Reply {
    Reply::Json {
        status: 200,
        body: json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
            "content": content, "stop_reason": stop_reason, "usage": {"input_tokens": 7, "output_tokens": 2}}),
        headers: Vec::new(),
    }
}

/// An error answer in the API's shape.
pub fn api_error(status: u16, kind: &str, message: &str, headers: Vec<(&'static str, String)>) -> Reply {
    Reply::Json {
        status,
        body: json!({"type": "error", "error": {"type": kind, "message": message}}),
        headers,
    }
}

/// A config for `endpoints` (base URLs without `/v1`) with fast retries.
pub fn anthropic_config(endpoints: &[&str]) -> AnthropicConfig {
    let mut c = AnthropicConfig::new(endpoints[0], "claude-test");
    c.endpoints = endpoints.iter().map(|e| e.to_string()).collect();
    c.http = fast_http();
    c
}

/// A streamed answer whose events are `gap` apart.
pub fn slow(reply: Reply, gap: Duration) -> Reply {
    match reply {
        Reply::SseRaw(pieces) => Reply::SseRawSlow { pieces, gap, hang: false },
        other => other,
    }
}
