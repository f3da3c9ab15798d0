//! The stored form of records and push configs, shared by every backend so
//! that what is read back is exactly what SQLite would give back.

use std::borrow::Cow;

use agentd_core::{
    JournalEntry, PushConfigRow, ReminderRecord, StatusEntry, StoreError, TaskMeta, TaskRecord,
};
use agentd_proto::{Task, TaskPushNotificationConfig, TaskState, Timestamp};

/// A task row as columns, the id, context and owner lent from the record.
pub(crate) struct EncodedTask<'a> {
    pub id: &'a str,
    pub context_id: &'a str,
    pub owner: &'a str,
    pub state: i64,
    pub updated_ms: i64,
    pub created_ms: i64,
    pub task_json: Cow<'a, str>,
    pub status_history_json: String,
    pub meta_json: String,
    pub version: i64,
}

/// Maps any displayable error to a `StoreError` with some context.
pub(crate) fn err<E: std::fmt::Display>(context: &'static str) -> impl Fn(E) -> StoreError {
    move |e| StoreError::backend(format!("{context}: {e}"))
}

/// The number a state is stored as.
pub(crate) fn state_number(state: TaskState) -> i64 {
    i64::from(state.number())
}

/// The row of `record`; `task_json`, when given, is its Task's text
/// already written (`Batch::task_json_of`).
pub(crate) fn encode_task<'a>(
    record: &'a TaskRecord,
    task_json: Option<&'a str>,
) -> Result<EncodedTask<'a>, StoreError> {
    let task_json = match task_json {
        Some(text) => Cow::Borrowed(text),
        None => Cow::Owned(agentd_proto::exact::to_string(&record.task).map_err(err("encode task"))?),
    };
    Ok(EncodedTask {
        id: &record.task.id,
        context_id: &record.task.context_id,
        owner: &record.owner,
        state: state_number(record.state()),
        updated_ms: record.updated_ms(),
        created_ms: record.created_at.millis(),
        task_json,
        status_history_json: agentd_proto::exact::to_string(&record.status_history)
            .map_err(err("encode status history"))?,
        meta_json: serde_json::to_string(&record.meta).map_err(err("encode task meta"))?,
        version: i64::try_from(record.version).map_err(err("encode task version"))?,
    })
}

pub(crate) fn decode_task(
    owner: String,
    created_ms: i64,
    task_json: &str,
    status_history_json: &str,
    meta_json: &str,
    version: i64,
) -> Result<TaskRecord, StoreError> {
    let task: Task = serde_json::from_str(task_json).map_err(err("decode task"))?;
    let status_history: Vec<StatusEntry> =
        serde_json::from_str(status_history_json).map_err(err("decode status history"))?;
    let created_at = Timestamp::from_millis(created_ms)
        .ok_or_else(|| StoreError::backend(format!("decode task: bad created_ms {created_ms}")))?;
    let meta = decode_meta(meta_json)?;
    let version = u64::try_from(version).map_err(err("decode task version"))?;
    Ok(TaskRecord { task, owner, created_at, status_history, meta, version })
}

/// What the record looks like once stored and read back (timestamps at
/// millisecond precision, ProtoJSON normal form).
pub(crate) fn normalize_task(record: &TaskRecord) -> Result<TaskRecord, StoreError> {
    let e = encode_task(record, None)?;
    decode_task(
        e.owner.to_owned(),
        e.created_ms,
        &e.task_json,
        &e.status_history_json,
        &e.meta_json,
        e.version,
    )
}

pub(crate) fn decode_meta(meta_json: &str) -> Result<TaskMeta, StoreError> {
    serde_json::from_str(meta_json).map_err(err("decode task meta"))
}

pub(crate) fn encode_config(config: &TaskPushNotificationConfig) -> Result<String, StoreError> {
    serde_json::to_string(config).map_err(err("encode push config"))
}

pub(crate) fn decode_config(json: &str) -> Result<TaskPushNotificationConfig, StoreError> {
    serde_json::from_str(json).map_err(err("decode push config"))
}

pub(crate) fn normalize_config(row: &PushConfigRow) -> Result<PushConfigRow, StoreError> {
    Ok(PushConfigRow { owner: row.owner.clone(), config: decode_config(&encode_config(&row.config)?)? })
}

pub(crate) fn encode_reminder(r: &ReminderRecord) -> Result<String, StoreError> {
    serde_json::to_string(r).map_err(err("encode reminder"))
}

pub(crate) fn decode_reminder(json: &str) -> Result<ReminderRecord, StoreError> {
    serde_json::from_str(json).map_err(err("decode reminder"))
}

pub(crate) fn normalize_reminder(r: &ReminderRecord) -> Result<ReminderRecord, StoreError> {
    decode_reminder(&encode_reminder(r)?)
}

/// A journal entry as its row: `((task_id, seq), body)`.
pub(crate) fn encode_entry(e: &JournalEntry) -> Result<((String, u32), String), StoreError> {
    Ok(((e.task_id.clone(), e.seq), e.encode().map_err(err("encode journal entry"))?))
}

pub(crate) fn decode_entry(task_id: &str, seq: u32, body: &str) -> Result<JournalEntry, StoreError> {
    JournalEntry::decode(task_id, seq, body).map_err(err("decode journal entry"))
}

/// The refusal of a journal entry whose place is taken.
pub(crate) fn journal_conflict(e: &JournalEntry) -> StoreError {
    StoreError::Conflict {
        task_id: e.task_id.clone(),
        expected: u64::from(e.seq) - 1,
        found: u64::from(e.seq),
    }
}

/// The due outbox rows (`$1`: now in ms, `$2`: how many at most), the one
/// query of both stores (SQLite numbers `$N` parameters by their first
/// appearance, as PostgreSQL reads them). A push row whose config is gone
/// is skipped (its delete cascades); a bridge row needs no config. The
/// rows come round-robin across owners (each owner's first row, then each
/// one's second, ...; within an owner in commit order), so one owner's
/// backlog cannot fill a batch while another's rows wait behind it.
pub(crate) const DUE_OUTBOX_ROWS: &str =
    "SELECT o.id, o.task_id, o.body, o.attempts, p.config_json, o.bridge_json,
        COALESCE(p.owner, t.owner, '') AS owner,
        ROW_NUMBER() OVER (PARTITION BY COALESCE(p.owner, t.owner, '') ORDER BY o.id) AS turn
     FROM outbox o
     LEFT JOIN push_configs p ON p.task_id = o.task_id AND p.id = o.config_id
     LEFT JOIN tasks t ON t.id = o.task_id AND o.config_id IS NULL
     WHERE o.not_before_ms <= $1 AND (p.config_json IS NOT NULL OR o.bridge_json IS NOT NULL)
     ORDER BY turn, o.id LIMIT $2";
