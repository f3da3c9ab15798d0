//! The store as the engine sees it: every commit timed and its batch size
//! recorded (`agentd_store_commit_*`), whichever backend is behind, without
//! touching the backends. Reads pass through.

use crate::events::{EventLogBounds, EventRecord};
use crate::journal::JournalEntry;
use crate::record::{OutboxItem, TaskRecord};
use crate::reminder::ReminderRecord;
use crate::store::{Batch, PushConfigRow, Store, StoreError, TaskPage, TaskQuery};
use agentd_metrics::Metrics;
use agentd_proto::TaskState;
use async_trait::async_trait;
use std::sync::Arc;

pub(super) struct Metered {
    pub(super) inner: Arc<dyn Store>,
    pub(super) metrics: Arc<Metrics>,
}

#[async_trait]
impl Store for Metered {
    async fn commit(&self, batch: Batch) -> Result<(), StoreError> {
        let rows = batch.size();
        let started = std::time::Instant::now();
        let result = self.inner.commit(batch).await;
        self.metrics.store.commit(result.is_ok(), started.elapsed().as_secs_f64(), rows);
        result
    }
    async fn commit_giving_back(&self, batch: Batch) -> (Result<(), StoreError>, Vec<TaskRecord>) {
        let rows = batch.size();
        let started = std::time::Instant::now();
        let (result, tasks) = self.inner.commit_giving_back(batch).await;
        self.metrics.store.commit(result.is_ok(), started.elapsed().as_secs_f64(), rows);
        (result, tasks)
    }
    async fn prune_step(&self, r: crate::events::EventRetention) -> Result<bool, StoreError> {
        let started = std::time::Instant::now();
        let result = self.inner.prune_step(r).await;
        self.metrics.store.commit(result.is_ok(), started.elapsed().as_secs_f64(), 1);
        result
    }
    async fn get_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.inner.get_task(id).await
    }
    async fn get_task_text(&self, id: &str) -> Result<Option<crate::store::TaskText>, StoreError> {
        self.inner.get_task_text(id).await
    }
    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list_tasks(query).await
    }
    async fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        self.inner.tasks_in_states(states).await
    }
    async fn metas_in_state(&self, state: TaskState) -> Result<Vec<crate::store::TaskMetaRow>, StoreError> {
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
    async fn journal(&self, task_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        self.inner.journal(task_id).await
    }
    fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<Arc<EventRecord>> {
        self.inner.subscribe_events()
    }
    async fn outbox_queued(&self) {
        self.inner.outbox_queued().await;
    }
    // Forwarded, not left to the default: the backend's answer spares the
    // engine the push bodies of a daemon without push configs.
    fn may_have_push_configs(&self) -> bool {
        self.inner.may_have_push_configs()
    }
    fn leases(&self) -> Option<&dyn crate::Leases> {
        self.inner.leases()
    }
}
