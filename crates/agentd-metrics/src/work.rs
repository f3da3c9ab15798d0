//! Streams, store commits, the outbox and reminders.

use crate::latency_histogram;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Open streams: task streams (SSE and gRPC) and events-feed subscribers.
pub struct Streams {
    pub task_streams: Gauge,
    pub feed_subscribers: Gauge,
}

impl Streams {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let s = Self { task_streams: Gauge::default(), feed_subscribers: Gauge::default() };
        registry.register(
            "agentd_task_streams_open",
            "Task event streams open (SendStreamingMessage, SubscribeToTask; SSE and gRPC)",
            s.task_streams.clone(),
        );
        registry.register(
            "agentd_feed_subscribers",
            "Subscribers of the events feed connected now",
            s.feed_subscribers.clone(),
        );
        s
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    outcome: &'static str,
}

type Durations<L> = Family<L, Histogram, fn() -> Histogram>;

/// Store commits: latency by outcome, and the size of their batches.
pub struct StoreMetrics {
    ok: Histogram,
    failed: Histogram,
    batch_size: Histogram,
}

impl StoreMetrics {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let duration: Durations<Outcome> = Family::new_with_constructor(latency_histogram);
        let ok = duration.get_or_create_owned(&Outcome { outcome: "ok" });
        let failed = duration.get_or_create_owned(&Outcome { outcome: "error" });
        let batch_size = Histogram::new(exponential_buckets(1.0, 2.0, 11));
        registry.register(
            "agentd_store_commit_duration_seconds",
            "Store commits from the call to the durable COMMIT (group commit's wait included), by outcome",
            duration.clone(),
        );
        registry.register(
            "agentd_store_commit_batch_size",
            "Rows written by one commit (tasks, outbox rows, events, reminders, journal entries)",
            batch_size.clone(),
        );
        Self { ok, failed, batch_size }
    }

    pub fn commit(&self, ok: bool, secs: f64, rows: usize) {
        if ok { &self.ok } else { &self.failed }.observe(secs);
        self.batch_size.observe(rows as f64);
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Delivery {
    target: &'static str,
    outcome: &'static str,
}

/// The durable outbox: rows pending, and what each delivery attempt did.
pub struct OutboxMetrics {
    pub depth: Gauge,
    deliveries: Family<Delivery, Counter>,
}

impl OutboxMetrics {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let s = Self { depth: Gauge::default(), deliveries: Family::default() };
        registry.register(
            "agentd_outbox_depth",
            "Outbox rows (push events and bridge announcements) waiting for delivery",
            s.depth.clone(),
        );
        registry.register(
            "agentd_outbox_deliveries",
            "Delivery attempts from the outbox, by target (push, bridge) and outcome \
             (delivered, retry, given_up)",
            s.deliveries.clone(),
        );
        s
    }

    /// `target`: `push` or `bridge`; `outcome`: `delivered`, `retry`, `given_up`.
    pub fn delivery(&self, target: &'static str, outcome: &'static str) {
        self.deliveries.get_or_create(&Delivery { target, outcome }).inc();
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Event {
    event: &'static str,
}

/// Reminders by lifecycle event.
pub struct Reminders {
    events: Family<Event, Counter>,
}

impl Reminders {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let s = Self { events: Family::default() };
        registry.register(
            "agentd_reminder_events",
            "Reminder lifecycle events committed: injected, emitted, deduped, expired",
            s.events.clone(),
        );
        s
    }

    pub fn event(&self, event: &'static str) {
        self.events.get_or_create(&Event { event }).inc();
    }
}
