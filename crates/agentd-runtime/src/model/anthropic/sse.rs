//! A streamed Messages answer: the accumulator that turns the stream's
//! events (`message_start`, `content_block_start`/`_delta`/`_stop`,
//! `message_delta`, `message_stop`, `ping`, `error`; decoded by
//! `agentd_client::sse`) into text deltas, tool calls assembled from their
//! `input_json_delta`s, usage and the stop reason. Every event's data names
//! its own type, so the `event:` line is not needed; event and delta types
//! added to the API later are skipped, as its versioning policy asks.

use super::wire::{Block, WireUsage, stop_reason, tool_call};
use crate::model::http::{MAX_TOOL_CALLS, Step, StreamedAnswer, stream_event};
use crate::model::stream::clip;
use crate::model::types::{ModelError, ModelResponse, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: Started,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: BlockDelta,
    },
    MessageDelta {
        delta: MessageDelta,
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        error: ErrorBody,
    },
    // `ping`, `content_block_stop`, and what the API adds later.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct Started {
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDelta {
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<String>,
}

/// A `tool_use` block being streamed.
#[derive(Debug)]
struct PartialTool {
    id: String,
    name: String,
    /// The `input` of its start event, used when no JSON deltas follow.
    input: Value,
    json: String,
}

/// What the stream has said so far.
#[derive(Debug, Default)]
pub struct Accumulator {
    text: String,
    tools: BTreeMap<usize, PartialTool>,
    usage: Usage,
    stop_reason: Option<String>,
}

impl StreamedAnswer for Accumulator {
    const END: &'static str = "message_stop";

    /// An `error` event is the server's failure: an overload, rate limit or
    /// internal error as the HTTP status it stands for (so that, before any
    /// text was shown, it is retried like one), anything else as it is.
    fn apply(&mut self, data: &str) -> Result<Step, ModelError> {
        match stream_event(data)? {
            Event::MessageStart { message } => {
                if let Some(u) = message.usage {
                    self.usage_from(&u);
                }
            }
            Event::ContentBlockStart { index, content_block } => match content_block {
                Block::Text { text } => return Ok(self.push_text(text)),
                Block::ToolUse { id, name, input } => {
                    if !self.tools.contains_key(&index) && self.tools.len() >= MAX_TOOL_CALLS {
                        return Err(ModelError::Protocol("too many tool calls".into()));
                    }
                    self.tools.insert(index, PartialTool { id, name, input, json: String::new() });
                }
                Block::Other => {}
            },
            Event::ContentBlockDelta { index, delta } => match delta {
                BlockDelta::TextDelta { text } => return Ok(self.push_text(text)),
                BlockDelta::InputJsonDelta { partial_json } => {
                    let tool = self.tools.get_mut(&index).ok_or_else(|| {
                        ModelError::Protocol(format!(
                            "input_json_delta for block {index}, which is no tool_use"
                        ))
                    })?;
                    tool.json.push_str(&partial_json);
                }
                BlockDelta::Other => {}
            },
            Event::MessageDelta { delta, usage } => {
                self.stop_reason = delta.stop_reason.or(self.stop_reason.take());
                if let Some(u) = usage {
                    self.usage_from(&u);
                }
            }
            Event::MessageStop => return Ok(Step::End),
            Event::Error { error } => return Err(stream_error(error)),
            Event::Other => {}
        }
        Ok(Step::Nothing)
    }

    fn stopped(&self) -> bool {
        self.stop_reason.is_some()
    }

    fn into_response(self) -> Result<ModelResponse, ModelError> {
        let mut tool_calls = Vec::with_capacity(self.tools.len());
        for (n, t) in self.tools.into_values().enumerate() {
            let arguments = match (t.json.trim().is_empty(), &t.input) {
                (true, Value::Object(m)) if !m.is_empty() => t.input.to_string(),
                _ => t.json,
            };
            tool_calls.push(tool_call(n, t.id, t.name, arguments)?);
        }
        Ok(ModelResponse {
            text: self.text,
            finish_reason: stop_reason(self.stop_reason, &tool_calls),
            tool_calls,
            usage: self.usage,
        })
    }
}

impl Accumulator {
    fn push_text(&mut self, text: String) -> Step {
        self.text.push_str(&text);
        Some(text).into()
    }

    /// `message_start` reports the input (and a first output count);
    /// `message_delta` the output so far, and the input on newer servers.
    fn usage_from(&mut self, u: &WireUsage) {
        if let Some(input) = u.input() {
            self.usage.input_tokens = input;
        }
        if let Some(output) = u.output_tokens {
            self.usage.output_tokens = output;
        }
    }
}

/// The error an `error` event reports.
fn stream_error(e: ErrorBody) -> ModelError {
    let kind = e.kind.unwrap_or_else(|| "error".into());
    let message =
        format!("{} ({kind}, reported mid-stream)", clip(e.message.as_deref().unwrap_or("no message")));
    match kind.as_str() {
        "overloaded_error" => ModelError::Http { status: 529, message },
        "rate_limit_error" => ModelError::Http { status: 429, message },
        "api_error" => ModelError::Http { status: 500, message },
        "timeout_error" => ModelError::Http { status: 504, message },
        _ => ModelError::Unavailable(format!("the server failed mid-stream: {message}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_a_protocol_error_not_a_panic() {
        for bad in [
            "{",
            "[1]",
            "null",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
            r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
        ] {
            assert!(matches!(Accumulator::default().apply(bad), Err(ModelError::Protocol(_))), "{bad}");
        }
        let mut acc = Accumulator::default();
        acc.apply(r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":""}}"#)
            .unwrap();
        assert!(matches!(acc.into_response(), Err(ModelError::Protocol(_))));
        let mut acc = Accumulator::default();
        assert_eq!(acc.apply(r#"{"type":"ping"}"#).unwrap(), Step::Nothing);
        assert_eq!(acc.apply(r#"{"type":"future_event","x":1}"#).unwrap(), Step::Nothing);
        assert!(!acc.stopped());
    }
}
