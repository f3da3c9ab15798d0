//! Conformance checks for push configs and the outbox: CRUD, fan-out at
//! commit time, due/retry/done, rows of deleted configs, and bridge rows.

use super::build::{commit, ok, push_config, record};
use agentd_core::{Batch, BridgeDelivery, BridgeTarget, OutboxItem, OutboxTarget, Store};
use agentd_proto::{TaskState::Working, Timestamp};

/// A time safely after any row created so far was due.
fn soon() -> i64 {
    Timestamp::now().millis() + 1_000
}

async fn due(store: &dyn Store, now_ms: i64) -> Vec<OutboxItem> {
    ok(store.due_outbox(now_ms, 1_000).await, "due_outbox")
}

fn summary(items: &[OutboxItem]) -> Vec<(String, String, String, u32)> {
    items.iter().map(|i| (i.task_id.clone(), i.target.key(), i.body.clone(), i.attempts)).collect()
}

fn row(task: &str, config: &str, body: &str, attempts: u32) -> (String, String, String, u32) {
    (task.into(), config.into(), body.into(), attempts)
}

/// Upsert, get, list in insertion order, replace in place, delete.
pub async fn push_config_crud(store: &dyn Store) {
    let (a, b, c) = (
        push_config("t1", "p-b", "alice"),
        push_config("t1", "p-a", "alice"),
        push_config("t2", "p-c", "bob"),
    );
    let batch = Batch { push_upserts: vec![a.clone(), b.clone(), c.clone()], ..Default::default() };
    commit(store, batch, "three push configs").await;
    assert_eq!(ok(store.get_push_config("t1", "p-b").await, "get"), Some(a.clone()));
    assert_eq!(ok(store.get_push_config("t2", "p-b").await, "get"), None, "key is (task, id)");
    let listed = ok(store.list_push_configs("t1").await, "list");
    assert_eq!(listed, vec![a.clone(), b.clone()], "list is oldest first, only this task");
    let mut changed = a.clone();
    changed.config.url = "https://elsewhere.example.com/hook".into();
    commit(store, Batch { push_upserts: vec![changed.clone()], ..Default::default() }, "a replace").await;
    let listed = ok(store.list_push_configs("t1").await, "list");
    assert_eq!(listed, vec![changed, b.clone()], "a replace keeps its place in the list");
    let del = Batch { push_deletes: vec![("t1".into(), "p-b".into())], ..Default::default() };
    commit(store, del, "a delete").await;
    assert_eq!(ok(store.get_push_config("t1", "p-b").await, "get"), None);
    assert_eq!(ok(store.list_push_configs("t1").await, "list"), vec![b]);
    assert_eq!(ok(store.list_push_configs("t2").await, "list"), vec![c]);
    assert_eq!(ok(store.list_push_configs("t9").await, "list"), vec![]);
}

/// One outbox row per config the task has at commit time, including
/// configs upserted and excluding configs deleted in the same batch.
pub async fn outbox_fan_out(store: &dyn Store) {
    let setup = Batch {
        tasks: vec![
            record(("t1", "alice", "c", Working, 1_000)),
            record(("t2", "alice", "c", Working, 1_000)),
        ],
        push_upserts: vec![push_config("t1", "p1", "alice"), push_config("t1", "p2", "alice")],
        ..Default::default()
    };
    commit(store, setup, "two tasks, two configs").await;
    assert!(due(store, soon()).await.is_empty(), "no event, no outbox row");
    let events = Batch {
        push_events: vec![("t1".into(), "e1".into()), ("t2".into(), "e2".into()), ("t1".into(), "e3".into())],
        ..Default::default()
    };
    commit(store, events, "three events").await;
    let items = due(store, soon()).await;
    let expected = [
        row("t1", "p1", "e1", 0),
        row("t1", "p2", "e1", 0),
        row("t1", "p1", "e3", 0),
        row("t1", "p2", "e3", 0),
    ];
    assert_eq!(summary(&items), expected, "2 configs → 2 rows per event, 0 configs → none, oldest first");
    assert!(items.windows(2).all(|w| w[0].id < w[1].id), "outbox ids must increase");
    assert_eq!(
        items[0].target,
        OutboxTarget::Push(push_config("t1", "p1", "alice").config),
        "item carries its config"
    );
    let same_batch = Batch {
        push_upserts: vec![push_config("t2", "p3", "alice")],
        push_deletes: vec![("t1".into(), "p2".into())],
        push_events: vec![("t2".into(), "e4".into()), ("t1".into(), "e5".into())],
        ..Default::default()
    };
    commit(store, same_batch, "configs and events in one batch").await;
    let got = summary(&due(store, soon()).await);
    let expected = [
        row("t1", "p1", "e1", 0),
        row("t1", "p1", "e3", 0),
        row("t2", "p3", "e4", 0),
        row("t1", "p1", "e5", 0),
    ];
    assert_eq!(got, expected, "fan-out must see this batch's upserts and deletes");
}

/// Rows are due at their not_before; retry moves them; done removes them.
pub async fn outbox_due_retry_done(store: &dyn Store) {
    assert_eq!(ok(store.next_outbox_due().await, "next_outbox_due"), None, "empty outbox");
    assert_eq!(ok(store.outbox_depth().await, "outbox_depth"), 0, "empty outbox");
    let before = Timestamp::now().millis();
    let setup = Batch {
        tasks: vec![record(("t1", "alice", "c", Working, 1_000))],
        push_upserts: vec![push_config("t1", "p1", "alice")],
        push_events: vec![("t1".into(), "e1".into()), ("t1".into(), "e2".into()), ("t1".into(), "e3".into())],
        ..Default::default()
    };
    commit(store, setup, "three events").await;
    let next = ok(store.next_outbox_due().await, "next_outbox_due");
    assert!(next.is_some_and(|n| n >= before && n < soon()), "new rows are due now, got {next:?}");
    let items = due(store, soon()).await;
    assert_eq!(items.len(), 3);
    assert_eq!(ok(store.due_outbox(soon(), 2).await, "due_outbox").len(), 2, "limit applies");
    assert!(due(store, before - 1).await.is_empty(), "nothing is due before it was queued");
    let later = soon() + 60_000;
    let batch = Batch {
        outbox_done: vec![items[0].id],
        outbox_retry: vec![(items[1].id, later, 1), (items[2].id, later + 5, 4)],
        ..Default::default()
    };
    commit(store, batch, "one done, two retried").await;
    assert!(due(store, soon()).await.is_empty(), "retried rows wait for their time");
    assert_eq!(ok(store.outbox_depth().await, "outbox_depth"), 2, "rows waiting for a retry are pending");
    assert_eq!(ok(store.next_outbox_due().await, "next_outbox_due"), Some(later));
    let got = summary(&due(store, later).await);
    assert_eq!(got, [row("t1", "p1", "e2", 1)], "only the first retry is due at `later`");
    let got = summary(&due(store, later + 5).await);
    assert_eq!(got, [row("t1", "p1", "e2", 1), row("t1", "p1", "e3", 4)], "attempts are kept");
    let ids: Vec<i64> = due(store, later + 5).await.iter().map(|i| i.id).collect();
    commit(store, Batch { outbox_done: ids, ..Default::default() }, "all done").await;
    assert!(due(store, i64::MAX).await.is_empty());
    assert_eq!(ok(store.next_outbox_due().await, "next_outbox_due"), None, "outbox drained");
    assert_eq!(ok(store.outbox_depth().await, "outbox_depth"), 0, "outbox drained");
    let unknown =
        Batch { outbox_done: vec![999_999], outbox_retry: vec![(999_998, 0, 1)], ..Default::default() };
    commit(store, unknown, "done/retry of unknown rows").await;
}

/// Rows of a deleted config are never returned as due.
pub async fn outbox_deleted_config(store: &dyn Store) {
    let setup = Batch {
        tasks: vec![record(("t1", "alice", "c", Working, 1_000))],
        push_upserts: vec![push_config("t1", "keep", "alice"), push_config("t1", "drop", "alice")],
        push_events: vec![("t1".into(), "e1".into())],
        ..Default::default()
    };
    commit(store, setup, "two configs and an event").await;
    assert_eq!(due(store, soon()).await.len(), 2);
    commit(
        store,
        Batch { push_deletes: vec![("t1".into(), "drop".into())], ..Default::default() },
        "a delete",
    )
    .await;
    assert_eq!(
        summary(&due(store, soon()).await),
        [row("t1", "keep", "e1", 0)],
        "deleted config's row hidden"
    );
    // A config re-created under the same id does not inherit old rows.
    commit(
        store,
        Batch { push_upserts: vec![push_config("t1", "drop", "alice")], ..Default::default() },
        "re-create",
    )
    .await;
    assert_eq!(summary(&due(store, soon()).await), [row("t1", "keep", "e1", 0)], "no resurrected rows");
}

fn bridge(task: &str, channel: &str, body: &str) -> BridgeDelivery {
    let target = BridgeTarget {
        channel: channel.into(),
        kind: "webhook".into(),
        url: "https://hooks.example.com/x".into(),
    };
    BridgeDelivery { task_id: task.into(), target, body: body.into() }
}

/// Bridge deliveries are rows of their own: due without any push config,
/// interleaved with push rows in commit order, with their target read
/// back; retry and done work on them as on push rows.
pub async fn outbox_bridge_rows(store: &dyn Store) {
    let setup = Batch {
        tasks: vec![record(("t1", "alice", "c", Working, 1_000))],
        push_upserts: vec![push_config("t1", "p1", "alice")],
        push_events: vec![("t1".into(), "e1".into())],
        bridge_deliveries: vec![bridge("t1", "ops", "b1")],
        ..Default::default()
    };
    commit(store, setup, "a push event and a bridge delivery").await;
    commit(
        store,
        Batch { bridge_deliveries: vec![bridge("t9", "ops", "b2")], ..Default::default() },
        "a bridge row alone",
    )
    .await;
    let items = due(store, soon()).await;
    // The row of t9 (no task: no owner) is the first of its owner, so it
    // comes before alice's second.
    assert_eq!(
        summary(&items),
        [row("t1", "p1", "e1", 0), row("t9", "bridge:ops", "b2", 0), row("t1", "bridge:ops", "b1", 0)],
        "bridge rows need no task or push config; one owner's rows keep commit order"
    );
    let owners: Vec<&str> = items.iter().map(|i| i.owner.as_str()).collect();
    assert_eq!(owners, ["alice", "", "alice"], "a bridge row is its task's owner's");
    assert_eq!(
        items[2].target,
        OutboxTarget::Bridge(bridge("t1", "ops", "b1").target),
        "target read back whole"
    );
    // Deleting the task's push config leaves its bridge rows.
    commit(store, Batch { push_deletes: vec![("t1".into(), "p1".into())], ..Default::default() }, "a delete")
        .await;
    let items = due(store, soon()).await;
    assert_eq!(summary(&items), [row("t1", "bridge:ops", "b1", 0), row("t9", "bridge:ops", "b2", 0)]);
    let later = soon() + 60_000;
    let batch = Batch {
        outbox_done: vec![items[1].id],
        outbox_retry: vec![(items[0].id, later, 1)],
        ..Default::default()
    };
    commit(store, batch, "retry one, finish one").await;
    assert!(due(store, soon()).await.is_empty(), "the retried row waits");
    assert_eq!(ok(store.next_outbox_due().await, "next due"), Some(later));
    assert_eq!(summary(&due(store, later).await), [row("t1", "bridge:ops", "b1", 1)]);
}

/// Due rows come round-robin across owners (the principal that registered
/// the push config; a bridge row's task owner), each owner's in commit
/// order: a small batch holds every owner's oldest row before a second of
/// any, so one owner's backlog never keeps another's row out of it.
pub async fn outbox_owners_take_turns(store: &dyn Store) {
    let setup = Batch {
        tasks: vec![
            record(("ta", "alice", "c", Working, 1_000)),
            record(("tb", "bob", "c", Working, 1_000)),
            record(("tc", "carol", "c", Working, 1_000)),
        ],
        push_upserts: vec![
            push_config("ta", "pa", "alice"),
            push_config("tb", "pb", "bob"),
            push_config("tb", "po", "ops"),
        ],
        ..Default::default()
    };
    commit(store, setup, "three tasks, three configs").await;
    let backlog = (1..=5).map(|n| ("ta".to_owned(), format!("a{n}"))).collect();
    commit(store, Batch { push_events: backlog, ..Default::default() }, "alice's backlog").await;
    let later = Batch {
        push_events: vec![("tb".into(), "b1".into())],
        bridge_deliveries: vec![bridge("tc", "ops", "c1"), bridge("t9", "ops", "x1")],
        ..Default::default()
    };
    commit(store, later, "bob's event, two bridge rows").await;
    let first = ok(store.due_outbox(soon(), 3).await, "due_outbox");
    assert_eq!(
        summary(&first),
        [row("ta", "pa", "a1", 0), row("tb", "pb", "b1", 0), row("tb", "po", "b1", 0)],
        "a batch of 3 takes alice's oldest row, then the others' (not alice's next two)"
    );
    let items = due(store, soon()).await;
    let expected = [
        row("ta", "pa", "a1", 0),
        row("tb", "pb", "b1", 0),
        row("tb", "po", "b1", 0),
        row("tc", "bridge:ops", "c1", 0),
        row("t9", "bridge:ops", "x1", 0),
        row("ta", "pa", "a2", 0),
        row("ta", "pa", "a3", 0),
        row("ta", "pa", "a4", 0),
        row("ta", "pa", "a5", 0),
    ];
    assert_eq!(summary(&items), expected, "owners take turns; each owner's rows in commit order");
    let owners: Vec<&str> = items.iter().map(|i| i.owner.as_str()).collect();
    assert_eq!(
        owners,
        ["alice", "bob", "ops", "carol", "", "alice", "alice", "alice", "alice"],
        "a push row is its config's registrant's, a bridge row its task owner's"
    );
    // Turns count due rows only: with alice's two oldest waiting for a
    // retry, her third is her first turn, ahead of bob's younger row.
    let retry = items.iter().filter(|i| i.body == "a1" || i.body == "a2").map(|i| (i.id, soon() + 60_000, 1));
    let done = items.iter().filter(|i| i.owner != "alice" && i.owner != "bob").map(|i| i.id);
    let batch = Batch { outbox_retry: retry.collect(), outbox_done: done.collect(), ..Default::default() };
    commit(store, batch, "two retries, three done").await;
    let got = summary(&ok(store.due_outbox(soon(), 2).await, "due_outbox"));
    assert_eq!(got, [row("ta", "pa", "a3", 0), row("tb", "pb", "b1", 0)], "rows not due take no turn");
}

/// Whether a wake-up is pending for the delivery worker (consumes it).
async fn woken(store: &dyn Store) -> bool {
    tokio::select! {
        biased;
        () = store.outbox_queued() => true,
        () = std::future::ready(()) => false,
    }
}

/// A commit that queued outbox rows wakes the delivery worker once, also
/// when it was not waiting yet; push events of a task without configs
/// queue nothing, and once a config is committed the store says configs
/// may exist (the engine leaves push events out only while they may not).
pub async fn outbox_wakes_the_worker(store: &dyn Store) {
    let tasks = Batch { tasks: vec![record(("t1", "alice", "c", Working, 1_000))], ..Default::default() };
    commit(store, tasks, "a task").await;
    let _ = woken(store).await;
    let config = Batch { push_upserts: vec![push_config("t1", "p1", "alice")], ..Default::default() };
    commit(store, config, "a push config").await;
    assert!(store.may_have_push_configs(), "a committed push config may exist");
    let event = Batch { push_events: vec![("t1".into(), "e1".into())], ..Default::default() };
    commit(store, event, "a push event").await;
    assert!(woken(store).await, "rows were queued: the worker is woken");
    assert!(!woken(store).await, "once per wake-up");
    let unconfigured = Batch { push_events: vec![("t2".into(), "e2".into())], ..Default::default() };
    commit(store, unconfigured, "a push event of a task without configs").await;
    assert!(!woken(store).await, "a push event that queued no row wakes nobody");
    let bridge = BridgeDelivery {
        task_id: "t1".into(),
        target: BridgeTarget {
            channel: "ops".into(),
            kind: "webhook".into(),
            url: "https://hooks.example.com/ops".into(),
        },
        body: "announce".into(),
    };
    commit(store, Batch { bridge_deliveries: vec![bridge], ..Default::default() }, "a bridge row").await;
    assert!(woken(store).await, "a bridge row wakes it too");
    commit(store, Batch { outbox_done: vec![1], ..Default::default() }, "a done row").await;
    assert!(!woken(store).await, "a commit that queued nothing wakes nobody");
}
