//! What a backend's group commit must keep, for every backend: batches
//! committed at once share a transaction, and one refused (a stale task
//! version) is refused alone, with its events, while every other commits.

use agentd_core::{Batch, Store, TaskQuery};
use agentd_proto::TaskState::Working;
use agentd_store::conformance::build::{record, tasks_batch};
use std::sync::Arc;

/// Two writers per task racing from version 1 to 2, committed in groups:
/// one of each pair wins, the stale one is refused alone, with its event,
/// and the winners' events hold seqs 1..=100 (a refused batch takes none).
pub async fn stale_batches_fail_alone(store: Arc<impl Store + 'static>) {
    let created: Vec<_> = (0..100).map(|i| record((&format!("t{i:03}"), "a", "c", Working, 1))).collect();
    store.commit(tasks_batch(created.clone())).await.expect("create");
    let mut handles = Vec::new();
    for rec in &created {
        for writer in 0..2 {
            let store = Arc::clone(&store);
            let mut next = rec.clone();
            next.version = 2;
            let ev = agentd_core::NewEvent {
                ts: agentd_proto::Timestamp::from_millis(1).expect("ts"),
                kind: agentd_proto::ext::events::EventKind::Task,
                task_id: Some(rec.id().to_owned()),
                owner: None,
                data: serde_json::json!({"writer": writer}).into(),
                annotations: None,
            };
            handles.push(tokio::spawn(async move {
                store.commit(Batch { events: vec![ev], ..tasks_batch(vec![next]) }).await
            }));
        }
    }
    let (mut won, mut lost) = (0, 0);
    for h in handles {
        match h.await.expect("commit task") {
            Ok(()) => won += 1,
            Err(agentd_core::StoreError::Conflict { expected: 1, found: 2, .. }) => lost += 1,
            Err(e) => panic!("only a conflict may refuse a batch here: {e}"),
        }
    }
    assert_eq!((won, lost), (100, 100), "one writer per task wins");
    let events = store.read_events(0, 1_000).await.expect("events");
    assert_eq!(events.len(), 100, "only the winners' events are in the log");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=100).collect::<Vec<_>>(),
        "the winners' events in seq order, a refused batch took none"
    );
    let page = store.list_tasks(&TaskQuery { limit: 1_000, ..Default::default() }).await.expect("list");
    assert!(page.tasks.iter().all(|t| t.version == 2), "every task at version 2");
}
