//! Event retention with a backlog far larger than one step (a restart
//! after a burst, a lowered `retain_count`): the engine removes it in
//! commits of at most `EVENT_PRUNE_STEP` events each, until retention
//! holds, so no commit holds the store's writer for the whole backlog.
//! Engine and SQLite store are the real ones; the store is wrapped to see
//! each batch.

use crate::engine_support::AnyUrl;
use agentd_core::{
    Agent, Batch, EVENT_PRUNE_STEP, EngineBuilder, EngineConfig, EventRetention, NewEvent, Store, Turn,
};
use agentd_proto::Timestamp;
use agentd_proto::ext::events::EventKind;
use agentd_store::testing::FaultyStore;
use agentd_store::{SqliteOptions, SqliteStore};
use async_trait::async_trait;
use serde_json::json;
use std::sync::{Arc, Mutex};

struct NoTurns;

#[async_trait]
impl Agent for NoTurns {
    async fn run(&self, _turn: Turn) {}
}

fn lifecycle(n: u64) -> NewEvent {
    NewEvent {
        ts: Timestamp::now(),
        kind: EventKind::Lifecycle,
        task_id: None,
        owner: None,
        data: json!({"n": n}).into(),
        annotations: None,
    }
}

#[tokio::test]
async fn a_backlog_is_pruned_in_bounded_steps_until_retention_holds() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open(&dir.path().join("agentd.db"), SqliteOptions::default()).expect("open");
    let backlog = EVENT_PRUNE_STEP * 5 / 2;
    for first in (0..backlog).step_by(500) {
        let events = (first..(first + 500).min(backlog)).map(lifecycle).collect();
        sqlite.commit(Batch { events, ..Batch::default() }).await.expect("append");
    }
    let steps: Arc<Mutex<Vec<EventRetention>>> = Arc::default();
    let seen = steps.clone();
    let store = Arc::new(FaultyStore::new(Arc::new(sqlite), 0, move |b: &Batch| {
        seen.lock().unwrap().extend(b.prune_events);
        false
    }));
    let kept = 10;
    let config = EngineConfig { events_retain_count: kept, ..EngineConfig::default() };
    let shared: Arc<dyn Store> = store.clone();
    let runtime = EngineBuilder::new(shared, Arc::new(NoTurns), Arc::new(AnyUrl), config).build();

    runtime.prune_events().await.expect("prune");

    let bounds = store.event_log_bounds().await.expect("bounds");
    assert_eq!((bounds.last, bounds.pruned_through), (backlog, backlog - kept), "retention holds");
    let left = store.read_events(0, 100).await.expect("read");
    assert_eq!(left.first().map(|e| e.seq), Some(backlog - kept + 1));
    assert_eq!(left.len() as u64, kept);
    let steps = steps.lock().unwrap().clone();
    assert!(steps.len() >= 3, "{} steps for {backlog} events", steps.len());
    assert!(steps.iter().all(|r| r.max_removed == EVENT_PRUNE_STEP), "{steps:?}");
}
