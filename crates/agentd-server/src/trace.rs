//! The request span as an OpenTelemetry server span (`docs/observability.md`,
//! "Traces"): its parent is the caller's W3C `traceparent`/`tracestate`
//! (HTTP headers, which gRPC metadata is on the wire), its name the call,
//! its trace id a field so every log line of the request carries it, and
//! the A2A ids of the operation as attributes. Only when tracing is on: a
//! daemon without an OTLP endpoint does none of this.

use crate::card::{JSONRPC_PATH, REST_PATH};
use crate::operation::Operation;
use opentelemetry::trace::TraceContextExt;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Makes `span` (the request's, not yet entered) a server span joining the
/// caller's trace.
pub(crate) fn join<B>(span: &tracing::Span, req: &http::Request<B>) {
    if !agentd_client::trace::enabled() {
        return;
    }
    span.record("otel.kind", "server");
    span.record("otel.name", name(req));
    let parent = agentd_client::trace::extract(req.headers());
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
    span.set_attribute("http.request.method", req.method().as_str().to_owned());
    span.set_attribute("url.path", req.uri().path().to_owned());
    let cx = span.context();
    let ids = cx.span().span_context().clone();
    if ids.is_valid() {
        span.record("trace_id", tracing::field::display(ids.trace_id()));
    }
}

/// A span name of bounded cardinality: the gRPC method (`lf.a2a.v1.A2AService/SendMessage`),
/// else the HTTP method and the binding's route (a REST path carries ids).
fn name<B>(req: &http::Request<B>) -> String {
    let path = req.uri().path();
    let grpc = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        return path.trim_start_matches('/').to_owned();
    }
    let route = if path.starts_with(REST_PATH) {
        REST_PATH
    } else if path.starts_with(JSONRPC_PATH) {
        JSONRPC_PATH
    } else {
        path
    };
    format!("{} {route}", req.method())
}

/// The answer's status on the request span; a server error is the span's error.
pub(crate) fn responded(span: &tracing::Span, status: http::StatusCode) {
    if !agentd_client::trace::enabled() {
        return;
    }
    span.set_attribute("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.set_status(opentelemetry::trace::Status::error(status.to_string()));
    }
    // The call ends with its answer's head (a stream's: its first bytes), as
    // the request's debug line times it; the `tracing` span lives on while a
    // turn the call started runs in it (for its log lines), which would keep
    // the server span open that long.
    span.context().span().end();
}

/// The task a SendMessage answered with, on the request span (a new task's
/// id is known only now).
pub(crate) fn answered(reply: &crate::dispatch::Reply) {
    if !agentd_client::trace::enabled() {
        return;
    }
    if let crate::dispatch::Reply::Sent(agentd_core::SendAnswer {
        response: agentd_proto::SendMessageResponse::Task(t),
        ..
    }) = reply
    {
        let span = tracing::Span::current();
        span.set_attribute("a2a.task.id", t.id.clone());
        span.set_attribute("gen_ai.conversation.id", t.context_id.clone());
    }
}

/// The operation's name and the A2A ids it names, on the request span.
pub(crate) fn describe(op: &Operation) {
    if !agentd_client::trace::enabled() {
        return;
    }
    let span = tracing::Span::current();
    span.set_attribute("rpc.method", op.kind().method());
    let (task, context, message) = match op {
        Operation::SendMessage(r) | Operation::SendStreamingMessage(r) => match &r.message {
            Some(m) => (m.task_id.as_str(), m.context_id.as_str(), m.message_id.as_str()),
            None => ("", "", ""),
        },
        Operation::GetTask(r) => (r.id.as_str(), "", ""),
        Operation::CancelTask(r) => (r.id.as_str(), "", ""),
        Operation::SubscribeToTask(r) => (r.id.as_str(), "", ""),
        Operation::ListTasks(r) => ("", r.context_id.as_str(), ""),
        _ => ("", "", ""),
    };
    if let Operation::CancelTask(r) = op {
        // The cancellation's deliveries join this call's trace.
        agentd_client::trace::remember(&r.id);
    }
    for (key, value) in
        [("a2a.task.id", task), ("gen_ai.conversation.id", context), ("a2a.message.id", message)]
    {
        if !value.is_empty() {
            span.set_attribute(key, value.to_owned());
        }
    }
}

/// The span of one outbox delivery (a push or bridge POST): a client span
/// in the trace of the task's latest traced turn, whose context the request
/// carries. A disabled span when tracing is off.
pub(crate) fn delivery(item: &agentd_core::OutboxItem) -> tracing::Span {
    if !agentd_client::trace::enabled() {
        return tracing::Span::none();
    }
    let target = match &item.target {
        agentd_core::OutboxTarget::Push(_) => "push",
        agentd_core::OutboxTarget::Bridge(_) => "bridge",
    };
    let span = tracing::debug_span!(
        parent: None,
        "outbox.deliver",
        otel.kind = "client",
        otel.name = format!("deliver {target}"),
        a2a.task.id = %item.task_id,
        attempt = item.attempts + 1,
    );
    if let Some(cx) = agentd_client::trace::of_task(&item.task_id) {
        let _ = span.set_parent(cx);
    }
    span
}

/// A failed delivery attempt is its span's error, with the reason.
pub(crate) fn delivered(span: &tracing::Span, outcome: &crate::push::deliver::Outcome) {
    use crate::push::deliver::Outcome;
    if !agentd_client::trace::enabled() {
        return;
    }
    if let Outcome::Failed(why) | Outcome::Permanent(why) = outcome {
        span.set_status(opentelemetry::trace::Status::error(why.clone()));
    }
}
