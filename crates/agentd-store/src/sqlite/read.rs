//! Reads: a small pool of read-only connections used on the blocking pool
//! (point reads on the calling thread),
//! and the queries behind every `Store` read. Each query runs in its own
//! read transaction, so it sees every batch committed before it started.

use super::schema::open_reader;
use crate::codec::{decode_config, decode_meta, decode_reminder, decode_task, err, state_number};
use agentd_core::{
    JournalEntry, OutboxItem, OutboxTarget, PushConfigRow, ReminderRecord, StoreError, TaskMetaRow, TaskPage,
    TaskQuery, TaskRecord, TaskText,
};
use agentd_proto::TaskState;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The most bytes of JSON a point read decodes on the calling thread (a
/// task with a long history, or big artifacts, is decoded on the blocking
/// pool: about 0.1 ms of work at this size).
const INLINE_ROW_BYTES: usize = 64 * 1024;

/// What a point read found: its answer, or a row bigger than it may decode
/// where it runs.
pub(crate) enum Point<T> {
    Read(T),
    TooBig,
}

/// Idle read connections kept for reuse; more are opened on demand.
const MAX_IDLE: usize = 4;
/// Reads running at once. Equal to MAX_IDLE, so every read finds a pooled
/// connection: unbounded, 64 concurrent reads opened and closed a
/// connection per read and grew the blocking pool to ~100 threads.
const MAX_READERS: usize = MAX_IDLE;

pub(crate) struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<tokio::sync::Semaphore>,
}

impl ReadPool {
    pub(crate) fn new(path: PathBuf) -> Arc<Self> {
        let permits = Arc::new(tokio::sync::Semaphore::new(MAX_READERS));
        Arc::new(Self { path, idle: Mutex::new(Vec::new()), permits })
    }

    /// An idle pooled connection, if any.
    fn pooled(&self) -> Result<Option<Connection>, StoreError> {
        Ok(self.idle.lock().map_err(|_| StoreError::backend("read pool poisoned"))?.pop())
    }

    fn take(&self) -> Result<Connection, StoreError> {
        match self.pooled()? {
            Some(conn) => Ok(conn),
            None => open_reader(&self.path),
        }
    }

    fn give(&self, conn: Connection) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE
        {
            idle.push(conn);
        }
    }

    /// Runs a point read (one row by its key) on the calling thread when a
    /// pooled connection is free, else as [`ReadPool::run`] does. `f` gets
    /// the most bytes of row it may decode; given a bigger row it answers
    /// [`Point::TooBig`] and is run again on the blocking pool without a
    /// limit.
    ///
    /// Why not the blocking pool every time: a point read touches a few
    /// B-tree pages that the connection's and the OS page caches hold, a
    /// few microseconds, while the hop to the blocking pool and back wakes
    /// two threads; under GetTask load a third of the daemon's CPU went to
    /// those wake-ups. A big row's decoding would hold up every other
    /// request of the thread, so it goes to the blocking pool, like scans.
    /// The read takes a permit like any other, so it never opens a
    /// connection or exceeds `MAX_READERS`.
    pub(crate) async fn run_point<T, F>(self: &Arc<Self>, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: Fn(&mut Connection, usize) -> Result<Point<T>, StoreError> + Send + 'static,
    {
        if let Ok(_permit) = Arc::clone(&self.permits).try_acquire_owned()
            && let Some(mut conn) = self.pooled()?
        {
            let out = f(&mut conn, INLINE_ROW_BYTES);
            self.give(conn);
            if let Point::Read(t) = out? {
                return Ok(t);
            }
        }
        self.run(move |conn| match f(conn, usize::MAX)? {
            Point::Read(t) => Ok(t),
            Point::TooBig => Err(StoreError::backend("a row is too big for an unlimited read")),
        })
        .await
    }

    /// Runs `f` with a pooled connection on tokio's blocking pool.
    pub(crate) async fn run<T, F>(self: &Arc<Self>, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let pool = Arc::clone(self);
        let permit = Arc::clone(&self.permits).acquire_owned().await.map_err(err("read pool closed"))?;
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let mut conn = pool.take()?;
            let out = f(&mut conn);
            pool.give(conn);
            out
        })
        .await
        .map_err(err("read task"))?
    }
}

const TASK_COLUMNS: &str = "owner, created_ms, task_json, status_history_json, meta_json, version";

type TaskRow = (String, i64, String, String, String, i64);

fn task_from_row(row: &Row<'_>) -> rusqlite::Result<TaskRow> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
}

fn decode_rows(rows: Vec<TaskRow>) -> Result<Vec<TaskRecord>, StoreError> {
    rows.into_iter()
        .map(|(owner, created, task, hist, meta, version)| {
            decode_task(owner, created, &task, &hist, &meta, version)
        })
        .collect()
}

fn query_tasks(conn: &Connection, sql: &str, args: &[Value]) -> Result<Vec<TaskRecord>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(err("prepare task query"))?;
    let rows = stmt
        .query_map(params_from_iter(args.iter()), task_from_row)
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(err("query tasks"))?;
    decode_rows(rows)
}

/// One task, decoded straight from the row's text (GetTask's path: no
/// copy of the JSON columns, no SQL built per call).
/// A row bigger than `max_bytes` of JSON is not read: [`Point::TooBig`].
/// Its size comes from the record header (`octet_length` reads no
/// overflow page), so a big row costs the calling thread a B-tree seek,
/// not the reading of megabytes.
pub(crate) fn get_task(
    conn: &mut Connection,
    id: &str,
    max_bytes: usize,
) -> Result<Point<Option<TaskRecord>>, StoreError> {
    const SQL: &str = "SELECT owner, created_ms, n, \
        CASE WHEN n <= ?2 THEN task_json END, \
        CASE WHEN n <= ?2 THEN status_history_json END, \
        CASE WHEN n <= ?2 THEN meta_json END, version \
        FROM (SELECT *, octet_length(task_json) + octet_length(status_history_json) \
        + octet_length(meta_json) AS n FROM tasks WHERE id = ?1)";
    point_read(conn, SQL, id, max_bytes, 2, |row| {
        let (task, history, meta) = (text(row, 3)?, text(row, 4)?, text(row, 5)?);
        let (created, version) =
            (row.get(1).map_err(err("query tasks"))?, row.get(6).map_err(err("query tasks"))?);
        decode_task(text(row, 0)?.to_owned(), created, task, history, meta, version)
    })
}

/// [`get_task`] leaving the Task as its stored text.
pub(crate) fn get_task_text(
    conn: &mut Connection,
    id: &str,
    max_bytes: usize,
) -> Result<Point<Option<TaskText>>, StoreError> {
    const SQL: &str = "SELECT owner, n, CASE WHEN n <= ?2 THEN task_json END, \
        CASE WHEN n <= ?2 THEN meta_json END \
        FROM (SELECT *, octet_length(task_json) + octet_length(meta_json) AS n FROM tasks WHERE id = ?1)";
    point_read(conn, SQL, id, max_bytes, 1, |row| {
        Ok(TaskText {
            owner: text(row, 0)?.to_owned(),
            meta: decode_meta(text(row, 3)?)?,
            task_json: text(row, 2)?.to_owned(),
        })
    })
}

/// The task row `id` read within a budget: `sql` selects it with the id
/// as `?1` and `max_bytes` as `?2`, its size in column `size_at` and its
/// large columns only when that size is within the budget; `read` decodes
/// a row that is.
fn point_read<T>(
    conn: &mut Connection,
    sql: &str,
    id: &str,
    max_bytes: usize,
    size_at: usize,
    read: impl FnOnce(&Row<'_>) -> Result<T, StoreError>,
) -> Result<Point<Option<T>>, StoreError> {
    let max = i64::try_from(max_bytes).unwrap_or(i64::MAX);
    let mut stmt = conn.prepare_cached(sql).map_err(err("prepare task query"))?;
    let mut rows = stmt.query(rusqlite::params![id, max]).map_err(err("query tasks"))?;
    let Some(row) = rows.next().map_err(err("query tasks"))? else {
        return Ok(Point::Read(None));
    };
    let size: i64 = row.get(size_at).map_err(err("query tasks"))?;
    if size > max {
        return Ok(Point::TooBig);
    }
    read(row).map(|t| Point::Read(Some(t)))
}

/// Column `i` of `row` as text.
fn text<'r>(row: &'r Row<'_>, i: usize) -> Result<&'r str, StoreError> {
    row.get_ref(i).and_then(|v| Ok(v.as_str()?)).map_err(err("query tasks"))
}

pub(crate) fn list_tasks(conn: &mut Connection, q: &TaskQuery) -> Result<TaskPage, StoreError> {
    let sql = ListSql::of(q);
    // One read transaction: the count and the page see the same snapshot.
    let tx = conn.transaction().map_err(err("begin read"))?;
    let total: i64 = tx
        .prepare_cached(&sql.count)
        .and_then(|mut s| s.query_row(params_from_iter(sql.args.iter()), |row| row.get(0)))
        .map_err(err("count tasks"))?;
    let mut stmt = tx.prepare_cached(&sql.page).map_err(err("prepare task page"))?;
    let mut rows = stmt.query(params_from_iter(sql.page_args.iter())).map_err(err("query tasks"))?;
    let (mut tasks, mut bytes, mut more) = (Vec::new(), 0usize, false);
    while let Some(row) = rows.next().map_err(err("read task row"))? {
        // The size first, from the record header: a row past the budget is
        // not read.
        let size =
            usize::try_from(row.get::<_, i64>(6).map_err(err("read task size"))?).unwrap_or(usize::MAX);
        let over_budget = q.max_bytes > 0 && !tasks.is_empty() && bytes.saturating_add(size) > q.max_bytes;
        if tasks.len() == q.limit || over_budget {
            more = true;
            break;
        }
        bytes = bytes.saturating_add(size);
        let (owner, created, task, hist, meta, version) = task_from_row(row).map_err(err("read task row"))?;
        tasks.push(decode_task(owner, created, &task, &hist, &meta, version)?);
    }
    Ok(TaskPage { tasks, total: usize::try_from(total).unwrap_or(0), more })
}

/// The two statements of a listing: the count of every match, and the page.
struct ListSql {
    count: String,
    page: String,
    /// The filter's values (the count's parameters).
    args: Vec<Value>,
    /// The filter's, then the cursor's and the limit.
    page_args: Vec<Value>,
}

impl ListSql {
    fn of(q: &TaskQuery) -> Self {
        let mut filter = vec!["1 = 1".to_owned()];
        let mut args: Vec<Value> = Vec::new();
        if let Some(owner) = &q.owner {
            filter.push("owner = ?".into());
            args.push(Value::Text(owner.clone()));
        }
        if let Some(context_id) = &q.context_id {
            filter.push("context_id = ?".into());
            args.push(Value::Text(context_id.clone()));
        }
        if let Some(state) = q.state {
            filter.push("state = ?".into());
            args.push(Value::Integer(state_number(state)));
        }
        if let Some(since) = q.updated_since_ms {
            filter.push("updated_ms >= ?".into());
            args.push(Value::Integer(since));
        }
        let filter = filter.join(" AND ");
        let mut page_args = args.clone();
        let mut cursor = String::new();
        if let Some((ms, id)) = &q.after {
            cursor = " AND (updated_ms < ? OR (updated_ms = ? AND id < ?))".into();
            page_args.extend([Value::Integer(*ms), Value::Integer(*ms), Value::Text(id.clone())]);
        }
        page_args.push(Value::Integer(i64::try_from(q.limit).unwrap_or(i64::MAX - 1).saturating_add(1)));
        let (count_from, page_from) = Self::sources(q);
        Self {
            count: format!("SELECT COUNT(*) FROM {count_from} WHERE {filter}"),
            page: format!(
                "SELECT {TASK_COLUMNS}, octet_length(task_json) + octet_length(status_history_json) \
                 FROM {page_from} WHERE {filter}{cursor} ORDER BY updated_ms DESC, id DESC LIMIT ?"
            ),
            args,
            page_args,
        }
    }

    /// Which index the count and the page read. Left to itself, SQLite
    /// walks the owner's tasks newest first (the order asked for, no sort)
    /// and checks each row's context or state: a page of an old
    /// conversation, or of the few tasks waiting for input, read the
    /// owner's whole history. A context holds few tasks, and so does a
    /// state that is not final (only live tasks are in one): reading those
    /// and sorting them is cheap. A final state may hold most tasks: its
    /// page walks the tasks newest first, and its count reads the
    /// `(state, owner)` index alone.
    fn sources(q: &TaskQuery) -> (&'static str, &'static str) {
        const CONTEXT: &str = "tasks INDEXED BY tasks_context";
        const STATE: &str = "tasks INDEXED BY tasks_state";
        match (&q.context_id, q.state, &q.owner) {
            (Some(_), _, _) => (CONTEXT, CONTEXT),
            (None, Some(s), _) if !s.is_terminal() => (STATE, STATE),
            (None, Some(_), Some(_)) => (STATE, "tasks INDEXED BY tasks_owner_updated"),
            (None, Some(_), None) => (STATE, "tasks INDEXED BY tasks_updated"),
            (None, None, _) => ("tasks", "tasks"),
        }
    }
}

pub(crate) fn context_tasks(conn: &mut Connection, context_id: &str) -> Result<Vec<TaskRecord>, StoreError> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE context_id = ?1 ORDER BY created_ms, id");
    query_tasks(conn, &sql, &[Value::Text(context_id.to_owned())])
}

pub(crate) fn tasks_in_states(
    conn: &mut Connection,
    states: &[TaskState],
) -> Result<Vec<TaskRecord>, StoreError> {
    if states.is_empty() {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; states.len()].join(", ");
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE state IN ({marks}) ORDER BY updated_ms, id");
    let args: Vec<Value> = states.iter().map(|s| Value::Integer(state_number(*s))).collect();
    query_tasks(conn, &sql, &args)
}

pub(crate) fn metas_in_state(
    conn: &mut Connection,
    state: TaskState,
) -> Result<Vec<TaskMetaRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT id, owner, meta_json FROM tasks WHERE state = ?1 ORDER BY updated_ms, id")
        .map_err(err("prepare task metas"))?;
    let rows = stmt
        .query_map(params![state_number(state)], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get::<_, String>(2)?))
        })
        .map_err(err("query task metas"))?;
    let mut out = Vec::new();
    for row in rows {
        let (id, owner, meta) = row.map_err(err("read task meta"))?;
        out.push(TaskMetaRow { id, owner, meta: decode_meta(&meta)? });
    }
    Ok(out)
}

pub(crate) fn context_foreign(
    conn: &mut Connection,
    context_id: &str,
    owner: &str,
) -> Result<bool, StoreError> {
    conn.prepare_cached("SELECT owner <> ?2 FROM tasks WHERE context_id = ?1 ORDER BY created_ms, id LIMIT 1")
        .and_then(|mut s| s.query_row(params![context_id, owner], |row| row.get(0)).optional())
        .map(Option::unwrap_or_default)
        .map_err(err("query context owner"))
}

fn push_from_row(row: &Row<'_>) -> rusqlite::Result<(String, String)> {
    Ok((row.get(0)?, row.get(1)?))
}

fn decode_push((owner, json): (String, String)) -> Result<PushConfigRow, StoreError> {
    Ok(PushConfigRow { owner, config: decode_config(&json)? })
}

pub(crate) fn get_push_config(
    conn: &mut Connection,
    task_id: &str,
    id: &str,
) -> Result<Option<PushConfigRow>, StoreError> {
    conn.prepare_cached("SELECT owner, config_json FROM push_configs WHERE task_id = ?1 AND id = ?2")
        .and_then(|mut s| s.query_row(params![task_id, id], push_from_row).optional())
        .map_err(err("query push config"))?
        .map(decode_push)
        .transpose()
}

pub(crate) fn list_push_configs(
    conn: &mut Connection,
    task_id: &str,
) -> Result<Vec<PushConfigRow>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT owner, config_json FROM push_configs WHERE task_id = ?1 ORDER BY created_seq")
        .map_err(err("prepare push config list"))?;
    let rows = stmt
        .query_map(params![task_id], push_from_row)
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(err("list push configs"))?;
    rows.into_iter().map(decode_push).collect()
}

pub(crate) fn due_outbox(
    conn: &mut Connection,
    now_ms: i64,
    limit: usize,
) -> Result<Vec<OutboxItem>, StoreError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    // Round-robin across owners: `codec::DUE_OUTBOX_ROWS`.
    let mut stmt = conn.prepare_cached(crate::codec::DUE_OUTBOX_ROWS).map_err(err("prepare outbox query"))?;
    type Row = (i64, String, String, u32, Option<String>, Option<String>, String);
    let rows = stmt
        .query_map(params![now_ms, limit], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?))
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<Row>>>())
        .map_err(err("query outbox"))?;
    rows.into_iter()
        .map(|(id, task_id, body, attempts, config, bridge, owner)| {
            let target = match (config, bridge) {
                (Some(json), _) => OutboxTarget::Push(decode_config(&json)?),
                (None, Some(json)) => OutboxTarget::Bridge(
                    serde_json::from_str(&json)
                        .map_err(|e| StoreError::backend(format!("decode bridge target: {e}")))?,
                ),
                (None, None) => return Err(StoreError::backend(format!("outbox row {id} has no target"))),
            };
            Ok(OutboxItem { id, task_id, owner, target, body, attempts })
        })
        .collect()
}

pub(crate) fn outbox_depth(conn: &mut Connection) -> Result<u64, StoreError> {
    conn.prepare_cached("SELECT COUNT(*) FROM outbox")
        .and_then(|mut s| s.query_row([], |row| row.get::<_, i64>(0)))
        .map(|n| u64::try_from(n).unwrap_or(0))
        .map_err(err("count outbox rows"))
}

pub(crate) fn next_outbox_due(conn: &mut Connection) -> Result<Option<i64>, StoreError> {
    conn.prepare_cached("SELECT MIN(not_before_ms) FROM outbox")
        .and_then(|mut s| s.query_row([], |row| row.get(0)))
        .map_err(err("query next outbox due"))
}

pub(crate) fn closed_contexts(conn: &mut Connection) -> Result<Vec<String>, StoreError> {
    conn.prepare_cached("SELECT context_id FROM closed_contexts ORDER BY closed_ms, context_id")
        .and_then(|mut s| s.query_map([], |row| row.get(0))?.collect())
        .map_err(err("query closed conversations"))
}

pub(crate) fn reminders(
    conn: &Connection,
    task_id: &str,
    active_only: bool,
) -> Result<Vec<ReminderRecord>, StoreError> {
    let sql = if active_only {
        "SELECT reminder_json FROM reminders WHERE task_id = ?1 AND active = 1 ORDER BY seq"
    } else {
        "SELECT reminder_json FROM reminders WHERE task_id = ?1 ORDER BY seq"
    };
    let mut stmt = conn.prepare_cached(sql).map_err(err("prepare reminders"))?;
    let rows =
        stmt.query_map(params![task_id], |row| row.get::<_, String>(0)).map_err(err("query reminders"))?;
    let mut out = Vec::new();
    for json in rows {
        out.push(decode_reminder(&json.map_err(err("read reminder"))?)?);
    }
    Ok(out)
}

pub(crate) fn get_reminder(
    conn: &Connection,
    task_id: &str,
    id: &str,
) -> Result<Option<ReminderRecord>, StoreError> {
    conn.prepare_cached("SELECT reminder_json FROM reminders WHERE task_id = ?1 AND id = ?2")
        .and_then(|mut s| s.query_row(params![task_id, id], |row| row.get::<_, String>(0)).optional())
        .map_err(err("query reminder"))?
        .map(|json| decode_reminder(&json))
        .transpose()
}

pub(crate) fn journal(conn: &mut Connection, task_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
    let rows: Vec<(u32, String)> = conn
        .prepare_cached("SELECT seq, body FROM journal WHERE task_id = ?1 ORDER BY seq")
        .and_then(|mut s| {
            s.query_map(rusqlite::params![task_id], |row| Ok((row.get(0)?, row.get(1)?)))?.collect()
        })
        .map_err(err("read journal"))?;
    rows.iter().map(|(seq, body)| crate::codec::decode_entry(task_id, *seq, body)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plans of a listing's count and page, on the current schema:
    /// each plan's steps, joined.
    fn plans(q: &TaskQuery) -> (String, String) {
        let mut conn = Connection::open_in_memory().unwrap();
        super::super::schema::migrate(&mut conn).unwrap();
        let plan = |sql: &str, args: &[Value]| {
            let mut s = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let steps = s.query_map(params_from_iter(args.iter()), |r| r.get::<_, String>(3)).unwrap();
            steps.map(Result::unwrap).collect::<Vec<_>>().join("; ")
        };
        let sql = ListSql::of(q);
        (plan(&sql.count, &sql.args), plan(&sql.page, &sql.page_args))
    }

    fn query(owner: Option<&str>, context: Option<&str>, state: Option<TaskState>) -> TaskQuery {
        TaskQuery {
            owner: owner.map(str::to_owned),
            context_id: context.map(str::to_owned),
            state,
            updated_since_ms: None,
            after: Some((5, "t".into())),
            limit: 50,
            max_bytes: 0,
        }
    }

    const LIVE: [TaskState; 4] =
        [TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired];

    #[test]
    fn a_listing_of_one_conversation_reads_only_its_tasks() {
        for q in [
            query(Some("user:a"), Some("c1"), None),
            query(Some("user:a"), Some("c1"), Some(TaskState::Completed)),
            query(None, Some("c1"), None),
        ] {
            let (count, page) = plans(&q);
            for plan in [count, page] {
                assert!(
                    plan.starts_with("SEARCH tasks USING") && plan.contains("tasks_context (context_id=?"),
                    "{plan}"
                );
            }
        }
    }

    #[test]
    fn a_listing_by_a_state_that_is_not_final_reads_only_tasks_in_it() {
        for state in LIVE {
            let (count, page) = plans(&query(Some("user:a"), None, Some(state)));
            assert!(
                count.starts_with("SEARCH tasks USING COVERING INDEX tasks_state (state=? AND owner=?)"),
                "{count}"
            );
            assert!(page.starts_with("SEARCH tasks USING INDEX tasks_state (state=? AND owner=?)"), "{page}");
            let (count, page) = plans(&query(None, None, Some(state)));
            assert!(count.starts_with("SEARCH tasks USING COVERING INDEX tasks_state (state=?)"), "{count}");
            assert!(page.starts_with("SEARCH tasks USING INDEX tasks_state (state=?)"), "{page}");
        }
    }

    /// A final state or none: the page walks the tasks newest first and
    /// stops at the limit (no sort of every match); the count reads an
    /// index alone.
    #[test]
    fn other_listings_walk_the_tasks_newest_first_and_count_from_an_index() {
        let cases = [
            (
                query(Some("user:a"), None, None),
                "tasks_owner_updated (owner=?)",
                "tasks_owner_updated (owner=?",
            ),
            (
                query(Some("user:a"), None, Some(TaskState::Completed)),
                "tasks_state (state=? AND owner=?)",
                "tasks_owner_updated (owner=?",
            ),
            (query(None, None, Some(TaskState::Failed)), "tasks_state (state=?)", "tasks_updated"),
        ];
        for (q, counted, walked) in cases {
            let (count, page) = plans(&q);
            assert!(count.contains(&format!("COVERING INDEX {counted}")), "{count}");
            assert!(page.contains(walked) && !page.contains("TEMP B-TREE"), "{page}");
        }
    }
}
