//! The events feed under a slow subscriber, on a real SQLite store: live
//! events wait in a bounded channel; a subscriber that falls behind it
//! reads the durable log instead and misses nothing; one that falls behind
//! retention is told so (`Lagged`) rather than handed a gap.

use agentd_core::{
    Batch, EngineBuilder, EngineConfig, EventRetention, FeedItem, NewEvent, Principal, Runtime, Store,
};
use agentd_proto::Timestamp;
use agentd_proto::ext::events::{EventKind, SubscribeParams};
use agentd_runtime::EchoAgent;
use agentd_server::push::SsrfGuard;
use agentd_store::{SqliteOptions, SqliteStore};
use serde_json::json;
use std::sync::Arc;

fn setup() -> (tempfile::TempDir, Arc<SqliteStore>, Runtime) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("agentd.db"), SqliteOptions { synchronous_full: false })
        .expect("open store");
    let store = Arc::new(store);
    let engine = EngineBuilder::new(
        store.clone(),
        Arc::new(EchoAgent),
        Arc::new(SsrfGuard::new(true)),
        EngineConfig::default(),
    )
    .build();
    (dir, store, engine)
}

/// Commits `n` events in batches of 500 (far more than the live channel holds).
async fn flood(store: &SqliteStore, n: usize) {
    let ev = |i: usize| NewEvent {
        ts: Timestamp::now(),
        kind: EventKind::Lifecycle,
        task_id: None,
        owner: None,
        data: json!({"event": "started", "version": i.to_string()}).into(),
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
    let prune = Batch {
        prune_events: Some(EventRetention { max_count: 10, min_ts_ms: 0, max_removed: u64::MAX }),
        ..Batch::default()
    };
    store.commit(prune).await.expect("prune");
    match feed.next().await {
        Some(Ok(FeedItem::Lagged)) => {}
        other => panic!("expected Lagged, got {other:?}"),
    }
    assert!(feed.next().await.is_none(), "a lagged feed ends");
}

fn user(id: &str) -> Principal {
    Principal::new(id, agentd_core::PrincipalRole::User)
}

/// The next event of a feed, within a second.
async fn next_event(feed: &mut agentd_core::EventFeed) -> agentd_proto::ext::events::Event {
    match tokio::time::timeout(std::time::Duration::from_secs(1), feed.next()).await {
        Ok(Some(Ok(FeedItem::Event(e)))) => e,
        other => panic!("expected an event, got {other:?}"),
    }
}

#[tokio::test]
async fn emit_event_is_seen_by_the_tasks_owner_and_operators_only() {
    use agentd_proto::{Message, Part, Role, SendMessageRequest, SendMessageResponse, new_id};
    let (_dir, _store, engine) = setup();
    let alice = user("user:alice");
    let req = SendMessageRequest {
        message: Some(Message {
            message_id: new_id(),
            role: Role::User,
            parts: vec![Part::text("hi")],
            ..Default::default()
        }),
        ..Default::default()
    };
    let Ok(SendMessageResponse::Task(task)) = engine.send_message(&alice, req).await else {
        panic!("a task")
    };
    let kinds = || SubscribeParams { from_seq: None, kinds: Some(vec![EventKind::Run]) };
    let mut a = engine.subscribe_events(&alice, kinds()).await.expect("alice");
    let mut b = engine.subscribe_events(&user("user:bob"), kinds()).await.expect("bob");
    let mut o = engine.subscribe_events(&Principal::local_operator(), kinds()).await.expect("operator");
    engine.emit_event(EventKind::Run, &task.id, json!({"run": "r-1"})).await.expect("emit");
    for feed in [&mut a, &mut o] {
        let e = next_event(feed).await;
        assert_eq!((e.kind, e.data), (EventKind::Run, json!({"run": "r-1"})));
    }
    let nothing = tokio::time::timeout(std::time::Duration::from_millis(200), b.next()).await;
    assert!(nothing.is_err(), "bob sees nothing of alice's task: {nothing:?}");
    let e = engine.emit_event(EventKind::Run, "no-such-task", json!({})).await.expect_err("unknown task");
    assert_eq!(e.kind(), agentd_proto::ErrorKind::TaskNotFound);
}
