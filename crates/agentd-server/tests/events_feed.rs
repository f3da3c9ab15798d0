//! The events feed under a slow subscriber, on a real SQLite store: live
//! events wait in a bounded channel; a subscriber that falls behind it
//! reads the durable log instead and misses nothing; one that falls behind
//! retention is told so (`Lagged`) rather than handed a gap.

use agentd_core::{Batch, Engine, EngineConfig, EventRetention, FeedItem, NewEvent, Principal, Store};
use agentd_proto::Timestamp;
use agentd_proto::ext::events::{EventKind, SubscribeParams};
use agentd_runtime::EchoAgent;
use agentd_server::push::SsrfGuard;
use agentd_store::{SqliteOptions, SqliteStore};
use serde_json::json;
use std::sync::Arc;

fn setup() -> (tempfile::TempDir, Arc<SqliteStore>, Engine) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("agentd.db"), SqliteOptions { synchronous_full: false })
        .expect("open store");
    let store = Arc::new(store);
    let engine = Engine::new(
        store.clone(),
        Arc::new(EchoAgent),
        Arc::new(SsrfGuard::new(true)),
        EngineConfig::default(),
    );
    (dir, store, engine)
}

/// Commits `n` events in batches of 500 (far more than the live channel holds).
async fn flood(store: &SqliteStore, n: usize) {
    let ev = |i: usize| NewEvent {
        ts: Timestamp::now(),
        kind: EventKind::Lifecycle,
        task_id: None,
        owner: None,
        data: json!({"event": "started", "version": i.to_string()}),
        annotations: None,
    };
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let batch = Batch { events: chunk.iter().map(|i| ev(*i)).collect(), ..Batch::default() };
        store.commit(batch).await.expect("commit");
    }
}

#[tokio::test]
async fn a_subscriber_behind_the_live_channel_reads_the_log_and_misses_nothing() {
    let (_dir, store, engine) = setup();
    let mut feed = engine
        .subscribe_events(&Principal::local_operator(), SubscribeParams::default())
        .await
        .expect("feed");
    assert_eq!(feed.hello().seq, 0);
    flood(&store, 3_000).await;
    for expected in 1..=3_000u64 {
        match feed.next().await {
            Some(Ok(FeedItem::Event(e))) => assert_eq!(e.seq, expected, "every event once, in order"),
            other => panic!("at {expected}: {other:?}"),
        }
    }
    assert_eq!(feed.position(), 3_000);
}

#[tokio::test]
async fn a_subscriber_behind_retention_is_told_it_lagged() {
    let (_dir, store, engine) = setup();
    let mut feed = engine
        .subscribe_events(&Principal::local_operator(), SubscribeParams::default())
        .await
        .expect("feed");
    flood(&store, 2_000).await;
    let prune =
        Batch { prune_events: Some(EventRetention { max_count: 10, min_ts_ms: 0 }), ..Batch::default() };
    store.commit(prune).await.expect("prune");
    match feed.next().await {
        Some(Ok(FeedItem::Lagged)) => {}
        other => panic!("expected Lagged, got {other:?}"),
    }
    assert!(feed.next().await.is_none(), "a lagged feed ends");
}
