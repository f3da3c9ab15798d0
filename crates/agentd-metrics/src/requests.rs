//! Requests by method, binding and outcome, with their latency.

use crate::latency_histogram;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::OnceLock;

/// Pre-resolved `ok` histograms, by a slot the caller numbers (method ×
/// binding); a slot past the end is looked up by its labels instead.
const OK_SLOTS: usize = 64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Labels {
    method: &'static str,
    binding: &'static str,
    outcome: &'static str,
}

type Durations = Family<Labels, Histogram, fn() -> Histogram>;

/// `agentd_request_duration_seconds{method,binding,outcome}`: its `_count`
/// is the number of requests.
pub struct Requests {
    duration: Durations,
    ok: [OnceLock<Histogram>; OK_SLOTS],
}

impl Requests {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let duration: Durations = Family::new_with_constructor(latency_histogram);
        registry.register(
            "agentd_request_duration_seconds",
            "A2A requests from their decoded operation to their answer (a stream: until it is open), \
             by method, binding and outcome (ok, or the A2A error reason)",
            duration.clone(),
        );
        Self { duration, ok: std::array::from_fn(|_| OnceLock::new()) }
    }

    /// The histogram of one label set, to keep and observe without a lookup.
    pub fn handle(&self, method: &'static str, binding: &'static str, outcome: &'static str) -> Histogram {
        self.duration.get_or_create_owned(&Labels { method, binding, outcome })
    }

    /// Observes a request that succeeded. `slot` stands for the pair
    /// `(method, binding)`: its histogram is resolved on first use only, so
    /// the request path does no label lookup and allocates nothing (the
    /// histogram's own short mutex is all it takes).
    pub fn observe_ok(&self, slot: usize, method: &'static str, binding: &'static str, secs: f64) {
        match self.ok.get(slot) {
            Some(cell) => cell.get_or_init(|| self.handle(method, binding, "ok")).observe(secs),
            None => self.observe(method, binding, "ok", secs),
        }
    }

    /// Observes one request (the error path: a lookup by label set).
    pub fn observe(&self, method: &'static str, binding: &'static str, outcome: &'static str, secs: f64) {
        self.duration.get_or_create(&Labels { method, binding, outcome }).observe(secs);
    }
}
