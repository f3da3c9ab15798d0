//! A commit whose caller left before the store answered (a client that
//! disconnected, a deadline that cut a tool call short): the task goes on
//! changing from whatever the store holds.

use super::*;
use agentd_proto::CancelTaskRequest;
use std::time::Duration;

/// Waits for `go`, abandons a WORKING change once the store has it, then
/// completes and reports how that went.
struct AbandonsAChange {
    go: Arc<Notify>,
    held: Arc<Notify>,
    result: tokio::sync::mpsc::UnboundedSender<Result<(), Error>>,
}

#[async_trait]
impl Agent for AbandonsAChange {
    async fn run(&self, turn: Turn) {
        self.go.notified().await;
        tokio::select! {
            r = turn.control.working(Some(Message::agent_text("half way"))) => {
                let _ = self.result.send(r.and(Err(Error::internal())));
                return;
            }
            () = self.held.notified() => {}
        }
        let _ = self.result.send(turn.control.complete(Some(Message::agent_text("done"))).await);
    }
}

/// A task whose run abandons its first WORKING change where `hold` says,
/// then completes: the states the store holds, and the stored version.
async fn abandon_then_complete(hold: Hold, return_immediately: bool) -> (Vec<TaskState>, u64) {
    let (go, held) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let (result, mut results) = tokio::sync::mpsc::unbounded_channel();
    let agent = AbandonsAChange { go: go.clone(), held: held.clone(), result };
    let (engine, store) = engine(agent);
    let mut blocking = None;
    if return_immediately {
        let task = task_of(engine.send_message(&user(), request(true)).await.unwrap());
        assert_eq!(store.task(&task.id).map(|t| t.version), Some(1), "the creation is in");
        *store.hold.lock().unwrap() = Some((hold, held));
    } else {
        // The blocking task's creation goes in with that change.
        *store.hold.lock().unwrap() = Some((hold, held));
        let engine = engine.clone();
        blocking = Some(tokio::spawn(async move { engine.send_message(&user(), request(false)).await }));
    }
    go.notify_one();
    results.recv().await.expect("the run reports").expect("the task completes after the abandoned change");
    if let Some(send) = blocking {
        let answer = task_of(send.await.unwrap().unwrap());
        assert_eq!(answer.status.state, TaskState::Completed);
    }
    let id = store.tasks().keys().next().cloned().expect("one task");
    let stored = store.task(&id).expect("committed");
    let settled = engine.settled(&id).await.unwrap();
    assert_eq!(settled.version, stored.version, "what the engine answers is what the store holds");
    (stored.status_history.iter().map(|s| s.state).collect(), stored.version)
}

#[tokio::test]
async fn a_change_abandoned_after_it_went_in_is_kept_and_the_task_goes_on() {
    use TaskState::*;
    let (states, version) = abandon_then_complete(Hold::After, true).await;
    assert_eq!((states, version), (vec![Submitted, Working, Completed], 3));
}

#[tokio::test]
async fn a_change_abandoned_before_it_went_in_is_not_made_and_the_task_goes_on() {
    use TaskState::*;
    let (states, version) = abandon_then_complete(Hold::Before, true).await;
    assert_eq!((states, version), (vec![Submitted, Completed], 2));
}

#[tokio::test]
async fn a_change_abandoned_while_queued_is_read_once_the_writer_wrote_it() {
    use TaskState::*;
    let (states, version) = abandon_then_complete(Hold::Queued, true).await;
    assert_eq!((states, version), (vec![Submitted, Working, Completed], 3));
}

#[tokio::test]
async fn a_creation_abandoned_with_its_first_change_after_it_went_in_is_not_made_twice() {
    use TaskState::*;
    let (states, version) = abandon_then_complete(Hold::After, false).await;
    assert_eq!((states, version), (vec![Submitted, Working, Completed], 2));
}

#[tokio::test]
async fn a_creation_abandoned_with_its_first_change_before_it_went_in_is_made_with_the_next() {
    use TaskState::*;
    let (states, version) = abandon_then_complete(Hold::Before, false).await;
    assert_eq!((states, version), (vec![Submitted, Completed], 1));
}

#[tokio::test]
async fn a_cancel_whose_caller_left_still_stops_the_run_and_settles_the_task() {
    let (engine, store) = engine(UntilCancelled);
    let task = task_of(engine.send_message(&user(), request(true)).await.unwrap());
    let held = Arc::new(Notify::new());
    *store.hold.lock().unwrap() = Some((Hold::After, held.clone()));
    let cancel = CancelTaskRequest { id: task.id.clone(), ..Default::default() };
    let alice = user();
    tokio::select! {
        r = engine.cancel_task(&alice, cancel.clone()) => panic!("the held commit answered: {r:?}"),
        () = held.notified() => {}
    }
    assert_eq!(store.task(&task.id).map(|t| t.state()), Some(TaskState::Canceled));
    // Nothing else commits the task: the dropped commit's guard settles it.
    // A deadline, not a wait: without that the run would wait forever.
    let settled = tokio::time::timeout(Duration::from_secs(10), engine.settled(&task.id)).await;
    let done = settled.expect("the task settles").unwrap();
    assert_eq!((done.state(), done.version), (TaskState::Canceled, 2));
    let again = engine.cancel_task(&user(), cancel).await.unwrap();
    assert_eq!(again.status.state, TaskState::Canceled, "a second cancel answers the ended task");
    assert_eq!(store.task(&task.id).map(|t| t.version), Some(2), "and commits nothing");
    assert_eq!(engine.live_tasks(), 0, "an ended task leaves memory");
}

#[tokio::test]
async fn input_whose_sender_left_after_it_went_in_runs_the_waiting_task_again() {
    let (engine, store) = engine(AlwaysAsks);
    let first = task_of(engine.send_message(&user(), request(false)).await.unwrap());
    assert_eq!(first.status.state, TaskState::InputRequired);
    let held = Arc::new(Notify::new());
    *store.hold.lock().unwrap() = Some((Hold::After, held.clone()));
    let mut more = request(false);
    let message = more.message.as_mut().expect("message");
    message.message_id = "m-2".into();
    message.task_id.clone_from(&first.id);
    let alice = user();
    tokio::select! {
        r = engine.send_message(&alice, more) => panic!("the held commit answered: {r:?}"),
        () = held.notified() => {}
    }
    // Its sender left while its commit was in the store's hands: the task
    // runs again with it all the same, and asks again.
    let settled = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let rec = engine.settled(&first.id).await.unwrap();
            if rec.state() == TaskState::InputRequired && rec.version >= 3 {
                return rec;
            }
            tokio::task::yield_now().await;
        }
    });
    let rec = settled.await.expect("the task ran again with the input");
    let ids: Vec<&str> = rec.task.history.iter().flatten().map(|m| m.message_id.as_str()).collect();
    assert_eq!(ids.iter().filter(|id| **id == "m-2").count(), 1, "{ids:?}");
}
