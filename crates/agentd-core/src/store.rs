//! The store port. Contract, which every backend must keep and the shared
//! conformance suite (`agentd_store::conformance`) checks:
//!
//! * `commit` is atomic and durable: when it returns `Ok`, every part of the
//!   batch is committed (and survives `kill -9`), or nothing is.
//! * Every task write is checked against the stored version: a record at
//!   `version` v commits only if the task is at v - 1 (v = 1: the task does
//!   not exist), and is then stored at v. Otherwise the whole batch is
//!   refused with [`StoreError::Conflict`] and nothing of it (task rows,
//!   events, outbox rows, reminders, ...) is written. Of two writers that
//!   read the same version, exactly one commits. A batch may write a task
//!   more than once (v, then v + 1); each write is checked in order. One
//!   refused batch does not fail other batches committed alongside it.
//! * Push events in a batch become one outbox row per push config that the
//!   task has *at commit time*, in the same transaction; bridge deliveries
//!   become one row each, with their target, needing no push config.
//! * Reads see every committed batch.
//! * `list_tasks` orders by status timestamp, newest first, ties broken by
//!   task id descending, so a cursor `(timestamp, id)` is stable even when
//!   many tasks share a timestamp.
//! * `reminders` lists a task's reminders in first-commit order; a
//!   recommitted reminder keeps its place.
//! * Events in a batch get the next `seq`s (strictly increasing, never
//!   reused, also after retention removed events) in the same transaction,
//!   and are announced to [`Store::subscribe_events`] receivers after the
//!   commit, in `seq` order.
//! * Journal entries are appended per task: an entry whose `(task_id, seq)`
//!   is stored already refuses the whole batch ([`StoreError::Conflict`]
//!   with `expected = seq - 1`, `found = seq`), so two runs of one task
//!   cannot both record a step. `journal` reads them in `seq` order. A
//!   batch that writes a task in a terminal state removes that task's
//!   journal (entries of the same batch included): nothing resumes it.
//!   A task's entries are committed with or after its first version (the
//!   engine commits a pending creation before the entries of its run), so
//!   a batch that creates a task and ends it has no journal to remove
//!   beyond its own entries ([`Batch::ended_with_journal`]).
//! * A store with [`Store::leases`] commits a batch only if each of its
//!   `fences` holds (the lease is the holder's at that epoch), else it
//!   refuses the whole batch with [`StoreError::Fenced`]. A store without
//!   leases (one process) ignores fences.

use crate::events::{EventLogBounds, EventRecord, EventRetention, NewEvent, WholeTask};
use crate::journal::JournalEntry;
use crate::lease::{Fence, Leases};
use crate::record::{BridgeDelivery, OutboxItem, TaskMeta, TaskRecord};
use crate::reminder::ReminderRecord;
use agentd_proto::{TaskPushNotificationConfig, TaskState};
use async_trait::async_trait;

/// Why a store call failed. Either way, a failed commit wrote nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A task in the batch is not at the version its writer read: another
    /// writer committed it since (or, for a new task, it exists already).
    /// Versions are those of [`TaskRecord::version`]; 0 means no such task.
    #[error("store conflict on task {task_id:?}: the writer read version {expected}, the store has {found}")]
    Conflict { task_id: String, expected: u64, found: u64 },
    /// The batch was written for leased work whose lease its writer no
    /// longer holds at `epoch`: another replica took the work over.
    #[error("lease {resource:?} at epoch {epoch} is no longer this replica's; the write is refused")]
    Fenced { resource: String, epoch: u64 },
    /// The backend failed: I/O, encoding, a closed or broken store.
    #[error("store: {0}")]
    Backend(String),
}

impl StoreError {
    pub fn backend(message: impl Into<String>) -> Self {
        StoreError::Backend(message.into())
    }

    /// Refuses writing `rec` when the task is at version `found` (0: absent).
    pub fn check_version(rec: &TaskRecord, found: u64) -> Result<(), StoreError> {
        let expected = rec.version.checked_sub(1).ok_or_else(|| {
            StoreError::backend(format!(
                "task {:?}: version 0 cannot be committed (a new task is 1)",
                rec.id()
            ))
        })?;
        if found == expected {
            return Ok(());
        }
        Err(StoreError::Conflict { task_id: rec.id().to_owned(), expected, found })
    }
}

/// A task's id, owner and meta, without its A2A body
/// ([`Store::metas_in_state`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TaskMetaRow {
    pub id: String,
    pub owner: String,
    pub meta: TaskMeta,
}

/// A task as stored with its Task left as the JSON text it was written as
/// ([`Store::get_task_text`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TaskText {
    pub owner: String,
    pub meta: TaskMeta,
    /// The Task in `agentd_proto::exact`'s form.
    pub task_json: String,
}

/// A push config as stored, with the principal that registered it.
#[derive(Clone, Debug, PartialEq)]
pub struct PushConfigRow {
    pub owner: String,
    pub config: TaskPushNotificationConfig,
}

/// What one commit writes, all or nothing.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Task rows to insert or replace (whole records), each at the version
    /// it is committed as (checked against the stored one).
    pub tasks: Vec<TaskRecord>,
    /// Push configs to insert or replace, keyed by `(task_id, id)`.
    pub push_upserts: Vec<PushConfigRow>,
    /// Push configs to delete: `(task_id, id)`.
    pub push_deletes: Vec<(String, String)>,
    /// Events to deliver to every push config of the task: `(task_id, body)`.
    pub push_events: Vec<(String, String)>,
    /// Bridge deliveries to enqueue as outbox rows.
    pub bridge_deliveries: Vec<BridgeDelivery>,
    /// Outbox rows delivered (or given up on): remove them.
    pub outbox_done: Vec<i64>,
    /// Outbox rows to retry: `(id, not_before_ms, attempts)`.
    pub outbox_retry: Vec<(i64, i64, u32)>,
    /// Events to append to the log, in order.
    pub events: Vec<NewEvent>,
    /// Removes the events retention no longer keeps.
    pub prune_events: Option<EventRetention>,
    /// Reminders to insert or replace, keyed by `(task_id, id)`.
    pub reminders: Vec<ReminderRecord>,
    /// Conversations closed by `conversation.close` (closing twice keeps the first).
    pub closed_contexts: Vec<ClosedContext>,
    /// Step-journal entries to append (see the contract above).
    pub journal: Vec<JournalEntry>,
    /// Leases the writer must still hold for the batch to commit.
    pub fences: Vec<Fence>,
    /// The row text of a record in `tasks`, by task id, when one of the
    /// batch's events holds it already. The store writes it instead of
    /// serializing the task again (see [`Batch::task_json_of`]).
    pub task_json: Vec<(String, WholeTask)>,
}

/// A conversation (context) that takes no more turns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosedContext {
    pub context_id: String,
    /// The principal id that closed it.
    pub closed_by: String,
    pub closed_ms: i64,
}

impl Batch {
    /// Appends `later` to this batch: committing the result writes this
    /// batch's parts, then `later`'s, in one transaction.
    pub fn absorb(&mut self, later: Batch) {
        // Destructured, so that a new part cannot be forgotten here.
        let Batch {
            tasks,
            push_upserts,
            push_deletes,
            push_events,
            bridge_deliveries,
            outbox_done,
            outbox_retry,
            closed_contexts,
            reminders,
            events,
            prune_events,
            journal,
            fences,
            task_json,
        } = later;
        self.tasks.extend(tasks);
        self.push_upserts.extend(push_upserts);
        self.push_deletes.extend(push_deletes);
        self.push_events.extend(push_events);
        self.bridge_deliveries.extend(bridge_deliveries);
        self.outbox_done.extend(outbox_done);
        self.outbox_retry.extend(outbox_retry);
        self.closed_contexts.extend(closed_contexts);
        self.reminders.extend(reminders);
        self.events.extend(events);
        self.journal.extend(journal);
        self.task_json.extend(task_json);
        for f in fences {
            if !self.fences.contains(&f) {
                self.fences.push(f);
            }
        }
        if prune_events.is_some() {
            self.prune_events = prune_events;
        }
    }

    /// The tasks this batch ends whose journal may hold entries: all of
    /// them but those it creates without an entry of its own (see the
    /// contract above). Most turns that end at once journal nothing, and
    /// their commit runs no removal.
    pub fn ended_with_journal(&self) -> impl Iterator<Item = &TaskRecord> {
        self.tasks
            .iter()
            .filter(|t| t.state().is_terminal())
            .filter(|t| t.version != 1 || self.journal.iter().any(|e| e.task_id == t.task.id))
    }

    /// The row text of `record`, one of `tasks`, if an event of the batch
    /// holds it already. Only for a task the batch writes once: with two
    /// versions of it, which text is whose would not be known.
    pub fn task_json_of(&self, record: &TaskRecord) -> Option<&str> {
        let id = record.id();
        let text = self.task_json.iter().rev().find(|(of, _)| of == id).map(|(_, whole)| whole.as_str())?;
        if self.tasks.iter().filter(|t| t.id() == id).count() != 1 {
            return None;
        }
        // Every test's commit checks the promise of the field.
        debug_assert!(
            agentd_proto::exact::to_string(&record.task).is_ok_and(|row| row == text),
            "the shared row text of task {id:?} is not its Task"
        );
        Some(text)
    }

    /// How many rows the batch writes or removes (each task, config,
    /// event, outbox row, reminder, closed context; retention counts one).
    pub fn size(&self) -> usize {
        self.tasks.len()
            + self.push_upserts.len()
            + self.push_deletes.len()
            + self.push_events.len()
            + self.bridge_deliveries.len()
            + self.outbox_done.len()
            + self.outbox_retry.len()
            + self.events.len()
            + usize::from(self.prune_events.is_some())
            + self.reminders.len()
            + self.closed_contexts.len()
            + self.journal.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
            && self.push_upserts.is_empty()
            && self.push_deletes.is_empty()
            && self.push_events.is_empty()
            && self.bridge_deliveries.is_empty()
            && self.outbox_done.is_empty()
            && self.outbox_retry.is_empty()
            && self.closed_contexts.is_empty()
            && self.reminders.is_empty()
            && self.events.is_empty()
            && self.prune_events.is_none()
            && self.journal.is_empty()
    }
}

/// A ListTasks query after validation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskQuery {
    /// Only this owner's tasks; `None` for every owner (operators).
    pub owner: Option<String>,
    pub context_id: Option<String>,
    pub state: Option<TaskState>,
    /// Only tasks whose status timestamp is >= this (ms).
    pub updated_since_ms: Option<i64>,
    /// Start strictly after this `(status timestamp ms, task id)`.
    pub after: Option<(i64, String)>,
    pub limit: usize,
    /// The page ends before a task that would take its stored JSON past
    /// this many bytes (its first task is always in it), with `more` set;
    /// 0: no bound.
    pub max_bytes: usize,
}

/// One page of a listing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskPage {
    pub tasks: Vec<TaskRecord>,
    /// Matching tasks before pagination (ignores `after` and `limit`).
    pub total: usize,
    /// Whether more tasks follow the last one returned.
    pub more: bool,
}

/// [`Store::prune_step`] from the log's bounds read before and after the
/// commit.
pub async fn prune_step_by_bounds<S: Store + ?Sized>(
    store: &S,
    r: EventRetention,
) -> Result<bool, StoreError> {
    let before = store.event_log_bounds().await?.pruned_through;
    store.commit(Batch { prune_events: Some(r), ..Batch::default() }).await?;
    let after = store.event_log_bounds().await?.pruned_through;
    Ok(after.saturating_sub(before) >= r.max_removed)
}

#[async_trait]
pub trait Store: Send + Sync + 'static {
    async fn commit(&self, batch: Batch) -> Result<(), StoreError>;
    /// [`Store::commit`], handing the batch's task records back (whether
    /// or not it committed, when the store can), so that the engine adopts
    /// them instead of committing copies. The default hands back copies
    /// made first.
    async fn commit_giving_back(&self, batch: Batch) -> (Result<(), StoreError>, Vec<TaskRecord>) {
        let tasks = batch.tasks.clone();
        (self.commit(batch).await, tasks)
    }
    /// Commits one step of event retention (a batch of `prune_events`
    /// alone): whether it removed a whole step of `r.max_removed` seqs, so
    /// that more may remain. No default, so that a wrapper forwards it:
    /// [`prune_step_by_bounds`] reads the log's bounds around the commit,
    /// where a store whose commit can tell says so without those reads.
    async fn prune_step(&self, r: EventRetention) -> Result<bool, StoreError>;
    async fn get_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError>;
    /// [`Store::get_task`] with the Task left as the JSON text it is stored
    /// as: an answer showing the task whole is that text, neither decoded
    /// nor serialized again. The default writes the record's Task.
    async fn get_task_text(&self, id: &str) -> Result<Option<TaskText>, StoreError> {
        let Some(r) = self.get_task(id).await? else { return Ok(None) };
        let task_json = agentd_proto::exact::to_string(&r.task)
            .map_err(|e| StoreError::backend(format!("encode task: {e}")))?;
        Ok(Some(TaskText { owner: r.owner, meta: r.meta, task_json }))
    }
    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError>;
    /// Tasks currently in one of `states`, in the order of their last status
    /// change (oldest first, ties by id): for recovery at start, and for the
    /// gates addressed to a principal, which are listed newest first.
    async fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError>;
    /// The id, owner and meta of each task in `state`, in the order of
    /// [`Store::tasks_in_states`]: enough to find the gates addressed to a
    /// principal without reading each waiting task whole (its history may
    /// be megabytes). The default reads them whole.
    async fn metas_in_state(&self, state: TaskState) -> Result<Vec<TaskMetaRow>, StoreError> {
        let records = self.tasks_in_states(&[state]).await?;
        Ok(records.into_iter().map(|r| TaskMetaRow { id: r.task.id, owner: r.owner, meta: r.meta }).collect())
    }
    /// The tasks of a context in creation order (oldest first, ties by id):
    /// a conversation's turns.
    async fn context_tasks(&self, context_id: &str) -> Result<Vec<TaskRecord>, StoreError>;
    /// Whether the conversation `context_id` belongs to someone other than
    /// `owner`: the owner of its first task (oldest, ties by id). Turns an
    /// operator adds to it do not make it the operator's.
    async fn context_foreign(&self, context_id: &str, owner: &str) -> Result<bool, StoreError>;
    async fn get_push_config(&self, task_id: &str, id: &str) -> Result<Option<PushConfigRow>, StoreError>;
    /// A task's push configs, oldest first.
    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError>;
    /// Up to `limit` outbox rows due at `now_ms` (not_before <= now), push
    /// and bridge rows alike, round-robin across their owners
    /// ([`OutboxItem::owner`]): every owner's oldest due row, then every
    /// owner's second, ..., rows of one rank oldest first. One owner's
    /// backlog thus takes at most its share of a batch, and each webhook's
    /// rows come in id order.
    async fn due_outbox(&self, now_ms: i64, limit: usize) -> Result<Vec<OutboxItem>, StoreError>;
    /// The earliest `not_before` of any outbox row, if any.
    async fn next_outbox_due(&self) -> Result<Option<i64>, StoreError>;
    /// Outbox rows pending, due or not (the `agentd_outbox_depth` gauge).
    async fn outbox_depth(&self) -> Result<u64, StoreError>;
    /// Every closed conversation's context id (loaded once at start).
    async fn closed_contexts(&self) -> Result<Vec<String>, StoreError>;
    /// A task's reminders in the order they were first committed; only the
    /// active ones (not ended) when `active_only`.
    async fn reminders(&self, task_id: &str, active_only: bool) -> Result<Vec<ReminderRecord>, StoreError>;
    async fn get_reminder(&self, task_id: &str, id: &str) -> Result<Option<ReminderRecord>, StoreError>;
    /// Up to `limit` events with `seq > after`, oldest first.
    async fn read_events(&self, after: u64, limit: usize) -> Result<Vec<EventRecord>, StoreError>;
    async fn event_log_bounds(&self) -> Result<EventLogBounds, StoreError>;
    /// A task's step journal in `seq` order (empty when it has none).
    async fn journal(&self, task_id: &str) -> Result<Vec<JournalEntry>, StoreError>;
    /// Every event committed from now on, in `seq` order. A receiver that
    /// falls behind the channel's capacity lags and reads the log instead.
    fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<EventRecord>>;
    /// Returns once a commit of this store queued outbox rows (push
    /// deliveries, bridge announcements) since the last return: one waiter
    /// is woken per wake-up, and a wake-up with nobody waiting is kept. A
    /// commit that queued nothing wakes nobody.
    async fn outbox_queued(&self);
    /// Whether a push config may exist. When it is false a commit's push
    /// events would queue nothing, and the engine leaves them out of the
    /// batch. A backend that cannot tell cheaply, or whose configs other
    /// processes write, says true. (No default: a wrapper that forgot to
    /// forward it would make the engine build push bodies for nothing.)
    fn may_have_push_configs(&self) -> bool;
    /// The lease operations of a store several replicas share; `None` for
    /// a store only one process uses, whose replica holds everything. (No
    /// default: a wrapper that forgot to forward it would turn leases off.)
    fn leases(&self) -> Option<&dyn Leases>;
}
