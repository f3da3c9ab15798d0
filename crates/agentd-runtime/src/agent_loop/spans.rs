//! The turn's spans, named and attributed per the OpenTelemetry GenAI
//! semantic conventions (`docs/observability.md`, "Traces"): the turn
//! (`invoke_agent`), each model call (`chat {model}`), each tool call
//! (`execute_tool {name}`). Debug level: at the default log level, with no
//! OTLP endpoint, they are never built.

use super::reply::CallError;
use crate::model::{ModelError, ModelProvider, ModelResponse, ToolCall};
use agentd_core::TaskControl;
use agentd_proto::Message;
use tracing::field::Empty;

pub(super) fn invoke_agent(c: &TaskControl, input: &Message) -> tracing::Span {
    let span = tracing::debug_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.conversation.id = c.context_id(),
        a2a.task.id = c.task_id(),
        a2a.message.id = %input.message_id,
    );
    // The run's task entered the engine's span of the request, not the
    // request's server span: the parent is found up the tree.
    agentd_client::trace::adopt_parent(&span);
    span
}

/// The turn failed with `why`.
pub(super) fn failed(span: &tracing::Span, why: &str) {
    span.record("otel.status_code", "error");
    span.record("otel.status_description", why);
}

pub(super) fn chat(model: &dyn ModelProvider) -> tracing::Span {
    let name = model.model();
    let span = tracing::debug_span!(
        "chat",
        otel.name = if name.is_empty() { "chat".to_owned() } else { format!("chat {name}") },
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = model.name(),
        gen_ai.request.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        "error.type" = Empty,
    );
    if !name.is_empty() {
        span.record("gen_ai.request.model", name);
    }
    span
}

/// What the model call gave: its usage, or its failure.
pub(super) fn chat_done(span: &tracing::Span, response: &Result<ModelResponse, CallError>) {
    match response {
        Ok(r) => {
            // As signed integers: OpenTelemetry has no unsigned attribute.
            span.record("gen_ai.usage.input_tokens", i64::try_from(r.usage.input_tokens).unwrap_or(i64::MAX));
            span.record(
                "gen_ai.usage.output_tokens",
                i64::try_from(r.usage.output_tokens).unwrap_or(i64::MAX),
            );
            span.record("gen_ai.response.finish_reasons", r.finish_reason.as_str());
        }
        Err(e) => {
            span.record("otel.status_code", "error");
            span.record("error.type", error_type(e));
        }
    }
}

fn error_type(e: &CallError) -> &'static str {
    match e {
        CallError::Task(_) => "task",
        CallError::Model(ModelError::Cancelled) => "cancelled",
        CallError::Model(ModelError::Timeout) => "timeout",
        CallError::Model(ModelError::Http { .. }) => "http",
        CallError::Model(ModelError::Protocol(_)) => "protocol",
        CallError::Model(ModelError::Config(_)) => "config",
        CallError::Model(ModelError::Unavailable(_)) => "unavailable",
    }
}

pub(super) fn execute_tool(call: &ToolCall) -> tracing::Span {
    tracing::debug_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.name),
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %call.name,
        gen_ai.tool.call.id = %call.id,
    )
}

/// A tool call that answered an error.
pub(super) fn tool_done(span: &tracing::Span, result: &Result<String, String>) {
    if result.is_err() {
        span.record("otel.status_code", "error");
    }
}
