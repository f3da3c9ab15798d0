//! Announcing committed events in `seq` order, whichever process committed
//! them. The table is the truth; a NOTIFY on `agentd_events` (sent in the
//! committing transaction, so delivered only once it committed, carrying
//! its last seq) is the wake-up.
//!
//! One follower task per store announces seq `next`, then `next + 1`, ...:
//! from the copies this store's own commits hand it, or else read from the
//! table. Seqs are taken under a lock held until COMMIT (`write.rs`), so
//! once seq `n` is known committed, every seq below it is too: the
//! follower reads up to `n` with no gap to wait for. A listener task holds
//! a connection of its own for LISTEN, and after losing it connects again
//! and rescans from the table (notifications sent meanwhile are lost).
//! The listener also hears `agentd_outbox`, sent by any commit that queued
//! outbox rows, and wakes the outbox worker with it unless this instance
//! sent it (its commits wake its worker directly); and `agentd_tasks`,
//! a task's id sent by a commit that changed the task without a `task`
//! event (a streamed reply's flush), which it hands to the engine
//! (`Leases::subscribe_task_writes`).

use super::read;
use crate::event_log::Announcer;
use agentd_core::EventRecord;
use deadpool_postgres::Pool;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_postgres::{AsyncMessage, NoTls};

/// Events read from the table per query while catching up.
const READ_CHUNK: usize = 512;
/// Wait before connecting the listener again after losing it.
const RECONNECT_DELAY: Duration = Duration::from_millis(500);

pub(crate) enum Wake {
    /// This store committed these events; answer once they are announced.
    Committed(Vec<EventRecord>, oneshot::Sender<()>),
    /// This store took these seqs but did not commit them (given back).
    GaveBack,
    /// Some process committed events up to this seq.
    Notified(u64),
    /// The listener (re)connected: whatever was committed meanwhile is due.
    /// `outbox_lost`: the store's open returned before this connection (a
    /// reconnect, or the first attempt failed), so the outbox worker may
    /// have missed notifications; the first connection is made before
    /// open returns, ahead of the worker's first scan.
    Rescan { outbox_lost: bool },
    /// Some process committed outbox rows.
    OutboxQueued,
}

/// The seqs this store took in transactions not yet handed to the
/// follower: registered before COMMIT, so that the follower, when such a
/// seq is due, waits for the committer's own copy instead of reading it
/// from the table (commits of one store finish out of order all the time).
#[derive(Clone, Default)]
pub(crate) struct InFlight(Arc<Mutex<BTreeSet<u64>>>);

impl InFlight {
    fn set(&self) -> std::sync::MutexGuard<'_, BTreeSet<u64>> {
        // A panic while holding it cannot leave the set half-changed.
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn take(&self, seqs: impl IntoIterator<Item = u64>) {
        self.set().extend(seqs);
    }

    pub(crate) fn release(&self, seqs: impl IntoIterator<Item = u64>) {
        let mut set = self.set();
        for seq in seqs {
            set.remove(&seq);
        }
    }

    fn contains(&self, seq: u64) -> bool {
        self.set().contains(&seq)
    }
}

/// The follower: announces events strictly in seq order from `next` on.
pub(crate) struct Follower {
    pub pool: Pool,
    pub announcer: Announcer,
    /// The next seq to announce.
    pub next: u64,
    /// Every seq through this one is committed.
    pub committed_through: u64,
    /// Own committed events not announced yet, by seq.
    pub pending: BTreeMap<u64, EventRecord>,
    /// Own commits waiting for their last seq to be announced.
    pub acks: Vec<(u64, oneshot::Sender<()>)>,
    pub in_flight: InFlight,
}

impl Follower {
    pub(crate) async fn run(mut self, mut wakes: mpsc::UnboundedReceiver<Wake>) {
        while let Some(wake) = wakes.recv().await {
            match wake {
                Wake::Committed(events, done) => {
                    let through = events.last().map_or(0, |e| e.seq);
                    self.in_flight.release(events.iter().map(|e| e.seq));
                    for e in events {
                        self.pending.insert(e.seq, e);
                    }
                    self.acks.push((through, done));
                    self.committed_through = self.committed_through.max(through);
                }
                Wake::GaveBack => {}
                Wake::Notified(through) => self.committed_through = self.committed_through.max(through),
                Wake::OutboxQueued => {
                    self.announcer.outbox_queued();
                    continue;
                }
                Wake::Rescan { outbox_lost } => {
                    if outbox_lost {
                        self.announcer.outbox_queued();
                    }
                    if let Some(through) = self.last_committed().await {
                        self.committed_through = self.committed_through.max(through);
                    }
                }
            }
            self.catch_up().await;
        }
    }

    async fn last_committed(&self) -> Option<u64> {
        let client = self
            .pool
            .get()
            .await
            .map_err(|e| tracing::warn!(error = %e, "event feed: no connection"))
            .ok()?;
        read::event_log_bounds(&client)
            .await
            .map_err(|e| tracing::warn!(error = %e, "event feed: cannot read the log's bounds"))
            .ok()
            .map(|b| b.last)
    }

    /// Announces every committed seq from `next` on, as far as it can: a
    /// seq this store is committing is waited for (its wake comes next).
    async fn catch_up(&mut self) {
        let through = self.committed_through;
        while self.next <= through {
            if let Some(e) = self.pending.remove(&self.next) {
                self.next += 1;
                self.announcer.announce([e]);
                continue;
            }
            if self.in_flight.contains(self.next) {
                break;
            }
            let read = match self.pool.get().await {
                Ok(client) => read::events(&client, self.next - 1, READ_CHUNK).await,
                Err(e) => Err(agentd_core::StoreError::backend(format!("no connection: {e}"))),
            };
            let events = match read {
                Ok(events) => events,
                Err(e) => {
                    // The next wake retries from here.
                    tracing::warn!(error = %e, from = self.next, "event feed: cannot read committed events");
                    break;
                }
            };
            // Missing seqs below the first read were removed by retention.
            let Some(first) = events.first().map(|e| e.seq) else {
                self.next = through + 1;
                break;
            };
            self.next = self.next.max(first);
            let from = self.next;
            for e in events.into_iter().take_while(|e| e.seq <= through) {
                if e.seq != self.next || self.in_flight.contains(e.seq) {
                    break;
                }
                self.next = e.seq + 1;
                self.announcer.announce([e]);
            }
            if self.next == from && !self.in_flight.contains(from) {
                // Not a committed log's shape (a hole past its start): say
                // so, and let the next wake try again rather than spin.
                tracing::warn!(seq = from, "event feed: a committed seq is missing from the log");
                break;
            }
        }
        // Own copies of seqs already announced from the table.
        self.pending = self.pending.split_off(&self.next);
        let announced = self.next - 1;
        for (_, done) in self.acks.extract_if(.., |(last, _)| *last <= announced) {
            let _ = done.send(());
        }
    }
}

/// Holds a LISTEN connection and turns notifications into wakes; connects
/// again whenever the connection is lost, with a rescan each time.
/// `listening` is answered once the first LISTEN is in place (dropped if
/// that first attempt fails).
pub(crate) async fn listen(
    config: tokio_postgres::Config,
    wakes: mpsc::UnboundedSender<Wake>,
    task_writes: broadcast::Sender<Arc<str>>,
    instance: Arc<str>,
    listening: oneshot::Sender<()>,
) {
    let mut listening = Some(listening);
    loop {
        let first = listening.take();
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let (notes, mut noted) = mpsc::unbounded_channel();
                let tasks = task_writes.clone();
                let instance = instance.clone();
                // The connection must be polled for LISTEN to be answered, and
                // its notifications come out of that same polling.
                let drive = async move {
                    loop {
                        match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                            Some(Ok(AsyncMessage::Notification(n)))
                                if n.channel() == super::OUTBOX_CHANNEL =>
                            {
                                // Its own commits woke this worker already.
                                if n.payload() != &*instance {
                                    let _ = notes.send(None);
                                }
                            }
                            Some(Ok(AsyncMessage::Notification(n)))
                                if n.channel() == super::TASKS_CHANNEL =>
                            {
                                // Nobody streaming here is not an error.
                                let _ = tasks.send(n.payload().into());
                            }
                            Some(Ok(AsyncMessage::Notification(n))) => {
                                let _ = notes.send(Some(n.payload().to_owned()));
                            }
                            Some(Ok(_)) => {}
                            Some(Err(e)) => {
                                return tracing::warn!(error = %e, "event feed: listener connection lost");
                            }
                            None => return tracing::warn!("event feed: listener connection closed"),
                        }
                    }
                };
                let forward = async {
                    let listen = format!(
                        "LISTEN {}; LISTEN {}; LISTEN {}",
                        super::EVENTS_CHANNEL,
                        super::OUTBOX_CHANNEL,
                        super::TASKS_CHANNEL
                    );
                    if let Err(e) = client.batch_execute(&listen).await {
                        tracing::warn!(error = %e, "event feed: LISTEN failed");
                        return;
                    }
                    // After open returned (a first attempt failed too), the
                    // worker may have missed notifications.
                    let _ = wakes.send(Wake::Rescan { outbox_lost: first.is_none() });
                    if let Some(first) = first {
                        let _ = first.send(());
                    }
                    // Task writes notified while disconnected are lost: every
                    // followed task is due for a read.
                    let _ = task_writes.send(Arc::from(""));
                    while let Some(note) = noted.recv().await {
                        let Some(payload) = note else {
                            let _ = wakes.send(Wake::OutboxQueued);
                            continue;
                        };
                        match payload.parse() {
                            Ok(seq) => {
                                let _ = wakes.send(Wake::Notified(seq));
                            }
                            Err(_) => tracing::warn!(payload, "event feed: a notification that is no seq"),
                        }
                    }
                };
                tokio::select! {
                    () = drive => {}
                    () = forward => {}
                }
            }
            Err(e) => {
                // Open stops waiting now, not after the reconnect delay.
                drop(first);
                tracing::warn!(error = %e, "event feed: cannot connect the listener");
            }
        }
        if wakes.is_closed() {
            return;
        }
        tokio::time::sleep(RECONNECT_DELAY).await;
    }
}
