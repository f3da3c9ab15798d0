//! `PostgresStore` on a throw-away cluster of this test binary
//! (`agentd_store::testing::postgres`): the shared conformance suite, then
//! what only a database shared by processes shows: two store instances on
//! one database (as two replicas) racing on the same tasks, the events
//! feed gap-free across them and seen by both, outbox rows queued on one
//! waking the other's delivery worker, a lost LISTEN connection,
//! reopening and migrations, and credentials.

use agentd_core::{Batch, EventRecord, NewEvent, Store, StoreError, TaskRecord};
use agentd_proto::TaskState::{Completed, Failed, Working};
use agentd_proto::ext::events::EventKind;
use agentd_store::conformance::build::{full_record, push_config, record, tasks_batch, ts};
use agentd_store::testing::postgres;
use agentd_store::{PostgresOptions, PostgresStore};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

async fn open(options: &PostgresOptions) -> PostgresStore {
    PostgresStore::open(options).await.expect("open the PostgreSQL store")
}

async fn fixture() -> Option<((), PostgresStore)> {
    let options = postgres::database().await?;
    Some(((), open(&options).await))
}

agentd_store::conformance_tests!(async fixture);

/// Two instances on one new database (`None`: skipped).
async fn two_replicas() -> Option<(PostgresStore, PostgresStore)> {
    let options = postgres::database().await?;
    Some((open(&options).await, open(&options).await))
}

fn event(task_id: &str, who: &str) -> NewEvent {
    NewEvent {
        ts: ts(1_000),
        kind: EventKind::Task,
        task_id: Some(task_id.to_owned()),
        owner: Some("alice".into()),
        data: json!({"who": who}).into(),
        annotations: None,
    }
}

fn next(read: &TaskRecord, state: agentd_proto::TaskState) -> TaskRecord {
    let mut rec = read.clone();
    rec.task.status.state = state;
    rec.version = read.version + 1;
    rec
}

/// Receives until seq `last` arrived (or the deadline passed); every seq
/// received, in order.
async fn receive_through(rx: &mut broadcast::Receiver<Arc<EventRecord>>, last: u64) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while got.last().is_none_or(|&s| s < last) {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Ok(e)) => got.push(e.seq),
            Ok(Err(e)) => panic!("subscriber: {e} after {got:?}"),
            Err(_) => break,
        }
    }
    got
}

/// Two instances race on each version of each task: exactly one wins each,
/// the other gets a conflict and leaves no event; the feed's seqs are
/// gap-free in commit order; both instances' subscribers see every
/// committed event once, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_race_exactly_one_wins_each_version() {
    let Some((a, b)) = two_replicas().await else { return };
    let (a, b) = (Arc::new(a), Arc::new(b));
    let (mut rx_a, mut rx_b) = (a.subscribe_events(), b.subscribe_events());
    let tasks = 8;
    let versions = 6;
    for t in 0..tasks {
        let rec = record((&format!("t{t}"), "alice", "ctx", Working, 1_000));
        a.commit(Batch { events: vec![event(rec.id(), "create")], ..tasks_batch(vec![rec]) })
            .await
            .expect("create");
    }
    let mut racers = Vec::new();
    for t in 0..tasks {
        let (a, b) = (Arc::clone(&a), Arc::clone(&b));
        racers.push(tokio::spawn(async move {
            let id = format!("t{t}");
            let mut wins = Vec::new();
            for _ in 0..versions {
                let seen = a.get_task(&id).await.expect("read").expect("the task");
                let (mine, theirs) = (next(&seen, Completed), next(&seen, Failed));
                let batch = |rec: TaskRecord, who: &str| Batch {
                    events: vec![event(&id, who)],
                    ..tasks_batch(vec![rec])
                };
                let (ra, rb) = tokio::join!(a.commit(batch(mine, "a")), b.commit(batch(theirs, "b")));
                let loser = match (&ra, &rb) {
                    (Ok(()), Err(e)) | (Err(e), Ok(())) => e.clone(),
                    _ => panic!("{id} v{}: exactly one writer must win: {ra:?} {rb:?}", seen.version + 1),
                };
                let conflict = StoreError::Conflict {
                    task_id: id.clone(),
                    expected: seen.version,
                    found: seen.version + 1,
                };
                assert_eq!(loser, conflict, "{id}: the loser is told who won");
                wins.push(if ra.is_ok() { "a" } else { "b" });
            }
            (id, wins)
        }));
    }
    let mut expected_events = tasks;
    for r in racers {
        let (id, wins) = r.await.expect("racer");
        let stored = a.get_task(&id).await.expect("read").expect("the task");
        assert_eq!(stored.version, 1 + versions as u64, "{id}: one version per race");
        expected_events += wins.len();
    }
    let log = a.read_events(0, 10_000).await.expect("read the log");
    let seqs: Vec<u64> = log.iter().map(|e| e.seq).collect();
    let gap_free: Vec<u64> = (1..=expected_events as u64).collect();
    assert_eq!(seqs, gap_free, "one event per winning commit, seqs gap-free");
    let last = expected_events as u64;
    assert_eq!(receive_through(&mut rx_a, last).await, gap_free, "instance a's subscriber");
    assert_eq!(receive_through(&mut rx_b, last).await, gap_free, "instance b's subscriber");
}

/// Many writers on both instances append at once: the seqs stay gap-free
/// and each instance announces all of them, in order, exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_appends_on_two_instances_are_announced_in_order_everywhere() {
    let Some((a, b)) = two_replicas().await else { return };
    let (a, b) = (Arc::new(a), Arc::new(b));
    let (mut rx_a, mut rx_b) = (a.subscribe_events(), b.subscribe_events());
    let mut writers = Vec::new();
    for w in 0..16 {
        let store = if w % 2 == 0 { Arc::clone(&a) } else { Arc::clone(&b) };
        writers.push(tokio::spawn(async move {
            for n in 0..20 {
                let id = format!("w{w}-{n}");
                let events = vec![event(&id, "1"), event(&id, "2")];
                store
                    .commit(Batch { events, ..tasks_batch(vec![record((&id, "a", "c", Working, 1))]) })
                    .await
                    .expect("commit");
            }
        }));
    }
    for w in writers {
        w.await.expect("writer");
    }
    let all: Vec<u64> = (1..=640).collect();
    assert_eq!(a.event_log_bounds().await.expect("bounds").last, 640);
    assert_eq!(receive_through(&mut rx_a, 640).await, all, "instance a announces every seq once, in order");
    assert_eq!(receive_through(&mut rx_b, 640).await, all, "instance b announces every seq once, in order");
    // Both events of each batch are adjacent: a batch's seqs are one run.
    let log = b.read_events(0, 1_000).await.expect("read");
    for pair in log.chunks(2) {
        assert_eq!(pair[0].event.task_id, pair[1].event.task_id, "a batch's events are consecutive");
    }
}

/// When its LISTEN connection is cut, an instance connects again and
/// announces what another instance committed meanwhile (read from the
/// table), without a gap or a duplicate, and wakes its outbox worker:
/// notifications of queued rows may have been lost too. (The first
/// connection, made before open returned, wakes nobody: the worker's first
/// round comes after it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listener_reconnects_and_rescans() {
    let Some(options) = postgres::database().await else { return };
    let (a, b) = (open(&options).await, open(&options).await);
    let woken = async |s: &PostgresStore| {
        tokio::select! {
            biased;
            () = s.outbox_queued() => true,
            () = std::future::ready(()) => false,
        }
    };
    let mut rx_b = b.subscribe_events();
    a.commit(Batch { events: vec![event("x", "before")], ..Batch::default() }).await.expect("commit");
    assert_eq!(receive_through(&mut rx_b, 1).await, [1], "seen before the cut");
    assert!(!woken(&b).await, "b's first connection woke its outbox worker");
    // Cut every LISTEN connection of the database: the listeners' backends.
    let mut config = options.config().expect("config");
    config.dbname("postgres");
    let (client, connection) = config.connect(tokio_postgres::NoTls).await.expect("connect");
    #[allow(clippy::disallowed_methods, reason = "a test's own connection")]
    tokio::spawn(connection);
    let db = options.url.rsplit('/').next().expect("db name").to_owned();
    let cut = client
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = $1 AND query LIKE 'LISTEN%'",
            &[&db],
        )
        .await
        .expect("terminate listeners");
    assert!(cut >= 2, "both listeners were cut ({cut})");
    for n in 0..5 {
        a.commit(Batch { events: vec![event("x", &n.to_string())], ..Batch::default() })
            .await
            .expect("commit");
    }
    assert_eq!(receive_through(&mut rx_b, 6).await, [2, 3, 4, 5, 6], "the rest, once, in order");
    assert!(woken(&b).await, "b's listener connected again and woke its outbox worker");
}

#[tokio::test]
async fn reopen_sees_everything_and_migrations_are_idempotent() {
    let Some(options) = postgres::database().await else { return };
    let rec = full_record("t1", "alice", "ctx", 1_700_000_000_000);
    {
        let store = open(&options).await;
        assert_eq!(store.schema_version().await.ok(), Some(PostgresStore::latest_schema_version()));
        let batch = Batch {
            tasks: vec![rec.clone()],
            push_upserts: vec![push_config("t1", "p1", "alice")],
            push_events: vec![("t1".into(), "event".into())],
            events: vec![event("t1", "first")],
            ..Default::default()
        };
        store.commit(batch).await.expect("commit");
    }
    for _ in 0..3 {
        let store = open(&options).await;
        assert_eq!(store.schema_version().await.ok(), Some(PostgresStore::latest_schema_version()));
        assert_eq!(store.get_task("t1").await.expect("get"), Some(rec.clone()));
        let due = store.due_outbox(i64::MAX, 10).await.expect("due");
        assert_eq!(due.iter().map(|i| i.body.as_str()).collect::<Vec<_>>(), ["event"]);
        assert_eq!(store.event_log_bounds().await.expect("bounds").last, 1, "the log continues");
    }
}

/// The upgrade that turns the listing indexes ascending keeps the order
/// listings read tasks written before it in.
#[tokio::test]
async fn listings_read_newest_first_across_the_ascending_index_upgrade() {
    let Some(options) = postgres::database().await else { return };
    let migrations = PostgresStore::migrations();
    let before = migrations.iter().position(|m| m.contains("tasks (updated_ms, id)")).expect("the upgrade");
    let (client, connection) =
        options.config().expect("config").connect(tokio_postgres::NoTls).await.expect("connect");
    let connection = tokio::spawn(connection);
    for m in &migrations[..before] {
        client.batch_execute(m).await.expect("older migration");
    }
    client
        .batch_execute(&format!(
            "CREATE TABLE agentd_schema (version INTEGER NOT NULL); INSERT INTO agentd_schema VALUES ({before});"
        ))
        .await
        .expect("mark the old schema");
    for &(id, owner, updated) in crate::listing::ROWS {
        client
            .execute(
                "INSERT INTO tasks (id, context_id, owner, state, updated_ms, created_ms, task_json,
                     status_history_json, meta_json, version)
                 VALUES ($1, 'ctx', $2, 3, $3, $3, $4, '[]', '{}', 1)",
                &[&id, &owner, &updated, &crate::listing::task_json(id)],
            )
            .await
            .expect("an old row");
    }
    drop(client);
    let _ = connection.await;
    let store = open(&options).await;
    assert_eq!(store.schema_version().await.ok(), Some(PostgresStore::latest_schema_version()));
    crate::listing::lists_rows_newest_first(&store).await;
}

/// Stores opened at once on a fresh database apply the migrations once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_opens_migrate_once() {
    let Some(options) = postgres::database().await else { return };
    let open = || PostgresStore::open(&options);
    let (a, b, c, d) = tokio::join!(open(), open(), open(), open());
    for store in [a, b, c, d] {
        let store = store.expect("every open succeeds");
        assert_eq!(store.schema_version().await.ok(), Some(PostgresStore::latest_schema_version()));
    }
}

#[tokio::test]
async fn a_password_in_the_url_is_refused_and_a_wrong_one_is_an_error() {
    let Some(cluster) = postgres::cluster() else { return };
    let name = cluster.create_database().await;
    let inline = PostgresOptions {
        url: format!("postgres://agentd:{}@127.0.0.1:{}/{name}", cluster.password(), cluster.port()),
        password: None,
    };
    let err = PostgresStore::open(&inline).await.expect_err("a password in the URL");
    assert!(err.to_string().contains("store.password"), "the error says where the password goes: {err}");
    assert!(!err.to_string().contains(cluster.password()), "the error does not show the password: {err}");
    let wrong = PostgresOptions { url: cluster.url(&name), password: Some("not-the-password".into()) };
    let err = PostgresStore::open(&wrong).await.expect_err("a wrong password");
    assert!(!err.to_string().contains("not-the-password"), "the error does not show the password: {err}");
    assert!(err.to_string().contains("password authentication failed"), "the error says why: {err}");
    // A server that is not there: the error says the connection was refused.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let nobody =
        PostgresOptions { url: format!("postgres://agentd@127.0.0.1:{port}/{name}"), password: None };
    let err = PostgresStore::open(&nobody).await.expect_err("no server");
    assert!(err.to_string().to_lowercase().contains("refused"), "the error says why: {err}");
    let debug = format!("{wrong:?}");
    assert!(!debug.contains("not-the-password"), "Debug redacts the password: {debug}");
}

/// Batches committed at once share a transaction; one that the database
/// refuses (a trigger here) fails alone and every other one commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bad_batch_fails_alone_in_a_group() {
    let Some(options) = postgres::database().await else { return };
    let store = Arc::new(open(&options).await);
    let (client, connection) =
        options.config().expect("config").connect(tokio_postgres::NoTls).await.expect("connect");
    #[allow(clippy::disallowed_methods, reason = "a test's own connection")]
    tokio::spawn(connection);
    client
        .batch_execute(
            "CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN RAISE EXCEPTION 'poisoned batch'; END $$;
             CREATE TRIGGER poison BEFORE INSERT ON tasks FOR EACH ROW
                 WHEN (NEW.id = 'poison') EXECUTE FUNCTION poison();",
        )
        .await
        .expect("install the trigger");
    let mut commits = Vec::new();
    for i in 0..200 {
        let store = Arc::clone(&store);
        let id = if i == 100 { "poison".to_owned() } else { format!("ok-{i:03}") };
        commits.push(tokio::spawn(async move {
            let batch = Batch {
                events: vec![event(&id, "w")],
                ..tasks_batch(vec![record((&id, "a", "c", Working, 1))])
            };
            (id, store.commit(batch).await)
        }));
    }
    for c in commits {
        let (id, outcome) = c.await.expect("commit task");
        match id.as_str() {
            "poison" => assert!(outcome.is_err(), "the poisoned batch must fail"),
            _ => assert!(outcome.is_ok(), "batch {id} must not fail with the poisoned one: {outcome:?}"),
        }
    }
    let page =
        store.list_tasks(&agentd_core::TaskQuery { limit: 1_000, ..Default::default() }).await.expect("list");
    assert_eq!(page.total, 199, "every good batch landed, the poisoned one did not");
    let seqs: Vec<u64> = store.read_events(0, 1_000).await.expect("events").iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=199).collect::<Vec<u64>>(), "the poisoned batch's seq was given back: no gap");
}

/// Writers racing on the same tasks, committed in groups: each stale
/// batch is refused alone (`groups.rs`), its statements sent in the same
/// pipeline as the batches that commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_batches_fail_alone_in_a_group() {
    let Some(options) = postgres::database().await else { return };
    crate::groups::stale_batches_fail_alone(Arc::new(open(&options).await)).await;
}

/// A bridge announcement of task t1, queued in the outbox.
fn bridge_row() -> agentd_core::BridgeDelivery {
    agentd_core::BridgeDelivery {
        task_id: "t1".into(),
        target: agentd_core::BridgeTarget {
            channel: "ops".into(),
            kind: "webhook".into(),
            url: "https://hooks.example.com/ops".into(),
        },
        body: "announce".into(),
    }
}

/// A commit on one instance that queues outbox rows and carries no event
/// (an artifact's push, a bridge announcement) wakes the delivery worker
/// of the other instance too.
#[tokio::test]
async fn outbox_rows_queued_on_one_instance_wake_the_others_worker_whatever_events_they_carry() {
    let Some((a, b)) = two_replicas().await else { return };
    let setup = Batch {
        tasks: vec![record(("t1", "alice", "c", Working, 1_000))],
        push_upserts: vec![push_config("t1", "p1", "alice")],
        events: vec![event("t1", "a")],
        ..Default::default()
    };
    let mut seen = b.subscribe_events();
    a.commit(setup).await.expect("a task, its push config and an event");
    // b's listener is up (it announced a's event), and the wake it gives
    // when it connects is consumed.
    assert_eq!(receive_through(&mut seen, 1).await, [1]);
    let within = Duration::from_secs(10);
    let _ = tokio::time::timeout(Duration::from_millis(1), b.outbox_queued()).await;
    let push = Batch { push_events: vec![("t1".into(), "an artifact".into())], ..Default::default() };
    a.commit(push).await.expect("a push event, no feed event");
    assert!(tokio::time::timeout(within, b.outbox_queued()).await.is_ok(), "woken by the push row");
    a.commit(Batch { bridge_deliveries: vec![bridge_row()], ..Default::default() })
        .await
        .expect("a bridge row");
    assert!(tokio::time::timeout(within, b.outbox_queued()).await.is_ok(), "woken by the bridge row");
}

/// A commit that queues outbox rows wakes its own instance's worker
/// directly; the notification it sends every replica names the instance,
/// whose listener skips it (a second wake-up sent the worker to read an
/// outbox it may have emptied already). The test listens on the channel
/// itself to learn the name, sends that notification again, and then one
/// naming another instance: only the second wakes the worker.
#[tokio::test]
async fn a_store_skips_the_outbox_notifications_naming_itself() {
    let Some(options) = postgres::database().await else { return };
    let (a, b) = (open(&options).await, open(&options).await);
    let mut config: tokio_postgres::Config = options.url.parse().expect("the test database's URL");
    if let Some(password) = &options.password {
        config.password(password);
    }
    let (client, mut connection) = config.connect(tokio_postgres::NoTls).await.expect("a client of our own");
    let (notes, mut noted) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(Ok(m)) = std::future::poll_fn(|cx| connection.poll_message(cx)).await {
            if let tokio_postgres::AsyncMessage::Notification(n) = m {
                let _ = notes.send(n.payload().to_owned());
            }
        }
    });
    client.batch_execute("LISTEN agentd_outbox").await.expect("LISTEN");

    let setup = Batch {
        tasks: vec![record(("t1", "alice", "c", Working, 1_000))],
        events: vec![event("t1", "b")],
        ..Default::default()
    };
    let mut seen = a.subscribe_events();
    b.commit(setup).await.expect("a task and an event on b");
    // a's listener is up: b's event reached a through it.
    assert_eq!(receive_through(&mut seen, 1).await, [1]);
    a.commit(Batch { bridge_deliveries: vec![bridge_row()], ..Default::default() })
        .await
        .expect("a bridge row on a");
    let within = Duration::from_secs(10);
    let name = tokio::time::timeout(within, noted.recv()).await.expect("a's notification").expect("open");
    assert!(!name.is_empty(), "the notification names its instance");
    // a's own notification has reached a once a later event of b's did
    // (one listener connection, commit order): consume every wake so far.
    b.commit(Batch { events: vec![event("t1", "b2")], ..Default::default() }).await.expect("b2");
    assert_eq!(receive_through(&mut seen, 2).await, [2]);
    let _ = tokio::time::timeout(Duration::from_millis(1), a.outbox_queued()).await;

    let woken = async |a: &PostgresStore| {
        tokio::select! {
            biased;
            () = a.outbox_queued() => true,
            () = std::future::ready(()) => false,
        }
    };
    client.execute("SELECT pg_notify('agentd_outbox', $1)", &[&name]).await.expect("NOTIFY as a");
    b.commit(Batch { events: vec![event("t1", "b3")], ..Default::default() }).await.expect("b3");
    assert_eq!(receive_through(&mut seen, 3).await, [3]);
    assert!(!woken(&a).await, "a notification naming a woke a's worker");
    client.execute("SELECT pg_notify('agentd_outbox', 'another')", &[]).await.expect("NOTIFY as another");
    assert!(tokio::time::timeout(within, a.outbox_queued()).await.is_ok(), "another instance's rows wake a");
}
