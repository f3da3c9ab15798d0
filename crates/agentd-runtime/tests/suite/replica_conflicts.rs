//! A holder's commit racing a change committed on another replica is made
//! again on the task's new version (`docs/scaling.md`): two engines, r1
//! and r2, on one PostgreSQL database of the test binary's own cluster.
//! r1 runs a turn and follows nothing (no lease loops), so it learns of
//! r2's commits only from its own commits' version conflicts: before each
//! of r1's commits (a reminder delivery at a model call, progress in the
//! task's meta, the completion) r2 commits steering input to the task,
//! and every one of r1's commits races it. None may fail, and nothing of
//! either side may be lost.

use crate::engine_support::AnyUrl;
use agentd_core::{
    Agent, EngineBuilder, EngineConfig, Principal, PrincipalRole, ReplicaConfig, Runtime, Store, Turn,
};
use agentd_proto::ext::reminders::InjectTaskReminderRequest;
use agentd_proto::{Message, SendMessageRequest, SendMessageResponse, TaskState};
use agentd_store::PostgresStore;
use agentd_store::testing::postgres;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, mpsc};

const STEPS: usize = 8;

/// What r1's turn did at one step.
#[derive(Debug)]
enum Acted {
    /// A model call's reminders (their ids) and the steering input it got.
    ModelCall(Vec<String>, Vec<String>),
    /// Progress committed (or why not), and the steering input it found.
    Progress(Result<(), String>, Vec<String>),
    /// The completion committed (or why not).
    Completed(Result<(), String>),
}

/// A turn that acts when the test says so: a model call (reminders and
/// steering taken), then a progress commit, `STEPS` times, then completes.
struct Stepwise {
    go: Mutex<mpsc::UnboundedReceiver<()>>,
    acted: mpsc::UnboundedSender<Acted>,
}

fn texts(messages: &[Message]) -> Vec<String> {
    messages.iter().flat_map(|m| m.parts.iter().filter_map(|p| p.as_text().map(str::to_owned))).collect()
}

#[async_trait]
impl Agent for Stepwise {
    async fn run(&self, turn: Turn) {
        let c = turn.control;
        let mut go = self.go.lock().await;
        for step in 0..STEPS {
            go.recv().await;
            let reminders = c.reminders_for_model_call().await.into_iter().map(|r| r.id).collect();
            let steering = texts(&c.take_steering().await);
            let _ = self.acted.send(Acted::ModelCall(reminders, steering));
            go.recv().await;
            let progress = c
                .commit(
                    |meta| {
                        let mut done = meta.checkpoint.take().unwrap_or_else(|| json!([]));
                        if let Some(list) = done.as_array_mut() {
                            list.push(json!(step));
                        }
                        meta.checkpoint = Some(done);
                    },
                    None,
                )
                .await;
            let progress = progress.map(|_| ()).map_err(|e| e.to_string());
            let _ = self.acted.send(Acted::Progress(progress, texts(&c.take_steering().await)));
        }
        go.recv().await;
        let done = c.complete(Some(Message::agent_text("All done."))).await;
        let _ = self.acted.send(Acted::Completed(done.map_err(|e| e.to_string())));
    }
}

/// Runs no turn: r2 only commits what it is sent (r1 holds the task).
struct Idle;

#[async_trait]
impl Agent for Idle {
    async fn run(&self, _turn: Turn) {}
}

async fn replica(id: &str, agent: Arc<dyn Agent>, options: &agentd_store::PostgresOptions) -> Runtime {
    let store: Arc<dyn Store> = Arc::new(PostgresStore::open(options).await.expect("open the store"));
    let replica = ReplicaConfig {
        id: id.into(),
        lease_ttl: Duration::from_secs(60),
        poll_interval: Duration::from_secs(20),
    };
    EngineBuilder::new(store, agent, Arc::new(AnyUrl), EngineConfig { replica, ..EngineConfig::default() })
        .build()
}

fn message(text: &str, task_id: Option<&str>) -> SendMessageRequest {
    let mut m = json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(id) = task_id {
        m["taskId"] = json!(id);
    }
    serde_json::from_value(json!({"message": m, "configuration": {"returnImmediately": true}}))
        .expect("a request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_commit_of_a_turn_racing_steering_from_another_replica_is_made_again_and_loses_nothing() {
    let Some(options) = postgres::database().await else { return };
    let (go, go_rx) = mpsc::unbounded_channel();
    let (acted_tx, mut acted) = mpsc::unbounded_channel();
    let r1 = replica("r1", Arc::new(Stepwise { go: Mutex::new(go_rx), acted: acted_tx }), &options).await;
    let r2 = replica("r2", Arc::new(Idle), &options).await;
    let alice = Principal::new("user:alice", PrincipalRole::User);
    let started = r1.engine().send_message(&alice, message("start", None)).await.expect("started");
    let SendMessageResponse::Task(task) = started else { panic!("a task: {started:?}") };
    let id = task.id.clone();
    let mut next = async || tokio::time::timeout(Duration::from_secs(30), acted.recv()).await.expect("acted");
    let mut sent = Vec::new();
    let steer = async |text: String| {
        r2.engine().send_message(&alice, message(&text, Some(&id))).await.expect("steering committed on r2");
        text
    };
    let (mut reminded, mut steered) = (Vec::new(), Vec::new());
    for step in 0..STEPS {
        sent.push(steer(format!("steer {step} before the model call")).await);
        let reminder: InjectTaskReminderRequest = serde_json::from_value(
            json!({"taskId": id, "reminder": {"id": format!("rem-{step}"), "body": "Mind it.", "ttlTurns": 1}}),
        )
        .expect("a reminder");
        r2.engine().inject_reminder(&alice, reminder).await.expect("reminder committed on r2");
        go.send(()).expect("go");
        match next().await {
            Some(Acted::ModelCall(reminders, steering)) => {
                reminded.extend(reminders);
                steered.extend(steering);
            }
            other => panic!("a model call: {other:?}"),
        }
        sent.push(steer(format!("steer {step} before the progress")).await);
        go.send(()).expect("go");
        match next().await {
            Some(Acted::Progress(r, steering)) => {
                r.unwrap_or_else(|e| panic!("progress {step} committed: {e}"));
                steered.extend(steering);
            }
            other => panic!("progress: {other:?}"),
        }
    }
    // Input that arrives as the turn completes is in its history; the
    // turn is over for it (as in one process).
    let last = steer("steer before the completion".into()).await;
    go.send(()).expect("go");
    match next().await {
        Some(Acted::Completed(r)) => r.unwrap_or_else(|e| panic!("the completion committed: {e}")),
        other => panic!("the completion: {other:?}"),
    }
    let expected: Vec<String> = (0..STEPS).map(|s| format!("rem-{s}")).collect();
    assert_eq!(reminded, expected, "each model call got the reminder injected on r2 before it");
    assert_eq!(steered, sent, "every steering message committed on r2 reached the run on r1, in order");
    // The store holds both sides' changes: r1's progress and completion,
    // r2's every message.
    let reader = PostgresStore::open(&options).await.expect("open the store");
    let stored = reader.get_task(&id).await.expect("read").expect("the task");
    assert_eq!(stored.state(), TaskState::Completed, "{stored:?}");
    let all: Vec<Value> = (0..STEPS).map(|s| json!(s)).collect();
    assert_eq!(stored.meta.checkpoint, Some(json!(all)), "every progress commit of r1 is in the store");
    let history = texts(stored.task.history.as_deref().unwrap_or_default());
    for text in sent.iter().chain([&last]) {
        assert!(history.contains(text), "{text:?} is in the history: {history:?}");
    }
}
