//! When a new task is committed: with the first change of its run, or
//! before its snapshot is published, never after anything observed it.

use super::*;
use crate::record::{OutboxItem, TaskRecord};
use crate::store::{PushConfigRow, StoreError, TaskPage, TaskQuery};
use crate::{PrincipalRole, Turn};
use agentd_proto::{
    CancelTaskRequest, Part, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, Task,
};
use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::Notify;

mod abandoned;
mod memory;

/// A store that keeps the last committed version of each task, checks
/// versions as a real store does, and counts the commits that wrote a task.
/// Its commits are written one at a time, in the order they came, as by
/// one writer.
struct CountingStore {
    written: Arc<Written>,
    events: tokio::sync::broadcast::Sender<Arc<crate::EventRecord>>,
    /// The next commit never answers: it is taken (written, with
    /// `Hold::After`, or queued, with `Hold::Queued`), the notify is told,
    /// and it waits until dropped.
    hold: Mutex<Option<(Hold, Arc<Notify>)>>,
    /// One writer: a commit holds it while it is written.
    writer: Arc<tokio::sync::Mutex<()>>,
    /// A queued commit, written when the next commit comes.
    queued: Mutex<Option<Arc<Notify>>>,
}

#[derive(Default)]
struct Written {
    tasks: Mutex<HashMap<String, TaskRecord>>,
    task_commits: Mutex<Vec<Vec<TaskState>>>,
}

impl Written {
    fn apply(&self, batch: &Batch) -> Result<(), StoreError> {
        let mut tasks = self.tasks.lock().unwrap();
        let mut written = tasks.clone();
        for t in batch.tasks.iter() {
            StoreError::check_version(t, written.get(t.id()).map_or(0, |r| r.version))?;
            written.insert(t.task.id.clone(), t.clone());
        }
        *tasks = written;
        if !batch.tasks.is_empty() {
            self.task_commits.lock().unwrap().push(batch.tasks.iter().map(TaskRecord::state).collect());
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Hold {
    /// Held before it is written: it does not go in.
    Before,
    /// Held once written: it goes in, and its caller never learns it.
    After,
    /// Queued for the writer, which gets to it when the next commit comes:
    /// it goes in after its caller left, as a real store's writer thread
    /// writes a batch whose caller stopped waiting.
    Queued,
}

impl Default for CountingStore {
    fn default() -> Self {
        Self {
            written: Arc::default(),
            events: tokio::sync::broadcast::channel(16).0,
            hold: Mutex::default(),
            writer: Arc::default(),
            queued: Mutex::default(),
        }
    }
}

impl CountingStore {
    fn task(&self, id: &str) -> Option<TaskRecord> {
        self.written.tasks.lock().unwrap().get(id).cloned()
    }
    /// The states written by each commit that wrote a task, in order.
    fn commits(&self) -> Vec<Vec<TaskState>> {
        self.written.task_commits.lock().unwrap().clone()
    }
    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRecord>> {
        self.written.tasks.lock().unwrap()
    }
}

#[async_trait]
impl Store for CountingStore {
    async fn commit(&self, batch: Batch) -> Result<(), StoreError> {
        let hold = self.hold.lock().unwrap().take();
        if let Some(write_queued) = self.queued.lock().unwrap().take() {
            write_queued.notify_one();
        }
        let writing = self.writer.clone().lock_owned().await;
        match hold {
            Some((Hold::Before, told)) => {
                told.notify_one();
                match std::future::pending::<std::convert::Infallible>().await {}
            }
            Some((Hold::Queued, told)) => {
                // The writer has it; the caller waits for an answer that
                // comes only after it stopped waiting.
                let go = Arc::new(Notify::new());
                *self.queued.lock().unwrap() = Some(go.clone());
                let written = self.written.clone();
                tokio::spawn(async move {
                    go.notified().await;
                    let _ = written.apply(&batch);
                    drop(writing);
                });
                told.notify_one();
                match std::future::pending::<std::convert::Infallible>().await {}
            }
            _ => {}
        }
        self.written.apply(&batch)?;
        drop(writing);
        if let Some((Hold::After, told)) = hold {
            told.notify_one();
            std::future::pending::<()>().await;
        }
        Ok(())
    }
    async fn get_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.task(id))
    }
    async fn list_tasks(&self, _: &TaskQuery) -> Result<TaskPage, StoreError> {
        Ok(TaskPage::default())
    }
    async fn tasks_in_states(&self, _: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        Ok(Vec::new())
    }
    async fn context_tasks(&self, context_id: &str) -> Result<Vec<TaskRecord>, StoreError> {
        let tasks = self.tasks();
        Ok(tasks.values().filter(|t| t.task.context_id == context_id).cloned().collect())
    }
    async fn context_foreign(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        let tasks = self.tasks();
        Ok(tasks.values().any(|t| t.task.context_id == context_id && t.owner != owner))
    }
    async fn get_push_config(&self, _: &str, _: &str) -> Result<Option<PushConfigRow>, StoreError> {
        Ok(None)
    }
    async fn list_push_configs(&self, _: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        Ok(Vec::new())
    }
    async fn due_outbox(&self, _: i64, _: usize) -> Result<Vec<OutboxItem>, StoreError> {
        Ok(Vec::new())
    }
    async fn outbox_depth(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
    async fn next_outbox_due(&self) -> Result<Option<i64>, StoreError> {
        Ok(None)
    }
    async fn closed_contexts(&self) -> Result<Vec<String>, StoreError> {
        Ok(Vec::new())
    }
    async fn reminders(&self, _: &str, _: bool) -> Result<Vec<crate::ReminderRecord>, StoreError> {
        Ok(Vec::new())
    }
    async fn get_reminder(&self, _: &str, _: &str) -> Result<Option<crate::ReminderRecord>, StoreError> {
        Ok(None)
    }
    async fn read_events(&self, _: u64, _: usize) -> Result<Vec<crate::EventRecord>, StoreError> {
        Ok(Vec::new())
    }
    async fn prune_step(&self, r: crate::EventRetention) -> Result<bool, StoreError> {
        crate::prune_step_by_bounds(self, r).await
    }
    async fn event_log_bounds(&self) -> Result<crate::EventLogBounds, StoreError> {
        Ok(crate::EventLogBounds::default())
    }
    async fn journal(&self, _: &str) -> Result<Vec<crate::JournalEntry>, StoreError> {
        Ok(Vec::new())
    }
    fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<Arc<crate::EventRecord>> {
        self.events.subscribe()
    }
    async fn outbox_queued(&self) {
        std::future::pending().await
    }
    fn may_have_push_configs(&self) -> bool {
        true
    }
    fn leases(&self) -> Option<&dyn crate::Leases> {
        None
    }
}

struct AnyUrl;

#[async_trait]
impl PushUrlPolicy for AnyUrl {
    async fn check(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
}

/// Waits for `go` (when given), then completes the task.
struct Completes {
    go: Option<Arc<Notify>>,
    /// Reads the conversation first, as a model-driven run does.
    reads_conversation: bool,
}

#[async_trait]
impl Agent for Completes {
    async fn run(&self, turn: Turn) {
        if let Some(go) = &self.go {
            go.notified().await;
        }
        if self.reads_conversation {
            turn.control.conversation().await.unwrap();
        }
        turn.control.complete(Some(Message::agent_text("done"))).await.unwrap();
    }
}

fn engine<A: Agent + 'static>(agent: A) -> (Engine, Arc<CountingStore>) {
    let store = Arc::new(CountingStore::default());
    let engine =
        EngineBuilder::new(store.clone(), Arc::new(agent), Arc::new(AnyUrl), EngineConfig::default())
            .build()
            .engine()
            .clone();
    (engine, store)
}

fn user() -> Principal {
    Principal::new("user:a", PrincipalRole::User)
}

fn request(return_immediately: bool) -> SendMessageRequest {
    SendMessageRequest {
        message: Some(Message {
            message_id: "m-1".into(),
            role: Role::User,
            parts: vec![Part::text("hi")],
            ..Message::default()
        }),
        configuration: Some(SendMessageConfiguration { return_immediately, ..Default::default() }),
        ..Default::default()
    }
}

fn task_of(r: SendMessageResponse) -> Task {
    match r {
        SendMessageResponse::Task(t) => t,
        SendMessageResponse::Message(m) => panic!("a message instead of a task: {m:?}"),
    }
}

#[tokio::test]
async fn a_blocking_send_that_completes_at_once_is_one_commit() {
    let (engine, store) = engine(Completes { go: None, reads_conversation: false });
    let task = task_of(engine.send_message(&user(), request(false)).await.unwrap());
    assert_eq!(task.status.state, TaskState::Completed);
    // The creation went in with the completion, and the answer is what was committed.
    assert_eq!(store.commits(), vec![vec![TaskState::Completed]]);
    let stored = store.task(&task.id).expect("the answered task is committed");
    assert_eq!(super::read::view(&stored, None, true), task);
    let states: Vec<TaskState> = stored.status_history.iter().map(|s| s.state).collect();
    assert_eq!(states, [TaskState::Submitted, TaskState::Completed]);
}

#[tokio::test]
async fn a_blocking_send_answers_with_the_text_of_its_task_event_when_that_is_the_answer() {
    let (engine, _store) = engine(Completes { go: None, reads_conversation: false });
    let json = |r: &SendMessageResponse| agentd_proto::exact::to_string(r).unwrap();
    let answer = engine.send_message_answer(&user(), request(false)).await.unwrap();
    let whole = answer.whole.expect("the answer's text is lent");
    assert_eq!(
        String::from_utf8(whole.view_framed(&[b"{\"task\":"], &[b"}"])).unwrap(),
        json(&answer.response)
    );
    // Not when the answer is not the whole task: fewer messages, annotations.
    let mut fewer = request(false);
    fewer.configuration.as_mut().unwrap().history_length = Some(0);
    let answer = engine.send_message_answer(&user(), fewer).await.unwrap();
    assert!(answer.whole.is_none(), "{}", json(&answer.response));
    let answer = engine.annotating(true).send_message_answer(&user(), request(false)).await.unwrap();
    assert!(answer.whole.is_none(), "{}", json(&answer.response));
    let mut all = request(false);
    all.configuration.as_mut().unwrap().history_length = Some(5);
    assert!(
        engine.send_message_answer(&user(), all).await.unwrap().whole.is_some(),
        "every message asked for"
    );
}

#[tokio::test]
async fn a_streamed_task_is_committed_before_it_is_answered() {
    let go = Arc::new(Notify::new());
    let (engine, store) = engine(Completes { go: Some(go.clone()), reads_conversation: false });
    let SendOutcome::Task(mut events) = engine.send(&user(), request(false), true).await.unwrap() else {
        panic!("a message instead of a task");
    };
    let id = events.task_id().to_owned();
    assert_eq!(store.task(&id).map(|t| t.state()), Some(TaskState::Submitted));
    let first = events.next().await.unwrap().unwrap();
    assert!(matches!(&**first, StreamResponse::Task(t) if t.status.state == TaskState::Submitted));
    assert_eq!(store.task(&id).map(|t| t.state()), Some(TaskState::Submitted));
    go.notify_one();
    while let Some(ev) = events.next().await {
        ev.unwrap();
    }
    assert_eq!(store.commits(), vec![vec![TaskState::Submitted], vec![TaskState::Completed]]);
}

#[tokio::test]
async fn return_immediately_answers_with_a_committed_task() {
    let go = Arc::new(Notify::new());
    let (engine, store) = engine(Completes { go: Some(go.clone()), reads_conversation: false });
    let task = task_of(engine.send_message(&user(), request(true)).await.unwrap());
    assert_eq!(task.status.state, TaskState::Submitted);
    assert_eq!(store.task(&task.id).map(|t| t.state()), Some(TaskState::Submitted));
    go.notify_one();
    let done = engine.settled(&task.id).await.unwrap();
    assert_eq!(done.state(), TaskState::Completed);
    assert_eq!(store.commits(), vec![vec![TaskState::Submitted], vec![TaskState::Completed]]);
}

#[tokio::test]
async fn a_run_reading_its_conversation_finds_its_task_committed() {
    let (engine, store) = engine(Completes { go: None, reads_conversation: true });
    let task = task_of(engine.send_message(&user(), request(false)).await.unwrap());
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(store.commits(), vec![vec![TaskState::Submitted], vec![TaskState::Completed]]);
}

fn in_context(mut r: SendMessageRequest, context_id: &str) -> SendMessageRequest {
    r.message.as_mut().expect("message").context_id = context_id.into();
    r
}

#[tokio::test]
async fn a_context_is_claimed_by_a_first_turn_not_committed_yet() {
    // Alice's blocking first turn is created but not committed (it goes in
    // with its run's first change, and the run waits): bob's first turn
    // with the same client-chosen contextId must not join her conversation.
    let go = Arc::new(Notify::new());
    let (engine, store) = engine(Completes { go: Some(go.clone()), reads_conversation: false });
    let bob = Principal::new("user:b", PrincipalRole::User);
    let alice_turn = tokio::spawn({
        let engine = engine.clone();
        async move { engine.send_message(&user(), in_context(request(false), "shared")).await }
    });
    while engine.live_tasks() == 0 {
        tokio::task::yield_now().await;
    }
    assert!(store.commits().is_empty(), "alice's task is not committed yet");
    let e = engine.send_message(&bob, in_context(request(true), "shared")).await.expect_err("bob refused");
    assert_eq!(e.kind(), agentd_proto::ErrorKind::InvalidParams, "{e}");
    assert_eq!(e.violations()[0].field.to_string(), "message.contextId");

    go.notify_one();
    let first = task_of(alice_turn.await.unwrap().unwrap());
    assert_eq!((first.context_id.as_str(), first.status.state), ("shared", TaskState::Completed));
    assert!(engine.inner.claims.is_empty(), "the claim ended with the commit");
    // Now the store holds the answer: bob is still refused, alice continues.
    let e = engine.send_message(&bob, in_context(request(true), "shared")).await.expect_err("bob refused");
    assert_eq!(e.violations()[0].field.to_string(), "message.contextId");
    go.notify_one();
    let second = task_of(engine.send_message(&user(), in_context(request(false), "shared")).await.unwrap());
    assert_eq!(second.context_id, "shared");
    let owners: Vec<String> = store.tasks().values().map(|t| t.owner.clone()).collect();
    assert_eq!(owners, ["user:a", "user:a"], "only alice's turns are in the conversation");
}

#[tokio::test]
async fn every_commit_of_a_task_is_its_next_version() {
    let go = Arc::new(Notify::new());
    let (engine, store) = engine(Completes { go: Some(go.clone()), reads_conversation: false });
    let task = task_of(engine.send_message(&user(), request(true)).await.unwrap());
    assert_eq!(store.task(&task.id).map(|t| t.version), Some(1), "the creation is version 1");
    go.notify_one();
    // A deadline, not a wait: a completion the store refused would leave
    // the task unsettled.
    let settled = tokio::time::timeout(std::time::Duration::from_secs(10), engine.settled(&task.id)).await;
    let done = settled.expect("the completion is committed").unwrap();
    assert_eq!(done.version, 2, "the completion is the next commit");
    assert_eq!(store.task(&task.id).map(|t| t.version), Some(2));
}

/// Waits for `go`, then reports how its completion went on `result`.
struct CompletesAndReports {
    go: Arc<Notify>,
    result: tokio::sync::mpsc::UnboundedSender<Result<(), Error>>,
}

#[async_trait]
impl Agent for CompletesAndReports {
    async fn run(&self, turn: Turn) {
        self.go.notified().await;
        let _ = self.result.send(turn.control.complete(Some(Message::agent_text("done"))).await);
    }
}

#[tokio::test]
async fn a_task_changed_by_another_writer_is_an_internal_error_not_a_missing_task() {
    let go = Arc::new(Notify::new());
    let (result, mut results) = tokio::sync::mpsc::unbounded_channel();
    let store = Arc::new(CountingStore::default());
    let agent = CompletesAndReports { go: go.clone(), result };
    let engine =
        EngineBuilder::new(store.clone(), Arc::new(agent), Arc::new(AnyUrl), EngineConfig::default())
            .build()
            .engine()
            .clone();
    let task = task_of(engine.send_message(&user(), request(true)).await.unwrap());
    // Another writer commits the task behind the engine's back.
    let mut theirs = store.task(&task.id).expect("committed");
    theirs.version += 1;
    store.commit(Batch { tasks: vec![theirs], ..Batch::default() }).await.unwrap();
    go.notify_one();
    let e = results.recv().await.expect("the run reports").expect_err("the stale commit is refused");
    assert_eq!(e.kind(), agentd_proto::ErrorKind::Internal, "{e}");
    assert!(!e.task_gone(), "a conflict is no missing task: {e}");
    let stored = store.task(&task.id).expect("still there");
    assert_eq!(
        (stored.state(), stored.version),
        (TaskState::Submitted, 2),
        "the other writer's commit stands"
    );
}

/// Works until its run is cancelled, then ends without a word.
struct UntilCancelled;

#[async_trait]
impl Agent for UntilCancelled {
    async fn run(&self, turn: Turn) {
        turn.control.cancelled().cancelled().await;
    }
}

#[tokio::test]
async fn a_stopping_engine_refuses_new_messages_and_commits_nothing() {
    let (engine, store) = engine(Completes { go: None, reads_conversation: false });
    engine.stop_accepting();
    let e = engine.send_message(&user(), request(false)).await.expect_err("refused");
    assert_eq!(e.kind(), agentd_proto::ErrorKind::Unavailable, "{e:?}");
    assert!(e.to_string().contains("shutting down"), "{e}");
    assert!(store.commits().is_empty(), "nothing was created");
}

/// Asks a question and waits for its run to be stopped, as a tool call
/// waiting for a person's approval does.
struct AsksAndWaits;

#[async_trait]
impl Agent for AsksAndWaits {
    async fn run(&self, turn: Turn) {
        let question = Message::agent_text("May I?");
        if turn.control.input_required(question).await.is_ok() {
            turn.control.cancelled().cancelled().await;
        }
    }
}

#[tokio::test]
async fn a_drain_ends_once_every_run_left_waits_for_a_person() {
    let (engine, _store) = engine(AsksAndWaits);
    let task = task_of(engine.send_message(&user(), request(true)).await.unwrap());
    // An hour of grace: nobody answers within it, so it is not waited out.
    let drained = engine.drain_runs(std::time::Duration::from_secs(3600)).await;
    assert_eq!(drained, super::Drained::WaitingForPeople);
    let rec = engine.record(&task.id).await.unwrap().expect("the task");
    assert_eq!(rec.state(), TaskState::InputRequired, "the question is still open");
}

/// Asks for more at every turn: each message continues its task.
struct AlwaysAsks;

#[async_trait]
impl Agent for AlwaysAsks {
    async fn run(&self, turn: Turn) {
        turn.control.input_required(Message::agent_text("more?")).await.unwrap();
    }
}

#[tokio::test]
async fn a_task_takes_no_message_past_its_history_bound_and_its_context_takes_new_tasks() {
    let store = Arc::new(CountingStore::default());
    let cfg = EngineConfig { max_task_history_bytes: 2_000, ..EngineConfig::default() };
    let engine = EngineBuilder::new(store.clone(), Arc::new(AlwaysAsks), Arc::new(AnyUrl), cfg)
        .build()
        .engine()
        .clone();
    let first = task_of(engine.send_message(&user(), request(false)).await.unwrap());
    assert_eq!(first.status.state, TaskState::InputRequired);
    let more = |n: usize, task_id: &str| SendMessageRequest {
        message: Some(Message {
            message_id: format!("m-{n}"),
            task_id: task_id.into(),
            context_id: first.context_id.clone(),
            role: Role::User,
            parts: vec![Part::text("x".repeat(400))],
            ..Message::default()
        }),
        ..Default::default()
    };
    let mut refused = None;
    for n in 0..10 {
        match engine.send_message(&user(), more(n, &first.id)).await {
            Ok(r) => assert_eq!(task_of(r).status.state, TaskState::InputRequired),
            Err(e) => {
                refused = Some((n, e));
                break;
            }
        }
    }
    let (n, e) = refused.expect("a message past 2,000 bytes of history is refused");
    assert!(n >= 2, "messages within the bound are taken: refused at {n}");
    assert_eq!(e.kind(), agentd_proto::ErrorKind::UnsupportedOperation, "{e:?}");
    assert!(e.to_string().contains("the most a task holds"), "{e}");
    let stored = store.task(&first.id).expect("committed");
    let held: usize =
        stored.task.history.iter().flatten().map(|m| agentd_proto::exact::json_len(m).unwrap()).sum();
    assert!(held <= 2_000, "the refused message is not in the history: {held} bytes");
    // The context takes a new task.
    let next = task_of(engine.send_message(&user(), more(99, "")).await.expect("a new task in the context"));
    assert_ne!(next.id, first.id);
    assert_eq!(next.context_id, first.context_id);
}

#[tokio::test]
async fn a_halt_fails_a_running_task_with_the_stop_reason() {
    let store = Arc::new(CountingStore::default());
    let engine = EngineBuilder::new(
        store.clone(),
        Arc::new(UntilCancelled),
        Arc::new(AnyUrl),
        EngineConfig::default(),
    )
    .build()
    .engine()
    .clone();
    let task = task_of(engine.send_message(&user(), request(true)).await.unwrap());
    let drained = engine.drain_runs(std::time::Duration::ZERO).await;
    assert_eq!(drained, super::Drained::GraceOver, "the turn is still running");
    let halted = engine.halt(std::time::Duration::from_secs(10)).await;
    assert_eq!(halted, super::Halted { failed: 1, left: 0 });
    let stored = store.task(&task.id).expect("committed");
    assert_eq!(stored.state(), TaskState::Failed);
    let why = stored.task.status.message.as_ref().map(|m| format!("{:?}", m.parts)).unwrap_or_default();
    assert!(why.contains(super::lifecycle::STOPPED), "{why}");
    let drained = engine.drain_runs(std::time::Duration::ZERO).await;
    assert_eq!(drained, super::Drained::All, "the run ended");
}

#[test]
fn a_view_moved_out_of_a_record_equals_the_view_cloned_from_it() {
    let msg = |id: &str| Message {
        message_id: id.into(),
        role: Role::User,
        parts: vec![Part::text(id)],
        ..Message::default()
    };
    let three = Some(vec![msg("a"), msg("b"), msg("c")]);
    for history in [three, Some(vec![]), None] {
        let rec = TaskRecord {
            task: Task { id: "t".into(), context_id: "c".into(), history, ..Task::default() },
            owner: "user:a".into(),
            created_at: agentd_proto::Timestamp::now(),
            status_history: vec![],
            meta: Default::default(),
            version: 1,
        };
        for n in [None, Some(0), Some(1), Some(2), Some(3), Some(9)] {
            for artifacts in [false, true] {
                let cloned = super::read::view(&rec, n, artifacts);
                assert_eq!(super::read::into_view(rec.clone(), n, artifacts), cloned, "{n:?} {artifacts}");
            }
        }
    }
}

/// Says when each of its runs starts, then completes its task once `go`
/// lets it.
struct SaysWhenItStarts {
    go: Arc<Notify>,
    started: tokio::sync::mpsc::UnboundedSender<String>,
}

#[async_trait]
impl Agent for SaysWhenItStarts {
    async fn run(&self, turn: Turn) {
        let _ = self.started.send(turn.control.task_id().to_owned());
        self.go.notified().await;
        let _ = turn.control.complete(Some(Message::agent_text("done"))).await;
    }
}

fn turn_of_conversation(message_id: &str) -> SendMessageRequest {
    let mut r = in_context(request(true), "one-at-a-time");
    r.message.as_mut().expect("message").message_id = message_id.into();
    r
}

/// The next run that starts. With the clock paused, the timeout fires only
/// once nothing else can run: a run not started by then would not start.
async fn next_start(starts: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> Option<String> {
    tokio::time::timeout(std::time::Duration::from_secs(60), starts.recv()).await.ok().flatten()
}

#[tokio::test(start_paused = true)]
async fn a_turn_cancelled_while_it_waits_does_not_let_the_next_start_beside_the_running_one() {
    let go = Arc::new(Notify::new());
    let (started, mut starts) = tokio::sync::mpsc::unbounded_channel();
    let (engine, _store) = engine(SaysWhenItStarts { go: go.clone(), started });
    let first = task_of(engine.send_message(&user(), turn_of_conversation("m-first")).await.unwrap());
    assert_eq!(next_start(&mut starts).await.as_deref(), Some(first.id.as_str()));
    let second = task_of(engine.send_message(&user(), turn_of_conversation("m-second")).await.unwrap());
    let cancel = CancelTaskRequest { id: second.id.clone(), ..Default::default() };
    let cancelled = engine.cancel_task(&user(), cancel).await.unwrap();
    assert_eq!(cancelled.status.state, TaskState::Canceled);
    let third = task_of(engine.send_message(&user(), turn_of_conversation("m-third")).await.unwrap());
    assert_eq!(next_start(&mut starts).await, None, "a turn started while the first still ran");

    go.notify_one();
    assert_eq!(
        next_start(&mut starts).await.as_deref(),
        Some(third.id.as_str()),
        "the third turn follows the first"
    );
    go.notify_one();
    let done = tokio::time::timeout(std::time::Duration::from_secs(60), engine.settled(&third.id)).await;
    assert_eq!(done.expect("the third turn ends").unwrap().state(), TaskState::Completed);
}

/// Counts what it is told of ends; asks for `task_ended` only when `wants`.
struct Observer {
    wants: bool,
    committed: Mutex<Vec<(String, TaskState)>>,
    ended: tokio::sync::mpsc::UnboundedSender<String>,
}

#[async_trait]
impl TaskObserver for Observer {
    fn end_committed(&self, task_id: &str, state: TaskState) -> bool {
        self.committed.lock().unwrap().push((task_id.to_owned(), state));
        self.wants
    }
    async fn task_ended(&self, _: &Runtime, task_id: &str, _: TaskState) {
        self.ended.send(task_id.to_owned()).unwrap();
    }
}

#[tokio::test]
async fn an_observer_is_told_of_an_end_at_once_and_later_only_if_it_asked() {
    let (quiet_tx, mut quiet_rx) = tokio::sync::mpsc::unbounded_channel();
    let (asks_tx, mut asks_rx) = tokio::sync::mpsc::unbounded_channel();
    let quiet = Arc::new(Observer { wants: false, committed: Mutex::default(), ended: quiet_tx });
    let asks = Arc::new(Observer { wants: true, committed: Mutex::default(), ended: asks_tx });
    let store = Arc::new(CountingStore::default());
    let agent = Completes { go: None, reads_conversation: false };
    let engine = EngineBuilder::new(store, Arc::new(agent), Arc::new(AnyUrl), EngineConfig::default())
        .observer(quiet.clone())
        .observer(asks.clone())
        .build()
        .engine()
        .clone();
    let task = task_of(engine.send_message(&user(), request(false)).await.unwrap());
    // The later call goes to the observers in order, and only to the one that asked.
    assert_eq!(asks_rx.recv().await.as_deref(), Some(task.id.as_str()));
    assert!(quiet_rx.try_recv().is_err(), "the observer that did not ask was called");
    // Each was told of the end once, before that.
    for o in [&quiet, &asks] {
        assert_eq!(*o.committed.lock().unwrap(), [(task.id.clone(), TaskState::Completed)]);
    }
}
