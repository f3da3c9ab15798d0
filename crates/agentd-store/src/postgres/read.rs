//! The queries behind every `Store` read, on a pooled connection. Each
//! statement sees every batch committed before it started; the listing's
//! count and page share one snapshot (a REPEATABLE READ transaction).

use super::db;
use crate::codec::{decode_config, decode_meta, decode_reminder, decode_task, state_number};
use crate::event_log::{self, EventColumns};
use agentd_core::{
    EventLogBounds, EventRecord, OutboxItem, OutboxTarget, PushConfigRow, ReminderRecord, StoreError,
    TaskMetaRow, TaskPage, TaskQuery, TaskRecord, TaskText,
};
use agentd_proto::TaskState;
use deadpool_postgres::GenericClient;
use tokio_postgres::IsolationLevel;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

const TASK_COLUMNS: &str = "owner, created_ms, task_json, status_history_json, meta_json, version";

fn decode_rows(rows: &[Row]) -> Result<Vec<TaskRecord>, StoreError> {
    rows.iter().map(|r| decode_task(r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5))).collect()
}

async fn query_tasks(
    client: &impl GenericClient,
    sql: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Vec<TaskRecord>, StoreError> {
    let s = client.prepare_cached(sql).await.map_err(db("prepare task query"))?;
    let rows = client.query(&s, args).await.map_err(db("query tasks"))?;
    decode_rows(&rows)
}

pub(crate) fn state_param(state: TaskState) -> i32 {
    // State numbers are small enum tags: they always fit.
    i32::try_from(state_number(state)).unwrap_or(i32::MAX)
}

pub(crate) async fn get_task(
    client: &impl GenericClient,
    id: &str,
) -> Result<Option<TaskRecord>, StoreError> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1");
    Ok(query_tasks(client, &sql, &[&id]).await?.pop())
}

/// [`get_task`] leaving the Task as its stored text.
pub(crate) async fn get_task_text(
    client: &impl GenericClient,
    id: &str,
) -> Result<Option<TaskText>, StoreError> {
    const SQL: &str = "SELECT owner, task_json, meta_json FROM tasks WHERE id = $1";
    let s = client.prepare_cached(SQL).await.map_err(db("prepare task query"))?;
    let Some(row) = client.query_opt(&s, &[&id]).await.map_err(db("query tasks"))? else {
        return Ok(None);
    };
    Ok(Some(TaskText { owner: row.get(0), task_json: row.get(1), meta: decode_meta(row.get(2))? }))
}

pub(crate) async fn list_tasks(
    client: &mut deadpool_postgres::Client,
    q: &TaskQuery,
) -> Result<TaskPage, StoreError> {
    let state = q.state.map(state_param);
    let mut filter = vec!["TRUE".to_owned()];
    let mut args: Vec<&(dyn ToSql + Sync)> = Vec::new();
    if let Some(owner) = &q.owner {
        args.push(owner);
        filter.push(format!("owner = ${}", args.len()));
    }
    if let Some(context_id) = &q.context_id {
        args.push(context_id);
        filter.push(format!("context_id = ${}", args.len()));
    }
    if let Some(state) = &state {
        args.push(state);
        filter.push(format!("state = ${}", args.len()));
    }
    if let Some(since) = &q.updated_since_ms {
        args.push(since);
        filter.push(format!("updated_ms >= ${}", args.len()));
    }
    let filter = filter.join(" AND ");
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(db("begin read"))?;
    let s = tx
        .prepare_cached(&format!("SELECT COUNT(*) FROM tasks WHERE {filter}"))
        .await
        .map_err(db("count tasks"))?;
    let total: i64 = tx.query_one(&s, &args).await.map_err(db("count tasks"))?.get(0);
    let mut cursor = String::new();
    if let Some((ms, id)) = &q.after {
        args.push(ms);
        let n = args.len();
        args.push(id);
        cursor = format!(" AND (updated_ms < ${n} OR (updated_ms = ${n} AND id < ${}))", n + 1);
    }
    let limit = i64::try_from(q.limit).unwrap_or(i64::MAX - 1).saturating_add(1);
    args.push(&limit);
    // The page's ids and sizes first (octet_length reads a value's size,
    // not the value), then only the rows that fit the page's budget.
    let sql = format!(
        "SELECT id, octet_length(task_json) + octet_length(status_history_json) FROM tasks \
         WHERE {filter}{cursor} ORDER BY updated_ms DESC, id DESC LIMIT ${}",
        args.len()
    );
    let s = tx.prepare_cached(&sql).await.map_err(db("prepare task page"))?;
    let sized = tx.query(&s, &args).await.map_err(db("query task page"))?;
    let (mut ids, mut bytes, mut more) = (Vec::new(), 0usize, false);
    for row in &sized {
        let size = usize::try_from(row.get::<_, i32>(1)).unwrap_or(usize::MAX);
        let over_budget = q.max_bytes > 0 && !ids.is_empty() && bytes.saturating_add(size) > q.max_bytes;
        if ids.len() == q.limit || over_budget {
            more = true;
            break;
        }
        bytes = bytes.saturating_add(size);
        ids.push(row.get::<_, String>(0));
    }
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ANY($1)");
    let mut tasks = query_tasks(&tx, &sql, &[&ids]).await?;
    tx.commit().await.map_err(db("end read"))?;
    // In the page's order.
    tasks.sort_by_key(|t| ids.iter().position(|id| *id == t.task.id));
    Ok(TaskPage { tasks, total: usize::try_from(total).unwrap_or(0), more })
}

pub(crate) async fn context_tasks(
    client: &impl GenericClient,
    context_id: &str,
) -> Result<Vec<TaskRecord>, StoreError> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE context_id = $1 ORDER BY created_ms, id");
    query_tasks(client, &sql, &[&context_id]).await
}

pub(crate) async fn tasks_in_states(
    client: &impl GenericClient,
    states: &[TaskState],
) -> Result<Vec<TaskRecord>, StoreError> {
    if states.is_empty() {
        return Ok(Vec::new());
    }
    let states: Vec<i32> = states.iter().map(|s| state_param(*s)).collect();
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE state = ANY($1) ORDER BY updated_ms, id");
    query_tasks(client, &sql, &[&states]).await
}

pub(crate) async fn metas_in_state(
    client: &impl GenericClient,
    state: TaskState,
) -> Result<Vec<TaskMetaRow>, StoreError> {
    let s = client
        .prepare_cached("SELECT id, owner, meta_json FROM tasks WHERE state = $1 ORDER BY updated_ms, id")
        .await
        .map_err(db("prepare task metas"))?;
    let rows = client.query(&s, &[&state_param(state)]).await.map_err(db("query task metas"))?;
    rows.iter()
        .map(|r| Ok(TaskMetaRow { id: r.get(0), owner: r.get(1), meta: decode_meta(r.get(2))? }))
        .collect()
}

pub(crate) async fn context_foreign(
    client: &impl GenericClient,
    context_id: &str,
    owner: &str,
) -> Result<bool, StoreError> {
    let s = client
        .prepare_cached("SELECT owner <> $2 FROM tasks WHERE context_id = $1 ORDER BY created_ms, id LIMIT 1")
        .await
        .map_err(db("query context owner"))?;
    let row = client.query_opt(&s, &[&context_id, &owner]).await.map_err(db("query context owner"))?;
    Ok(row.is_some_and(|r| r.get(0)))
}

fn decode_push(row: &Row) -> Result<PushConfigRow, StoreError> {
    Ok(PushConfigRow { owner: row.get(0), config: decode_config(row.get(1))? })
}

pub(crate) async fn get_push_config(
    client: &impl GenericClient,
    task_id: &str,
    id: &str,
) -> Result<Option<PushConfigRow>, StoreError> {
    let s = client
        .prepare_cached("SELECT owner, config_json FROM push_configs WHERE task_id = $1 AND id = $2")
        .await
        .map_err(db("query push config"))?;
    let row = client.query_opt(&s, &[&task_id, &id]).await.map_err(db("query push config"))?;
    row.as_ref().map(decode_push).transpose()
}

pub(crate) async fn list_push_configs(
    client: &impl GenericClient,
    task_id: &str,
) -> Result<Vec<PushConfigRow>, StoreError> {
    let s = client
        .prepare_cached("SELECT owner, config_json FROM push_configs WHERE task_id = $1 ORDER BY created_seq")
        .await
        .map_err(db("list push configs"))?;
    let rows = client.query(&s, &[&task_id]).await.map_err(db("list push configs"))?;
    rows.iter().map(decode_push).collect()
}

pub(crate) async fn due_outbox(
    client: &impl GenericClient,
    now_ms: i64,
    limit: usize,
) -> Result<Vec<OutboxItem>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // Round-robin across owners: `codec::DUE_OUTBOX_ROWS`.
    let s = client.prepare_cached(crate::codec::DUE_OUTBOX_ROWS).await.map_err(db("query outbox"))?;
    let rows = client.query(&s, &[&now_ms, &limit]).await.map_err(db("query outbox"))?;
    rows.iter()
        .map(|row| {
            let id: i64 = row.get(0);
            let target = match (row.get::<_, Option<&str>>(4), row.get::<_, Option<&str>>(5)) {
                (Some(json), _) => OutboxTarget::Push(decode_config(json)?),
                (None, Some(json)) => OutboxTarget::Bridge(
                    serde_json::from_str(json)
                        .map_err(|e| StoreError::backend(format!("decode bridge target: {e}")))?,
                ),
                (None, None) => return Err(StoreError::backend(format!("outbox row {id} has no target"))),
            };
            let attempts = u32::try_from(row.get::<_, i32>(3)).unwrap_or(0);
            Ok(OutboxItem { id, task_id: row.get(1), owner: row.get(6), target, body: row.get(2), attempts })
        })
        .collect()
}

pub(crate) async fn outbox_depth(client: &impl GenericClient) -> Result<u64, StoreError> {
    let s = client.prepare_cached("SELECT COUNT(*) FROM outbox").await.map_err(db("count outbox rows"))?;
    let row = client.query_one(&s, &[]).await.map_err(db("count outbox rows"))?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

pub(crate) async fn next_outbox_due(client: &impl GenericClient) -> Result<Option<i64>, StoreError> {
    let s = client
        .prepare_cached("SELECT MIN(not_before_ms) FROM outbox")
        .await
        .map_err(db("query next outbox due"))?;
    let row = client.query_one(&s, &[]).await.map_err(db("query next outbox due"))?;
    Ok(row.get(0))
}

pub(crate) async fn closed_contexts(client: &impl GenericClient) -> Result<Vec<String>, StoreError> {
    let rows = client
        .query("SELECT context_id FROM closed_contexts ORDER BY closed_ms, context_id", &[])
        .await
        .map_err(db("query closed conversations"))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

pub(crate) async fn reminders(
    client: &impl GenericClient,
    task_id: &str,
    active_only: bool,
) -> Result<Vec<ReminderRecord>, StoreError> {
    let sql = if active_only {
        "SELECT reminder_json FROM reminders WHERE task_id = $1 AND active ORDER BY seq"
    } else {
        "SELECT reminder_json FROM reminders WHERE task_id = $1 ORDER BY seq"
    };
    let s = client.prepare_cached(sql).await.map_err(db("query reminders"))?;
    let rows = client.query(&s, &[&task_id]).await.map_err(db("query reminders"))?;
    rows.iter().map(|r| decode_reminder(r.get(0))).collect()
}

pub(crate) async fn get_reminder(
    client: &impl GenericClient,
    task_id: &str,
    id: &str,
) -> Result<Option<ReminderRecord>, StoreError> {
    let s = client
        .prepare_cached("SELECT reminder_json FROM reminders WHERE task_id = $1 AND id = $2")
        .await
        .map_err(db("query reminder"))?;
    let row = client.query_opt(&s, &[&task_id, &id]).await.map_err(db("query reminder"))?;
    row.map(|r| decode_reminder(r.get(0))).transpose()
}

/// Up to `limit` events with `seq > after`, oldest first.
pub(crate) async fn events(
    client: &impl GenericClient,
    after: u64,
    limit: usize,
) -> Result<Vec<EventRecord>, StoreError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let s = client
        .prepare_cached(
            "SELECT seq, ts_ms, kind, task_id, owner, data_json, annotations_json FROM events
             WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .await
        .map_err(db("read events"))?;
    let rows = client.query(&s, &[&after, &limit]).await.map_err(db("read events"))?;
    rows.iter()
        .map(|row| {
            let cols: EventColumns = (row.get(1), row.get(2), row.get(3), row.get(4), row.get(5), row.get(6));
            event_log::decode(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0), cols)
        })
        .collect()
}

pub(crate) async fn event_log_bounds(client: &impl GenericClient) -> Result<EventLogBounds, StoreError> {
    let row = client
        .query_one("SELECT last_seq, pruned_through FROM event_log WHERE id = 1", &[])
        .await
        .map_err(db("read event log bounds"))?;
    Ok(EventLogBounds {
        last: u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
        pruned_through: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
    })
}

/// A task's step journal in `seq` order.
pub(crate) async fn journal(
    client: &impl GenericClient,
    task_id: &str,
) -> Result<Vec<agentd_core::JournalEntry>, StoreError> {
    let s = client
        .prepare_cached("SELECT seq, body FROM journal WHERE task_id = $1 ORDER BY seq")
        .await
        .map_err(db("query journal"))?;
    let rows = client.query(&s, &[&task_id]).await.map_err(db("query journal"))?;
    rows.iter()
        .map(|r| {
            let seq = u32::try_from(r.get::<_, i64>(0))
                .map_err(|e| StoreError::backend(format!("read journal seq: {e}")))?;
            crate::codec::decode_entry(task_id, seq, r.get(1))
        })
        .collect()
}
