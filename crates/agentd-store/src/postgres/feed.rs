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

use super::read;
use crate::event_log::Announcer;
use agentd_core::EventRecord;
use deadpool_postgres::Pool;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{AsyncMessage, NoTls};

/// Events read from the table per query while catching up.
const READ_CHUNK: usize = 512;
/// Wait before connecting the listener again after losing it.
const RECONNECT_DELAY: Duration = Duration::from_millis(500);

pub(crate) enum Wake {
    /// This store committed these events; answer once they are announced.
    Committed(Vec<EventRecord>, oneshot::Sender<()>),
    /// Some process committed events up to this seq.
    Notified(u64),
    /// The listener (re)connected: whatever was committed meanwhile is due.
    Rescan,
}

/// The follower: announces events strictly in seq order from `next` on.
pub(crate) struct Follower {
    pub pool: Pool,
    pub announcer: Announcer,
    /// The next seq to announce.
    pub next: u64,
    /// Own committed events not announced yet, by seq.
    pub pending: BTreeMap<u64, EventRecord>,
}

impl Follower {
    pub(crate) async fn run(mut self, mut wakes: mpsc::UnboundedReceiver<Wake>) {
        while let Some(wake) = wakes.recv().await {
            match wake {
                Wake::Committed(events, done) => {
                    let through = events.last().map_or(0, |e| e.seq);
                    for e in events {
                        self.pending.insert(e.seq, e);
                    }
                    self.catch_up(through).await;
                    let _ = done.send(());
                }
                Wake::Notified(through) => self.catch_up(through).await,
                Wake::Rescan => match self.last_committed().await {
                    Some(through) => self.catch_up(through).await,
                    None => continue,
                },
            }
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

    /// Announces every seq from `next` through `through` (all committed).
    async fn catch_up(&mut self, through: u64) {
        while self.next <= through {
            if let Some(e) = self.pending.remove(&self.next) {
                self.next += 1;
                self.announcer.announce([e]);
                continue;
            }
            let read = match self.pool.get().await {
                Ok(client) => read::events(&client, self.next - 1, READ_CHUNK).await,
                Err(e) => Err(agentd_core::StoreError::backend(format!("no connection: {e}"))),
            };
            let events = match read {
                Ok(events) => events,
                Err(e) => {
                    // The next commit or notification retries from here.
                    tracing::warn!(error = %e, from = self.next, "event feed: cannot read committed events");
                    return;
                }
            };
            // Missing seqs below the first read were removed by retention.
            let Some(first) = events.first().map(|e| e.seq) else {
                self.next = through + 1;
                break;
            };
            self.next = self.next.max(first);
            for e in events.into_iter().take_while(|e| e.seq <= through) {
                self.next = e.seq + 1;
                self.announcer.announce([e]);
            }
        }
        // Own copies of seqs already announced from the table.
        self.pending = self.pending.split_off(&self.next);
    }
}

/// Holds a LISTEN connection and turns notifications into wakes; connects
/// again whenever the connection is lost, with a rescan each time.
pub(crate) async fn listen(config: tokio_postgres::Config, wakes: mpsc::UnboundedSender<Wake>) {
    loop {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let (notes, mut noted) = mpsc::unbounded_channel();
                // The connection must be polled for LISTEN to be answered, and
                // its notifications come out of that same polling.
                let drive = async move {
                    loop {
                        match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                            Some(Ok(AsyncMessage::Notification(n))) => {
                                let _ = notes.send(n.payload().to_owned());
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
                    if let Err(e) = client.batch_execute(&format!("LISTEN {}", super::EVENTS_CHANNEL)).await {
                        tracing::warn!(error = %e, "event feed: LISTEN failed");
                        return;
                    }
                    let _ = wakes.send(Wake::Rescan);
                    while let Some(payload) = noted.recv().await {
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
            Err(e) => tracing::warn!(error = %e, "event feed: cannot connect the listener"),
        }
        if wakes.is_closed() {
            return;
        }
        tokio::time::sleep(RECONNECT_DELAY).await;
    }
}
