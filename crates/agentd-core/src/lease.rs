//! Leases: which replica runs a piece of work when several daemons share
//! one database (`docs/scaling.md`). A lease names a resource (a task's
//! run: `task:<id>`), its holder (a replica id), an epoch raised by each
//! claim and an expiry by the database's clock. A holder's writes for the
//! leased work carry a [`Fence`]: the store commits them only while the
//! lease is still the holder's at that epoch, so a holder that lost its
//! lease (it stalled past the expiry and another replica claimed the work)
//! cannot write over the new holder's (Temporal's `range_id`).
//!
//! A store with one process on it (SQLite, memory) has no [`Leases`]: its
//! one replica holds everything, its batches' fences are not checked, and
//! nothing about a commit costs more.

use crate::store::StoreError;
use agentd_proto::TaskState;
use async_trait::async_trait;
use std::time::Duration;

/// The lease resource of a task's run.
pub fn task_resource(task_id: &str) -> String {
    format!("task:{task_id}")
}

/// A condition on a commit: `holder` still holds `resource` at `epoch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    pub resource: String,
    pub holder: String,
    pub epoch: u64,
}

/// A lease as stored, for operators (`status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRow {
    pub resource: String,
    /// Empty once released.
    pub holder: String,
    pub epoch: u64,
    /// Milliseconds until it expires by the database clock; negative when
    /// it expired (or was released).
    pub expires_in_ms: i64,
}

/// A replica that renewed its leases recently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaRow {
    pub id: String,
    /// Milliseconds since it last renewed (by the database clock).
    pub seen_ms_ago: i64,
}

/// The lease operations of a store several replicas share.
#[async_trait]
pub trait Leases: Send + Sync {
    /// Claims `resource` for `holder` for `ttl` when nobody holds it (no
    /// row, released, or expired by the database clock), raising its epoch;
    /// a row another claimer has locked right now is skipped (`FOR UPDATE
    /// SKIP LOCKED`). The new epoch, or `None` when it is someone else's.
    async fn claim(&self, resource: &str, holder: &str, ttl: Duration) -> Result<Option<u64>, StoreError>;
    /// Extends each of `held` (resource, epoch) to now + `ttl` if `holder`
    /// still holds it at that epoch, and records that the replica is alive.
    /// Returns the resources still held; the others were lost.
    async fn renew(
        &self,
        holder: &str,
        held: &[(String, u64)],
        ttl: Duration,
    ) -> Result<Vec<String>, StoreError>;
    /// Gives a lease up at once (the work ended here): anyone may claim it
    /// next.
    async fn release(&self, resource: &str, holder: &str, epoch: u64) -> Result<(), StoreError>;
    /// `release` for each of `held` (resource, epoch), in one statement.
    async fn release_many(&self, holder: &str, held: &[(String, u64)]) -> Result<(), StoreError>;
    /// Ends a lease at once, for work left unfinished (a graceful stop):
    /// it counts as expired, so another replica adopts the work now.
    async fn expire(&self, resource: &str, holder: &str, epoch: u64) -> Result<(), StoreError>;
    /// Tasks in `states` nobody runs: their lease expired; or it was
    /// released, or they have none, and they were last changed before
    /// `unleased_before_ms` (a task just changed may be about to be
    /// claimed by the replica that changed it: a message to a waiting task
    /// starts a run there; and a replica may die between a task's
    /// creation and its claim).
    async fn unheld_tasks(
        &self,
        states: &[TaskState],
        unleased_before_ms: i64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError>;
    /// Every lease held now, by resource.
    async fn list_leases(&self) -> Result<Vec<LeaseRow>, StoreError>;
    /// The replicas seen within `within`.
    async fn replicas(&self, within: Duration) -> Result<Vec<ReplicaRow>, StoreError>;
    /// Whether the database answers (readiness).
    async fn ping(&self) -> Result<(), StoreError>;
    /// The ids of tasks some replica (this one included) committed a change
    /// of that carried no `task` event: a streamed reply's flush, a
    /// progress or journal commit. Replicas following such a task's
    /// streams read it again. An empty id: notifications may have been
    /// missed (the store's listener connected again), so every followed
    /// task is due for a read.
    fn subscribe_task_writes(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<str>>;
}
