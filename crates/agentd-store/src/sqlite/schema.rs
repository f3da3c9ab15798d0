//! The SQLite schema: connection pragmas and the ordered migrations, tracked
//! in `PRAGMA user_version` (the number of migrations applied).

use crate::codec::err;
use agentd_core::StoreError;
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;
use std::time::Duration;

/// How long a connection waits on a lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The writer connection's page cache, in KiB (as a negative `cache_size`).
const WRITER_CACHE_KIB: i64 = -512;

/// Migration `i` takes the schema from version `i` to `i + 1`. Append only.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: tasks, push configs, outbox.
    "CREATE TABLE tasks (
        id TEXT PRIMARY KEY NOT NULL,
        context_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        state INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        created_ms INTEGER NOT NULL,
        task_json TEXT NOT NULL,
        status_history_json TEXT NOT NULL
    );
    CREATE INDEX tasks_updated ON tasks (updated_ms DESC, id DESC);
    CREATE INDEX tasks_owner_updated ON tasks (owner, updated_ms DESC, id DESC);
    CREATE INDEX tasks_context ON tasks (context_id, owner);
    CREATE INDEX tasks_state ON tasks (state);
    CREATE TABLE push_configs (
        task_id TEXT NOT NULL,
        id TEXT NOT NULL,
        owner TEXT NOT NULL,
        config_json TEXT NOT NULL,
        created_seq INTEGER NOT NULL,
        PRIMARY KEY (task_id, id)
    );
    CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        config_id TEXT NOT NULL,
        body TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        not_before_ms INTEGER NOT NULL,
        FOREIGN KEY (task_id, config_id) REFERENCES push_configs (task_id, id)
            ON DELETE CASCADE
    );
    CREATE INDEX outbox_config ON outbox (task_id, config_id);
    CREATE INDEX outbox_due ON outbox (not_before_ms);",
    // 2: how a task came to be (link, parent, command), as JSON.
    "ALTER TABLE tasks ADD COLUMN meta_json TEXT NOT NULL DEFAULT '{}';",
    // 3: conversations closed by `conversation.close`.
    "CREATE TABLE closed_contexts (
        context_id TEXT PRIMARY KEY NOT NULL,
        closed_by TEXT NOT NULL,
        closed_ms INTEGER NOT NULL
    );",
    // 4: bridge deliveries share the outbox: a row names a push config
    // (config_id) or carries a bridge target (bridge_json). SQLite cannot
    // relax a NOT NULL in place, so the table is rebuilt, ids kept.
    "ALTER TABLE outbox RENAME TO outbox_v2;
    CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        config_id TEXT,
        bridge_json TEXT,
        body TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        not_before_ms INTEGER NOT NULL,
        CHECK ((config_id IS NULL) <> (bridge_json IS NULL)),
        FOREIGN KEY (task_id, config_id) REFERENCES push_configs (task_id, id)
            ON DELETE CASCADE
    );
    INSERT INTO outbox (id, task_id, config_id, bridge_json, body, attempts, not_before_ms)
        SELECT id, task_id, config_id, NULL, body, attempts, not_before_ms FROM outbox_v2;
    DROP TABLE outbox_v2;
    CREATE INDEX outbox_config ON outbox (task_id, config_id);
    CREATE INDEX outbox_due ON outbox (not_before_ms);",
    // 5: reminders (InjectTaskReminder), one row each; `seq` keeps the
    // order of first commit.
    "CREATE TABLE reminders (
        task_id TEXT NOT NULL,
        id TEXT NOT NULL,
        active INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        reminder_json TEXT NOT NULL,
        PRIMARY KEY (task_id, id)
    );
    CREATE INDEX reminders_active ON reminders (task_id, active, seq);",
    // 6: the event log of the events feed. AUTOINCREMENT: a seq is never
    // reused, even after retention removed the newest rows.
    "CREATE TABLE events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        ts_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        task_id TEXT,
        owner TEXT,
        data_json TEXT NOT NULL,
        annotations_json TEXT
    );
    CREATE INDEX events_ts ON events (ts_ms);
    CREATE TABLE event_log (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        pruned_through INTEGER NOT NULL
    );
    INSERT INTO event_log (id, pruned_through) VALUES (1, 0);",
    // 7: each task row's version, checked by every commit that writes it;
    // rows written before count as their first version.
    "ALTER TABLE tasks ADD COLUMN version INTEGER NOT NULL DEFAULT 1;",
    // 8: the step journal of running turns (`agentd_core::journal`); the
    // commit that ends a task removes its rows.
    "CREATE TABLE journal (
        task_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
    ) WITHOUT ROWID;",
    // 9: a state's tasks by owner: an owner's count of tasks in a state
    // reads the index alone, not each of their tasks' rows.
    "DROP INDEX tasks_state;
    CREATE INDEX tasks_state ON tasks (state, owner);",
    // 10: the event log without AUTOINCREMENT and without its `ts_ms`
    // index: each commit wrote `sqlite_sequence` and that index, two of the
    // dozen pages a SendMessage's commit writes. A seq is still never
    // reused: the next is one past the newest row or, once retention
    // emptied the log, past `pruned_through` (the append statement says
    // so), and retention by age walks the log from its oldest row. An
    // emptied log's high-water mark moves from `sqlite_sequence` into
    // `pruned_through` here.
    "UPDATE event_log SET pruned_through = MAX(pruned_through,
        COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0))
        WHERE NOT EXISTS (SELECT 1 FROM events);
    ALTER TABLE events RENAME TO events_v9;
    CREATE TABLE events (
        seq INTEGER PRIMARY KEY,
        ts_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        task_id TEXT,
        owner TEXT,
        data_json TEXT NOT NULL,
        annotations_json TEXT
    );
    INSERT INTO events SELECT * FROM events_v9;
    DROP TABLE events_v9;",
    // 11: the two listing indexes in ascending order. A listing walks one
    // backwards for its newest-first order as it walked the descending one
    // forwards, but a new task's entry is now appended at the index's right
    // edge, where a descending index put it at its left edge, and each
    // commit paid for that (a SendMessage's commit ran 2% more
    // instructions with the descending pair).
    "DROP INDEX tasks_updated;
    DROP INDEX tasks_owner_updated;
    CREATE INDEX tasks_updated ON tasks (updated_ms, id);
    CREATE INDEX tasks_owner_updated ON tasks (owner, updated_ms, id);",
];

/// Opens the one read-write connection: WAL, busy timeout, foreign keys,
/// the requested `synchronous` level, then runs pending migrations.
pub(crate) fn open_writer(path: &Path, synchronous_full: bool) -> Result<Connection, StoreError> {
    let mut conn = Connection::open(path).map_err(err("open database"))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err("set busy_timeout"))?;
    let mode: String =
        conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).map_err(err("set journal_mode"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::backend(format!("database refused WAL mode (got {mode})")));
    }
    let sync = if synchronous_full { "FULL" } else { "NORMAL" };
    conn.pragma_update(None, "synchronous", sync).map_err(err("set synchronous"))?;
    conn.pragma_update(None, "foreign_keys", true).map_err(err("set foreign_keys"))?;
    // The writer appends (ids and timestamps grow): its working set is the
    // right edge of each B-tree, far below SQLite's default 2 MiB cache.
    conn.pragma_update(None, "cache_size", WRITER_CACHE_KIB).map_err(err("set cache_size"))?;
    stable_plans(&conn)?;
    migrate(&mut conn)?;
    Ok(conn)
}

/// Opens the checkpointer's read-write connection (see `checkpoint`): it
/// syncs what it copies as the writer's `synchronous` level says.
pub(crate) fn open_checkpointer(path: &Path, synchronous_full: bool) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(err("open checkpointer"))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err("set busy_timeout"))?;
    let sync = if synchronous_full { "FULL" } else { "NORMAL" };
    conn.pragma_update(None, "synchronous", sync).map_err(err("set synchronous"))?;
    Ok(conn)
}

/// Opens a read-only connection for the read pool.
pub(crate) fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(err("open reader"))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err("set busy_timeout"))?;
    stable_plans(&conn)?;
    Ok(conn)
}

/// Plans that do not depend on the values bound. Without this, SQLite marks
/// a cached statement whose plan could use a bound value (`LIMIT ?`, for
/// one) and compiles it again on every execution with a new value: the
/// outbox poll after each commit cost a fifth of a SendMessage that way.
fn stable_plans(conn: &Connection) -> Result<(), StoreError> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map(drop).map_err(err("set QPSG"))
}

/// Applies every migration not yet applied, all in one transaction
/// together with the version bump (one commit, so one sync, when a fresh
/// database is created): a failed migration leaves the database as it
/// was. Running it again is a no-op.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let version: i64 =
        conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(err("read user_version"))?;
    let known = MIGRATIONS.len() as i64;
    if !(0..=known).contains(&version) {
        return Err(StoreError::backend(format!(
            "database schema version {version} is not one this build knows (0..={known})"
        )));
    }
    if version == known {
        return Ok(());
    }
    let tx = conn.transaction().map_err(err("begin migration"))?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.execute_batch(sql).map_err(|e| StoreError::backend(format!("migration {}: {e}", i + 1)))?;
    }
    tx.pragma_update(None, "user_version", known).map_err(err("set user_version"))?;
    tx.commit().map_err(err("commit migration"))
}

/// The schema version of an open connection.
pub(crate) fn version(conn: &Connection) -> Result<i64, StoreError> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0)).map_err(err("read user_version"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writer's `PRAGMA synchronous`: 1 is NORMAL, 2 is FULL.
    fn synchronous(full: bool) -> i64 {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = open_writer(&dir.path().join("agentd.db"), full).expect("open the writer");
        conn.pragma_query_value(None, "synchronous", |row| row.get(0)).expect("read synchronous")
    }

    #[test]
    fn the_writer_syncs_every_commit_unless_told_otherwise() {
        assert_eq!(synchronous(crate::SqliteOptions::default().synchronous_full), 2, "FULL by default");
        assert_eq!(synchronous(false), 1, "NORMAL when asked");
    }
}
