//! The push worker: drains the durable outbox (push events and bridge
//! announcements alike). It reads the due rows, which the store returns
//! round-robin across owners (the principal that registered a push
//! config; a bridge row's task owner), groups them by webhook (task id,
//! config id) in outbox order, and keeps up to [`CONCURRENCY`] webhooks in
//! flight, each delivered in order, of which one owner holds at most
//! [`PER_OWNER`]. A webhook frees its slot as soon as it is done: what it
//! delivered is committed and the outbox read again, so no delivery waits
//! for another webhook's, and one owner's slow or silent receivers hold
//! only that owner's part of the slots while every other owner's
//! deliveries go on. A failed delivery holds back the later events of its
//! webhook until it succeeds or is given up, so a receiver sees a task's
//! events in order; other webhooks and the task itself never wait.

use super::deliver::{Deliverer, Outcome, backoff};
use super::ssrf::SsrfGuard;
use crate::bridges::BridgeSecrets;
use agentd_core::{Outbox, OutboxItem};
use agentd_proto::Timestamp;
use futures::FutureExt;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Outbox rows read at a time.
const READ_LIMIT: usize = 256;
/// Webhooks delivered to at once.
const CONCURRENCY: usize = 32;
/// Webhooks of one owner delivered to at once: a quarter of the slots, as
/// the daemon's other per-principal parts, so that receivers one principal
/// chose (a tarpit that accepts and never answers, say) leave the rest of
/// the slots to the others.
const PER_OWNER: usize = CONCURRENCY / 4;
/// Rows of one webhook delivered before its slot is given back (bounds how
/// long a slow receiver holds a slot; the rest stay due for the next turn).
const PER_GROUP: usize = 32;
/// The longest sleep between reads, and the pause after a store error.
const IDLE_POLL: Duration = Duration::from_secs(60);
const STORE_ERROR_PAUSE: Duration = Duration::from_secs(1);
/// How often the outbox is read again while deliveries are in flight: the
/// rows in flight are due, so the earliest due time no longer tells when
/// a retry waiting meanwhile comes due.
const RESCAN: Duration = Duration::from_secs(1);

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

/// Delivery results not committed yet, committed together.
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
            Ok(deliverer) => Worker { outbox, cfg, deliverer }.run(shutdown).await,
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
}

/// Who holds the delivery slots, and which webhooks wait.
#[derive(Default)]
struct Slots {
    /// Webhooks held back until a failed head's retry time (ms).
    held: HashMap<GroupKey, i64>,
    /// Webhooks in flight: their rows read again wait for them to land.
    busy: HashSet<GroupKey>,
    /// Webhooks in flight per owner.
    owners: HashMap<String, usize>,
}

/// A webhook's rows to deliver in order, and whose they are.
struct Group {
    key: GroupKey,
    owner: String,
    items: Vec<OutboxItem>,
}

/// What the last read found.
struct Read {
    rows: usize,
    /// Rows left for want of a slot (their webhook or owner was busy, or
    /// every slot was): a webhook landing frees one.
    left: bool,
}

fn now_ms() -> i64 {
    Timestamp::now().millis()
}

impl Slots {
    /// Sorts a read's rows into webhooks to start now; rows of a webhook
    /// held back are rescheduled with it (into `results`).
    fn place(
        &mut self,
        items: Vec<OutboxItem>,
        flying: usize,
        results: &Mutex<Results>,
    ) -> (Vec<Group>, bool) {
        let now = now_ms();
        self.held.retain(|_, until| *until > now);
        let mut left = false;
        let mut groups: Vec<Group> = Vec::new();
        let mut index: HashMap<GroupKey, usize> = HashMap::new();
        for item in items {
            let key = (item.task_id.clone(), item.target.key());
            if self.busy.contains(&key) {
                left = true;
                continue;
            }
            if let Some(until) = self.held.get(&key) {
                // Behind a failed event of the same webhook: wait with it.
                record(results, |r| r.retry.push((item.id, *until, item.attempts)));
                continue;
            }
            let i = *index.entry(key.clone()).or_insert_with(|| {
                groups.push(Group { key, owner: item.owner.clone(), items: Vec::new() });
                groups.len() - 1
            });
            match groups.get_mut(i) {
                Some(g) if g.items.len() < PER_GROUP => g.items.push(item),
                _ => left = true,
            }
        }
        let mut start = Vec::new();
        for g in groups {
            let owned = self.owners.get(&g.owner).copied().unwrap_or(0);
            if flying + start.len() >= CONCURRENCY || owned >= PER_OWNER {
                // Stays due: read again once a slot is free.
                left = true;
                continue;
            }
            self.busy.insert(g.key.clone());
            *self.owners.entry(g.owner.clone()).or_default() += 1;
            start.push(g);
        }
        (start, left)
    }

    /// A webhook's delivery is over: its slot is free.
    fn land(&mut self, key: &GroupKey, owner: &str) {
        self.busy.remove(key);
        if let Some(n) = self.owners.get_mut(owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.owners.remove(owner);
            }
        }
    }
}

impl Worker {
    async fn run(self, shutdown: CancellationToken) {
        let results = Mutex::new(Results::default());
        let mut slots = Slots::default();
        let mut flying = FuturesUnordered::new();
        // The first read takes every pending row, due or not: retries that
        // were waiting when the daemon stopped go out at once, and each
        // webhook's oldest row goes first.
        let mut horizon = i64::MAX;
        while !shutdown.is_cancelled() {
            // What was delivered is committed before the outbox is read
            // again: a delivered row read back would go out twice.
            self.commit(&results, &mut slots, &shutdown).await;
            let read = match self.outbox.due(horizon, READ_LIMIT).await {
                Ok(items) => {
                    let rows = items.len();
                    let (start, left) = slots.place(items, flying.len(), &results);
                    for g in start {
                        flying.push(self.group(g, &results));
                    }
                    Read { rows, left }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "push worker could not read the outbox");
                    self.pause(&shutdown, STORE_ERROR_PAUSE).await;
                    continue;
                }
            };
            // Rows held behind a failed head: rescheduled before the next
            // wait is worked out from the due times.
            self.commit(&results, &mut slots, &shutdown).await;
            if shutdown.is_cancelled() {
                break;
            }
            self.outbox.count_depth().await;
            let wait = self.next_wait(horizon, &read, !flying.is_empty()).await;
            if !wait.is_zero() {
                tokio::select! {
                    Some((key, owner)) = flying.next(), if !flying.is_empty() => {
                        slots.land(&key, &owner);
                        // Others that landed meanwhile: one commit for all.
                        while let Some(Some((key, owner))) = flying.next().now_or_never() {
                            slots.land(&key, &owner);
                        }
                    }
                    () = self.outbox.queued() => {}
                    () = tokio::time::sleep(wait) => {}
                    () = shutdown.cancelled() => {}
                }
            }
            horizon = now_ms();
        }
        // Deliveries in flight are dropped (their rows stay); what was
        // delivered is committed.
        drop(flying);
        self.commit(&results, &mut slots, &CancellationToken::new()).await;
    }

    /// Commits the results gathered so far in one batch, and holds back
    /// the webhooks whose head failed.
    async fn commit(&self, results: &Mutex<Results>, slots: &mut Slots, shutdown: &CancellationToken) {
        let taken = std::mem::take(&mut *results.lock().unwrap_or_else(|e| e.into_inner()));
        for (key, until) in taken.held {
            slots.held.insert(key, until);
        }
        if let Err(e) = self.outbox.record(taken.done, taken.retry).await {
            // The rows stay; delivered ones may be sent again
            // (receivers deduplicate, A2A §4.3.3).
            tracing::warn!(error = %e, "push worker could not record delivery results");
            self.pause(shutdown, STORE_ERROR_PAUSE).await;
        }
    }

    /// How long to sleep before the next read, given the horizon of the
    /// last one, what it found, and whether deliveries are in flight.
    async fn next_wait(&self, horizon: i64, read: &Read, flying: bool) -> Duration {
        if read.rows == READ_LIMIT && !read.left {
            // Every row of a full read went out: more may be due.
            return Duration::ZERO;
        }
        match self.outbox.next_due().await {
            Ok(Some(due)) if due > horizon => {
                let ms = due.saturating_sub(now_ms()).max(0);
                Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(IDLE_POLL)
            }
            // Due rows are in flight or wait for a slot: a landing wakes
            // the worker, the rescan catches retries coming due meanwhile.
            Ok(Some(_)) if flying => RESCAN,
            // Rows were due but the read returned none (their config is
            // gone): do not spin on them.
            Ok(Some(_)) if read.rows == 0 => STORE_ERROR_PAUSE,
            // More due rows than one read takes.
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

    /// Delivers one webhook's rows in order, stopping at the first
    /// failure; each result is recorded as it comes (so a shutdown commits
    /// what was delivered). Returns the webhook and its owner.
    async fn group(&self, group: Group, results: &Mutex<Results>) -> (GroupKey, String) {
        let Group { key, owner, items } = group;
        self.deliver(&key, &items, results).await;
        (key, owner)
    }

    async fn deliver(&self, key: &GroupKey, items: &[OutboxItem], results: &Mutex<Results>) {
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
