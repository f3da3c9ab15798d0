//! A store write that fails during a run fails the task with a reason
//! naming the cause: it is never mistaken for the task having gone away,
//! and the refused change is seen nowhere (a failed commit changes
//! nothing). Engine, agent loop, scripted model and SQLite store are the
//! real ones; the store is wrapped to refuse the commit a test picks.

use crate::engine_support::AnyUrl;
use agentd_core::{EngineBuilder, EngineConfig, Principal, Runtime, SendOutcome, Store};
use agentd_proto::ext::events::EventKind;
use agentd_proto::{
    GetTaskRequest, Message, Part, Role, SendMessageRequest, SendMessageResponse, StreamResponse, TaskState,
};
use agentd_runtime::agent_loop::{Limits, LoopAgent, Tools};
use agentd_runtime::model::{ScriptStep, ScriptedProvider};
use agentd_store::testing::{FaultyStore, carries_artifact};
use agentd_store::{SqliteOptions, SqliteStore};
use std::sync::Arc;
use tempfile::TempDir;

/// An engine whose store refuses the first commit carrying an artifact:
/// the model's one reply. The directory holds the database.
fn refusing_the_reply() -> (Runtime, Arc<FaultyStore>, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite =
        SqliteStore::open(&dir.path().join("agentd.db"), SqliteOptions::default()).expect("open store");
    let store = Arc::new(FaultyStore::new(Arc::new(sqlite), 1, carries_artifact));
    let model = Arc::new(ScriptedProvider::from_steps(vec![ScriptStep::text("the answer")]));
    let agent = LoopAgent::new(model, "You are careful.", Limits::default(), Tools::default());
    let shared: Arc<dyn Store> = store.clone();
    let engine =
        EngineBuilder::new(shared, Arc::new(agent), Arc::new(AnyUrl), EngineConfig::default()).build();
    (engine, store, dir)
}

fn hello() -> SendMessageRequest {
    let message = Message {
        message_id: "m1".into(),
        role: Role::User,
        parts: vec![Part::text("hello")],
        ..Message::default()
    };
    SendMessageRequest { message: Some(message), ..SendMessageRequest::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_the_store_refuses_fails_the_task_with_the_cause() {
    let (engine, store, _dir) = refusing_the_reply();
    let op = Principal::local_operator();
    let SendMessageResponse::Task(task) = engine.send_message(&op, hello()).await.expect("send") else {
        panic!("expected a task");
    };
    assert_eq!(store.failed(), 1, "the reply's first chunk was refused");
    assert_eq!(task.status.state, TaskState::Failed, "{task:?}");
    let reason = task.status.message.as_ref().map(Message::text).unwrap_or_default();
    assert!(
        reason.contains("could not record") && reason.contains("injected fault: the disk is full"),
        "{reason}"
    );

    // The failure is committed: a read from the store says the same.
    let stored =
        engine.get_task(&op, GetTaskRequest { id: task.id.clone(), ..GetTaskRequest::default() }).await;
    let stored = stored.expect("the task is there");
    assert_eq!(stored.status.state, TaskState::Failed);
    assert_eq!(stored.status.message.as_ref().map(Message::text).unwrap_or_default(), reason);
    // The refused reply is in neither record.
    assert_eq!(task.artifacts.as_deref().unwrap_or_default(), [], "the answer shows the refused reply");
    assert_eq!(stored.artifacts.as_deref().unwrap_or_default(), [], "the store holds the refused reply");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_the_store_refuses_reaches_no_stream() {
    let (engine, store, _dir) = refusing_the_reply();
    // The stream is open before the run makes its reply.
    let outcome = engine.send(&Principal::local_operator(), hello(), true).await.expect("send");
    let SendOutcome::Task(mut events) = outcome else { panic!("expected a task") };
    let mut seen = Vec::new();
    while let Some(ev) = events.next().await {
        seen.push(ev.expect("the stream is not cut off"));
    }
    assert_eq!(store.failed(), 1, "the reply's first chunk was refused");
    assert!(
        !seen.iter().any(|ev| matches!(&***ev, StreamResponse::ArtifactUpdate(_))),
        "the stream saw the refused reply"
    );
    let last = seen.last().expect("events");
    assert!(
        matches!(&***last, StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Failed),
        "the stream ends with the failure"
    );
}

/// A batch that writes the `conversation` event of a closing.
fn carries_a_closing_event(batch: &agentd_core::Batch) -> bool {
    batch.events.iter().any(|e| e.kind == EventKind::Conversation && e.task_id.is_none())
}

/// Closing a conversation and its `conversation` event are one commit: when
/// the store refuses it, the conversation stays open and takes turns; when
/// it accepts it, both the closing and the event are in the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_closing_leaves_the_conversation_open_and_no_event() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite =
        SqliteStore::open(&dir.path().join("agentd.db"), SqliteOptions::default()).expect("open store");
    let store = Arc::new(FaultyStore::new(Arc::new(sqlite), 1, carries_a_closing_event));
    let steps = vec![ScriptStep::text("first"), ScriptStep::text("second")];
    let model = Arc::new(ScriptedProvider::from_steps(steps));
    let agent = LoopAgent::new(model, "You are careful.", Limits::default(), Tools::default());
    let shared: Arc<dyn Store> = store.clone();
    let engine =
        EngineBuilder::new(shared, Arc::new(agent), Arc::new(AnyUrl), EngineConfig::default()).build();
    let op = Principal::local_operator();
    let turn = |id: &str| {
        let message = Message {
            message_id: id.into(),
            context_id: "ctx-close".into(),
            role: Role::User,
            parts: vec![Part::text("hello")],
            ..Message::default()
        };
        SendMessageRequest { message: Some(message), ..SendMessageRequest::default() }
    };
    let completed = |r: SendMessageResponse| matches!(r, SendMessageResponse::Task(t) if t.status.state == TaskState::Completed);
    assert!(completed(engine.send_message(&op, turn("m1")).await.expect("first turn")));

    let field = agentd_core::FieldPath::default().member("contextId");
    let refused = engine.close_context(&op, "ctx-close", &field, "closed").await;
    assert!(refused.is_err(), "the store refused the closing: {refused:?}");
    assert_eq!(store.failed(), 1);
    assert!(!engine.context_closed("ctx-close"), "a refused closing closes nothing");
    assert!(!store.closed_contexts().await.unwrap().contains(&"ctx-close".to_owned()));
    let closings = |events: Vec<agentd_core::EventRecord>| {
        events.iter().filter(|e| e.event.kind == EventKind::Conversation && e.event.task_id.is_none()).count()
    };
    assert_eq!(closings(store.read_events(0, 1_000).await.unwrap()), 0, "and logs no closing");
    assert!(
        completed(engine.send_message(&op, turn("m2")).await.expect("a turn after the refused closing")),
        "the conversation still takes turns"
    );

    engine.close_context(&op, "ctx-close", &field, "closed").await.expect("the closing, accepted");
    assert!(engine.context_closed("ctx-close"));
    assert!(store.closed_contexts().await.unwrap().contains(&"ctx-close".to_owned()));
    assert_eq!(closings(store.read_events(0, 1_000).await.unwrap()), 1, "one closing, one event");
}
