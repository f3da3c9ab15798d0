//! The engine handle: a cheap clone shared by every binding. Each operation
//! takes the caller's [`Principal`] and enforces visibility itself, so every
//! binding applies the same rules.
//!
//! Invariant: an event is published to streams only after the change that
//! produced it is committed (see [`Engine::mutate`]).

mod commands;
mod conversation;
mod push;
mod read;
mod send;
mod stream;

pub use commands::{CommandHandler, CommandOutcome, TaskObserver};
pub use send::{SendOutcome, StartTask};
pub use stream::TaskEvents;

use crate::agent::{Agent, ConversationTurn, TaskControl, Turn};
use crate::conversations::Conversations;
use crate::principal::Principal;
use crate::record::TaskRecord;
use crate::slots::{Slot, SlotState, Slots};
use crate::store::{Batch, Store};
use crate::transition::{self, Change, Refused};
use agentd_proto::{A2aError, ErrorKind, Message, StreamResponse, TaskState, Timestamp};
use async_trait::async_trait;
use dashmap::{DashMap, DashSet};
use std::sync::{Arc, OnceLock, RwLock};
use tokio::sync::Notify;

/// Decides whether a webhook URL may be registered (SSRF guard lives in the
/// server crate, which knows about DNS and sockets).
#[async_trait]
pub trait PushUrlPolicy: Send + Sync + 'static {
    async fn check(&self, url: &str) -> Result<(), String>;
}

#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Push notifications on (the four config operations and inline configs).
    pub push_enabled: bool,
    /// Media types accepted in message parts (`*/*` and `type/*` wildcards).
    pub input_modes: Vec<String>,
    /// Events buffered per task for slow streams before they are cut off.
    pub stream_capacity: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            push_enabled: true,
            input_modes: vec!["text/plain".into(), "text/markdown".into(), "application/json".into()],
            stream_capacity: 1024,
        }
    }
}

struct Inner {
    store: Arc<dyn Store>,
    agent: Arc<dyn Agent>,
    push_policy: Arc<dyn PushUrlPolicy>,
    config: EngineConfig,
    slots: Slots,
    conversations: Conversations,
    push_wakeup: Notify,
    /// Runs the command extension's ops; without one, commands are refused.
    commands: OnceLock<Arc<dyn CommandHandler>>,
    /// Told about every task that reached a terminal state.
    observers: RwLock<Vec<Arc<dyn TaskObserver>>>,
    /// The agent of each live task started with its own (a subagent);
    /// every other task runs the engine's agent.
    task_agents: DashMap<String, Arc<dyn Agent>>,
    /// Conversations closed by `conversation.close`: new turns are refused.
    /// In memory only: a restart reopens them.
    closed_contexts: DashSet<String>,
}

#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl Engine {
    pub fn new(
        store: Arc<dyn Store>,
        agent: Arc<dyn Agent>,
        push_policy: Arc<dyn PushUrlPolicy>,
        config: EngineConfig,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                agent,
                push_policy,
                config,
                slots: Slots::default(),
                conversations: Conversations::default(),
                push_wakeup: Notify::new(),
                commands: OnceLock::new(),
                observers: RwLock::new(Vec::new()),
                task_agents: DashMap::new(),
                closed_contexts: DashSet::new(),
            }),
        }
    }

    /// Registers the command handler (once; a second call is ignored and
    /// returns `false`). Messages carrying a command are refused until then.
    pub fn set_commands(&self, handler: Arc<dyn CommandHandler>) -> bool {
        self.inner.commands.set(handler).is_ok()
    }

    /// Adds an observer told about every task that reaches a terminal state.
    pub fn add_observer(&self, observer: Arc<dyn TaskObserver>) {
        self.inner.observers.write().unwrap_or_else(|e| e.into_inner()).push(observer);
    }

    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }
    /// Notified after every commit that queued push or bridge deliveries.
    pub fn push_wakeup(&self) -> &Notify {
        &self.inner.push_wakeup
    }
    /// Number of live (non-terminal, loaded) tasks.
    pub fn live_tasks(&self) -> usize {
        self.inner.slots.len()
    }

    /// At start: reload the closed conversations, and let no task stay
    /// WORKING with nothing running it. Agents cannot resume a turn, so such
    /// tasks fail with a status message that says why. Returns how many
    /// were failed.
    pub async fn recover(&self) -> Result<usize, A2aError> {
        let stale = self
            .inner
            .store
            .tasks_in_states(&[TaskState::Submitted, TaskState::Working])
            .await
            .map_err(internal)?;
        for context_id in self.inner.store.closed_contexts().await.map_err(internal)? {
            self.inner.closed_contexts.insert(context_id);
        }
        let n = stale.len();
        for rec in stale {
            let why = "agentd restarted while this task was running; its work could not be resumed";
            let change = Change::Status { state: TaskState::Failed, message: Some(Message::agent_text(why)) };
            self.apply_change(rec.id(), change).await?;
        }
        Ok(n)
    }

    /// The live slot of a task, loading it from the store when needed.
    /// `Ok(None)`: no such task. Terminal tasks get no slot.
    async fn slot(&self, id: &str) -> Result<Option<Arc<Slot>>, A2aError> {
        if let Some(s) = self.inner.slots.get(id) {
            return Ok(Some(s));
        }
        let Some(rec) = self.inner.store.get_task(id).await.map_err(internal)? else {
            return Ok(None);
        };
        if rec.state().is_terminal() {
            return Ok(None);
        }
        let slot = Slot::new(rec, self.inner.config.stream_capacity);
        Ok(Some(self.inner.slots.insert_or_get(id, slot)))
    }

    /// The current record of a task, live or stored.
    pub(crate) async fn record(&self, id: &str) -> Result<Option<TaskRecord>, A2aError> {
        if let Some(s) = self.inner.slots.get(id) {
            let st = s.state.lock().await;
            if !st.detached {
                return Ok(Some(st.record.clone()));
            }
        }
        self.inner.store.get_task(id).await.map_err(internal)
    }

    /// A record the principal may see, or TaskNotFound.
    pub(crate) async fn visible_record(&self, p: &Principal, id: &str) -> Result<TaskRecord, A2aError> {
        match self.record(id).await? {
            Some(r) if p.can_see(&r.owner) => Ok(r),
            _ => Err(A2aError::task_not_found(id)),
        }
    }

    /// Applies one change to a live task (used by agent runs).
    pub(crate) async fn apply_change(&self, id: &str, change: Change) -> Result<(), A2aError> {
        self.mutate(id, |rec, now| transition::apply(rec, change, now).map_err(refused)).await.map(|_| ())
    }

    /// The one write path for existing tasks: lock the slot, then
    /// [`Engine::commit_locked`]. Returns the committed record.
    pub(crate) async fn mutate<F>(&self, id: &str, f: F) -> Result<TaskRecord, A2aError>
    where
        F: FnOnce(&mut TaskRecord, Timestamp) -> Result<Vec<StreamResponse>, A2aError>,
    {
        loop {
            let Some(slot) = self.slot(id).await? else {
                return match self.inner.store.get_task(id).await.map_err(internal)? {
                    Some(r) => Err(refused(Refused::Terminal(r.state()))),
                    None => Err(A2aError::task_not_found(id)),
                };
            };
            let mut st = slot.state.lock().await;
            if st.detached {
                continue;
            }
            return self.commit_locked(&slot, &mut st, f, Batch::default()).await;
        }
    }

    /// Changes a copy of the record, commits it with its push deliveries and
    /// `extra`, then (and only then) adopts it and publishes its events.
    /// The caller holds the slot lock, which orders all changes of a task.
    pub(crate) async fn commit_locked<F>(
        &self,
        slot: &Arc<Slot>,
        st: &mut SlotState,
        f: F,
        extra: Batch,
    ) -> Result<TaskRecord, A2aError>
    where
        F: FnOnce(&mut TaskRecord, Timestamp) -> Result<Vec<StreamResponse>, A2aError>,
    {
        let mut rec = st.record.clone();
        let events = f(&mut rec, Timestamp::now())?;
        // A creation not committed yet goes in with this change.
        let pending = st.pending.take();
        let batch = match pending.clone() {
            Some(mut creation) => {
                creation.absorb(extra);
                creation
            }
            None => extra,
        };
        if let Err(e) = self.commit_record(&rec, &events, batch).await {
            st.pending = pending;
            return Err(e);
        }
        st.record = rec.clone();
        for e in events {
            let _ = slot.tx.send(Arc::new(e));
        }
        if rec.state().is_terminal() {
            // Whatever ended the task (cancel, failure), its run must stop.
            st.cancel.cancel();
            self.inner.task_agents.remove(rec.id());
            self.notify_ended(rec.id(), rec.state());
        }
        if rec.state().is_terminal() || (!st.running && slot.tx.receiver_count() == 0) {
            st.detached = true;
            self.inner.slots.remove(rec.id());
        }
        Ok(rec)
    }

    /// Commits the creation of task `id` if it is still pending (see
    /// `create_task`): before a snapshot of it is published, or anything
    /// reads it from the store.
    pub(crate) async fn commit_pending(&self, id: &str) -> Result<(), A2aError> {
        if let Some(slot) = self.inner.slots.get(id) {
            let mut st = slot.state.lock().await;
            if st.pending.is_some() && !st.detached {
                self.commit_locked(&slot, &mut st, |_, _| Ok(Vec::new()), Batch::default()).await?;
            }
        }
        Ok(())
    }

    /// Commits a record, its events' push deliveries and `extra` in one batch.
    async fn commit_record(
        &self,
        rec: &TaskRecord,
        events: &[StreamResponse],
        mut batch: Batch,
    ) -> Result<(), A2aError> {
        batch.tasks.push(rec.clone());
        if self.inner.config.push_enabled {
            for e in events {
                batch.push_events.push((rec.task.id.clone(), push_body(e)));
            }
        }
        let wake = !batch.push_events.is_empty() || !batch.bridge_deliveries.is_empty();
        self.inner.store.commit(batch).await.map_err(internal)?;
        if wake {
            self.inner.push_wakeup.notify_one();
        }
        Ok(())
    }

    /// Starts an agent run for a task whose slot lock the caller holds.
    fn start_run(&self, st: &mut SlotState, input: Message) {
        st.running = true;
        st.run_gen += 1;
        let generation = st.run_gen;
        st.cancel = tokio_util::sync::CancellationToken::new();
        let control = TaskControl {
            engine: self.clone(),
            task_id: st.record.task.id.clone(),
            context_id: st.record.task.context_id.clone(),
            cancel: st.cancel.clone(),
        };
        let engine = self.clone();
        let agent = match self.inner.task_agents.get(&control.task_id) {
            Some(a) => a.clone(),
            None => self.inner.agent.clone(),
        };
        let mut admission = self.inner.conversations.admit(&control.context_id);
        tokio::spawn(async move {
            let id = control.task_id.clone();
            tokio::select! {
                () = admission.wait_turn() => {}
                () = control.cancel.cancelled() => {}
            }
            if !control.cancel.is_cancelled() {
                agent.run(Turn { input, control }).await;
            }
            engine.inner.conversations.release(admission);
            engine.finish_run(&id, generation).await;
        });
    }

    /// After a run: a task still active with nothing running it fails.
    async fn finish_run(&self, id: &str, generation: u64) {
        if let Some(slot) = self.inner.slots.get(id) {
            let mut st = slot.state.lock().await;
            if st.run_gen != generation {
                return; // a newer run took over the task
            }
            st.running = false;
            let state = st.record.state();
            let orphaned = !st.detached && !state.is_terminal() && !state.is_interrupted();
            if !orphaned && !st.detached && slot.tx.receiver_count() == 0 {
                st.detached = true;
                self.inner.slots.remove(id);
            }
            drop(st);
            if orphaned {
                let why = "the agent ended its run without a result";
                let change =
                    Change::Status { state: TaskState::Failed, message: Some(Message::agent_text(why)) };
                if let Err(e) = self.apply_change(id, change).await {
                    tracing::warn!(task = id, error = %e, "could not fail an orphaned task");
                }
            }
        }
    }

    /// The turns of `context_id` up to and including `task_id`.
    pub(crate) async fn conversation(
        &self,
        task_id: &str,
        context_id: &str,
    ) -> Result<Vec<ConversationTurn>, A2aError> {
        // The task itself must be in the store for the turns to end at it.
        self.commit_pending(task_id).await?;
        let tasks = self.inner.store.context_tasks(context_id).await.map_err(internal)?;
        let mut out = Vec::new();
        for rec in tasks {
            if rec.id() == task_id {
                break;
            }
            out.push(turn_of(&rec));
        }
        // The live record, read under the task's lock together with the
        // steering queue: input already in this history is not handed out
        // again as steering.
        let current = match self.inner.slots.get(task_id) {
            Some(slot) => {
                let mut st = slot.state.lock().await;
                st.steering.clear();
                st.record.clone()
            }
            None => self.record(task_id).await?.ok_or_else(|| A2aError::task_not_found(task_id))?,
        };
        out.push(turn_of(&current));
        Ok(out)
    }

    /// Drops the slot of a task nobody runs or watches (after its last
    /// stream closed); the store keeps the task.
    pub(crate) async fn evict_idle(&self, id: &str) {
        if let Some(slot) = self.inner.slots.get(id) {
            let mut st = slot.state.lock().await;
            if !st.detached && !st.running && slot.tx.receiver_count() == 0 {
                st.detached = true;
                self.inner.slots.remove(id);
            }
        }
    }

    pub(crate) async fn take_steering(&self, id: &str) -> Vec<Message> {
        match self.inner.slots.get(id) {
            Some(slot) => std::mem::take(&mut slot.state.lock().await.steering),
            None => Vec::new(),
        }
    }
}

fn turn_of(rec: &TaskRecord) -> ConversationTurn {
    ConversationTurn {
        task_id: rec.task.id.clone(),
        state: rec.state(),
        messages: rec.task.history.clone().unwrap_or_default(),
    }
}

/// A push body: the event as a REST StreamResponse, never with history.
fn push_body(e: &StreamResponse) -> String {
    let stripped;
    let e = match e {
        StreamResponse::Task(t) if t.history.is_some() => {
            let mut t = t.clone();
            t.history = None;
            stripped = StreamResponse::Task(t);
            &stripped
        }
        other => other,
    };
    serde_json::to_string(e).unwrap_or_default()
}

pub(crate) fn internal(e: impl std::fmt::Display) -> A2aError {
    tracing::error!(error = %e, "internal error");
    A2aError::internal()
}

fn refused(r: Refused) -> A2aError {
    match r {
        Refused::Terminal(s) => A2aError::new(
            ErrorKind::UnsupportedOperation,
            format!("the task is in terminal state {}; terminal tasks cannot change", s.as_str()),
        ),
        Refused::Unspecified => A2aError::invalid_field("status.state", r.to_string()),
    }
}

#[cfg(test)]
mod tests;
