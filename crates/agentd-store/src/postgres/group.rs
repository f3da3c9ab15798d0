//! Group commit, as SQLite's writer does it: one task takes every batch
//! queued and writes them in one transaction, so concurrent commits share
//! one BEGIN/COMMIT, one WAL flush and one hold of the event log's counter
//! row (which serializes appends across processes: the fewer holds, the
//! better). A group that fails (a stale task version, a bad row) is rolled
//! back and each of its batches written again in a transaction of its own,
//! so the failing one is refused alone. Callers are answered only after
//! COMMIT returned.

use super::feed::{InFlight, Wake};
use super::write::{self, Written};
use super::{db, pool_error};
use agentd_core::{Batch, StoreError};
use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};

/// The most batches committed in one transaction.
const MAX_GROUP: usize = 64;

/// How often a transaction aborted by a deadlock is run again.
const DEADLOCK_RETRIES: usize = 3;

/// One queued commit and where to send its outcome.
pub(crate) struct Job {
    pub batch: Batch,
    pub reply: oneshot::Sender<Result<Written, StoreError>>,
}

/// The writer: groups and writes queued jobs until every sender is gone.
pub(crate) struct Writer {
    pub pool: Pool,
    pub in_flight: InFlight,
    pub wakes: mpsc::UnboundedSender<Wake>,
    /// This store instance's name in its outbox notifications.
    pub instance: std::sync::Arc<str>,
}

impl Writer {
    pub(crate) async fn run(self, mut jobs: mpsc::UnboundedReceiver<Job>) {
        while let Some(first) = jobs.recv().await {
            let mut group = vec![first];
            while group.len() < MAX_GROUP {
                match jobs.try_recv() {
                    Ok(job) => group.push(job),
                    Err(_) => break,
                }
            }
            self.write_group(group).await;
        }
    }

    async fn write_group(&self, group: Vec<Job>) {
        let batches: Vec<&Batch> = group.iter().map(|j| &j.batch).collect();
        match self.write(&batches).await {
            Ok(appended) => {
                for (job, written) in group.into_iter().zip(appended) {
                    // The caller may have stopped waiting; the write stands.
                    let _ = job.reply.send(Ok(written));
                }
            }
            Err(e) if group.len() == 1 => {
                if let Some(job) = group.into_iter().next() {
                    let _ = job.reply.send(Err(e));
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, batches = group.len(), "group commit failed; writing one by one");
                for job in group {
                    let outcome =
                        self.write(&[&job.batch]).await.map(|mut one| one.pop().unwrap_or_default());
                    let _ = job.reply.send(outcome);
                }
            }
        }
    }

    /// Writes `batches` in order in one transaction and commits; what each
    /// wrote. On any error nothing is written.
    async fn write(&self, batches: &[&Batch]) -> Result<Vec<Written>, StoreError> {
        let mut client = self.pool.get().await.map_err(pool_error)?;
        let mut attempt = 0;
        loop {
            let tx = client.transaction().await.map_err(db("begin"))?;
            let failed = match write::apply(&tx, batches, &self.instance).await {
                Ok(appended) => {
                    // Before COMMIT: nobody can know these seqs committed before.
                    let seqs = || appended.iter().flat_map(|w| &w.events).map(|e| e.seq);
                    self.in_flight.take(seqs());
                    if let Err(e) = tx.commit().await {
                        self.in_flight.release(seqs());
                        let _ = self.wakes.send(Wake::GaveBack);
                        return Err(db("commit")(e));
                    }
                    return Ok(appended);
                }
                Err(failed) => failed,
            };
            // Dropping the transaction rolls it back.
            drop(tx);
            attempt += 1;
            if !(failed.retryable() && attempt <= DEADLOCK_RETRIES) {
                return Err(failed.into_store_error());
            }
            tracing::debug!(attempt, "transaction aborted by a deadlock; writing it again");
        }
    }
}
