//! Conformance checks for the event log: seqs, reads, the announcement of
//! committed events in order, and retention.

use super::build::{commit, ok, record, tasks_batch, ts};
use agentd_core::{Batch, EventRecord, EventRetention, NewEvent, Store};
use agentd_proto::TaskState::Working;
use agentd_proto::ext::events::EventKind;
use serde_json::json;

fn event(n: i64, owner: Option<&str>) -> NewEvent {
    NewEvent {
        ts: ts(n * 1_000),
        kind: if owner.is_some() { EventKind::Task } else { EventKind::Lifecycle },
        task_id: owner.map(|_| format!("t{n}")),
        owner: owner.map(str::to_owned),
        data: json!({"n": n}).into(),
        annotations: owner.map(|o| json!({"principal": o}).into()),
    }
}

fn events_batch(range: std::ops::RangeInclusive<i64>) -> Batch {
    Batch { events: range.map(|n| event(n, Some("alice"))).collect(), ..Batch::default() }
}

fn seqs(events: &[EventRecord]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// Seqs start at 1 and grow by one per event, across batches; every member
/// reads back as written; reads page by `after` and `limit`.
pub async fn events_append_and_read(store: &dyn Store) {
    assert_eq!(ok(store.event_log_bounds().await, "bounds").last, 0, "an empty log");
    let mut with_task = tasks_batch(vec![record(("t1", "alice", "c1", Working, 1_000))]);
    with_task.events = vec![event(1, Some("alice")), event(2, None)];
    commit(store, with_task, "a task with two events").await;
    commit(store, events_batch(3..=5), "three events").await;
    let all = ok(store.read_events(0, 100).await, "read all");
    assert_eq!(seqs(&all), [1, 2, 3, 4, 5], "seqs in commit order");
    assert_eq!(all[0].event, event(1, Some("alice")), "every member round-trips");
    assert_eq!(all[1].event, event(2, None), "an event without task or owner round-trips");
    assert_eq!(seqs(&ok(store.read_events(2, 2).await, "page")), [3, 4], "after and limit");
    assert!(ok(store.read_events(5, 10).await, "past the end").is_empty());
    let b = ok(store.event_log_bounds().await, "bounds");
    assert_eq!((b.last, b.pruned_through), (5, 0));
}

/// Committed events reach subscribers in seq order; a batch without
/// events announces nothing.
pub async fn events_announced_in_order(store: &dyn Store) {
    let mut rx = store.subscribe_events();
    commit(store, events_batch(1..=3), "three events").await;
    commit(store, tasks_batch(vec![record(("t1", "alice", "c1", Working, 1_000))]), "no events").await;
    commit(store, events_batch(4..=4), "one more").await;
    let mut got = Vec::new();
    while let Ok(e) = rx.try_recv() {
        got.push(e.seq);
    }
    assert_eq!(got, [1, 2, 3, 4], "announced after commit, in seq order");
}

/// Retention by count removes a prefix, records how far, and never
/// reuses a seq.
pub async fn events_retention_by_count(store: &dyn Store) {
    commit(store, events_batch(1..=10), "ten events").await;
    let prune = Batch {
        prune_events: Some(EventRetention { max_count: 3, min_ts_ms: 0, max_removed: u64::MAX }),
        ..Batch::default()
    };
    commit(store, prune, "keep three").await;
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "after pruning")), [8, 9, 10]);
    let b = ok(store.event_log_bounds().await, "bounds");
    assert_eq!((b.last, b.pruned_through), (10, 7));
    commit(store, events_batch(11..=11), "one more").await;
    assert_eq!(seqs(&ok(store.read_events(9, 100).await, "tail")), [10, 11], "seqs continue");
    let all = Batch {
        prune_events: Some(EventRetention { max_count: 0, min_ts_ms: 0, max_removed: u64::MAX }),
        ..Batch::default()
    };
    commit(store, all, "keep none").await;
    assert!(ok(store.read_events(0, 100).await, "empty").is_empty());
    commit(store, events_batch(12..=12), "after emptying").await;
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "new")), [12], "a seq is never reused");
    assert_eq!(ok(store.event_log_bounds().await, "bounds").pruned_through, 11);
}

/// Retention by age removes the events committed before the limit.
pub async fn events_retention_by_age(store: &dyn Store) {
    commit(store, events_batch(1..=5), "five events, one second apart").await;
    let prune = Batch {
        prune_events: Some(EventRetention { max_count: 100, min_ts_ms: 3_500, max_removed: u64::MAX }),
        ..Batch::default()
    };
    commit(store, prune, "older than 3.5 s").await;
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "after pruning")), [4, 5]);
    assert_eq!(ok(store.event_log_bounds().await, "bounds").pruned_through, 3);
}

/// Retention removes at most `max_removed` seqs per commit, oldest first,
/// by count and by age alike; the next commits go on where it stopped, and
/// a step says whether it was whole (more may remain).
pub async fn events_retention_in_steps(store: &dyn Store) {
    commit(store, events_batch(1..=10), "ten events, one second apart").await;
    let step = |max_count, min_ts_ms| Batch {
        prune_events: Some(EventRetention { max_count, min_ts_ms, max_removed: 3 }),
        ..Batch::default()
    };
    let keep_two = EventRetention { max_count: 2, min_ts_ms: 0, max_removed: 3 };
    assert!(ok(store.prune_step(keep_two).await, "keep two, three at a time"), "a whole step");
    assert_eq!(ok(store.event_log_bounds().await, "bounds").pruned_through, 3);
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "after one step")), (4..=10).collect::<Vec<_>>());
    assert!(ok(store.prune_step(keep_two).await, "the next step"), "a whole step");
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "after two steps")), [7, 8, 9, 10]);
    assert!(!ok(store.prune_step(keep_two).await, "the last step"), "two removed: the last step");
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "after three steps")), [9, 10]);
    assert!(!ok(store.prune_step(keep_two).await, "nothing left"), "nothing removed");
    assert_eq!(ok(store.event_log_bounds().await, "bounds").pruned_through, 8);

    // By age: seqs 11..=16 stamped 11 s .. 16 s; older than 15.5 s goes,
    // three seqs per commit.
    commit(store, events_batch(11..=16), "six more").await;
    commit(store, step(100, 15_500), "by age, a step").await;
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "age step")), (12..=16).collect::<Vec<_>>());
    commit(store, step(100, 15_500), "by age, the next").await;
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "age step two")), [15, 16]);
    commit(store, step(100, 15_500), "by age, done").await;
    assert_eq!(seqs(&ok(store.read_events(0, 100).await, "age done")), [16]);
    commit(store, step(100, 15_500), "by age, nothing left").await;
    assert_eq!(ok(store.event_log_bounds().await, "bounds").pruned_through, 15);
}
