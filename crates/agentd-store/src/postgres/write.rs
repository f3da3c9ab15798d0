//! Writing one batch inside a transaction (the group writer, `group.rs`,
//! puts several in one). The task version guards are the SQLite writer's:
//! `INSERT … ON CONFLICT DO NOTHING` for a first version, `UPDATE … WHERE
//! version = v - 1` after. Under READ COMMITTED a second writer of the same
//! row (another process) waits for the first to commit and then finds the
//! guard false: a conflict.

use super::{EVENTS_CHANNEL, OUTBOX_CHANNEL, TASKS_CHANNEL, db};
use crate::codec::{encode_config, encode_entry, encode_reminder, encode_task, journal_conflict};
use crate::event_log;
use agentd_core::{Batch, EventLogBounds, EventRecord, EventRetention, NewEvent, StoreError, TaskRecord};
use agentd_proto::Timestamp;
use agentd_proto::ext::events::EventKind;
use deadpool_postgres::Transaction;
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

const INSERT_TASK: &str = "INSERT INTO tasks
    (id, context_id, owner, state, updated_ms, created_ms, task_json, status_history_json, meta_json, version)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (id) DO NOTHING";

const UPDATE_TASK: &str = "UPDATE tasks SET context_id = $2, owner = $3, state = $4, updated_ms = $5,
        created_ms = $6, task_json = $7, status_history_json = $8, meta_json = $9, version = $10
    WHERE id = $1 AND version = $10::BIGINT - 1";

const UPSERT_PUSH: &str = "INSERT INTO push_configs (task_id, id, owner, config_json)
    VALUES ($1, $2, $3, $4)
    ON CONFLICT (task_id, id) DO UPDATE SET owner = excluded.owner, config_json = excluded.config_json";

/// Every push event of a batch in one statement: one outbox row per event
/// and push config the task has, in event order, then config order.
const FAN_OUT: &str = "INSERT INTO outbox (task_id, config_id, body, attempts, not_before_ms)
    SELECT p.task_id, p.id, e.body, 0, $3
    FROM UNNEST($1::TEXT[], $2::TEXT[]) WITH ORDINALITY AS e (task_id, body, n)
    JOIN push_configs p ON p.task_id = e.task_id
    ORDER BY e.n, p.created_seq";

const ENQUEUE_BRIDGE: &str = "INSERT INTO outbox (task_id, bridge_json, body, attempts, not_before_ms)
    VALUES ($1, $2, $3, 0, $4)";

/// Wakes the replica delivering the outbox, in whatever process it runs.
/// A notification on a channel with a payload: `OUTBOX_CHANNEL` with the
/// sending instance's name, `TASKS_CHANNEL` (tells the replicas streaming a
/// task that it changed) with the task's id.
const NOTIFY: &str = "SELECT pg_notify($1, $2)::TEXT";

const UPSERT_REMINDER: &str = "INSERT INTO reminders (task_id, id, active, reminder_json)
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
const APPEND_EVENTS: &str = "WITH taken AS (
        UPDATE event_log SET last_seq = last_seq + cardinality($1::BIGINT[]) WHERE id = 1 RETURNING last_seq
    ), appended AS (
        INSERT INTO events (seq, ts_ms, kind, task_id, owner, data_json, annotations_json)
        SELECT taken.last_seq - cardinality($1::BIGINT[]) + e.n, e.ts, e.kind, e.task_id, e.owner, e.data, e.annotations
        FROM taken, UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[])
            WITH ORDINALITY AS e (ts, kind, task_id, owner, data, annotations, n)
    )
    SELECT last_seq, pg_notify($7, last_seq::TEXT)::TEXT FROM taken";

/// What one batch wrote that its caller acts on.
#[derive(Default)]
pub(crate) struct Written {
    /// The events appended, with their seqs.
    pub events: Vec<EventRecord>,
    /// Whether it queued outbox rows (the delivery worker then looks).
    pub queued_outbox: bool,
}

/// Writes one batch inside `tx`, after checking its fences, in the SQLite writer's order: tasks, push
/// upserts, push deletes (their outbox rows go by cascade), push events,
/// bridge deliveries, outbox done, outbox retry, closed conversations,
/// reminders, events, pruning.
pub(crate) async fn apply(
    tx: &Transaction<'_>,
    batch: &Batch,
    instance: &str,
) -> Result<Written, WriteError> {
    // First: a fenced-off holder's batch writes nothing at all.
    super::leases::check_fences(tx, &batch.fences).await?;
    for record in &batch.tasks {
        write_task(tx, record, batch.task_json_of(record)).await?;
        // A `task` event wakes the replicas following the task already.
        let id = record.id();
        let has_event =
            batch.events.iter().any(|e| e.kind == EventKind::Task && e.task_id.as_deref() == Some(id));
        if !has_event {
            let s = tx.prepare_cached(NOTIFY).await.map_err(pg("notify task"))?;
            tx.execute(&s, &[&TASKS_CHANNEL, &id]).await.map_err(pg("notify task"))?;
        }
    }
    for row in &batch.push_upserts {
        let json = encode_config(&row.config)?;
        let c = &row.config;
        let s = tx.prepare_cached(UPSERT_PUSH).await.map_err(pg("write push config"))?;
        tx.execute(&s, &[&c.task_id, &c.id, &row.owner, &json]).await.map_err(pg("write push config"))?;
    }
    for (task_id, id) in &batch.push_deletes {
        let s = tx
            .prepare_cached("DELETE FROM push_configs WHERE task_id = $1 AND id = $2")
            .await
            .map_err(pg("delete push config"))?;
        tx.execute(&s, &[task_id, id]).await.map_err(pg("delete push config"))?;
    }
    let now = Timestamp::now().millis();
    let mut queued = 0;
    if !batch.push_events.is_empty() {
        let (tasks, bodies): (Vec<&str>, Vec<&str>) =
            batch.push_events.iter().map(|(t, b)| (t.as_str(), b.as_str())).unzip();
        let s = tx.prepare_cached(FAN_OUT).await.map_err(pg("fan out push events"))?;
        queued += tx.execute(&s, &[&tasks, &bodies, &now]).await.map_err(pg("fan out push events"))?;
    }
    for d in &batch.bridge_deliveries {
        let target = serde_json::to_string(&d.target)
            .map_err(|e| StoreError::backend(format!("encode bridge target: {e}")))?;
        let s = tx.prepare_cached(ENQUEUE_BRIDGE).await.map_err(pg("enqueue bridge delivery"))?;
        queued += tx
            .execute(&s, &[&d.task_id, &target, &d.body, &now])
            .await
            .map_err(pg("enqueue bridge delivery"))?;
    }
    if queued > 0 {
        // Delivered only if this transaction commits; several in one
        // transaction are folded into one by PostgreSQL.
        let s = tx.prepare_cached(NOTIFY).await.map_err(pg("notify outbox"))?;
        tx.execute(&s, &[&OUTBOX_CHANNEL, &instance]).await.map_err(pg("notify outbox"))?;
    }
    for id in &batch.outbox_done {
        let s =
            tx.prepare_cached("DELETE FROM outbox WHERE id = $1").await.map_err(pg("remove outbox row"))?;
        tx.execute(&s, &[id]).await.map_err(pg("remove outbox row"))?;
    }
    for (id, not_before_ms, attempts) in &batch.outbox_retry {
        let attempts = i32::try_from(*attempts).unwrap_or(i32::MAX);
        let s = tx
            .prepare_cached("UPDATE outbox SET not_before_ms = $2, attempts = $3 WHERE id = $1")
            .await
            .map_err(pg("reschedule outbox row"))?;
        tx.execute(&s, &[id, not_before_ms, &attempts]).await.map_err(pg("reschedule outbox row"))?;
    }
    for c in &batch.closed_contexts {
        let s = tx
            .prepare_cached(
                "INSERT INTO closed_contexts (context_id, closed_by, closed_ms) VALUES ($1, $2, $3)
                 ON CONFLICT (context_id) DO NOTHING",
            )
            .await
            .map_err(pg("close conversation"))?;
        tx.execute(&s, &[&c.context_id, &c.closed_by, &c.closed_ms])
            .await
            .map_err(pg("close conversation"))?;
    }
    for r in &batch.reminders {
        let json = encode_reminder(r)?;
        let s = tx.prepare_cached(UPSERT_REMINDER).await.map_err(pg("write reminder"))?;
        tx.execute(&s, &[&r.task_id, &r.id, &r.is_active(), &json]).await.map_err(pg("write reminder"))?;
    }
    for e in &batch.journal {
        let ((task_id, seq), body) = encode_entry(e)?;
        let s = tx.prepare_cached(INSERT_JOURNAL).await.map_err(pg("write journal entry"))?;
        let added =
            tx.execute(&s, &[&task_id, &i64::from(seq), &body]).await.map_err(pg("write journal entry"))?;
        if added == 0 {
            return Err(journal_conflict(e).into());
        }
    }
    // A task that ended never resumes: its journal goes with the commit
    // that ended it.
    for record in batch.ended_with_journal() {
        let s = tx
            .prepare_cached("DELETE FROM journal WHERE task_id = $1")
            .await
            .map_err(pg("remove journal"))?;
        tx.execute(&s, &[&record.task.id]).await.map_err(pg("remove journal"))?;
    }
    let events = append_events(tx, &batch.events).await?;
    if let Some(r) = batch.prune_events {
        prune(tx, r).await?;
    }
    Ok(Written { events, queued_outbox: queued > 0 })
}

const INSERT_JOURNAL: &str =
    "INSERT INTO journal (task_id, seq, body) VALUES ($1, $2, $3) ON CONFLICT (task_id, seq) DO NOTHING";

/// Writes one task if it is at the version before the record's; the stored
/// version is read only to explain a refusal. `task_json`: its Task's text
/// when an event of the batch holds it already.
async fn write_task(
    tx: &Transaction<'_>,
    record: &TaskRecord,
    task_json: Option<&str>,
) -> Result<(), WriteError> {
    if record.version == 0 {
        StoreError::check_version(record, u64::MAX)?;
    }
    let t = encode_task(record, task_json)?;
    let state = i32::try_from(t.state).map_err(|e| StoreError::backend(format!("encode task state: {e}")))?;
    let sql = if record.version == 1 { INSERT_TASK } else { UPDATE_TASK };
    let s = tx.prepare_cached(sql).await.map_err(pg("write task"))?;
    let written = tx
        .execute(
            &s,
            &[
                &t.id,
                &t.context_id,
                &t.owner,
                &state,
                &t.updated_ms,
                &t.created_ms,
                &t.task_json.as_ref(),
                &t.status_history_json,
                &t.meta_json,
                &t.version,
            ],
        )
        .await
        .map_err(pg("write task"))?;
    if written == 1 {
        return Ok(());
    }
    let s = tx
        .prepare_cached("SELECT version FROM tasks WHERE id = $1")
        .await
        .map_err(pg("read task version"))?;
    let found = tx.query_opt(&s, &[&t.id]).await.map_err(pg("read task version"))?;
    let found = found.map_or(0, |row| u64::try_from(row.get::<_, i64>(0)).unwrap_or(0));
    StoreError::check_version(record, found)?;
    Err(StoreError::backend(format!("task {:?}: the write changed no row", record.id())).into())
}

/// Appends `events` with the next seqs (the last write of a batch but
/// pruning, so the counter row's lock is held briefly).
async fn append_events(tx: &Transaction<'_>, events: &[NewEvent]) -> Result<Vec<EventRecord>, WriteError> {
    if events.is_empty() {
        return Ok(Vec::new());
    }
    let mut cols = EventArrays::default();
    for e in events {
        let (ts, kind, task_id, owner, data, annotations) = event_log::encode(e);
        cols.ts.push(ts);
        cols.kind.push(kind);
        cols.task_id.push(task_id);
        cols.owner.push(owner);
        cols.data.push(data);
        cols.annotations.push(annotations);
    }
    let s = tx.prepare_cached(APPEND_EVENTS).await.map_err(pg("append events"))?;
    let row = tx
        .query_one(
            &s,
            &[
                &cols.ts,
                &cols.kind,
                &cols.task_id,
                &cols.owner,
                &cols.data,
                &cols.annotations,
                &EVENTS_CHANNEL,
            ],
        )
        .await
        .map_err(pg("append events"))?;
    let last = row.get::<_, i64>(0);
    let first = u64::try_from(last + 1 - events.len() as i64).map_err(|_| {
        StoreError::backend(format!("event log counter at {last} after {} appends", events.len()))
    })?;
    let last = first + events.len() as u64 - 1;
    Ok((first..=last).zip(events).map(|(seq, e)| EventRecord { seq, event: e.clone() }).collect())
}

/// The events of one append as columns, bound as arrays (one statement).
#[derive(Default)]
struct EventArrays<'a> {
    ts: Vec<i64>,
    kind: Vec<&'static str>,
    task_id: Vec<Option<&'a str>>,
    owner: Vec<Option<&'a str>>,
    data: Vec<&'a str>,
    annotations: Vec<Option<&'a str>>,
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
