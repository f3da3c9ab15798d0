//! The PostgreSQL schema: ordered migrations, tracked in `agentd_schema`
//! (the number applied), run at open under an advisory lock so that
//! replicas starting together apply each migration once.
//!
//! Several replicas share the schema: the event log's counter row
//! (`event_log.last_seq`) orders appends across processes, and `leases`
//! (`resource`, `holder`, `epoch`, `expires_at` by the database clock) say
//! which replica runs what (`leases.rs`).

use super::db;
use agentd_core::StoreError;
use deadpool_postgres::Client;

/// Migration `i` takes the schema from version `i` to `i + 1`. Append only.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: everything the SQLite schema holds after its 7 migrations. TEXT
    // (not JSONB) for the JSON columns: what is read back is byte for byte
    // what was written, as the shared codec expects.
    "CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        context_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        state INTEGER NOT NULL,
        updated_ms BIGINT NOT NULL,
        created_ms BIGINT NOT NULL,
        task_json TEXT NOT NULL,
        status_history_json TEXT NOT NULL,
        meta_json TEXT NOT NULL,
        version BIGINT NOT NULL
    );
    CREATE INDEX tasks_updated ON tasks (updated_ms DESC, id DESC);
    CREATE INDEX tasks_owner_updated ON tasks (owner, updated_ms DESC, id DESC);
    CREATE INDEX tasks_context ON tasks (context_id, created_ms, id);
    CREATE INDEX tasks_state ON tasks (state, updated_ms, id);
    CREATE TABLE push_configs (
        task_id TEXT NOT NULL,
        id TEXT NOT NULL,
        owner TEXT NOT NULL,
        config_json TEXT NOT NULL,
        created_seq BIGINT GENERATED ALWAYS AS IDENTITY,
        PRIMARY KEY (task_id, id)
    );
    CREATE TABLE outbox (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        task_id TEXT NOT NULL,
        config_id TEXT,
        bridge_json TEXT,
        body TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        not_before_ms BIGINT NOT NULL,
        CHECK ((config_id IS NULL) <> (bridge_json IS NULL)),
        FOREIGN KEY (task_id, config_id) REFERENCES push_configs (task_id, id)
            ON DELETE CASCADE
    );
    CREATE INDEX outbox_config ON outbox (task_id, config_id);
    CREATE INDEX outbox_due ON outbox (not_before_ms);
    CREATE TABLE closed_contexts (
        context_id TEXT PRIMARY KEY,
        closed_by TEXT NOT NULL,
        closed_ms BIGINT NOT NULL
    );
    CREATE TABLE reminders (
        task_id TEXT NOT NULL,
        id TEXT NOT NULL,
        active BOOLEAN NOT NULL,
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        reminder_json TEXT NOT NULL,
        PRIMARY KEY (task_id, id)
    );
    CREATE INDEX reminders_order ON reminders (task_id, seq);
    CREATE TABLE events (
        seq BIGINT PRIMARY KEY,
        ts_ms BIGINT NOT NULL,
        kind TEXT NOT NULL,
        task_id TEXT,
        owner TEXT,
        data_json TEXT NOT NULL,
        annotations_json TEXT
    );
    CREATE INDEX events_ts ON events (ts_ms);
    CREATE TABLE event_log (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        last_seq BIGINT NOT NULL,
        pruned_through BIGINT NOT NULL
    );
    INSERT INTO event_log (id, last_seq, pruned_through) VALUES (1, 0, 0);",
    // 2: the step journal of running turns (`agentd_core::journal`); the
    // commit that ends a task removes its rows.
    "CREATE TABLE journal (
        task_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
    );",
    // 3: leases of running work and the replicas holding them
    // (`agentd_core::lease`). A released lease keeps its row and epoch
    // (holder '' and expired), so epochs never repeat for a resource.
    "CREATE TABLE leases (
        resource TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        epoch BIGINT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
    );
    CREATE INDEX leases_expiry ON leases (expires_at);
    CREATE TABLE replicas (
        id TEXT PRIMARY KEY,
        seen_at TIMESTAMPTZ NOT NULL
    );",
    // 4: the two listing indexes in ascending order, as SQLite's (its
    // migration 11): a new task's entry is appended at each index's right
    // edge, where PostgreSQL inserts without descending from the root, and
    // a listing scans the index backwards for its newest-first order. The
    // rebuild holds the tasks table until it commits.
    "DROP INDEX tasks_updated;
    DROP INDEX tasks_owner_updated;
    CREATE INDEX tasks_updated ON tasks (updated_ms, id);
    CREATE INDEX tasks_owner_updated ON tasks (owner, updated_ms, id);",
];

/// The advisory lock key migrations run under (any constant; "agentd" in ASCII).
const MIGRATION_LOCK: i64 = 0x6167_656e_7464;

/// Applies every migration not yet applied, in one transaction with the
/// version bump: a failed migration leaves the database as it was.
pub(crate) async fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(db("begin migration"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(db("lock migrations"))?;
    // Looked up rather than `CREATE … IF NOT EXISTS`, whose NOTICE the
    // driver would log at every start.
    let exists: bool = tx
        .query_one("SELECT to_regclass('agentd_schema') IS NOT NULL", &[])
        .await
        .map_err(db("look for agentd_schema"))?
        .get(0);
    if !exists {
        tx.batch_execute("CREATE TABLE agentd_schema (version INTEGER NOT NULL)")
            .await
            .map_err(db("create agentd_schema"))?;
    }
    let row =
        tx.query_opt("SELECT version FROM agentd_schema", &[]).await.map_err(db("read schema version"))?;
    let version: i32 = match row {
        Some(row) => row.get(0),
        None => {
            tx.execute("INSERT INTO agentd_schema (version) VALUES (0)", &[])
                .await
                .map_err(db("init schema version"))?;
            0
        }
    };
    let known = MIGRATIONS.len() as i32;
    if !(0..=known).contains(&version) {
        return Err(StoreError::backend(format!(
            "database schema version {version} is not one this build knows (0..={known})"
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        tx.batch_execute(sql).await.map_err(|e| StoreError::backend(format!("migration {}: {e}", i + 1)))?;
    }
    tx.execute("UPDATE agentd_schema SET version = $1", &[&known]).await.map_err(db("set schema version"))?;
    tx.commit().await.map_err(db("commit migration"))
}

/// The number of migrations applied to the database.
pub(crate) async fn version(client: &Client) -> Result<i64, StoreError> {
    let row = client
        .query_one("SELECT version FROM agentd_schema", &[])
        .await
        .map_err(db("read schema version"))?;
    Ok(i64::from(row.get::<_, i32>(0)))
}
