//! Conformance checks for task versions: each commit of a task is its next
//! version, a stale or duplicate write refuses its whole batch with
//! `StoreError::Conflict`, and of two writers that read the same version
//! exactly one commits, without failing batches committed alongside.

use super::build::{commit, ok, push_config, record, tasks_batch, ts};
use super::reminders::reminder;
use agentd_core::{
    Batch, BridgeDelivery, BridgeTarget, ClosedContext, NewEvent, Store, StoreError, TaskRecord,
};
use agentd_proto::TaskState::{self, Completed, Failed, Working};
use agentd_proto::ext::events::EventKind;
use serde_json::json;

/// A new task `id` at version 1 with one push config, so that push events
/// of later batches fan out to outbox rows.
async fn create(store: &dyn Store, id: &str) -> TaskRecord {
    let rec = record((id, "alice", "ctx", Working, 1_000));
    let batch =
        Batch { push_upserts: vec![push_config(id, "p0", "alice")], ..tasks_batch(vec![rec.clone()]) };
    commit(store, batch, "a new task").await;
    rec
}

async fn read(store: &dyn Store, id: &str) -> TaskRecord {
    match ok(store.get_task(id).await, "get_task") {
        Some(rec) => rec,
        None => panic!("task {id} must exist"),
    }
}

/// `read` moved to `state` and committed as the next version.
fn next(read: &TaskRecord, state: TaskState) -> TaskRecord {
    let mut rec = read.clone();
    rec.task.status.state = state;
    rec.version = read.version + 1;
    rec
}

/// A writer's batch writing `rec`, with a part of every kind, each marked
/// with `who`: an event, a push config and a push event, a bridge
/// delivery, a reminder and a closed conversation.
fn batch_of(who: &str, rec: TaskRecord) -> Batch {
    let id = rec.id().to_owned();
    Batch {
        push_upserts: vec![push_config(&id, &format!("p-{who}"), "alice")],
        push_events: vec![(id.clone(), format!("push {who}"))],
        bridge_deliveries: vec![BridgeDelivery {
            task_id: id.clone(),
            target: BridgeTarget {
                channel: who.into(),
                kind: "webhook".into(),
                url: "https://h.example/b".into(),
            },
            body: format!("bridge {who}"),
        }],
        reminders: vec![reminder(&id, who)],
        closed_contexts: vec![ClosedContext {
            context_id: format!("ctx-{id}-{who}"),
            closed_by: "alice".into(),
            closed_ms: 1_000,
        }],
        events: vec![NewEvent {
            ts: ts(1_000),
            kind: EventKind::Task,
            task_id: Some(id),
            owner: Some("alice".into()),
            data: json!({"who": who}).into(),
            annotations: None,
        }],
        ..tasks_batch(vec![rec])
    }
}

/// Every part of a `batch_of(who)` that is in the store for task `id`, as
/// sorted labels naming `who`.
async fn traces(store: &dyn Store, id: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in ok(store.read_events(0, 10_000).await, "read_events") {
        if e.event.task_id.as_deref() == Some(id) {
            out.push(format!("event {}", e.event.data.to_value()["who"].as_str().unwrap_or_default()));
        }
    }
    for item in ok(store.due_outbox(i64::MAX, 10_000).await, "due_outbox") {
        if item.task_id == id {
            out.push(format!("outbox {} via {}", item.body, item.target.key()));
        }
    }
    for r in ok(store.reminders(id, false).await, "reminders") {
        out.push(format!("reminder {}", r.id));
    }
    for c in ok(store.closed_contexts().await, "closed_contexts") {
        if let Some(who) = c.strip_prefix(&format!("ctx-{id}-")) {
            out.push(format!("closed {who}"));
        }
    }
    for p in ok(store.list_push_configs(id).await, "list_push_configs") {
        out.push(format!("config {}", p.config.id));
    }
    out.sort();
    out
}

/// What `batch_of(who)` on a task created by `create` leaves in the store.
fn traces_of(who: &[&str]) -> Vec<String> {
    let mut out = vec!["config p0".to_owned()];
    for w in who {
        out.extend([
            format!("event {w}"),
            format!("outbox push {w} via p0"),
            format!("outbox push {w} via p-{w}"),
            format!("outbox bridge {w} via bridge:{w}"),
            format!("reminder {w}"),
            format!("closed {w}"),
            format!("config p-{w}"),
        ]);
    }
    out.sort();
    out
}

fn conflict(task_id: &str, expected: u64, found: u64) -> StoreError {
    StoreError::Conflict { task_id: task_id.into(), expected, found }
}

/// A new task is version 1 and each commit adds exactly one; a write that
/// repeats, skips, or names a task that is not there is refused.
pub async fn versions_count_commits(store: &dyn Store) {
    create(store, "t").await;
    assert_eq!(read(store, "t").await.version, 1, "a created task is version 1");
    for v in 2..=4 {
        let rec = next(&read(store, "t").await, Working);
        commit(store, tasks_batch(vec![rec]), "the next version").await;
        assert_eq!(read(store, "t").await.version, v, "each commit adds one");
    }
    let at4 = read(store, "t").await;
    let again = store.commit(tasks_batch(vec![at4.clone()])).await;
    assert_eq!(again, Err(conflict("t", 3, 4)), "version 4 again must be refused");
    let skip = TaskRecord { version: 6, ..at4.clone() };
    assert_eq!(store.commit(tasks_batch(vec![skip])).await, Err(conflict("t", 5, 4)), "a skipped version");
    let zero = TaskRecord { version: 0, ..at4.clone() };
    assert!(store.commit(tasks_batch(vec![zero])).await.is_err(), "version 0 is never committable");
    let ghost = TaskRecord { version: 3, ..record(("ghost", "alice", "ctx", Working, 1_000)) };
    assert_eq!(store.commit(tasks_batch(vec![ghost])).await, Err(conflict("ghost", 2, 0)), "no such task");
    assert_eq!(ok(store.get_task("ghost").await, "get_task"), None);
    assert_eq!(read(store, "t").await, at4, "refused writes change nothing");
}

/// A writer that read a version someone else has committed over is
/// refused with a conflict, and nothing of its batch is written.
pub async fn stale_write_refuses_its_whole_batch(store: &dyn Store) {
    create(store, "t").await;
    let (a, b) = (read(store, "t").await, read(store, "t").await);
    let mut announced = store.subscribe_events();
    commit(store, batch_of("a", next(&a, Completed)), "the first writer").await;
    let stale = store.commit(batch_of("b", next(&b, Failed))).await;
    assert_eq!(stale, Err(conflict("t", 1, 2)), "the second writer read version 1");
    assert_eq!(read(store, "t").await, next(&a, Completed), "the first writer's record stands");
    assert_eq!(traces(store, "t").await, traces_of(&["a"]), "no part of the stale batch is written");
    let mut whose = Vec::new();
    while let Ok(e) = announced.try_recv() {
        whose.push(e.event.data.to_value()["who"].clone());
    }
    assert_eq!(whose, [json!("a")], "only committed events are announced");
}

/// Creating a task whose id exists is a conflict (the writer expected no
/// task), with nothing of its batch written.
pub async fn create_of_an_existing_id_is_refused(store: &dyn Store) {
    let first = create(store, "t").await;
    let other = record(("t", "mallory", "elsewhere", Working, 2_000));
    let refused = store.commit(batch_of("b", other)).await;
    assert_eq!(refused, Err(conflict("t", 0, 1)));
    assert_eq!(read(store, "t").await, first, "the existing task is untouched");
    assert_eq!(traces(store, "t").await, traces_of(&[]));
}

/// A batch may write a task twice (created, then changed), each write
/// checked in order; a stale write refuses the writes before it too.
pub async fn versions_within_one_batch(store: &dyn Store) {
    let created = record(("t", "alice", "ctx", Working, 1_000));
    let changed = next(&created, Completed);
    commit(store, tasks_batch(vec![created, changed.clone()]), "a create and a change").await;
    assert_eq!(read(store, "t").await, changed);
    let fresh = record(("u", "alice", "ctx", Working, 1_000));
    let stale = next(&read(store, "t").await, Failed);
    let twice = tasks_batch(vec![fresh, stale.clone(), stale]);
    assert_eq!(store.commit(twice).await, Err(conflict("t", 2, 3)), "the same version twice");
    assert_eq!(ok(store.get_task("u").await, "get_task"), None, "the whole batch is refused");
    assert_eq!(read(store, "t").await, changed);
}

/// Two writers read the same version and commit at once, beside a third
/// batch on another task: exactly one of the two commits, the other gets
/// a conflict and leaves no trace, and the third is not disturbed (a
/// backend that commits concurrent batches together must refuse the stale
/// one alone).
pub async fn concurrent_writers_exactly_one_wins(store: &dyn Store) {
    for round in 0..16 {
        let (id, other) = (format!("t{round}"), format!("o{round}"));
        create(store, &id).await;
        let (a, b) = (read(store, &id).await, read(store, &id).await);
        let (mine, theirs) = (next(&a, Completed), next(&b, Failed));
        let bystander = tasks_batch(vec![record((&other, "bob", "ctx", Working, 1_000))]);
        let mut announced = store.subscribe_events();
        let (ra, rb, rc) = tokio::join!(
            store.commit(batch_of(&format!("a{round}"), mine.clone())),
            store.commit(batch_of(&format!("b{round}"), theirs.clone())),
            store.commit(bystander),
        );
        assert_eq!(rc, Ok(()), "round {round}: a batch on another task must commit");
        let (winner, record_won) = match (&ra, &rb) {
            (Ok(()), Err(e)) => {
                assert_eq!(e, &conflict(&id, 1, 2), "round {round}");
                (format!("a{round}"), mine)
            }
            (Err(e), Ok(())) => {
                assert_eq!(e, &conflict(&id, 1, 2), "round {round}");
                (format!("b{round}"), theirs)
            }
            _ => panic!("round {round}: exactly one writer must win: {ra:?} {rb:?}"),
        };
        assert_eq!(read(store, &id).await, record_won, "round {round}: the winner's record");
        let expected = traces_of(&[&winner]);
        assert_eq!(traces(store, &id).await, expected, "round {round}: the loser's batch left no trace");
        let mut whose = Vec::new();
        while let Ok(e) = announced.try_recv() {
            whose.push(e.event.data.to_value()["who"].clone());
        }
        assert_eq!(whose, [json!(winner)], "round {round}: only the winner's event is announced");
        assert!(ok(store.get_task(&other).await, "get_task").is_some(), "round {round}: the bystander");
    }
}
