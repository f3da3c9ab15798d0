//! The push worker: drains the durable outbox (push events and bridge
//! announcements alike). Each round reads the due
//! rows, groups them by webhook (task id, config id) in outbox order,
//! delivers groups concurrently and each group in order, and commits every
//! result in one batch. A failed delivery holds back the later events of
//! its webhook until it succeeds or is given up, so a receiver sees a
//! task's events in order; other webhooks and the task itself never wait.

use super::deliver::{Deliverer, Outcome, backoff};
use super::ssrf::SsrfGuard;
use crate::bridges::BridgeSecrets;
use agentd_core::{Outbox, OutboxItem};
use agentd_proto::Timestamp;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Outbox rows read per round.
const ROUND_LIMIT: usize = 256;
/// Webhooks delivered to at once.
const CONCURRENCY: usize = 32;
/// Rows of one webhook delivered per round (bounds how long a slow
/// receiver holds a round; the rest stay due for the next one).
const PER_GROUP: usize = 32;
/// The longest sleep between rounds, and the pause after a store error.
const IDLE_POLL: Duration = Duration::from_secs(60);
const STORE_ERROR_PAUSE: Duration = Duration::from_secs(1);

#[derive(Clone, Debug)]
pub struct PushWorkerConfig {
    /// Deliver to private addresses too (see [`SsrfGuard`]).
    pub allow_private: bool,
    /// Per-request timeout (connect included).
    pub timeout: Duration,
    /// Attempts per event before it is given up.
    pub max_attempts: u32,
    /// The first retry delay; doubles per failed attempt.
    pub backoff_base: Duration,
    /// The longest retry delay.
    pub backoff_max: Duration,
    /// Signing secrets of webhook bridge channels, by channel name.
    pub bridge_secrets: BridgeSecrets,
}

impl Default for PushWorkerConfig {
    fn default() -> Self {
        Self {
            allow_private: false,
            timeout: Duration::from_secs(10),
            max_attempts: 10,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(300),
            bridge_secrets: BridgeSecrets::default(),
        }
    }
}

/// A webhook: `(task id, config id)`, or `(task id, bridge:<channel>)`.
type GroupKey = (String, String);

/// What a round decided, committed as one batch.
#[derive(Default)]
struct Results {
    done: Vec<i64>,
    retry: Vec<(i64, i64, u32)>,
    /// Webhooks whose head failed, with the time of its retry.
    held: Vec<(GroupKey, i64)>,
}

/// Starts the worker on `outbox`, tracked on the engine's background work. It stops
/// when `shutdown` is cancelled, after
/// committing what it delivered; rows still pending stay in the outbox and
/// are delivered after a restart.
pub fn spawn_push_worker(
    outbox: Outbox,
    cfg: PushWorkerConfig,
    shutdown: CancellationToken,
) -> JoinHandle<()> {
    let background = outbox.background().clone();
    background.spawn(async move {
        match Deliverer::new(SsrfGuard::new(cfg.allow_private), cfg.timeout, cfg.bridge_secrets.clone()) {
            Ok(deliverer) => Worker { outbox, cfg, deliverer, held: HashMap::new() }.run(shutdown).await,
            Err(e) => {
                tracing::error!(error = %e, "push delivery is disabled; outbox rows stay queued");
                shutdown.cancelled().await;
            }
        }
    })
}

struct Worker {
    outbox: Outbox,
    cfg: PushWorkerConfig,
    deliverer: Deliverer,
    /// Webhooks held back until a failed head's retry time (ms).
    held: HashMap<GroupKey, i64>,
}

fn now_ms() -> i64 {
    Timestamp::now().millis()
}

impl Worker {
    async fn run(mut self, shutdown: CancellationToken) {
        // The first round takes every pending row, due or not: retries that
        // were waiting when the daemon stopped go out at once, and each
        // webhook's oldest row goes first.
        let mut horizon = i64::MAX;
        while !shutdown.is_cancelled() {
            let items = match self.outbox.due(horizon, ROUND_LIMIT).await {
                Ok(items) => items,
                Err(e) => {
                    tracing::warn!(error = %e, "push worker could not read the outbox");
                    self.pause(&shutdown, STORE_ERROR_PAUSE).await;
                    continue;
                }
            };
            let read = items.len();
            if read > 0 {
                let results = self.round(items, &shutdown).await;
                for (key, until) in &results.held {
                    self.held.insert(key.clone(), *until);
                }
                if let Err(e) = self.outbox.record(results.done, results.retry).await {
                    // The rows stay; delivered ones may be sent again
                    // (receivers deduplicate, A2A §4.3.3).
                    tracing::warn!(error = %e, "push worker could not record delivery results");
                    self.pause(&shutdown, STORE_ERROR_PAUSE).await;
                }
            }
            if shutdown.is_cancelled() {
                break;
            }
            self.outbox.count_depth().await;
            let wait = self.next_wait(horizon, read).await;
            if !wait.is_zero() {
                tokio::select! {
                    () = self.outbox.queued() => {}
                    () = tokio::time::sleep(wait) => {}
                    () = shutdown.cancelled() => {}
                }
            }
            horizon = now_ms();
        }
    }

    /// How long to sleep before the next round, given the horizon and the
    /// number of rows the last read returned.
    async fn next_wait(&self, horizon: i64, read: usize) -> Duration {
        match self.outbox.next_due().await {
            Ok(Some(due)) if due > horizon => {
                let ms = due.saturating_sub(now_ms()).max(0);
                Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(IDLE_POLL)
            }
            // Rows were due but the read returned none (their config is
            // gone): do not spin on them.
            Ok(Some(_)) if read == 0 => STORE_ERROR_PAUSE,
            // More due rows than one round takes.
            Ok(Some(_)) => Duration::ZERO,
            Ok(None) => IDLE_POLL,
            Err(e) => {
                tracing::warn!(error = %e, "push worker could not read the outbox");
                STORE_ERROR_PAUSE
            }
        }
    }

    async fn pause(&self, shutdown: &CancellationToken, d: Duration) {
        tokio::select! {
            () = tokio::time::sleep(d) => {}
            () = shutdown.cancelled() => {}
        }
    }

    /// Delivers one round. On shutdown the deliveries in flight are
    /// dropped (their rows stay) and what finished is returned.
    async fn round(&mut self, items: Vec<OutboxItem>, shutdown: &CancellationToken) -> Results {
        let now = now_ms();
        self.held.retain(|_, until| *until > now);
        let results = Mutex::new(Results::default());
        let mut groups: Vec<(GroupKey, Vec<OutboxItem>)> = Vec::new();
        let mut index: HashMap<GroupKey, usize> = HashMap::new();
        for item in items {
            let key = (item.task_id.clone(), item.target.key());
            if let Some(until) = self.held.get(&key) {
                // Behind a failed event of the same webhook: wait with it.
                record(&results, |r| r.retry.push((item.id, *until, item.attempts)));
                continue;
            }
            let i = *index.entry(key.clone()).or_insert_with(|| {
                groups.push((key, Vec::new()));
                groups.len() - 1
            });
            if let Some((_, g)) = groups.get_mut(i)
                && g.len() < PER_GROUP
            {
                g.push(item);
            }
        }
        let deliveries = futures::stream::iter(groups)
            .for_each_concurrent(CONCURRENCY, |(key, items)| self.group(key, items, &results));
        tokio::select! {
            () = deliveries => {}
            () = shutdown.cancelled() => {}
        }
        results.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    /// Delivers one webhook's rows in order, stopping at the first failure.
    async fn group(&self, key: GroupKey, items: Vec<OutboxItem>, results: &Mutex<Results>) {
        for (i, item) in items.iter().enumerate() {
            let span = crate::trace::delivery(item);
            let outcome = tracing::Instrument::instrument(self.deliverer.deliver(item), span.clone()).await;
            crate::trace::delivered(&span, &outcome);
            let label = outcome.label(item.attempts.saturating_add(1), &self.cfg);
            self.outbox.metrics().outbox.delivery(target(item), label);
            let why = match outcome {
                Outcome::Delivered => {
                    record(results, |r| r.done.push(item.id));
                    continue;
                }
                Outcome::Failed(why) => why,
                Outcome::Permanent(why) => {
                    self.give_up(item, item.attempts.saturating_add(1), &why, results);
                    return;
                }
            };
            let attempts = item.attempts.saturating_add(1);
            if attempts >= self.cfg.max_attempts {
                self.give_up(item, attempts, &why, results);
                return;
            }
            let delay = backoff(self.cfg.backoff_base, self.cfg.backoff_max, attempts);
            let until = now_ms().saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX));
            tracing::debug!(
                task = %key.0, target = %key.1, attempts, retry_in_ms = delay.as_millis() as u64,
                error = %why, "push delivery failed; will retry"
            );
            record(results, |r| {
                r.retry.push((item.id, until, attempts));
                // The later rows of this webhook wait with it, durably.
                for later in items.iter().skip(i + 1) {
                    r.retry.push((later.id, until, later.attempts));
                }
                r.held.push((key.clone(), until));
            });
            return;
        }
    }

    fn give_up(&self, item: &OutboxItem, attempts: u32, why: &str, results: &Mutex<Results>) {
        tracing::warn!(
            task = %item.task_id, target = %item.target.key(), attempts, error = %why,
            "push delivery given up; the event is dropped"
        );
        record(results, |r| r.done.push(item.id));
    }
}

/// The target label of a row's delivery metrics.
fn target(item: &OutboxItem) -> &'static str {
    match item.target {
        agentd_core::OutboxTarget::Push(_) => "push",
        agentd_core::OutboxTarget::Bridge(_) => "bridge",
    }
}

impl Outcome {
    /// The outcome label of attempt number `attempt` of a row.
    fn label(&self, attempt: u32, cfg: &PushWorkerConfig) -> &'static str {
        match self {
            Outcome::Delivered => "delivered",
            Outcome::Failed(_) if attempt < cfg.max_attempts => "retry",
            Outcome::Failed(_) | Outcome::Permanent(_) => "given_up",
        }
    }
}

fn record(results: &Mutex<Results>, f: impl FnOnce(&mut Results)) {
    let mut r = results.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut r);
}
