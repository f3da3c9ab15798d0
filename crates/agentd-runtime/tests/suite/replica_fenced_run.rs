//! A run refused an action because its lease's local deadline passed
//! (its thread kept busy: no renewal could run) stops; its task is then
//! adopted and resumed, not failed as a run that "ended without a result".
//! Which notices the deadline first, the run or the lease loop giving the
//! lease up, is not forced here: the engine must resume the task either
//! way (`Engine::run_was_fenced` covers the run noticing first, which the
//! chaos test met on a loaded machine).

use agentd_core::{Agent, Principal, PrincipalRole, ReplicaConfig, Store, Turn};
use agentd_proto::{Message, SendMessageRequest, SendMessageResponse, TaskState};
use agentd_store::PostgresStore;
use agentd_store::testing::postgres;
use async_trait::async_trait;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Its first run works without yielding (CPU-bound work holding its
/// thread), asking its lease before each step as the agent loop does
/// before each model call, and stops when refused; a later run (the
/// resumed one) completes the task.
struct StopsWhenFenced {
    runs: AtomicUsize,
}

#[async_trait]
impl Agent for StopsWhenFenced {
    fn resumes(&self) -> bool {
        true
    }
    async fn run(&self, turn: Turn) {
        if self.runs.fetch_add(1, Ordering::SeqCst) > 0 {
            let _ = turn.control.complete(Some(Message::agent_text("Done."))).await;
            return;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while turn.control.check_lease().is_ok() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_stopped_by_its_lease_deadline_leaves_the_task_to_be_resumed_not_failed() {
    let Some(options) = postgres::database().await else { return };
    let store: Arc<dyn Store> = Arc::new(PostgresStore::open(&options).await.expect("open the store"));
    // The run may act until 1.5 s after its claim; the lease expires in the
    // database 2 s after it.
    let replica = ReplicaConfig {
        id: "r1".into(),
        lease_ttl: Duration::from_secs(2),
        poll_interval: Duration::from_millis(300),
    };
    let agent = Arc::new(StopsWhenFenced { runs: AtomicUsize::new(0) });
    let runs = Arc::clone(&agent);
    let r1 = crate::engine_support::replica(store, agent, replica);
    r1.spawn_lease_loops();
    let alice = Principal::new("user:alice", PrincipalRole::User);
    let request: SendMessageRequest = serde_json::from_value(json!({
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "work"}]},
        "configuration": {"returnImmediately": true}
    }))
    .expect("a request");
    let sent = r1.engine().send_message(&alice, request).await.expect("sent");
    let SendMessageResponse::Task(task) = sent else { panic!("a task: {sent:?}") };
    let id = task.id.clone();
    // Adopted once its lease is free and resumed: the second run completes it.
    let reader = PostgresStore::open(&options).await.expect("open the store");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let rec = loop {
        let rec = reader.get_task(&id).await.expect("read").expect("the task");
        if rec.state().is_terminal() || tokio::time::Instant::now() > deadline {
            break rec;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        rec.state(),
        TaskState::Completed,
        "resumed and completed, not failed: {:?}",
        rec.task.status.message.map(|m| m.text())
    );
    assert_eq!(runs.runs.load(Ordering::SeqCst), 2, "one run stopped by its lease, one resumed");
}
