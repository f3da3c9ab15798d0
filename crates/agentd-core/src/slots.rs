//! Live tasks. A task that is not terminal has a slot: its current record,
//! the lock that serialises its changes, and the broadcast channel its
//! streams listen on. Slots are per task, so there is no global lock on the
//! hot path; the map itself is sharded.

use crate::claims::ContextClaim;
use crate::record::TaskRecord;
use crate::store::Batch;
use agentd_proto::{Message, StreamResponse};
use dashmap::DashMap;
use std::sync::Arc;
use tokio::sync::{Mutex, broadcast};
use tokio_util::sync::CancellationToken;

pub type Event = Arc<StreamResponse>;

pub struct SlotState {
    pub record: TaskRecord,
    /// Whether an agent run is executing for this task.
    pub running: bool,
    /// Which run owns the slot: a resume starts a new run while the
    /// previous one may still be finishing, and only the newest may clear
    /// `running`.
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
    pub pending: Option<Batch>,
    /// The claim on its context a new task holds while `pending`: released
    /// when the creation is committed (or the slot is dropped).
    pub claim: Option<ContextClaim>,
}

pub struct Slot {
    pub state: Mutex<SlotState>,
    pub tx: broadcast::Sender<Event>,
}

impl Slot {
    pub fn new(record: TaskRecord, capacity: usize) -> Arc<Self> {
        let (tx, _) = broadcast::channel(capacity);
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
            }),
            tx,
        })
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
