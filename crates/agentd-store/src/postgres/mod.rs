//! `PostgresStore`: the store on a PostgreSQL server, for a daemon whose
//! state lives in a database that outlives its host (`docs/scaling.md`).
//!
//! tokio-postgres with deadpool-postgres's pool: plain async SQL with the
//! statements prepared once per connection, and migrations that are a list
//! of SQL strings like SQLite's (sqlx's migrator and compile-time checked
//! queries would bring a second SQL toolkit beside rusqlite for little).
//! Commits are grouped by one writer task (`group`) that writes a group's
//! batches as one pipeline of statements (`write`, `statements`,
//! `pipeline`); reads are in `read`, the schema in `schema`, the ordered
//! announcement of committed events in `feed`, the leases of replicas
//! sharing the database in `leases`.

mod feed;
mod group;
mod leases;
mod pipeline;
mod read;
mod schema;
mod statements;
mod write;

use crate::event_log::Announcer;
use agentd_core::{
    Batch, EventLogBounds, EventRecord, OutboxItem, PushConfigRow, ReminderRecord, Store, StoreError,
    TaskPage, TaskQuery, TaskRecord,
};
use agentd_proto::TaskState;
use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_postgres::NoTls;

/// The channel committed events are notified on.
pub(crate) const EVENTS_CHANNEL: &str = "agentd_events";

/// The channel a commit that queued outbox rows notifies, whatever events
/// it carries (an artifact-only change, a gate's escalation carry none):
/// the replica delivering the outbox looks.
pub(crate) const OUTBOX_CHANNEL: &str = "agentd_outbox";

/// The channel a commit notifies with a task's id when it changed the task
/// without a `task` event (a streamed reply's flush): replicas that stream
/// the task read it again.
pub(crate) const TASKS_CHANNEL: &str = "agentd_tasks";

/// Task ids notified on `agentd_tasks` buffered per subscriber; one that
/// lags reads every task it follows again.
const TASK_WRITES_CAPACITY: usize = 1024;

/// Connections the pool holds at most.
const POOL_SIZE: usize = 16;

/// How long connecting may take when the URL does not say
/// (`connect_timeout`): an unreachable host fails instead of hanging.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a call waits for a pooled connection when all are busy.
const POOL_WAIT: Duration = Duration::from_secs(30);

/// Maps a driver error to a `StoreError` with some context.
pub(crate) fn db(context: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| StoreError::backend(format!("{context}: {}", with_causes(&e)))
}

fn pool_error(e: deadpool_postgres::PoolError) -> StoreError {
    StoreError::backend(format!("no database connection: {}", with_causes(&e)))
}

/// An error and its causes: tokio-postgres words the kind of failure
/// ("error connecting to server") and keeps why (refused, a wrong
/// password) as its source, which `Display` leaves out.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let why = c.to_string();
        if !text.contains(&why) {
            text.push_str(": ");
            text.push_str(&why);
        }
        cause = c.source();
    }
    text
}

/// Where the database is and how to log in.
#[derive(Clone)]
pub struct PostgresOptions {
    /// A `postgres://user@host:port/dbname` URL (or a `key=value` string);
    /// a password in it is refused: give it in `password`.
    pub url: String,
    /// The password, already resolved from its reference.
    pub password: Option<String>,
}

impl std::fmt::Debug for PostgresOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresOptions")
            .field("url", &self.url)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl PostgresOptions {
    /// The driver's configuration; refuses a password written in the URL,
    /// which would end up in configuration files and logs.
    pub fn config(&self) -> Result<tokio_postgres::Config, StoreError> {
        let mut config = tokio_postgres::Config::from_str(&self.url)
            .map_err(|e| StoreError::backend(format!("not a PostgreSQL URL: {e}")))?;
        if config.get_password().is_some() {
            return Err(StoreError::backend(
                "the URL holds a password; give it by reference instead (store.password: env:NAME or file:/path)",
            ));
        }
        if let Some(password) = &self.password {
            config.password(password);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("agentd");
        Ok(config)
    }
}

/// A store in a PostgreSQL database. Dropping it stops its writer and feed tasks.
pub struct PostgresStore {
    pool: Pool,
    wakes: mpsc::UnboundedSender<feed::Wake>,
    announcer: Announcer,
    task_writes: broadcast::Sender<Arc<str>>,
    jobs: mpsc::UnboundedSender<group::Job>,
    tasks: [AbortHandle; 3],
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects, runs pending migrations and starts following the event
    /// log from its current end. Must be called within a tokio runtime,
    /// which runs the store's feed tasks until the store is dropped.
    pub async fn open(options: &PostgresOptions) -> Result<PostgresStore, StoreError> {
        let config = options.config()?;
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(POOL_WAIT))
            .build()
            .map_err(|e| StoreError::backend(format!("connection pool: {e}")))?;
        let mut client = pool.get().await.map_err(pool_error)?;
        schema::migrate(&mut client).await?;
        let start = read::event_log_bounds(&client).await?.last;
        // Names this instance in the outbox notifications it sends, so its
        // listener skips its own: its commits wake its worker directly.
        let instance: Arc<str> = client
            .query_one("SELECT md5(random()::TEXT || clock_timestamp()::TEXT || pg_backend_pid()::TEXT)", &[])
            .await
            .map_err(db("instance id"))?
            .get::<_, String>(0)
            .into();
        drop(client);
        let announcer = Announcer::default();
        let task_writes = broadcast::channel(TASK_WRITES_CAPACITY).0;
        let (wakes, woken) = mpsc::unbounded_channel();
        let in_flight = feed::InFlight::default();
        let follower = feed::Follower {
            pool: pool.clone(),
            announcer: announcer.clone(),
            next: start + 1,
            committed_through: start,
            pending: BTreeMap::new(),
            acks: Vec::new(),
            in_flight: in_flight.clone(),
        };
        let writer =
            group::Writer { pool: pool.clone(), in_flight, wakes: wakes.clone(), instance: instance.clone() };
        let (jobs, queued) = mpsc::unbounded_channel();
        // The store's own tasks, not the engine's: the store is made before
        // the engine and outlives it; they end when the store is dropped.
        let (listening, listened) = oneshot::channel();
        #[allow(clippy::disallowed_methods, reason = "ended by the store's Drop")]
        let tasks = [
            tokio::spawn(follower.run(woken)).abort_handle(),
            tokio::spawn(feed::listen(config, wakes.clone(), task_writes.clone(), instance, listening))
                .abort_handle(),
            tokio::spawn(writer.run(queued)).abort_handle(),
        ];
        // Open returns listening: a commit of another process after it is
        // heard. If the first attempt failed, the listener retries and
        // rescans when it connects.
        let _ = listened.await;
        Ok(PostgresStore { pool, wakes, announcer, task_writes, jobs, tasks })
    }

    /// The number of migrations applied to the database.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        schema::version(&self.client().await?).await
    }

    /// The number of migrations this build knows.
    pub fn latest_schema_version() -> i64 {
        schema::MIGRATIONS.len() as i64
    }

    /// The SQL of every migration, in order (upgrade tests build old databases with it).
    pub fn migrations() -> &'static [&'static str] {
        schema::MIGRATIONS
    }

    async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

#[async_trait]
impl Store for PostgresStore {
    #[tracing::instrument(name = "store.commit", level = "debug", skip_all, fields(size = batch.size(), tasks = batch.tasks.len()))]
    async fn commit(&self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let (reply, outcome) = oneshot::channel();
        self.jobs
            .send(group::Job { batch, reply })
            .map_err(|_| StoreError::backend("store writer stopped"))?;
        let committed = outcome
            .await
            .unwrap_or_else(|_| Err(StoreError::backend("store writer stopped before answering")));
        let write::Written { events, queued_outbox } = match committed {
            Ok(written) => written,
            Err(e) => {
                tracing::debug!(error = %e, "refused");
                return Err(e);
            }
        };
        tracing::debug!("committed");
        if !events.is_empty() {
            // Answered once announced, as SQLite does: a subscriber sees the
            // events of every commit that returned.
            let (done, announced) = oneshot::channel();
            if self.wakes.send(feed::Wake::Committed(events, done)).is_ok() {
                let _ = announced.await;
            }
        }
        if queued_outbox {
            // The worker looks only after a commit queued rows: a push
            // event of a task without push configs queues none.
            self.announcer.outbox_queued();
        }
        Ok(())
    }

    async fn get_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        read::get_task(&self.client().await?, id).await
    }

    async fn get_task_text(&self, id: &str) -> Result<Option<agentd_core::TaskText>, StoreError> {
        read::get_task_text(&self.client().await?, id).await
    }

    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        read::list_tasks(&mut self.client().await?, query).await
    }

    async fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        read::tasks_in_states(&self.client().await?, states).await
    }

    async fn metas_in_state(&self, state: TaskState) -> Result<Vec<agentd_core::TaskMetaRow>, StoreError> {
        read::metas_in_state(&self.client().await?, state).await
    }

    async fn context_tasks(&self, context_id: &str) -> Result<Vec<TaskRecord>, StoreError> {
        read::context_tasks(&self.client().await?, context_id).await
    }

    async fn context_foreign(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        read::context_foreign(&self.client().await?, context_id, owner).await
    }

    async fn get_push_config(&self, task_id: &str, id: &str) -> Result<Option<PushConfigRow>, StoreError> {
        read::get_push_config(&self.client().await?, task_id, id).await
    }

    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        read::list_push_configs(&self.client().await?, task_id).await
    }

    async fn due_outbox(&self, now_ms: i64, limit: usize) -> Result<Vec<OutboxItem>, StoreError> {
        read::due_outbox(&self.client().await?, now_ms, limit).await
    }

    async fn outbox_depth(&self) -> Result<u64, StoreError> {
        read::outbox_depth(&self.client().await?).await
    }

    async fn next_outbox_due(&self) -> Result<Option<i64>, StoreError> {
        read::next_outbox_due(&self.client().await?).await
    }

    async fn closed_contexts(&self) -> Result<Vec<String>, StoreError> {
        read::closed_contexts(&self.client().await?).await
    }

    async fn reminders(&self, task_id: &str, active_only: bool) -> Result<Vec<ReminderRecord>, StoreError> {
        read::reminders(&self.client().await?, task_id, active_only).await
    }

    async fn get_reminder(&self, task_id: &str, id: &str) -> Result<Option<ReminderRecord>, StoreError> {
        read::get_reminder(&self.client().await?, task_id, id).await
    }

    async fn journal(&self, task_id: &str) -> Result<Vec<agentd_core::JournalEntry>, StoreError> {
        read::journal(&self.client().await?, task_id).await
    }

    async fn read_events(&self, after: u64, limit: usize) -> Result<Vec<EventRecord>, StoreError> {
        read::events(&self.client().await?, after, limit).await
    }

    async fn event_log_bounds(&self) -> Result<EventLogBounds, StoreError> {
        read::event_log_bounds(&self.client().await?).await
    }
    async fn prune_step(&self, r: agentd_core::EventRetention) -> Result<bool, StoreError> {
        agentd_core::prune_step_by_bounds(self, r).await
    }

    fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<EventRecord>> {
        self.announcer.subscribe()
    }

    async fn outbox_queued(&self) {
        self.announcer.outbox_wait().await;
    }

    /// Other replicas write configs: always true.
    fn may_have_push_configs(&self) -> bool {
        true
    }

    fn leases(&self) -> Option<&dyn agentd_core::Leases> {
        Some(self)
    }
}
