//! Live tasks. A task that is not terminal has a slot: its current record,
//! the lock that serialises its changes, the broadcast channel its streams
//! listen on, and the count a blocking SendMessage waits on. Slots are per
//! task, so there is no global lock on the hot path; the map itself is
//! sharded.

use crate::claims::ContextClaim;
use crate::events::WholeTask;
use crate::fanout::{Fanout, Subscription};
use crate::record::TaskRecord;
use crate::store::Batch;
use agentd_proto::{Message, StreamResponse};
use dashmap::DashMap;
use std::sync::{Arc, OnceLock};
use tokio::sync::{Mutex, watch};
use tokio_util::sync::CancellationToken;

pub type Event = Arc<Published>;

/// One published event, shared by every stream of its task.
pub struct Published {
    event: StreamResponse,
    /// Its JSON, written once by the first stream that needs it: a task
    /// followed by thousands of streams is serialized once per event, not
    /// once per stream.
    json: OnceLock<Option<Box<[u8]>>>,
}

impl Published {
    pub fn new(event: StreamResponse) -> Self {
        Self { event, json: OnceLock::new() }
    }

    /// The event as compact JSON (what `serde_json::to_vec` writes), made
    /// on the first call; `None` if it cannot be serialized.
    pub fn json(&self) -> Option<&[u8]> {
        let json = self.json.get_or_init(|| serde_json::to_vec(&self.event).ok().map(Vec::into_boxed_slice));
        json.as_deref()
    }

    /// The event itself, without a copy when nobody else holds it.
    pub fn into_event(this: Arc<Self>) -> StreamResponse {
        Arc::try_unwrap(this).map_or_else(|shared| shared.event.clone(), |p| p.event)
    }
}

impl std::ops::Deref for Published {
    type Target = StreamResponse;
    fn deref(&self) -> &StreamResponse {
        &self.event
    }
}

pub struct SlotState {
    pub record: TaskRecord,
    /// Whether an agent run is executing for this task.
    pub running: bool,
    /// Which run owns the slot: a resume starts a new run while the
    /// previous one may still be finishing, and only the newest may clear
    /// `running`. Generations are the engine's, unique in the process (0:
    /// no run yet), so a run whose slot was replaced never matches the
    /// new slot's.
    pub run_gen: u64,
    /// Cancels the current run (replaced for each run).
    pub cancel: CancellationToken,
    /// Client messages sent while the task was working, not yet seen by the agent.
    pub steering: Vec<Message>,
    /// Set when the slot left the map; holders must look the task up again.
    pub detached: bool,
    /// A new task whose creation is not committed yet (see
    /// `Engine::create_task`): what its creation commits besides the record.
    /// The next commit of the task takes it; `None` once committed.
    pub pending: Option<PendingCreation>,
    /// The claim on its context a new task holds while `pending`: released
    /// when the creation is committed (or the slot is dropped).
    pub claim: Option<ContextClaim>,
    /// Set while a commit of the task is in the store's hands, cleared when
    /// its outcome is back. Still set under the lock means the future that
    /// awaited it was dropped (a client that left, a deadline): the store
    /// may hold a version the slot does not, and the slot must read it
    /// before anything else is committed (`Engine::settle_abandoned_commit`).
    pub commit_in_doubt: bool,
    /// The whole Task JSON of `record` at the version given, when the
    /// commit of that version wrote a `task` event holding it: a blocking
    /// SendMessage answers with that text instead of serializing the task.
    pub whole_task: Option<(u64, WholeTask)>,
    /// What a SendMessage to this task owes once its commit is in: its
    /// input to a run (as steering, or a run started with it). Set for
    /// the commit; taken by that SendMessage, or, when it left before the
    /// store answered, by the slot's re-read (`Engine::settle_abandoned_commit`).
    pub owed_input: Option<OwedInput>,
}

/// What a SendMessage's input is to become once committed.
pub struct OwedInput {
    pub input: Message,
    pub action: InputAction,
    /// `running` before the SendMessage set it, put back if the input did
    /// not go in.
    pub was_running: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputAction {
    /// A running turn takes it as steering input.
    Steer,
    /// A waiting task runs again with it.
    Resume,
    /// The answer to a waiting tool call's approval: the call reads it.
    Nothing,
}

/// What a task's creation commits besides the record, while it waits for
/// the task's first change to be committed with it.
#[derive(Clone)]
pub struct PendingCreation {
    pub batch: Batch,
    /// Where among `batch.events` the task's `task` event goes. It is made
    /// only when the commit happens, and only if the first change has none
    /// of its own to take its place (a status that moved): a blocking
    /// SendMessage's task would otherwise serialize a snapshot no one reads.
    pub task_event_at: usize,
}

pub struct Slot {
    pub state: Mutex<SlotState>,
    /// The task's events, to the streams that follow it (`fanout`).
    events: Fanout<Event>,
    /// How many statuses that end a blocking SendMessage's wait (terminal
    /// or interrupted) were published: such a wait needs no event, only
    /// this count to move past the one it saw.
    settles: watch::Sender<u64>,
}

impl Slot {
    pub fn new(record: TaskRecord, capacity: usize) -> Arc<Self> {
        Arc::new(Slot {
            state: Mutex::new(SlotState {
                record,
                running: false,
                run_gen: 0,
                cancel: CancellationToken::new(),
                steering: Vec::new(),
                detached: false,
                pending: None,
                claim: None,
                commit_in_doubt: false,
                whole_task: None,
                owed_input: None,
            }),
            events: Fanout::new(capacity),
            settles: watch::Sender::new(0),
        })
    }

    /// A subscription to the events published from now on.
    pub fn subscribe(&self) -> Subscription<Event> {
        self.events.subscribe()
    }

    /// The count of settling statuses published so far, and a receiver
    /// that sees it move.
    pub fn watch_settles(&self) -> (u64, watch::Receiver<u64>) {
        let rx = self.settles.subscribe();
        let seen = *rx.borrow();
        (seen, rx)
    }

    /// Publishes one of the task's changes to whoever follows it.
    pub fn publish(&self, ev: StreamResponse) {
        if let StreamResponse::StatusUpdate(s) = &ev
            && (s.status.state.is_terminal() || s.status.state.is_interrupted())
            && !crate::reminder::is_lifecycle_event(&ev)
        {
            self.settles.send_modify(|n| *n += 1);
        }
        if self.events.receiver_count() > 0 {
            self.events.publish(Arc::new(Published::new(ev)));
        }
    }

    /// How many follow the task (streams, waits): a task that waits with
    /// nothing running stays live while anyone does.
    pub fn followers(&self) -> usize {
        self.events.receiver_count() + self.settles.receiver_count()
    }
}

#[derive(Default)]
pub struct Slots {
    map: DashMap<String, Arc<Slot>>,
}

impl Slots {
    pub fn get(&self, id: &str) -> Option<Arc<Slot>> {
        self.map.get(id).map(|s| s.clone())
    }
    /// Inserts `slot` unless one is already there; returns the one in the map.
    pub fn insert_or_get(&self, id: &str, slot: Arc<Slot>) -> Arc<Slot> {
        self.map.entry(id.to_owned()).or_insert(slot).clone()
    }
    /// Removes the slot; the caller holds its lock and marks it detached.
    pub fn remove(&self, id: &str) {
        self.map.remove(id);
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// The live slots now (a copy: the map may change meanwhile).
    pub fn all(&self) -> Vec<Arc<Slot>> {
        self.map.iter().map(|e| e.value().clone()).collect()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reminder::stream_event;
    use agentd_proto::ext::reminders::{ReminderEvent, ReminderEventKind};
    use agentd_proto::{Task, TaskState, TaskStatus, TaskStatusUpdateEvent, Timestamp};

    fn slot() -> Arc<Slot> {
        let now = Timestamp::from_millis(1000).unwrap();
        let record = TaskRecord {
            task: Task { id: "t".into(), context_id: "c".into(), ..Task::default() },
            owner: "user:a".into(),
            created_at: now,
            status_history: vec![],
            meta: Default::default(),
            version: 1,
        };
        Slot::new(record, 4)
    }

    fn status(state: TaskState) -> StreamResponse {
        StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state, ..TaskStatus::default() },
            metadata: None,
        })
    }

    #[test]
    fn events_have_no_channel_until_a_stream_subscribes_and_then_reach_it() {
        let s = slot();
        s.publish(status(TaskState::Working));
        assert_eq!(s.events.receiver_count(), 0, "nobody subscribed");
        assert_eq!(s.followers(), 0);
        let mut sub = s.subscribe();
        assert_eq!(s.followers(), 1);
        s.publish(status(TaskState::Completed));
        let ev = sub.rx.try_recv().expect("the event published after subscribing");
        assert!(matches!(&**ev, StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Completed));
        drop(sub);
        assert_eq!(s.followers(), 0);
    }

    #[test]
    fn the_settle_count_moves_on_terminal_and_interrupted_statuses_only() {
        let s = slot();
        let (seen, rx) = s.watch_settles();
        assert_eq!((seen, s.followers()), (0, 1), "a waiter follows the task");
        s.publish(status(TaskState::Working));
        assert_eq!(*rx.borrow(), 0, "working settles nothing");
        let lifecycle = ReminderEvent {
            event: ReminderEventKind::Expired,
            reminder_id: "r".into(),
            turn: None,
            remaining_turns: None,
            displaced_by: None,
        };
        let waiting = TaskStatus { state: TaskState::InputRequired, ..TaskStatus::default() };
        s.publish(stream_event("t", "c", &waiting, &lifecycle));
        assert_eq!(*rx.borrow(), 0, "a reminder's lifecycle event changes no state");
        s.publish(status(TaskState::InputRequired));
        assert_eq!(*rx.borrow(), 1);
        s.publish(status(TaskState::Working));
        s.publish(status(TaskState::Failed));
        assert_eq!(*rx.borrow(), 2);
        assert_eq!(s.events.receiver_count(), 0, "a waiter makes no channel");
    }
}
