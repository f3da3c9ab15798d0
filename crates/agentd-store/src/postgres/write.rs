//! Writing a group's batches inside one transaction, pipelined: every
//! fence check of the group, then every write of it (`statements`), is
//! sent before the first answer is read (`pipeline`), so a group costs two
//! round trips besides BEGIN and COMMIT, not one per statement. The
//! answers are then checked in order: the first that refuses a batch (or
//! the first error, which aborted the transaction) fails the group, and
//! the group writer writes its batches one by one (`group.rs`). The task version guards are
//! the SQLite writer's: `INSERT … ON CONFLICT DO NOTHING` for a first
//! version, `UPDATE … WHERE version = v - 1` after. Under READ COMMITTED a
//! second writer of the same row (another process) waits for the first to
//! commit and then finds the guard false: a conflict.

use super::pipeline::{self, Pending};
use super::statements::{Check, Encoded, Statement};
use super::{OUTBOX_CHANNEL, db};
use crate::codec::journal_conflict;
use agentd_core::{Batch, EventLogBounds, EventRecord, EventRetention, NewEvent, StoreError, TaskRecord};
use deadpool_postgres::Transaction;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

/// Why a batch was not written: refused (a conflict, a bad record), or a
/// database error, which may be worth retrying (a deadlock).
pub(crate) enum WriteError {
    Refused(StoreError),
    Db(&'static str, tokio_postgres::Error),
}

impl From<StoreError> for WriteError {
    fn from(e: StoreError) -> Self {
        WriteError::Refused(e)
    }
}

impl WriteError {
    /// A deadlock between two batches writing the same tasks in another
    /// order: PostgreSQL aborted this one; it may simply run again.
    pub(crate) fn retryable(&self) -> bool {
        matches!(self, WriteError::Db(_, e) if e.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED))
    }

    pub(crate) fn into_store_error(self) -> StoreError {
        match self {
            WriteError::Refused(e) => e,
            WriteError::Db(context, e) => db(context)(e),
        }
    }
}

fn pg(context: &'static str) -> impl Fn(tokio_postgres::Error) -> WriteError {
    move |e| WriteError::Db(context, e)
}

pub(super) const INSERT_TASK: &str = "INSERT INTO tasks
    (id, context_id, owner, state, updated_ms, created_ms, task_json, status_history_json, meta_json, version)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (id) DO NOTHING";

pub(super) const UPDATE_TASK: &str =
    "UPDATE tasks SET context_id = $2, owner = $3, state = $4, updated_ms = $5,
        created_ms = $6, task_json = $7, status_history_json = $8, meta_json = $9, version = $10
    WHERE id = $1 AND version = $10::BIGINT - 1";

pub(super) const UPSERT_PUSH: &str = "INSERT INTO push_configs (task_id, id, owner, config_json)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (task_id, id) DO UPDATE SET owner = excluded.owner, config_json = excluded.config_json";

/// Every push event of a batch in one statement: one outbox row per event
/// and push config the task has, in event order, then config order.
pub(super) const FAN_OUT: &str = "INSERT INTO outbox (task_id, config_id, body, attempts, not_before_ms)
    SELECT p.task_id, p.id, e.body, 0, $3
    FROM UNNEST($1::TEXT[], $2::TEXT[]) WITH ORDINALITY AS e (task_id, body, n)
    JOIN push_configs p ON p.task_id = e.task_id
    ORDER BY e.n, p.created_seq";

pub(super) const ENQUEUE_BRIDGE: &str =
    "INSERT INTO outbox (task_id, bridge_json, body, attempts, not_before_ms)
    VALUES ($1, $2, $3, 0, $4)";

/// Wakes the replica delivering the outbox, in whatever process it runs.
/// A notification on a channel with a payload: `OUTBOX_CHANNEL` with the
/// sending instance's name, `TASKS_CHANNEL` (tells the replicas streaming a
/// task that it changed) with the task's id.
pub(super) const NOTIFY: &str = "SELECT pg_notify($1, $2)::TEXT";

pub(super) const UPSERT_REMINDER: &str = "INSERT INTO reminders (task_id, id, active, reminder_json)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (task_id, id) DO UPDATE SET active = excluded.active, reminder_json = excluded.reminder_json";

/// Appends a batch's events in one statement (the fewer round trips, the
/// shorter the lock below is held). Seqs come from the counter row, which
/// stays locked until this transaction ends, so the next appender (in any
/// process) waits for our COMMIT or ROLLBACK before it takes the seqs
/// after ours: seqs become visible in commit order with no gap, and a
/// rolled-back append gives its seqs back. (A sequence would not do: its
/// values are handed out at once, so a later seq could commit first, and a
/// rollback leaves a hole.) The NOTIFY carrying the last seq is delivered
/// only if the transaction commits.
pub(super) const APPEND_EVENTS: &str = "WITH taken AS (
        UPDATE event_log SET last_seq = last_seq + cardinality($1::BIGINT[]) WHERE id = 1 RETURNING last_seq
    ), appended AS (
        INSERT INTO events (seq, ts_ms, kind, task_id, owner, data_json, annotations_json)
        SELECT taken.last_seq - cardinality($1::BIGINT[]) + e.n, e.ts, e.kind, e.task_id, e.owner, e.data, e.annotations
        FROM taken, UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[])
            WITH ORDINALITY AS e (ts, kind, task_id, owner, data, annotations, n)
    )
    SELECT last_seq, pg_notify($7, last_seq::TEXT)::TEXT FROM taken";

pub(super) const INSERT_JOURNAL: &str =
    "INSERT INTO journal (task_id, seq, body) VALUES ($1, $2, $3) ON CONFLICT (task_id, seq) DO NOTHING";

pub(super) const REMOVE_JOURNAL: &str = "DELETE FROM journal WHERE task_id = $1";

pub(super) const CHECK_FENCE: &str =
    "SELECT 1 FROM leases WHERE resource = $1 AND holder = $2 AND epoch = $3 FOR KEY SHARE";

pub(super) const DELETE_PUSH: &str = "DELETE FROM push_configs WHERE task_id = $1 AND id = $2";

pub(super) const REMOVE_OUTBOX_ROW: &str = "DELETE FROM outbox WHERE id = $1";

pub(super) const RESCHEDULE_OUTBOX_ROW: &str =
    "UPDATE outbox SET not_before_ms = $2, attempts = $3 WHERE id = $1";

pub(super) const CLOSE_CONTEXT: &str = "INSERT INTO closed_contexts (context_id, closed_by, closed_ms)
    VALUES ($1, $2, $3) ON CONFLICT (context_id) DO NOTHING";

/// What one batch wrote that its caller acts on.
#[derive(Default)]
pub(crate) struct Written {
    /// The events appended, with their seqs.
    pub events: Vec<EventRecord>,
    /// Whether it queued outbox rows (the delivery worker then looks).
    pub queued_outbox: bool,
}

/// A statement's answer: a row (or none) for those that return one, the
/// rows changed for the others.
enum Answer {
    Row(Option<Row>),
    Count(u64),
}

/// Writes `batches`, in order, inside `tx`: what each wrote, or why the
/// group is refused (nothing of it may be committed then).
pub(crate) async fn apply(
    tx: &Transaction<'_>,
    batches: &[&Batch],
    instance: &str,
) -> Result<Vec<Written>, WriteError> {
    let encoded = batches.iter().map(|b| Encoded::of(b)).collect::<Result<Vec<_>, _>>()?;
    let (mut fences, mut writes) = (Vec::new(), Vec::new());
    for (i, e) in encoded.iter().enumerate() {
        e.fences(i, &mut fences);
        e.writes(i, &mut writes);
    }
    let mut written: Vec<Written> = batches.iter().map(|_| Written::default()).collect();
    // The fences first, answered before any write is sent: a fenced-off
    // holder's batch writes nothing at all (one of its writes could wait
    // for the new holder's lock on the task's row).
    run(tx, &fences, batches, &mut written).await?;
    run(tx, &writes, batches, &mut written).await?;
    if written.iter().any(|w| w.queued_outbox) {
        // Wakes the replica delivering the outbox, in whatever process it
        // runs; delivered only if this transaction commits.
        let s = tx.prepare_cached(NOTIFY).await.map_err(pg("notify outbox"))?;
        tx.execute(&s, &[&OUTBOX_CHANNEL, &instance]).await.map_err(pg("notify outbox"))?;
    }
    for r in batches.iter().filter_map(|b| b.prune_events) {
        prune(tx, r).await?;
    }
    Ok(written)
}

/// Sends `statements` as one pipeline, then checks their answers in
/// order, noting what each batch wrote in `written`. An error aborted the
/// transaction (every statement after it failed for that): the first is
/// why the group failed, whatever was refused before it (a deadlock is
/// then run again). Else the first refusal, in order, refuses the group.
async fn run(
    tx: &Transaction<'_>,
    statements: &[Statement<'_>],
    batches: &[&Batch],
    written: &mut [Written],
) -> Result<(), WriteError> {
    // Prepared once per connection: after the first group, no round trip.
    let mut pending: Vec<Pending<'_, Result<Answer, tokio_postgres::Error>>> =
        Vec::with_capacity(statements.len());
    for st in statements {
        let prepared = tx.prepare_cached(st.sql).await.map_err(pg(st.context))?;
        pending.push(Box::pin(answer(tx, prepared, st)));
    }
    let mut answers = pipeline::in_order(pending).await;
    if let Some(first) = answers.iter().position(Result::is_err)
        && let Err(e) = answers.swap_remove(first)
    {
        return Err(pg(statements[first].context)(e));
    }
    for (st, answer) in statements.iter().zip(answers.into_iter().flatten()) {
        let w = &mut written[st.batch];
        match (&st.check, answer) {
            (Check::Fence(f), Answer::Row(None)) => {
                return Err(WriteError::Refused(StoreError::Fenced {
                    resource: f.resource.clone(),
                    epoch: f.epoch,
                }));
            }
            (Check::Task(record), Answer::Count(n)) if n != 1 => return Err(refused_task(tx, record).await),
            (Check::Journal(e), Answer::Count(0)) => return Err(journal_conflict(e).into()),
            (Check::Queued, Answer::Count(n)) => w.queued_outbox |= n > 0,
            (Check::Append, Answer::Row(row)) => w.events = numbered(row, &batches[st.batch].events)?,
            _ => {}
        }
    }
    Ok(())
}

/// Runs one statement (sent when first polled).
async fn answer(
    tx: &Transaction<'_>,
    prepared: tokio_postgres::Statement,
    st: &Statement<'_>,
) -> Result<Answer, tokio_postgres::Error> {
    if st.row {
        tx.query_opt(&prepared, &st.params).await.map(Answer::Row)
    } else {
        tx.execute(&prepared, &st.params).await.map(Answer::Count)
    }
}

/// Why a task's write changed no row: the stored version (read only to
/// explain the refusal) is not the one before the record's.
async fn refused_task(tx: &Transaction<'_>, record: &TaskRecord) -> WriteError {
    let found = async {
        let s = tx.prepare_cached("SELECT version FROM tasks WHERE id = $1").await?;
        tx.query_opt(&s, &[&record.task.id]).await
    };
    let found = match found.await {
        Ok(row) => row.map_or(0, |row| u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)),
        Err(e) => return pg("read task version")(e),
    };
    match StoreError::check_version(record, found) {
        Err(e) => WriteError::Refused(e),
        Ok(()) => StoreError::backend(format!("task {:?}: the write changed no row", record.id())).into(),
    }
}

/// The events of one append with their seqs, from the last seq it took.
fn numbered(row: Option<Row>, events: &[NewEvent]) -> Result<Vec<EventRecord>, WriteError> {
    let Some(row) = row else {
        return Err(StoreError::backend("the event log has no counter row").into());
    };
    let last = row.get::<_, i64>(0);
    let first = u64::try_from(last + 1 - events.len() as i64).map_err(|_| {
        StoreError::backend(format!("event log counter at {last} after {} appends", events.len()))
    })?;
    Ok((first..).zip(events).map(|(seq, e)| EventRecord { seq, event: e.clone() }).collect())
}

/// Removes the prefix of the log that retention no longer keeps (the
/// SQLite rule: past `max_count` from the last seq ever taken, or older
/// than `min_ts_ms`), at most `max_removed` seqs of it.
async fn prune(tx: &Transaction<'_>, r: EventRetention) -> Result<(), WriteError> {
    // At most half of BIGINT's range: `pruned_through + $2` cannot overflow.
    let max_removed = i64::try_from(r.max_removed.min(u64::MAX >> 2)).unwrap_or(i64::MAX >> 1);
    let row = tx
        .query_one(
            "SELECT l.last_seq, l.pruned_through,
                    (SELECT MAX(seq) FROM events WHERE ts_ms < $1 AND seq <= l.pruned_through + $2)
             FROM event_log l WHERE l.id = 1 FOR UPDATE",
            &[&r.min_ts_ms, &max_removed],
        )
        .await
        .map_err(pg("find expired events"))?;
    let bounds = EventLogBounds {
        last: u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
        pruned_through: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
    };
    let expired = row.get::<_, Option<i64>>(2).and_then(|s| u64::try_from(s).ok()).unwrap_or(0);
    let Some(cutoff) = r.cutoff(bounds, expired) else {
        return Ok(());
    };
    let cutoff = i64::try_from(cutoff).map_err(|e| StoreError::backend(format!("event seq: {e}")))?;
    tx.execute("DELETE FROM events WHERE seq <= $1", &[&cutoff]).await.map_err(pg("prune events"))?;
    tx.execute("UPDATE event_log SET pruned_through = GREATEST(pruned_through, $1) WHERE id = 1", &[&cutoff])
        .await
        .map_err(pg("record pruning"))?;
    Ok(())
}
