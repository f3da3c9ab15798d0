//! The daemon's metrics: one [`Metrics`] per daemon owns the Prometheus
//! registry and every family; the server, the engine, the runtime and the
//! MCP client record into it through its handles, and `GET /metrics`
//! encodes it (`docs/observability.md` lists the families).
//!
//! Recording is cheap: the fixed label sets of the request path are
//! resolved once into handles (a histogram is an `Arc`), so a request pays
//! one histogram update (a short uncontended mutex) and no allocation. Labels are
//! bounded: methods, bindings, states, kinds and outcomes are closed sets;
//! provider, server and tool names come from the configuration and are
//! capped anyway ([`tools::MAX_TOOL_SERIES`]). No label ever carries a task,
//! context or message id.

mod genai;
mod process;
mod requests;
mod tasks;
mod tools;
mod work;

pub use genai::{ModelMetrics, ProviderCalls};
pub use requests::Requests;
pub use tasks::Tasks;
pub use tools::{MAX_TOOL_SERIES, ToolMetrics};
pub use work::{OutboxMetrics, Reminders, StoreMetrics, Streams};

use prometheus_client::registry::Registry;

pub use prometheus_client::metrics::gauge::Gauge;

/// The `Content-Type` of what [`Metrics::encode`] writes: the Prometheus
/// text format, version 0.0.4 (what every scraper reads).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Every family of one daemon, registered in its own registry (tests run
/// several daemons in one process: each counts only its own work).
pub struct Metrics {
    registry: Registry,
    pub requests: Requests,
    pub tasks: Tasks,
    pub streams: Streams,
    pub store: StoreMetrics,
    pub outbox: OutboxMetrics,
    pub model: ModelMetrics,
    pub tools: ToolMetrics,
    pub reminders: Reminders,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let mut m = Self {
            requests: Requests::new(&mut registry),
            tasks: Tasks::new(&mut registry),
            streams: Streams::new(&mut registry),
            store: StoreMetrics::new(&mut registry),
            outbox: OutboxMetrics::new(&mut registry),
            model: ModelMetrics::new(&mut registry),
            tools: ToolMetrics::new(&mut registry),
            reminders: Reminders::new(&mut registry),
            registry,
        };
        m.registry.register_collector(Box::new(process::ProcessCollector));
        m
    }

    /// The exposition of every family, in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

/// Latency buckets in seconds, for requests, store commits and tool calls:
/// from half a millisecond (a read) to a minute (a long tool call).
pub(crate) const LATENCY_BUCKETS: [f64; 16] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

pub(crate) fn latency_histogram() -> prometheus_client::metrics::histogram::Histogram {
    prometheus_client::metrics::histogram::Histogram::new(LATENCY_BUCKETS)
}

#[cfg(test)]
mod tests;
