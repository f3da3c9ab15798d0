//! Bounded memory: a stream that falls behind is cut off without holding
//! back its task or the other streams, and a task that ends leaves memory.

use super::*;
use agentd_proto::{CancelTaskRequest, SubscribeToTaskRequest};
use tokio::sync::mpsc;

/// The events a stream's channel holds: small, so a test overruns it.
const CAPACITY: usize = 4;

/// Publishes one WORKING update per text it is sent, and completes when
/// the sender is dropped.
struct Steps(Mutex<Option<mpsc::UnboundedReceiver<String>>>);

#[async_trait]
impl Agent for Steps {
    async fn run(&self, turn: Turn) {
        let mut steps = self.0.lock().unwrap().take().expect("one run");
        while let Some(text) = steps.recv().await {
            turn.control.working(Some(Message::agent_text(text))).await.unwrap();
        }
        turn.control.complete(Some(Message::agent_text("done"))).await.unwrap();
    }
}

fn status_text(ev: &StreamResponse) -> Option<String> {
    match ev {
        StreamResponse::StatusUpdate(u) => u.status.message.as_ref().map(Message::text),
        _ => None,
    }
}

#[tokio::test]
async fn a_stream_that_falls_behind_gets_an_error_and_ends_alone() {
    let (steps, rx) = mpsc::unbounded_channel();
    let store = Arc::new(CountingStore::default());
    let config = EngineConfig { stream_capacity: CAPACITY, ..EngineConfig::default() };
    let agent = Arc::new(Steps(Mutex::new(Some(rx))));
    let engine = EngineBuilder::new(store.clone(), agent, Arc::new(AnyUrl), config).build().engine().clone();
    let SendOutcome::Task(mut reading) = engine.send(&user(), request(false), true).await.unwrap() else {
        panic!("a message instead of a task");
    };
    let id = reading.task_id().to_owned();
    let sub = SubscribeToTaskRequest { id: id.clone(), ..Default::default() };
    let mut unread = engine.subscribe(&user(), sub).await.unwrap();

    // Each update is read by `reading` before the next is made: it never
    // falls behind, while `unread` falls three capacities behind.
    let sent: Vec<String> = (0..3 * CAPACITY).map(|i| format!("step {i}")).collect();
    let mut seen = Vec::new();
    for text in &sent {
        steps.send(text.clone()).unwrap();
        while seen.last() != Some(text) {
            let ev = reading.next().await.expect("open").expect("the reading stream is not cut off");
            seen.extend(status_text(&ev));
        }
    }
    drop(steps);
    let mut last = None;
    while let Some(ev) = reading.next().await {
        last = Some(ev.expect("the reading stream is not cut off"));
    }
    let last = last.expect("the reading stream saw the end");
    assert!(
        matches!(&**last, StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Completed),
        "the reading stream ends with the completion: {:?}",
        &**last
    );
    assert_eq!(seen, sent, "the reading stream saw every update, in order");
    assert_eq!(store.task(&id).map(|t| t.state()), Some(TaskState::Completed), "the task was not held back");

    let snapshot = unread.next().await.expect("the snapshot").expect("the snapshot");
    assert!(matches!(&**snapshot, StreamResponse::Task(_)), "{:?}", &**snapshot);
    match unread.next().await.expect("an error, not the end") {
        Err(e) => assert!(e.to_string().contains("behind"), "{e}"),
        Ok(ev) => panic!("the stream fell behind, yet it read {:?}", &**ev),
    }
    assert!(unread.next().await.is_none(), "a stream cut off ends");
}

#[tokio::test]
async fn a_task_leaves_memory_when_it_completes_or_is_canceled() {
    let (completing, _) = engine(Completes { go: None, reads_conversation: false });
    let task = task_of(completing.send_message(&user(), request(false)).await.unwrap());
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(completing.live_tasks(), 0, "a completed task is not in memory");

    // Never told to go: the run waits until the cancel ends its task.
    let (waiting, _) = engine(Completes { go: Some(Arc::new(Notify::new())), reads_conversation: false });
    let task = task_of(waiting.send_message(&user(), request(true)).await.unwrap());
    assert_eq!(waiting.live_tasks(), 1, "a running task is in memory");
    let cancel = CancelTaskRequest { id: task.id, ..Default::default() };
    let canceled = waiting.cancel_task(&user(), cancel).await.unwrap();
    assert_eq!(canceled.status.state, TaskState::Canceled);
    assert_eq!(waiting.live_tasks(), 0, "a canceled task is not in memory");
}
