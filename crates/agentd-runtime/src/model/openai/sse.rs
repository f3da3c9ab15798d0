//! Streamed Chat Completions: the accumulator that turns the
//! `chat.completion.chunk`s of the SSE stream (decoded by
//! `agentd_client::sse`) into text deltas, tool calls assembled by index,
//! usage and the finish reason.

use super::wire::{Arguments, WireFunction, WireUsage, finish_call, finish_reason};
use crate::model::http::{MAX_TOOL_CALLS, Step, StreamedAnswer, stream_event};
use crate::model::types::{ModelError, ModelResponse, Usage};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Deserialize)]
struct Chunk {
    choices: Option<Vec<ChunkChoice>>,
    usage: Option<WireUsage>,
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    content: Option<String>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    index: Option<usize>,
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// What the stream has said so far.
#[derive(Debug, Default)]
pub struct Accumulator {
    text: String,
    calls: BTreeMap<usize, PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
}

impl StreamedAnswer for Accumulator {
    const END: &'static str = "[DONE]";

    /// Applies one event's data; returns the text delta it carried, if any.
    /// `[DONE]` ends the stream; an `error` member is the server's failure.
    fn apply(&mut self, data: &str) -> Result<Step, ModelError> {
        if data.trim() == "[DONE]" {
            return Ok(Step::End);
        }
        let chunk: Chunk = stream_event(data)?;
        if let Some(err) = chunk.error {
            let message =
                err.get("message").and_then(|m| m.as_str()).map_or_else(|| err.to_string(), str::to_owned);
            return Err(ModelError::Unavailable(format!("the server failed mid-stream: {message}")));
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u.usage());
        }
        let mut delta_text = None;
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else { return Ok(Step::Nothing) };
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish_reason = Some(reason);
        }
        if let Some(delta) = choice.delta {
            if let Some(t) = delta.content.filter(|t| !t.is_empty()) {
                self.text.push_str(&t);
                delta_text = Some(t);
            }
            for (pos, frag) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                self.tool_fragment(frag.index.unwrap_or(pos), frag)?;
            }
        }
        Ok(delta_text.into())
    }

    fn stopped(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// The whole response.
    fn into_response(self) -> Result<ModelResponse, ModelError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (n, (_, c)) in self.calls.into_iter().enumerate() {
            tool_calls.push(finish_call(n, c.id, c.name, Some(Arguments::Text(c.arguments)))?);
        }
        Ok(ModelResponse {
            text: self.text,
            finish_reason: finish_reason(self.finish_reason, &tool_calls),
            tool_calls,
            usage: self.usage.unwrap_or_default(),
        })
    }
}

impl Accumulator {
    fn tool_fragment(&mut self, index: usize, frag: ToolCallDelta) -> Result<(), ModelError> {
        if !self.calls.contains_key(&index) && self.calls.len() >= MAX_TOOL_CALLS {
            return Err(ModelError::Protocol("too many tool calls".into()));
        }
        let call = self.calls.entry(index).or_default();
        // Ids come whole in the first fragment; some servers repeat them.
        if let Some(id) = frag.id.filter(|_| call.id.is_empty()) {
            call.id = id;
        }
        if let Some(f) = frag.function {
            call.name.push_str(f.name.as_deref().unwrap_or(""));
            if let Some(a) = f.arguments {
                call.arguments.push_str(&a.into_text());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_a_protocol_error_not_a_panic() {
        let mut acc = Accumulator::default();
        for bad in ["{", "[1,2]", "{\"choices\": 3}", "{\"choices\":[{\"delta\":{\"content\":7}}]}", "null"] {
            assert!(matches!(acc.apply(bad), Err(ModelError::Protocol(_))), "{bad}");
        }
        let mut acc = Accumulator::default();
        acc.apply(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#)
            .unwrap();
        assert!(matches!(acc.into_response(), Err(ModelError::Protocol(_))));
    }
}
