//! [`Outbox`]: the port of push delivery and gate bridges. The durable
//! outbox rows (queued with the commits that caused them) are all they
//! read and write: the due rows with their targets, the results of a
//! delivery round, a bridge announcement to queue, and the wake-up after a
//! commit queued rows. Nothing else of the store is reachable from it.

use super::Inner;
use crate::record::{BridgeDelivery, OutboxItem};
use crate::store::{Batch, StoreError};
use std::sync::Arc;

#[derive(Clone)]
pub struct Outbox {
    inner: Arc<Inner>,
}

impl Outbox {
    pub(super) fn new(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    /// The engine these rows belong to (for the outbox lease).
    fn engine(&self) -> super::Engine {
        super::Engine { inner: self.inner.clone(), annotate: false }
    }

    /// Up to `limit` pending rows due at `horizon_ms` (`i64::MAX`: all),
    /// round-robin across owners, each owner's oldest first (see
    /// [`crate::Store::due_outbox`]), each with where it goes (its push
    /// config or channel).
    /// On a store replicas share, only the replica holding the outbox
    /// lease gets rows (it claims the lease when free); the others none.
    pub async fn due(&self, horizon_ms: i64, limit: usize) -> Result<Vec<OutboxItem>, StoreError> {
        if self.engine().outbox_turn().await.is_none() {
            return Ok(Vec::new());
        }
        self.inner.store.due_outbox(horizon_ms, limit).await
    }

    /// When the next pending row is due (ms), if any is pending.
    pub async fn next_due(&self) -> Result<Option<i64>, StoreError> {
        self.inner.store.next_outbox_due().await
    }

    /// Records delivery results in one commit: rows `done` (delivered or
    /// given up) are removed, rows to `retry` get `(id, not_before_ms,
    /// attempts)`.
    /// Refused (`Fenced`) when another replica took the outbox over since.
    pub async fn record(&self, done: Vec<i64>, retry: Vec<(i64, i64, u32)>) -> Result<(), StoreError> {
        let mut batch = Batch { outbox_done: done, outbox_retry: retry, ..Batch::default() };
        if batch.is_empty() {
            return Ok(());
        }
        let Some(fence) = self.engine().outbox_turn().await else {
            return Err(StoreError::Fenced { resource: "outbox".into(), epoch: 0 });
        };
        batch.fences.extend(fence);
        self.inner.store.commit(batch).await
    }

    /// Queues a bridge announcement (committed when this returns; the
    /// store wakes the worker).
    pub async fn queue(&self, delivery: BridgeDelivery) -> Result<(), StoreError> {
        let batch = Batch { bridge_deliveries: vec![delivery], ..Batch::default() };
        self.inner.store.commit(batch).await
    }

    /// Returns once a commit queued rows since the last wake-up (one
    /// waiter is woken per commit; a wake-up with nobody waiting is kept).
    pub async fn queued(&self) {
        self.inner.store.outbox_queued().await;
    }

    /// Sets `agentd_outbox_depth` to the rows pending now (after a read
    /// of the outbox; a failed count leaves it as it was).
    pub async fn count_depth(&self) {
        match self.inner.store.outbox_depth().await {
            Ok(n) => {
                self.metrics().outbox.depth.set(i64::try_from(n).unwrap_or(i64::MAX));
            }
            Err(e) => tracing::debug!(error = %e, "could not count the outbox rows"),
        }
    }

    /// The daemon's metrics (delivery outcomes).
    pub fn metrics(&self) -> &agentd_metrics::Metrics {
        &self.inner.config.metrics
    }

    /// The tracker the delivery worker runs on (see [`crate::Background`]).
    pub fn background(&self) -> &crate::Background {
        &self.inner.background
    }
}
