//! W3C trace context on outgoing requests: every HTTP request agentd makes
//! on behalf of a traced piece of work (a delegation to a peer, a model
//! call, a push or bridge delivery, an MCP call) carries the current span's
//! `traceparent` (and `tracestate`), so the receiver's spans join the trace.
//!
//! The context comes from the `tracing` span current when the request is
//! built, through `tracing-opentelemetry`. With no OpenTelemetry layer
//! installed (no `telemetry.otlp.endpoint`) a span has no context and
//! nothing is added: agentd invents no trace of its own.
//!
//! Turns and deliveries run apart from the request that caused them; a
//! delivery is read from the outbox by a worker with no span of the task's
//! work around it. [`remember`] keeps the trace context of each task's
//! latest traced turn in memory (bounded, lost on restart) so the delivery
//! can be made a child of it ([`of_task`]).

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Set once by the binary when it installs the OpenTelemetry layer: the
/// cheap check that keeps the traced paths free when tracing is off.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Marks tracing as on for this process (the binary, after installing the
/// layer and the global propagator).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether spans are exported in this process.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// The current span's trace context as headers (`traceparent`, and
/// `tracestate` when not empty); none when the span has no valid context.
pub fn headers() -> Vec<(String, String)> {
    if !enabled() {
        return Vec::new();
    }
    headers_of(&current())
}

/// The OpenTelemetry context of the current span or, when that one is not
/// exported (an engine operation's), of its nearest exported ancestor.
///
/// Walked by hand through the registry: `tracing-opentelemetry` looks for a
/// parent among the spans entered in the current task only, and a turn's
/// task has entered the engine's span of the request that started it, not
/// the request's own.
pub fn current() -> Context {
    if !enabled() {
        return Context::new();
    }
    tracing::dispatcher::get_default(|dispatch| {
        let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
        let id = dispatch.current_span().id()?.clone();
        let span = tracing_subscriber::registry::LookupSpan::span(registry, &id)?;
        let ids: Vec<tracing::span::Id> = span.scope().map(|s| s.id()).collect();
        ids.iter().find_map(|id| {
            tracing_opentelemetry::get_otel_context(id, dispatch)
                .filter(|cx| cx.span().span_context().is_valid())
        })
    })
    .unwrap_or_default()
}

/// Gives `span` (new, not entered yet) the current trace context as its
/// parent (see [`current`]); nothing when tracing is off.
pub fn adopt_parent(span: &tracing::Span) {
    if !enabled() {
        return;
    }
    let cx = current();
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// `cx` as W3C trace-context headers, by the global propagator.
pub fn headers_of(cx: &Context) -> Vec<(String, String)> {
    if !cx.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut out = Pairs(Vec::new());
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(cx, &mut out));
    out.0
}

/// `req` with the current span's trace context as headers.
pub fn inject(mut req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    for (k, v) in headers() {
        req = req.header(k, v);
    }
    req
}

/// The trace context carried by `headers` (an incoming request's).
pub fn extract(headers: &reqwest::header::HeaderMap) -> Context {
    opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderCarrier(headers)))
}

/// Tasks whose trace context is kept: the most recent ones, enough for the
/// deliveries in flight; an older task's delivery starts a trace of its own.
const REMEMBERED: usize = 4096;

#[derive(Default)]
struct TaskTraces {
    by_task: HashMap<String, Context>,
    order: VecDeque<String>,
}

static TASKS: LazyLock<Mutex<TaskTraces>> = LazyLock::new(Mutex::default);

/// Keeps the current span's context as `task_id`'s (its latest traced
/// turn); nothing when tracing is off.
pub fn remember(task_id: &str) {
    if !enabled() {
        return;
    }
    let cx = current();
    if !cx.span().span_context().is_valid() {
        return;
    }
    let mut t = TASKS.lock().unwrap_or_else(|e| e.into_inner());
    if t.by_task.insert(task_id.to_owned(), cx).is_none() {
        t.order.push_back(task_id.to_owned());
        if t.order.len() > REMEMBERED
            && let Some(old) = t.order.pop_front()
        {
            t.by_task.remove(&old);
        }
    }
}

/// The context [`remember`] kept for `task_id`, if any.
pub fn of_task(task_id: &str) -> Option<Context> {
    if !enabled() {
        return None;
    }
    TASKS.lock().unwrap_or_else(|e| e.into_inner()).by_task.get(task_id).cloned()
}

struct Pairs(Vec<(String, String)>);

impl Injector for Pairs {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

struct HeaderCarrier<'a>(&'a reqwest::header::HeaderMap);

impl Extractor for HeaderCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(reqwest::header::HeaderName::as_str).collect()
    }
}
