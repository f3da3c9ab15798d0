//! `SqliteStore`: the durable backend. One writer thread group-commits
//! batches (see `writer`), a checkpointer thread keeps the WAL short (see
//! `checkpoint`); reads use a pool of read-only connections on
//! tokio's blocking pool (see `read`); the schema lives in `schema`.

mod checkpoint;
mod events;
mod read;
mod schema;
mod writer;

use crate::event_log::Announcer;
use agentd_core::{
    Batch, EventLogBounds, EventRecord, EventRetention, JournalEntry, OutboxItem, PushConfigRow,
    ReminderRecord, Store, StoreError, TaskPage, TaskQuery, TaskRecord,
};
use agentd_proto::TaskState;
use async_trait::async_trait;
use read::ReadPool;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use tokio::sync::oneshot;
use writer::{Job, PushConfigsSeen};

/// How the database is opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteOptions {
    /// `PRAGMA synchronous=FULL` (true, the default) or `NORMAL` (false).
    /// WAL survives a process kill either way; FULL also survives power loss.
    pub synchronous_full: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self { synchronous_full: true }
    }
}

/// A store in one SQLite file (WAL mode). Dropping it stops the writer
/// thread after the batches already queued are written.
pub struct SqliteStore {
    jobs: Option<Sender<Job>>,
    writer: Option<JoinHandle<()>>,
    reads: Arc<ReadPool>,
    announcer: Announcer,
    push_configs: PushConfigsSeen,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Queues `batch` for the writer and waits for its answer. Refused, the
    /// batch comes back when the writer never took it.
    async fn send(&self, batch: Batch) -> Result<writer::Done, (StoreError, Option<Batch>)> {
        let (reply, outcome) = oneshot::channel();
        let Some(jobs) = self.jobs.as_ref() else {
            return Err((StoreError::backend("store is closed"), Some(batch)));
        };
        if let Err(refused) = jobs.send(Job { batch, reply }) {
            return Err((StoreError::backend("store writer stopped"), Some(refused.0.batch)));
        }
        outcome.await.map_err(|_| (StoreError::backend("store writer stopped before answering"), None))
    }

    /// Opens (creating if needed) the database at `path` and runs pending
    /// migrations. Blocking; call it at start-up or via `spawn_blocking`.
    pub fn open(path: &Path, options: SqliteOptions) -> Result<SqliteStore, StoreError> {
        let conn = schema::open_writer(path, options.synchronous_full)?;
        let announcer = Announcer::default();
        let push_configs = PushConfigsSeen::look_up(&conn)?;
        let checkpoints = checkpoint::Checkpoints::new(&conn, path, options.synchronous_full);
        let (jobs, writer) = writer::spawn(conn, announcer.clone(), push_configs.clone(), checkpoints)?;
        Ok(SqliteStore {
            jobs: Some(jobs),
            writer: Some(writer),
            reads: ReadPool::new(path.into()),
            announcer,
            push_configs,
        })
    }

    /// The number of migrations applied to the database.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        self.reads.run(|conn| schema::version(conn)).await
    }

    /// The number of migrations this build knows.
    pub fn latest_schema_version() -> i64 {
        schema::MIGRATIONS.len() as i64
    }

    /// The SQL of every migration, in order (upgrade tests build old files with it).
    pub fn migrations() -> &'static [&'static str] {
        schema::MIGRATIONS
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // Closing the channel lets the writer finish the queue and exit.
        self.jobs.take();
        if let Some(handle) = self.writer.take()
            && handle.join().is_err()
        {
            tracing::error!("store writer thread panicked");
        }
    }
}

#[async_trait]
impl Store for SqliteStore {
    async fn commit(&self, batch: Batch) -> Result<(), StoreError> {
        self.commit_giving_back(batch).await.0
    }

    /// The writer says whether the step was whole: no read, so no reader
    /// connection or blocking thread for retention alone.
    async fn prune_step(&self, r: EventRetention) -> Result<bool, StoreError> {
        let done =
            self.send(Batch { prune_events: Some(r), ..Batch::default() }).await.map_err(|(e, _)| e)?;
        done.outcome.map(|()| done.more_to_prune)
    }

    // The span (and the line after the writer answered) run in the
    // caller's task, so they carry the caller's spans: a request's id.
    #[tracing::instrument(name = "store.commit", level = "debug", skip_all, fields(size = batch.size(), tasks = batch.tasks.len()))]
    async fn commit_giving_back(&self, batch: Batch) -> (Result<(), StoreError>, Vec<TaskRecord>) {
        if !batch.push_upserts.is_empty() {
            // Said before the batch is queued, so that a change checking
            // for configs after this point fans out to this one. (A change
            // that checked just before and is queued just after is
            // concurrent with the config's creation: it may go either way.)
            self.push_configs.saw_one();
        }
        let done = match self.send(batch).await {
            Ok(done) => done,
            Err((e, batch)) => return (Err(e), batch.map(|b| b.tasks).unwrap_or_default()),
        };
        match &done.outcome {
            Ok(()) => tracing::debug!("committed"),
            Err(e) => tracing::debug!(error = %e, "refused"),
        }
        (done.outcome, done.batch.tasks)
    }

    async fn get_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let id = id.to_owned();
        self.reads.run_point(move |conn, max_bytes| read::get_task(conn, &id, max_bytes)).await
    }

    async fn get_task_text(&self, id: &str) -> Result<Option<agentd_core::TaskText>, StoreError> {
        let id = id.to_owned();
        self.reads.run_point(move |conn, max_bytes| read::get_task_text(conn, &id, max_bytes)).await
    }

    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let query = query.clone();
        self.reads.run(move |conn| read::list_tasks(conn, &query)).await
    }

    async fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        let states = states.to_vec();
        self.reads.run(move |conn| read::tasks_in_states(conn, &states)).await
    }

    async fn metas_in_state(&self, state: TaskState) -> Result<Vec<agentd_core::TaskMetaRow>, StoreError> {
        self.reads.run(move |conn| read::metas_in_state(conn, state)).await
    }

    async fn context_tasks(&self, context_id: &str) -> Result<Vec<TaskRecord>, StoreError> {
        let context_id = context_id.to_owned();
        self.reads.run(move |conn| read::context_tasks(conn, &context_id)).await
    }

    async fn context_foreign(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        let (context_id, owner) = (context_id.to_owned(), owner.to_owned());
        self.reads.run(move |conn| read::context_foreign(conn, &context_id, &owner)).await
    }

    async fn get_push_config(&self, task_id: &str, id: &str) -> Result<Option<PushConfigRow>, StoreError> {
        let (task_id, id) = (task_id.to_owned(), id.to_owned());
        self.reads.run(move |conn| read::get_push_config(conn, &task_id, &id)).await
    }

    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        let task_id = task_id.to_owned();
        self.reads.run(move |conn| read::list_push_configs(conn, &task_id)).await
    }

    async fn due_outbox(&self, now_ms: i64, limit: usize) -> Result<Vec<OutboxItem>, StoreError> {
        self.reads.run(move |conn| read::due_outbox(conn, now_ms, limit)).await
    }

    async fn outbox_depth(&self) -> Result<u64, StoreError> {
        self.reads.run(read::outbox_depth).await
    }

    async fn next_outbox_due(&self) -> Result<Option<i64>, StoreError> {
        self.reads.run(read::next_outbox_due).await
    }

    async fn closed_contexts(&self) -> Result<Vec<String>, StoreError> {
        self.reads.run(read::closed_contexts).await
    }

    async fn reminders(&self, task_id: &str, active_only: bool) -> Result<Vec<ReminderRecord>, StoreError> {
        let task_id = task_id.to_owned();
        self.reads.run(move |conn| read::reminders(conn, &task_id, active_only)).await
    }

    async fn get_reminder(&self, task_id: &str, id: &str) -> Result<Option<ReminderRecord>, StoreError> {
        let (task_id, id) = (task_id.to_owned(), id.to_owned());
        self.reads.run(move |conn| read::get_reminder(conn, &task_id, &id)).await
    }

    async fn read_events(&self, after: u64, limit: usize) -> Result<Vec<EventRecord>, StoreError> {
        self.reads.run(move |conn| events::read(conn, after, limit)).await
    }

    async fn event_log_bounds(&self) -> Result<EventLogBounds, StoreError> {
        self.reads.run(events::bounds).await
    }

    async fn journal(&self, task_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let task_id = task_id.to_owned();
        self.reads.run(move |conn| read::journal(conn, &task_id)).await
    }

    fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<EventRecord>> {
        self.announcer.subscribe()
    }

    async fn outbox_queued(&self) {
        self.announcer.outbox_wait().await;
    }

    fn may_have_push_configs(&self) -> bool {
        self.push_configs.may_exist()
    }

    /// One process uses it: its replica holds everything.
    fn leases(&self) -> Option<&dyn agentd_core::Leases> {
        None
    }
}
