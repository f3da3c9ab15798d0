//! A store write that fails during a run fails the task with a reason
//! naming the cause: it is never mistaken for the task having gone away.
//! Engine, agent loop, scripted model and SQLite store are the real ones;
//! the store is wrapped to refuse the commit a test picks.

use crate::engine_support::AnyUrl;
use agentd_core::{EngineBuilder, EngineConfig, Principal, Store};
use agentd_proto::{GetTaskRequest, Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskState};
use agentd_runtime::agent_loop::{Limits, LoopAgent, Tools};
use agentd_runtime::model::{ScriptStep, ScriptedProvider};
use agentd_store::testing::{FaultyStore, carries_artifact};
use agentd_store::{SqliteOptions, SqliteStore};
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_the_store_refuses_fails_the_task_with_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite =
        SqliteStore::open(&dir.path().join("agentd.db"), SqliteOptions::default()).expect("open store");
    let store = Arc::new(FaultyStore::new(Arc::new(sqlite), 1, carries_artifact));
    let model = Arc::new(ScriptedProvider::from_steps(vec![ScriptStep::text("the answer")]));
    let agent = LoopAgent::new(model, "You are careful.", Limits::default(), Tools::default());
    let shared: Arc<dyn Store> = store.clone();
    let engine =
        EngineBuilder::new(shared, Arc::new(agent), Arc::new(AnyUrl), EngineConfig::default()).build();
    let op = Principal::local_operator();

    let message = Message {
        message_id: "m1".into(),
        role: Role::User,
        parts: vec![Part::text("hello")],
        ..Message::default()
    };
    let req = SendMessageRequest { message: Some(message), ..SendMessageRequest::default() };
    let SendMessageResponse::Task(task) = engine.send_message(&op, req).await.expect("send") else {
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
}
