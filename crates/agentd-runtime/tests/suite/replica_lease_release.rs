//! A message that reaches a replica while its previous run of the same
//! task is still giving the task's lease up starts a run there
//! (`docs/scaling.md`). The test holds the lease row locked in PostgreSQL
//! as the run ends, so the release waits in the database exactly in that
//! window, and sends the next message then: the engine must run it once
//! the release went through, not take the lease its own ending run still
//! held for another replica's and run the task nowhere.

use agentd_core::{Agent, Principal, PrincipalRole, ReplicaConfig, Store, Turn};
use agentd_proto::{Message, SendMessageRequest, SendMessageResponse, TaskState};
use agentd_store::PostgresStore;
use agentd_store::testing::postgres;
use async_trait::async_trait;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, mpsc};

/// "ask": asks for input, then ends its run when the test says so;
/// anything else completes the task.
struct AskThenComplete {
    end_run: Mutex<mpsc::UnboundedReceiver<()>>,
}

#[async_trait]
impl Agent for AskThenComplete {
    async fn run(&self, turn: Turn) {
        if turn.input.text() == "ask" {
            let _ = turn.control.input_required(Message::agent_text("Which one?")).await;
            self.end_run.lock().await.recv().await;
        } else {
            let _ = turn.control.complete(Some(Message::agent_text("Done."))).await;
        }
    }
}

fn message(text: &str, task_id: Option<&str>, return_immediately: bool) -> SendMessageRequest {
    let mut m = json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(id) = task_id {
        m["taskId"] = json!(id);
    }
    let request = json!({"message": m, "configuration": {"returnImmediately": return_immediately}});
    serde_json::from_value(request).expect("a request")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_arriving_while_the_previous_run_releases_the_lease_runs_on_the_same_replica() {
    let Some(options) = postgres::database().await else { return };
    let (end_run, end_run_rx) = mpsc::unbounded_channel();
    let store: Arc<dyn Store> = Arc::new(PostgresStore::open(&options).await.expect("open the store"));
    // A long ttl and no lease loops: nothing but this replica's own run
    // may run the task within the test.
    let replica = ReplicaConfig {
        id: "r1".into(),
        lease_ttl: Duration::from_secs(60),
        poll_interval: Duration::from_secs(20),
    };
    let agent = Arc::new(AskThenComplete { end_run: Mutex::new(end_run_rx) });
    let r1 = crate::engine_support::replica(store, agent, replica);
    let alice = Principal::new("user:alice", PrincipalRole::User);
    let asked = r1.engine().send_message(&alice, message("ask", None, false)).await.expect("asked");
    let SendMessageResponse::Task(task) = asked else { panic!("a task: {asked:?}") };
    assert_eq!(task.status.state, TaskState::InputRequired);
    let id = task.id.clone();

    // Lock the task's lease row, then let the run end: its release waits
    // for the lock.
    let mut config: tokio_postgres::Config = options.url.parse().expect("the database URL");
    config.password(options.password.clone().unwrap_or_default());
    let (mut db, conn) = config.connect(tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(conn);
    let lock = db.transaction().await.expect("begin");
    let resource = agentd_core::task_resource(&id);
    let row = lock
        .query_opt("SELECT holder FROM leases WHERE resource = $1 FOR UPDATE", &[&resource])
        .await
        .expect("lock the lease row");
    assert_eq!(row.map(|r| r.get::<_, String>(0)).as_deref(), Some("r1"), "the run holds the task's lease");
    end_run.send(()).expect("end the run");
    let (observer, conn) = config.connect(tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(conn);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = observer
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE leases SET holder%'",
                &[],
            )
            .await
            .expect("read the sessions")
            .get(0);
        if waiting > 0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the run's release never reached the database");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // The answer arrives now. Committing it may wait for the release; a
    // short grace lets it reach the engine before the row is let go.
    let engine = r1.engine().clone();
    let answer_id = id.clone();
    let mut answered = tokio::spawn(async move {
        engine.send_message(&alice, message("the first", Some(&answer_id), true)).await
    });
    let early = tokio::time::timeout(Duration::from_millis(500), &mut answered).await;
    lock.commit().await.expect("let the lease row go");
    let answered = match early {
        Ok(done) => done,
        Err(_) => answered.await,
    };
    answered.expect("the answer's task").expect("the answer accepted");

    // The answer's run completes the task: it ran here, the only replica.
    let reader = PostgresStore::open(&options).await.expect("open the store");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let state = loop {
        let state = reader.get_task(&id).await.expect("read").expect("the task").state();
        if state == TaskState::Completed || tokio::time::Instant::now() > deadline {
            break state;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(state, TaskState::Completed, "the answer's run completed the task");
}
