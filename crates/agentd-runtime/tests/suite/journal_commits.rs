//! What the step journal costs a turn: a turn that ends in one model call
//! commits its journal entry with the completion (no commit of its own),
//! and a turn with a tool call commits the response with the call's start,
//! and the result before the next model call. Engine, agent loop,
//! scripted model and SQLite store are the real ones; the store is wrapped
//! to see each batch.

use crate::engine_support::AnyUrl;
use agentd_core::{Batch, EngineBuilder, EngineConfig, Principal, StepRecord, Store};
use agentd_proto::{Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskState};
use agentd_runtime::agent_loop::{Limits, LoopAgent, Tools};
use agentd_runtime::model::{ScriptStep, ScriptedProvider};
use agentd_store::testing::FaultyStore;
use agentd_store::{SqliteOptions, SqliteStore};
use std::sync::{Arc, Mutex};

/// What a batch wrote: the task states and the journal entries' kinds.
type Seen = Vec<(Vec<TaskState>, Vec<&'static str>)>;

fn kind(s: &StepRecord) -> &'static str {
    match s {
        StepRecord::ModelInput(_) => "model_input",
        StepRecord::Model(_) => "model",
        StepRecord::ToolStarted(_) => "tool_started",
        StepRecord::ToolResult(_) => "tool_result",
        StepRecord::ToolProgress(_) => "tool_progress",
    }
}

/// Runs one blocking turn over `steps` and returns every batch committed.
async fn batches_of(steps: Vec<ScriptStep>) -> (TaskState, Seen) {
    let dir = tempfile::tempdir().unwrap();
    let sqlite =
        SqliteStore::open(&dir.path().join("agentd.db"), SqliteOptions::default()).expect("open store");
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let log = seen.clone();
    // Refuses nothing: the rule only looks.
    let store = Arc::new(FaultyStore::new(Arc::new(sqlite), 0, move |b: &Batch| {
        let states = b.tasks.iter().map(|t| t.state()).collect();
        let entries = b.journal.iter().map(|e| kind(&e.step)).collect();
        log.lock().unwrap().push((states, entries));
        false
    }));
    let model = Arc::new(ScriptedProvider::from_steps(steps));
    let agent = LoopAgent::new(model, "You are careful.", Limits::default(), Tools::default());
    let shared: Arc<dyn Store> = store.clone();
    let engine =
        EngineBuilder::new(shared, Arc::new(agent), Arc::new(AnyUrl), EngineConfig::default()).build();
    let message = Message {
        message_id: "m1".into(),
        role: Role::User,
        parts: vec![Part::text("hello")],
        ..Message::default()
    };
    let req = SendMessageRequest { message: Some(message), ..SendMessageRequest::default() };
    let op = Principal::local_operator();
    let SendMessageResponse::Task(task) = engine.send_message(&op, req).await.expect("send") else {
        panic!("expected a task");
    };
    let seen = seen.lock().unwrap().clone();
    (task.status.state, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_of_one_model_call_commits_its_journal_entry_with_its_completion() {
    let (state, seen) = batches_of(vec![ScriptStep::text("the answer")]).await;
    assert_eq!(state, TaskState::Completed);
    let journaled: Vec<_> = seen.iter().filter(|(_, entries)| !entries.is_empty()).collect();
    assert_eq!(journaled.len(), 1, "one batch carries the journal: {seen:?}");
    assert_eq!(journaled[0], &(vec![TaskState::Completed], vec!["model"]), "the completing one: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_is_journaled_with_its_response_before_it_runs_and_its_result_before_the_next_call() {
    let steps = vec![ScriptStep::tool_call("no_such_tool", serde_json::json!({})), ScriptStep::text("done")];
    let (state, seen) = batches_of(steps).await;
    assert_eq!(state, TaskState::Completed);
    let journal: Vec<&(Vec<TaskState>, Vec<&str>)> = seen.iter().filter(|(_, e)| !e.is_empty()).collect();
    let want: Vec<(Vec<TaskState>, Vec<&str>)> = vec![
        (vec![], vec!["model", "tool_started"]),
        (vec![], vec!["tool_result"]),
        (vec![TaskState::Completed], vec!["model"]),
    ];
    assert_eq!(journal.into_iter().cloned().collect::<Vec<_>>(), want, "{seen:?}");
}
