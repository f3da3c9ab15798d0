//! The group-commit writer: one OS thread owns the read-write connection,
//! drains every queued batch, applies them in one transaction and acks each
//! caller only after COMMIT returned. A batch that fails (a stale task
//! version, a bad row) fails its group's transaction, and each batch of the
//! group is then retried in a transaction of its own, so the failing one is
//! refused alone and the others commit. (Not a savepoint per batch: SQLite
//! copies every page a savepoint touches into a sub-journal first, which
//! cost the common case, where nothing fails, a sixth of its throughput.)

use super::checkpoint::Checkpoints;
use crate::codec::{encode_config, encode_entry, encode_reminder, encode_task, err, journal_conflict};
use crate::event_log::Announcer;
use agentd_core::{Batch, StoreError, TaskRecord};
use agentd_proto::Timestamp;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;
use tokio::sync::oneshot;

/// The most batches committed in one transaction.
const MAX_GROUP: usize = 256;

/// One queued commit and where to send its outcome.
pub(crate) struct Job {
    pub batch: Batch,
    pub reply: oneshot::Sender<Done>,
}

/// A job's outcome, with its batch handed back: the caller's thread, which
/// allocated the batch, frees it. Freed here, each free of another thread's
/// allocation took that thread's malloc arena lock, and the writer and the
/// runtime's workers woke each other contending for it (a tenth of the
/// daemon's CPU under SendMessage load went to those frees and wake-ups).
pub(crate) struct Done {
    pub outcome: Result<(), StoreError>,
    pub batch: Batch,
    /// Its event retention removed a whole step: more may remain.
    pub more_to_prune: bool,
}

impl Job {
    fn answer(self, outcome: Result<(), StoreError>, more_to_prune: bool) {
        // The caller may have stopped waiting; the write stands.
        let _ = self.reply.send(Done { outcome, batch: self.batch, more_to_prune });
    }
}

/// Whether the database may hold a push config: looked up when the store
/// opens, set when a batch writing one is queued, never cleared (a deleted
/// config, or a refused batch, leaves it set, which only costs the
/// statements it saves). Until
/// one exists a commit's push events need no fan-out statement, and the
/// engine leaves them out: most tasks have no push config.
#[derive(Clone, Debug)]
pub(crate) struct PushConfigsSeen(Arc<AtomicBool>);

impl PushConfigsSeen {
    pub(crate) fn look_up(conn: &Connection) -> Result<Self, StoreError> {
        let any: bool = conn
            .query_row("SELECT EXISTS (SELECT 1 FROM push_configs)", [], |row| row.get(0))
            .map_err(err("look for push configs"))?;
        Ok(Self(Arc::new(AtomicBool::new(any))))
    }
    pub(crate) fn saw_one(&self) {
        self.0.store(true, Ordering::Release);
    }
    pub(crate) fn may_exist(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// What the writer thread shares with the store.
struct Shared {
    announcer: Announcer,
    push_configs: PushConfigsSeen,
}

/// Starts the writer thread; it ends when every sender is dropped.
pub(crate) fn spawn(
    conn: Connection,
    announcer: Announcer,
    push_configs: PushConfigsSeen,
    checkpoints: Checkpoints,
) -> Result<(Sender<Job>, JoinHandle<()>), StoreError> {
    let (tx, rx) = channel();
    let last_seq = super::events::last_seq(&conn)?;
    let shared = Shared { announcer, push_configs };
    let handle = std::thread::Builder::new()
        .name("agentd-store-writer".into())
        .spawn(move || run(conn, rx, &shared, checkpoints, last_seq))
        .map_err(err("spawn writer thread"))?;
    Ok((tx, handle))
}

/// `last_seq`: the highest event seq assigned (this thread assigns them).
fn run(
    mut conn: Connection,
    rx: Receiver<Job>,
    shared: &Shared,
    mut checkpoints: Checkpoints,
    mut last_seq: u64,
) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        write_group(&mut conn, jobs, shared, &mut last_seq);
        checkpoints.after_commit(&conn);
    }
}

/// Commits a group; the events of what committed are announced after the
/// COMMIT and before the callers are answered, in seq order (this one
/// thread assigns every seq).
fn write_group(conn: &mut Connection, jobs: Vec<Job>, shared: &Shared, last_seq: &mut u64) {
    let announcer = &shared.announcer;
    let seen = &shared.push_configs;
    match apply_in_tx(conn, jobs.iter().map(|j| &j.batch), seen, last_seq) {
        Ok(applied) => {
            if applied.iter().any(|a| a.queued_outbox) {
                announcer.outbox_queued();
            }
            for (mut job, a) in jobs.into_iter().zip(applied) {
                announce(announcer, &mut job.batch, a.first_seq);
                job.answer(Ok(()), a.more_to_prune);
            }
        }
        Err(e) if jobs.len() == 1 => {
            if let Some(job) = jobs.into_iter().next() {
                job.answer(Err(e), false);
            }
        }
        Err(e) => {
            tracing::debug!(error = %e, batches = jobs.len(), "group commit failed; retrying one by one");
            for mut job in jobs {
                let mut more_to_prune = false;
                let outcome = apply_in_tx(conn, std::iter::once(&job.batch), seen, last_seq).map(|one| {
                    for a in one {
                        if a.queued_outbox {
                            announcer.outbox_queued();
                        }
                        announce(announcer, &mut job.batch, a.first_seq);
                        more_to_prune |= a.more_to_prune;
                    }
                });
                job.answer(outcome, more_to_prune);
            }
        }
    }
}

/// Announces a committed batch's events, moved out of it, when a live feed
/// follows the log: with none, they are not copied for nobody. (A feed
/// that subscribes after this check reads the log's bounds after this
/// commit, so it starts past these events.)
fn announce(announcer: &Announcer, batch: &mut Batch, first_seq: Option<u64>) {
    if announcer.followed() {
        announcer.announce(super::events::committed(std::mem::take(&mut batch.events), first_seq));
    }
}

/// What one batch wrote that is announced once committed.
struct Applied {
    /// The seq of its first event, if it appended any.
    first_seq: Option<u64>,
    /// Whether it queued outbox rows (for the delivery worker).
    queued_outbox: bool,
    /// Whether its event retention removed a whole step.
    more_to_prune: bool,
}

/// Applies `batches` in order in one IMMEDIATE transaction and commits.
/// Returns what each batch wrote. On any error nothing is written.
/// `last_seq`, the highest event seq committed, is moved on by a commit
/// and read again from the log after a failure.
fn apply_in_tx<'a>(
    conn: &mut Connection,
    batches: impl Iterator<Item = &'a Batch>,
    push_configs: &PushConfigsSeen,
    last_seq: &mut u64,
) -> Result<Vec<Applied>, StoreError> {
    let mut last = *last_seq;
    let applied = commit_all(conn, batches, push_configs, &mut last);
    *last_seq = match applied {
        Ok(_) => last,
        // A refused batch (a stale version) left the log as it was; a
        // COMMIT that failed may still have reached the disk, so the log
        // says where it ends.
        Err(_) => super::events::last_seq(conn).unwrap_or(*last_seq),
    };
    applied
}

fn commit_all<'a>(
    conn: &mut Connection,
    batches: impl Iterator<Item = &'a Batch>,
    push_configs: &PushConfigsSeen,
    last: &mut u64,
) -> Result<Vec<Applied>, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(err("begin"))?;
    let mut appended = Vec::new();
    for batch in batches {
        appended.push(apply(&tx, batch, push_configs, last)?);
    }
    tx.commit().map_err(err("commit"))?;
    Ok(appended)
}

/// A task's first version: a row that exists already is a conflict.
const INSERT_TASK: &str = "INSERT INTO tasks
    (id, context_id, owner, state, updated_ms, created_ms, task_json, status_history_json, meta_json, version)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
    ON CONFLICT (id) DO NOTHING";

/// A later version: only over the version before it.
const UPDATE_TASK: &str = "UPDATE tasks SET context_id = ?2, owner = ?3, state = ?4, updated_ms = ?5,
        created_ms = ?6, task_json = ?7, status_history_json = ?8, meta_json = ?9, version = ?10
    WHERE id = ?1 AND version = ?10 - 1";

const UPSERT_PUSH: &str = "INSERT INTO push_configs (task_id, id, owner, config_json, created_seq)
    VALUES (?1, ?2, ?3, ?4,
        (SELECT COALESCE(MAX(created_seq), 0) + 1 FROM push_configs WHERE task_id = ?1))
    ON CONFLICT (task_id, id) DO UPDATE SET owner = excluded.owner,
        config_json = excluded.config_json";

const FAN_OUT: &str = "INSERT INTO outbox (task_id, config_id, body, attempts, not_before_ms)
    SELECT task_id, id, ?2, 0, ?3 FROM push_configs WHERE task_id = ?1 ORDER BY created_seq";

const ENQUEUE_BRIDGE: &str = "INSERT INTO outbox (task_id, bridge_json, body, attempts, not_before_ms)
    VALUES (?1, ?2, ?3, 0, ?4)";

const UPSERT_REMINDER: &str = "INSERT INTO reminders (task_id, id, active, seq, reminder_json)
    VALUES (?1, ?2, ?3, (SELECT COALESCE(MAX(seq), 0) + 1 FROM reminders WHERE task_id = ?1), ?4)
    ON CONFLICT (task_id, id) DO UPDATE SET active = excluded.active,
        reminder_json = excluded.reminder_json";

/// The stored version of a task (0: no such task).
fn stored_version(tx: &Connection, id: &str) -> Result<u64, StoreError> {
    let found: Option<i64> = tx
        .prepare_cached("SELECT version FROM tasks WHERE id = ?1")
        .and_then(|mut s| s.query_row(params![id], |row| row.get(0)).optional())
        .map_err(err("read task version"))?;
    found.map_or(Ok(0), |v| u64::try_from(v).map_err(err("read task version")))
}

/// Writes one task if it is at the version before the record's (the
/// statement's guard; the stored version is read only to explain a refusal).
/// `task_json`: its Task's text when an event of the batch holds it already.
/// The JSON is dropped once bound, before the insert
/// runs: SQLite copied it when binding (rusqlite binds text as transient)
/// and builds its row from that copy, so keeping ours would hold a third
/// copy of a task that carries a big message.
fn write_task(tx: &Connection, record: &TaskRecord, task_json: Option<&str>) -> Result<(), StoreError> {
    if record.version == 0 {
        // Refused with its explanation before anything is bound.
        StoreError::check_version(record, u64::MAX)?;
    }
    let t = encode_task(record, task_json)?;
    let sql = if record.version == 1 { INSERT_TASK } else { UPDATE_TASK };
    let mut s = tx.prepare_cached(sql).map_err(err("write task"))?;
    let bind = |s: &mut rusqlite::CachedStatement<'_>, i, v: &dyn rusqlite::ToSql| {
        s.raw_bind_parameter(i, v).map_err(err("write task"))
    };
    bind(&mut s, 1, &t.id)?;
    bind(&mut s, 2, &t.context_id)?;
    bind(&mut s, 3, &t.owner)?;
    bind(&mut s, 4, &t.state)?;
    bind(&mut s, 5, &t.updated_ms)?;
    bind(&mut s, 6, &t.created_ms)?;
    bind(&mut s, 7, &t.task_json.as_ref())?;
    bind(&mut s, 8, &t.status_history_json)?;
    bind(&mut s, 9, &t.meta_json)?;
    bind(&mut s, 10, &t.version)?;
    drop(t);
    match s.raw_execute().map_err(err("write task"))? {
        0 => {
            let found = stored_version(tx, record.id())?;
            StoreError::check_version(record, found)?;
            Err(StoreError::backend(format!("task {:?}: the write changed no row", record.id())))
        }
        _ => Ok(()),
    }
}

/// Writes one batch inside `tx`, in the order: tasks, push upserts, push
/// deletes (their outbox rows go by cascade), push events, bridge
/// deliveries, outbox done, outbox retry, closed conversations, reminders,
/// journal entries, the journals of tasks that ended, events, pruning. Returns what is announced once
/// committed.
fn apply(
    tx: &Connection,
    batch: &Batch,
    push_configs: &PushConfigsSeen,
    last_seq: &mut u64,
) -> Result<Applied, StoreError> {
    for record in &batch.tasks {
        write_task(tx, record, batch.task_json_of(record))?;
    }
    for row in &batch.push_upserts {
        let json = encode_config(&row.config)?;
        let c = &row.config;
        tx.prepare_cached(UPSERT_PUSH)
            .and_then(|mut s| s.execute(params![c.task_id, c.id, row.owner, json]))
            .map_err(err("write push config"))?;
    }
    for (task_id, id) in &batch.push_deletes {
        tx.prepare_cached("DELETE FROM push_configs WHERE task_id = ?1 AND id = ?2")
            .and_then(|mut s| s.execute(params![task_id, id]))
            .map_err(err("delete push config"))?;
    }
    let now = Timestamp::now().millis();
    let mut queued = 0;
    let push_events = if push_configs.may_exist() { &batch.push_events[..] } else { &[] };
    for (task_id, body) in push_events {
        queued += tx
            .prepare_cached(FAN_OUT)
            .and_then(|mut s| s.execute(params![task_id, body, now]))
            .map_err(err("fan out push event"))?;
    }
    queued += batch.bridge_deliveries.len();
    for d in &batch.bridge_deliveries {
        let target = serde_json::to_string(&d.target).map_err(err("encode bridge target"))?;
        tx.prepare_cached(ENQUEUE_BRIDGE)
            .and_then(|mut s| s.execute(params![d.task_id, target, d.body, now]))
            .map_err(err("enqueue bridge delivery"))?;
    }
    for id in &batch.outbox_done {
        tx.prepare_cached("DELETE FROM outbox WHERE id = ?1")
            .and_then(|mut s| s.execute(params![id]))
            .map_err(err("remove outbox row"))?;
    }
    for (id, not_before_ms, attempts) in &batch.outbox_retry {
        tx.prepare_cached("UPDATE outbox SET not_before_ms = ?2, attempts = ?3 WHERE id = ?1")
            .and_then(|mut s| s.execute(params![id, not_before_ms, attempts]))
            .map_err(err("reschedule outbox row"))?;
    }
    for c in &batch.closed_contexts {
        tx.prepare_cached(
            "INSERT OR IGNORE INTO closed_contexts (context_id, closed_by, closed_ms) VALUES (?1, ?2, ?3)",
        )
        .and_then(|mut s| s.execute(params![c.context_id, c.closed_by, c.closed_ms]))
        .map_err(err("close conversation"))?;
    }
    for r in &batch.reminders {
        let json = encode_reminder(r)?;
        tx.prepare_cached(UPSERT_REMINDER)
            .and_then(|mut s| s.execute(params![r.task_id, r.id, r.is_active(), json]))
            .map_err(err("write reminder"))?;
    }
    for e in &batch.journal {
        let ((task_id, seq), body) = encode_entry(e)?;
        let added = tx
            .prepare_cached(
                "INSERT INTO journal (task_id, seq, body) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            )
            .and_then(|mut s| s.execute(params![task_id, seq, body]))
            .map_err(err("write journal entry"))?;
        if added == 0 {
            return Err(journal_conflict(e));
        }
    }
    // A task that ended never resumes: its journal goes with the commit
    // that ended it.
    for record in batch.ended_with_journal() {
        tx.prepare_cached("DELETE FROM journal WHERE task_id = ?1")
            .and_then(|mut s| s.execute(params![record.task.id]))
            .map_err(err("remove journal"))?;
    }
    let first_seq = super::events::append(tx, &batch.events, last_seq)?;
    let more_to_prune = match batch.prune_events {
        Some(r) => super::events::prune(tx, r)?,
        None => false,
    };
    Ok(Applied { first_seq, queued_outbox: queued > 0, more_to_prune })
}
