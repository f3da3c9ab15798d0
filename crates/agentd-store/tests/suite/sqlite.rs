//! `SqliteStore`: the shared conformance suite, plus what only a real file
//! can show: reopen and migrations, concurrent group commits, one bad batch
//! failing alone, and durability across `kill -9`.

use agentd_core::{Batch, Store, TaskQuery};
use agentd_proto::TaskState::Working;
use agentd_store::conformance::build::{full_record, push_config, record, tasks_batch};
use agentd_store::{SqliteOptions, SqliteStore};
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use tempfile::TempDir;

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path, SqliteOptions::default()).expect("open store")
}

fn fixture() -> (TempDir, SqliteStore) {
    let dir = TempDir::new().expect("temp dir");
    let store = open(&dir.path().join("agentd.db"));
    (dir, store)
}

agentd_store::conformance_tests!(fixture);

#[tokio::test]
async fn conformance_with_synchronous_normal() {
    agentd_store::conformance::run_all(|| {
        let dir = TempDir::new().expect("temp dir");
        let options = SqliteOptions { synchronous_full: false };
        let store = SqliteStore::open(&dir.path().join("n.db"), options).expect("open store");
        (dir, store)
    })
    .await;
}

#[tokio::test]
async fn reopen_sees_everything_and_migrations_are_idempotent() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    let rec = full_record("t1", "alice", "ctx", 1_700_000_000_000);
    {
        let store = open(&path);
        assert_eq!(store.schema_version().await.ok(), Some(SqliteStore::latest_schema_version()));
        let batch = Batch {
            tasks: vec![rec.clone()],
            push_upserts: vec![push_config("t1", "p1", "alice")],
            push_events: vec![("t1".into(), "event".into())],
            ..Default::default()
        };
        store.commit(batch).await.expect("commit");
    }
    for _ in 0..3 {
        let store = open(&path);
        assert_eq!(store.schema_version().await.ok(), Some(SqliteStore::latest_schema_version()));
        assert_eq!(store.get_task("t1").await.expect("get"), Some(rec.clone()));
        let configs = store.list_push_configs("t1").await.expect("list configs");
        assert_eq!(configs, vec![push_config("t1", "p1", "alice")]);
        let due = store.due_outbox(i64::MAX, 10).await.expect("due");
        assert_eq!(due.iter().map(|i| i.body.as_str()).collect::<Vec<_>>(), ["event"]);
    }
}

#[tokio::test]
async fn refuses_a_newer_schema() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    drop(open(&path));
    let conn = rusqlite::Connection::open(&path).expect("raw open");
    conn.pragma_update(None, "user_version", 99).expect("bump version");
    drop(conn);
    let err = SqliteStore::open(&path, SqliteOptions::default()).expect_err("newer schema");
    assert!(err.to_string().contains("99"), "error names the version: {err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_all_land() {
    let (_dir, store) = fixture();
    let store = Arc::new(store);
    let mut handles = Vec::new();
    for w in 0..50 {
        let store = Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            for n in 0..10 {
                let id = format!("w{w:02}-{n:02}");
                let rec = record((&id, "alice", "ctx", Working, 1_000 + n));
                store.commit(tasks_batch(vec![rec])).await.expect("commit");
            }
        }));
    }
    for h in handles {
        h.await.expect("writer task");
    }
    let page = store.list_tasks(&TaskQuery { limit: 1_000, ..Default::default() }).await.expect("list");
    assert_eq!(page.total, 500);
    let ids: HashSet<String> = page.tasks.into_iter().map(|r| r.task.id).collect();
    assert_eq!(ids.len(), 500, "every commit is readable once");
    assert!(store.get_task("w49-09").await.expect("get").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bad_batch_fails_alone() {
    let (dir, store) = fixture();
    let raw = rusqlite::Connection::open(dir.path().join("agentd.db")).expect("raw open");
    raw.execute_batch(
        "CREATE TRIGGER poison BEFORE INSERT ON tasks WHEN NEW.id = 'poison'
         BEGIN SELECT RAISE(ABORT, 'poisoned batch'); END;",
    )
    .expect("install trigger");
    drop(raw);
    let store = Arc::new(store);
    let mut handles = Vec::new();
    for i in 0..200 {
        let store = Arc::clone(&store);
        let id = if i == 100 { "poison".to_owned() } else { format!("ok-{i:03}") };
        handles.push(tokio::spawn(async move {
            let outcome = store.commit(tasks_batch(vec![record((&id, "a", "c", Working, 1))])).await;
            (id, outcome)
        }));
    }
    for h in handles {
        let (id, outcome) = h.await.expect("commit task");
        match id.as_str() {
            "poison" => assert!(outcome.is_err(), "the poisoned batch must fail"),
            _ => assert!(outcome.is_ok(), "batch {id} must not fail with the poisoned one: {outcome:?}"),
        }
    }
    let page = store.list_tasks(&TaskQuery { limit: 1_000, ..Default::default() }).await.expect("list");
    assert_eq!(page.total, 199, "every good batch landed, the poisoned one did not");
    assert!(store.get_task("poison").await.expect("get").is_none());
}

/// Writers racing on the same tasks, committed in groups: each stale
/// batch is refused alone (`groups.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_batches_fail_alone_in_a_group() {
    let (_dir, store) = fixture();
    crate::groups::stale_batches_fail_alone(Arc::new(store)).await;
}

/// A raw connection to a new file at `path` at the schema before the first
/// migration whose SQL contains `marker`, and that schema's version.
fn at_schema_before(path: &Path, marker: &str) -> (rusqlite::Connection, usize) {
    let migrations = SqliteStore::migrations();
    let before = migrations.iter().position(|m| m.contains(marker)).expect("the migration");
    let conn = rusqlite::Connection::open(path).expect("raw open");
    for m in &migrations[..before] {
        conn.execute_batch(m).expect("older migration");
    }
    (conn, before)
}

#[tokio::test]
async fn rows_written_before_versions_read_back_as_version_1() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    // A file at the schema before task versions, holding a task row.
    {
        let (conn, before) = at_schema_before(&path, "version");
        conn.execute_batch(&format!(
            "INSERT INTO tasks (id, context_id, owner, state, updated_ms, created_ms, task_json, status_history_json)
             VALUES ('old', 'ctx', 'alice', 2, 1000, 1000,
                     '{{\"id\":\"old\",\"contextId\":\"ctx\",\"status\":{{\"state\":\"TASK_STATE_WORKING\"}}}}', '[]');
             PRAGMA user_version = {before};"
        ))
        .expect("downgrade");
    }
    let store = open(&path);
    assert_eq!(store.schema_version().await.ok(), Some(SqliteStore::latest_schema_version()));
    let old = store.get_task("old").await.expect("get").expect("the old row is still there");
    assert_eq!(old.version, 1, "a row from before versions is its first version");
    // The state index, rebuilt by a later migration, finds the old row.
    let q = TaskQuery { state: Some(Working), owner: Some("alice".into()), limit: 10, ..Default::default() };
    let page = store.list_tasks(&q).await.expect("list by state");
    assert_eq!((page.total, page.tasks.len()), (1, 1), "{page:?}");
    let stale = store.commit(tasks_batch(vec![old.clone()])).await;
    assert!(matches!(stale, Err(agentd_core::StoreError::Conflict { .. })), "{stale:?}");
    let next = agentd_core::TaskRecord { version: 2, ..old };
    store.commit(tasks_batch(vec![next])).await.expect("the next version commits");
    assert_eq!(store.get_task("old").await.expect("get").map(|t| t.version), Some(2));
}

const CHILD_ENV: &str = "AGENTD_STORE_CHILD";

/// The child's side of [`kill9_loses_no_acknowledged_commit`]: the writer
/// that test kills. It commits from 8 tasks and prints `ACK <id>` after
/// each commit.
fn write_until_killed(path: &Path) {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let store = Arc::new(open(path));
        let mut handles = Vec::new();
        for w in 0..8 {
            let store = Arc::clone(&store);
            handles.push(tokio::spawn(async move {
                for n in 0..100_000 {
                    let id = format!("w{w}-{n:06}");
                    let rec = record((&id, "alice", "ctx", Working, 1_000 + n));
                    store.commit(tasks_batch(vec![rec])).await.expect("child commit");
                    let mut out = std::io::stdout().lock();
                    if writeln!(out, "ACK {id}").and_then(|()| out.flush()).is_err() {
                        return; // the parent is gone
                    }
                }
            }));
        }
        for h in handles {
            let _ = h.await;
        }
    });
}

/// This module's path as the test harness names it (without the crate).
fn module() -> &'static str {
    module_path!().split_once("::").map_or("", |(_, m)| m)
}

/// The test runs itself again as a child process, with `AGENTD_STORE_CHILD`
/// naming the database in that child's environment only: there it is the
/// writer that gets killed.
#[test]
fn kill9_loses_no_acknowledged_commit() {
    if let Some(path) = std::env::var_os(CHILD_ENV) {
        return write_until_killed(Path::new(&path));
    }
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    let name = format!("{}::kill9_loses_no_acknowledged_commit", module());
    let mut child = Command::new(std::env::current_exe().expect("current exe"))
        .args([&name, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked = Vec::new();
    while acked.len() < 1_000 {
        match lines.next() {
            Some(Ok(line)) => acked.extend(line.strip_prefix("ACK ").map(str::to_owned)),
            _ => break,
        }
    }
    assert!(acked.len() >= 1_000, "child stopped early after {} acks", acked.len());
    child.kill().expect("SIGKILL the child");
    // Every line already written was acknowledged before the kill.
    acked.extend(lines.map_while(Result::ok).filter_map(|l| l.strip_prefix("ACK ").map(str::to_owned)));
    let status = child.wait().expect("wait child");
    assert!(!status.success(), "the child must have been killed, not finished");

    let integrity: String = rusqlite::Connection::open(&path)
        .and_then(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
        .expect("integrity check");
    assert_eq!(integrity, "ok");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let store = open(&path);
        let page =
            store.list_tasks(&TaskQuery { limit: 1_000_000, ..Default::default() }).await.expect("list");
        let stored: HashSet<String> = page.tasks.into_iter().map(|r| r.task.id).collect();
        let missing: Vec<&String> = acked.iter().filter(|id| !stored.contains(*id)).collect();
        assert!(
            missing.is_empty(),
            "{} of {} acknowledged commits lost: {:?}",
            missing.len(),
            acked.len(),
            &missing[..missing.len().min(10)]
        );
        assert!(stored.len() >= acked.len());
        eprintln!("kill -9 after {} acknowledged commits; {} rows stored", acked.len(), stored.len());
    });
}

#[tokio::test]
async fn rows_written_before_the_meta_column_read_back_with_empty_meta() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    // A file at schema 1 (no meta_json), with a row written as that version did.
    let conn = rusqlite::Connection::open(&path).expect("raw open");
    conn.execute_batch(SqliteStore::migrations()[0]).expect("schema 1");
    conn.execute_batch(
        "INSERT INTO tasks (id, context_id, owner, state, updated_ms, created_ms, task_json, status_history_json)
         VALUES ('old', 'ctx', 'alice', 2, 1000, 1000,
                 '{\"id\":\"old\",\"contextId\":\"ctx\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}', '[]');
         PRAGMA user_version = 1;",
    )
    .expect("downgrade");
    drop(conn);
    let store = open(&path);
    assert_eq!(store.schema_version().await.ok(), Some(SqliteStore::latest_schema_version()));
    let rec = store.get_task("old").await.expect("get").expect("the old row is still there");
    assert_eq!(rec.meta, agentd_core::TaskMeta::default(), "an old row has no link, parent or command");
}

#[tokio::test]
async fn pending_push_rows_survive_the_outbox_rebuild_for_bridges() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    // A file at the schema before the outbox rebuild (config_id required, no
    // bridge column), holding a pending push delivery as that version left it.
    let (conn, before) = at_schema_before(&path, "bridge_json");
    conn.execute_batch(&format!(
        "INSERT INTO push_configs (task_id, id, owner, config_json, created_seq)
            VALUES ('t1', 'p1', 'alice', '{{\"taskId\":\"t1\",\"id\":\"p1\",\"url\":\"https://h.example/x\"}}', 1);
         INSERT INTO outbox (id, task_id, config_id, body, attempts, not_before_ms)
            VALUES (41, 't1', 'p1', 'pending-event', 3, 5);
         PRAGMA user_version = {before};"
    ))
    .expect("downgrade");
    drop(conn);
    let store = open(&path);
    assert_eq!(store.schema_version().await.ok(), Some(SqliteStore::latest_schema_version()));
    let due = store.due_outbox(i64::MAX, 10).await.expect("due");
    assert_eq!(due.len(), 1, "{due:?}");
    assert_eq!((due[0].id, due[0].body.as_str(), due[0].attempts), (41, "pending-event", 3));
    assert_eq!(due[0].target.key(), "p1");
    // New rows get later ids than the kept one.
    let bridge = agentd_core::BridgeDelivery {
        task_id: "t1".into(),
        target: agentd_core::BridgeTarget {
            channel: "ops".into(),
            kind: "webhook".into(),
            url: "https://h.example/b".into(),
        },
        body: "b".into(),
    };
    store.commit(Batch { bridge_deliveries: vec![bridge], ..Default::default() }).await.expect("commit");
    let due = store.due_outbox(i64::MAX, 10).await.expect("due");
    assert_eq!(due.iter().map(|i| i.id > 41).collect::<Vec<_>>(), [false, true]);
}

#[tokio::test]
async fn event_seqs_survive_a_reopen() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    let ev = |n: i64| agentd_core::NewEvent {
        ts: agentd_proto::Timestamp::from_millis(n).expect("ts"),
        kind: agentd_proto::ext::events::EventKind::Lifecycle,
        task_id: None,
        owner: None,
        data: serde_json::json!({"n": n}).into(),
        annotations: None,
    };
    let store = open(&path);
    store.commit(Batch { events: vec![ev(1), ev(2)], ..Batch::default() }).await.expect("commit");
    drop(store);
    let store = open(&path);
    assert_eq!(store.event_log_bounds().await.expect("bounds").last, 2, "the log is durable");
    let mut rx = store.subscribe_events();
    store.commit(Batch { events: vec![ev(3)], ..Batch::default() }).await.expect("commit");
    assert_eq!(rx.try_recv().expect("announced").seq, 3, "seqs continue after a reopen");
    let all = store.read_events(0, 10).await.expect("read");
    assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
}

/// Until a push config exists, SQLite says none may (the engine then
/// builds no push bodies) and push events wake no delivery worker; a
/// reopened store remembers that one exists.
#[tokio::test]
async fn push_events_cost_nothing_until_a_push_config_exists() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    let store = open(&path);
    assert!(!store.may_have_push_configs(), "a new database has no push config");
    let mut batch = tasks_batch(vec![record(("t1", "alice", "c", Working, 1_000))]);
    batch.push_events = vec![("t1".into(), "e1".into())];
    store.commit(batch).await.expect("commit");
    let woken = tokio::select! {
        biased;
        () = store.outbox_queued() => true,
        () = std::future::ready(()) => false,
    };
    assert!(!woken, "no row was queued: nobody is woken");
    let config = Batch { push_upserts: vec![push_config("t1", "p1", "alice")], ..Default::default() };
    store.commit(config).await.expect("commit");
    assert!(store.may_have_push_configs());
    drop(store);
    assert!(open(&path).may_have_push_configs(), "found again at open");
}

/// GetTask's read decodes a small row where it is asked for and a big one
/// (over 64 KiB of JSON) on the blocking pool: both read back whole, each
/// time, from a pool that has connections to lend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_and_big_tasks_read_back_whole_again_and_again() {
    let (_dir, store) = fixture();
    let small = record(("small", "alice", "ctx", Working, 1_000));
    let mut big = record(("big", "alice", "ctx", Working, 1_000));
    big.task.history = Some(vec![agentd_proto::Message::agent_text("x".repeat(200_000))]);
    store.commit(tasks_batch(vec![small.clone(), big.clone()])).await.expect("commit");
    for _ in 0..3 {
        let read = store.get_task("small").await.expect("get small").expect("small exists");
        assert_eq!(read.task, small.task);
        let read = store.get_task("big").await.expect("get big").expect("big exists");
        assert_eq!(read.task, big.task, "the big task reads back whole");
        assert!(store.get_task("none").await.expect("get missing").is_none());
    }
}

/// A file at schema 9 (events numbered by AUTOINCREMENT) with the events
/// from `kept_from` of the `appended`, retention having removed the rest.
fn events_at_schema_9(path: &Path, appended: i64, kept_from: i64) {
    let conn = rusqlite::Connection::open(path).expect("raw open");
    for m in &SqliteStore::migrations()[..9] {
        conn.execute_batch(m).expect("older migration");
    }
    for n in 1..=appended {
        conn.execute(
            "INSERT INTO events (ts_ms, kind, task_id, owner, data_json) VALUES (?1, 'task', 't', 'alice', ?2)",
            rusqlite::params![n * 1_000, format!("{{\"n\":{n}}}")],
        )
        .expect("append under AUTOINCREMENT");
    }
    conn.execute("DELETE FROM events WHERE seq < ?1", [kept_from]).expect("prune");
    // An emptied log's last seq is left to `sqlite_sequence` alone, which
    // the upgrade must carry over.
    if kept_from <= appended {
        conn.execute("UPDATE event_log SET pruned_through = ?1", [kept_from - 1]).expect("record pruning");
    }
    conn.execute_batch("PRAGMA user_version = 9;").expect("mark schema 9");
}

fn one_event(n: i64) -> Batch {
    let ev = agentd_core::NewEvent {
        ts: agentd_proto::Timestamp::from_millis(n * 1_000).expect("ts"),
        kind: agentd_proto::ext::events::EventKind::Task,
        task_id: Some("t".into()),
        owner: Some("alice".into()),
        data: serde_json::json!({ "n": n }).into(),
        annotations: None,
    };
    Batch { events: vec![ev], ..Batch::default() }
}

/// The upgrade that drops the log's AUTOINCREMENT keeps every event and
/// its seq, and the seqs go on where they were, also after retention had
/// emptied the log (where only `sqlite_sequence` knew the last one).
#[tokio::test]
async fn the_event_log_upgrade_keeps_seqs_and_never_reuses_one() {
    for (kept_from, expected) in [(3, vec![3, 4, 5]), (6, vec![])] {
        let dir = TempDir::new().expect("temp dir");
        let path = dir.path().join("agentd.db");
        events_at_schema_9(&path, 5, kept_from);
        let store = open(&path);
        assert_eq!(store.schema_version().await.ok(), Some(SqliteStore::latest_schema_version()));
        let kept: Vec<u64> = store.read_events(0, 100).await.expect("read").iter().map(|e| e.seq).collect();
        assert_eq!(kept, expected, "the events kept, with their seqs");
        let b = store.event_log_bounds().await.expect("bounds");
        assert_eq!((b.last, b.pruned_through), (5, (kept_from - 1) as u64), "bounds after the upgrade");
        store.commit(one_event(6)).await.expect("append");
        let tail = store.read_events(5, 10).await.expect("tail");
        assert_eq!(tail.iter().map(|e| e.seq).collect::<Vec<_>>(), [6], "the next seq is the next one");
    }
}

/// The upgrade that turns the two listing indexes ascending keeps the
/// listings' order: newest first, ties by id from the highest, page after
/// page, for one owner and for all. (That a listing walks the index rather
/// than sorting its matches, the plan tests of `sqlite::read` check.)
#[tokio::test]
async fn listings_read_newest_first_across_the_ascending_index_upgrade() {
    let dir = TempDir::new().expect("temp dir");
    let path = dir.path().join("agentd.db");
    {
        let (conn, before) = at_schema_before(&path, "tasks (updated_ms, id)");
        for &(id, owner, updated) in crate::listing::ROWS {
            conn.execute(
                "INSERT INTO tasks (id, context_id, owner, state, updated_ms, created_ms, task_json, status_history_json)
                 VALUES (?1, 'ctx', ?2, 3, ?3, ?3, ?4, '[]')",
                rusqlite::params![id, owner, updated, crate::listing::task_json(id)],
            )
            .expect("an old row");
        }
        conn.execute_batch(&format!("PRAGMA user_version = {before};")).expect("mark the old schema");
    }
    let store = open(&path);
    assert_eq!(store.schema_version().await.ok(), Some(SqliteStore::latest_schema_version()));
    crate::listing::lists_rows_newest_first(&store).await;
}
