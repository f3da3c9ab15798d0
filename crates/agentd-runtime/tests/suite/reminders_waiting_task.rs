//! A reminder given to a task waiting in INPUT_REQUIRED reaches the first
//! model call after the answer, even across a restart between injection
//! and delivery. The default agent has no model-driven way to ask for
//! input yet, so the agent here asks first and then runs the real agent
//! loop; engine, SQLite store and scripted model are the real ones.

use crate::engine_support::AnyUrl;
use agentd_core::{Agent, EngineBuilder, EngineConfig, Principal, ReminderEnd, Runtime, Store, Turn};
use agentd_proto::ext::reminders::{InjectTaskReminderRequest, ReminderInput};
use agentd_proto::{Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskState};
use agentd_runtime::agent_loop::{Limits, LoopAgent, Tools};
use agentd_runtime::model::reminder::extract;
use agentd_runtime::model::{ModelProvider, ScriptStep, ScriptToolCall, ScriptedProvider};
use agentd_store::{SqliteOptions, SqliteStore};
use async_trait::async_trait;
use std::path::Path;
use std::sync::Arc;

/// Asks which branch on "start"; any other input runs the agent loop.
struct AskFirst(LoopAgent);

#[async_trait]
impl Agent for AskFirst {
    async fn run(&self, turn: Turn) {
        if turn.input.text() == "start" {
            let _ = turn.control.input_required(Message::agent_text("Which branch?")).await;
        } else {
            self.0.run(turn).await;
        }
    }
}

/// The engine's runtime handle and its store.
fn engine(db: &Path, model: Arc<ScriptedProvider>) -> (Runtime, Arc<SqliteStore>) {
    let store = Arc::new(SqliteStore::open(db, SqliteOptions::default()).expect("open store"));
    let model: Arc<dyn ModelProvider> = model;
    let agent = AskFirst(LoopAgent::new(model, "You are careful.", Limits::default(), Tools::default()));
    let runtime =
        EngineBuilder::new(store.clone(), Arc::new(agent), Arc::new(AnyUrl), EngineConfig::default()).build();
    (runtime, store)
}

fn user(text: &str, task_id: &str) -> SendMessageRequest {
    let message = Message {
        message_id: uuid::Uuid::new_v4().to_string(),
        role: Role::User,
        parts: vec![Part::text(text)],
        task_id: task_id.into(),
        ..Message::default()
    };
    SendMessageRequest { message: Some(message), ..SendMessageRequest::default() }
}

fn task_of(r: SendMessageResponse) -> agentd_proto::Task {
    match r {
        SendMessageResponse::Task(t) => t,
        other => panic!("expected a task: {other:?}"),
    }
}

/// The reminder ids in each request the model received.
fn delivered(model: &ScriptedProvider) -> Vec<Vec<String>> {
    model
        .recorded()
        .iter()
        .map(|req| req.messages.iter().flat_map(|m| extract(&m.content).1).map(|b| b.id).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_task_keeps_its_reminder_through_a_restart_for_the_turn_after_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agentd.db");
    let op = Principal::local_operator();

    let before = Arc::new(ScriptedProvider::from_steps(Vec::new()));
    let (e1, _) = engine(&db, before.clone());
    let task = task_of(e1.send_message(&op, user("start", "")).await.unwrap());
    assert_eq!(task.status.state, TaskState::InputRequired);
    let req = InjectTaskReminderRequest {
        task_id: task.id.clone(),
        reminder: ReminderInput {
            id: Some("r1".into()),
            body: "Prefer main.".into(),
            ttl_turns: Some(2),
            ..Default::default()
        },
        ..Default::default()
    };
    let accepted = e1.inject_reminder(&op, req.clone()).await.unwrap();
    assert_eq!(accepted.reminder_id, "r1");
    assert!(before.recorded().is_empty(), "no model call while the task waits");
    drop(e1);

    // A new engine on the same database: the reminder is still there.
    let tool =
        ScriptToolCall { id: Some("c1".into()), name: "look".into(), arguments: serde_json::json!({}) };
    let after = Arc::new(ScriptedProvider::from_steps(vec![
        ScriptStep { tool_calls: vec![tool], ..ScriptStep::default() },
        ScriptStep::text("working on main"),
        ScriptStep::text("never used"),
    ]));
    let (e2, store) = engine(&db, after.clone());
    assert_eq!(e2.recover().await.unwrap(), 0, "a waiting task is not failed at start");
    assert_eq!(e2.inject_reminder(&op, req).await.unwrap(), accepted, "the same id answers the same result");
    let done = task_of(e2.send_message(&op, user("main, please", &task.id)).await.unwrap());
    assert_eq!(done.status.state, TaskState::Completed, "{done:?}");
    assert_eq!(
        delivered(&after),
        [vec!["r1".to_owned()], vec!["r1".to_owned()]],
        "both calls after the answer"
    );

    let stored = store.reminders(&task.id, false).await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!((stored[0].delivered, stored[0].ended.clone()), (2, Some(ReminderEnd::Expired)));
    let history = done.history.unwrap_or_default();
    assert!(history.iter().all(|m| !m.text().contains("Prefer main.")), "never in history: {history:?}");
}
