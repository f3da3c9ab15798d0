//! Test support shared by the crates' test suites (feature `testing`): a
//! [`Store`] that wraps a real backend and fails the commits a test picks,
//! so a test sees what the engine and the runtime do when a write fails;
//! and a throw-away PostgreSQL cluster ([`postgres`]).

pub mod postgres;

use agentd_core::events::{EventLogBounds, EventRecord};
use agentd_core::journal::JournalEntry;
use agentd_core::record::{OutboxItem, TaskRecord};
use agentd_core::reminder::ReminderRecord;
use agentd_core::store::{Batch, PushConfigRow, Store, StoreError, TaskPage, TaskQuery};
use agentd_proto::TaskState;
use async_trait::async_trait;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

type Rule = Box<dyn Fn(&Batch) -> bool + Send + Sync>;

/// A store that refuses up to `times` commits matching a rule, writing
/// nothing of them; every other call goes to the wrapped store.
pub struct FaultyStore {
    inner: Arc<dyn Store>,
    rule: Rule,
    left: AtomicUsize,
    failed: AtomicUsize,
}

impl FaultyStore {
    /// Fails the next `times` commits for which `rule` holds.
    pub fn new(
        inner: Arc<dyn Store>,
        times: usize,
        rule: impl Fn(&Batch) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self { inner, rule: Box::new(rule), left: AtomicUsize::new(times), failed: AtomicUsize::new(0) }
    }

    /// How many commits it failed so far.
    pub fn failed(&self) -> usize {
        self.failed.load(Ordering::SeqCst)
    }

    fn refuses(&self, batch: &Batch) -> bool {
        (self.rule)(batch)
            && self.left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
    }
}

/// A rule: the batch writes a task that holds an artifact.
pub fn carries_artifact(batch: &Batch) -> bool {
    batch.tasks.iter().any(|t| t.task.artifacts.as_ref().is_some_and(|a| !a.is_empty()))
}

#[async_trait]
impl Store for FaultyStore {
    async fn commit(&self, batch: Batch) -> Result<(), StoreError> {
        if self.refuses(&batch) {
            self.failed.fetch_add(1, Ordering::SeqCst);
            return Err(StoreError::Backend("injected fault: the disk is full".into()));
        }
        self.inner.commit(batch).await
    }
    async fn get_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get_task(id).await
    }
    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list_tasks(query).await
    }
    async fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.tasks_in_states(states).await
    }
    async fn metas_in_state(&self, state: TaskState) -> Result<Vec<agentd_core::TaskMetaRow>, StoreError> {
        self.inner.metas_in_state(state).await
    }
    async fn context_tasks(&self, context_id: &str) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.context_tasks(context_id).await
    }
    async fn context_foreign(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        self.inner.context_foreign(context_id, owner).await
    }
    async fn get_push_config(&self, task_id: &str, id: &str) -> Result<Option<PushConfigRow>, StoreError> {
        self.inner.get_push_config(task_id, id).await
    }
    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        self.inner.list_push_configs(task_id).await
    }
    async fn due_outbox(&self, now_ms: i64, limit: usize) -> Result<Vec<OutboxItem>, StoreError> {
        self.inner.due_outbox(now_ms, limit).await
    }
    async fn next_outbox_due(&self) -> Result<Option<i64>, StoreError> {
        self.inner.next_outbox_due().await
    }
    async fn outbox_depth(&self) -> Result<u64, StoreError> {
        self.inner.outbox_depth().await
    }
    async fn closed_contexts(&self) -> Result<Vec<String>, StoreError> {
        self.inner.closed_contexts().await
    }
    async fn reminders(&self, task_id: &str, active_only: bool) -> Result<Vec<ReminderRecord>, StoreError> {
        self.inner.reminders(task_id, active_only).await
    }
    async fn get_reminder(&self, task_id: &str, id: &str) -> Result<Option<ReminderRecord>, StoreError> {
        self.inner.get_reminder(task_id, id).await
    }
    async fn read_events(&self, after: u64, limit: usize) -> Result<Vec<EventRecord>, StoreError> {
        self.inner.read_events(after, limit).await
    }
    async fn event_log_bounds(&self) -> Result<EventLogBounds, StoreError> {
        self.inner.event_log_bounds().await
    }
    /// Through this store's own commit, so that its rule sees each step.
    async fn prune_step(&self, r: agentd_core::EventRetention) -> Result<bool, StoreError> {
        agentd_core::prune_step_by_bounds(self, r).await
    }
    async fn journal(&self, task_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.inner.journal(task_id).await
    }
    fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<Arc<EventRecord>> {
        self.inner.subscribe_events()
    }
    async fn outbox_queued(&self) {
        self.inner.outbox_queued().await;
    }
    fn may_have_push_configs(&self) -> bool {
        self.inner.may_have_push_configs()
    }
    fn leases(&self) -> Option<&dyn agentd_core::Leases> {
        self.inner.leases()
    }
}
