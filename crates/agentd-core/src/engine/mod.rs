//! The engine handle: a cheap clone shared by every binding. Each operation
//! takes the caller's [`Principal`] and enforces visibility itself, so every
//! binding applies the same rules.
//!
//! Invariant: an event is published to streams only after the change that
//! produced it is committed (see [`Engine::mutate`]).

mod abandoned;
mod approval;
mod builder;
mod commands;
mod conversation;
mod emit;
mod feed;
mod follow;
mod leasing;
mod lifecycle;
mod metered;
mod metrics;
mod outbox;
mod push;
mod read;
mod reminders;
mod runtime;
mod send;
mod serial;
mod stream;

pub use builder::EngineBuilder;
pub use commands::{CommandHandler, CommandOutcome, TaskObserver};
pub use feed::{EventFeed, FeedItem};
pub use leasing::ReplicaConfig;
pub use lifecycle::{Drained, Halted};
pub use outbox::Outbox;
pub use read::TaskAnswer;
pub use runtime::Runtime;
pub use send::{SendAnswer, SendOutcome, StartTask};
pub use stream::TaskEvents;

use crate::agent::{Agent, ConversationTurn, TaskControl, Turn};
use crate::claims::ContextClaims;
use crate::conversations::Conversations;
use crate::error::{Error, FieldPath};
use crate::gate::GateKeeper;
use crate::principal::Principal;
use crate::record::LinkKind;
use crate::record::TaskRecord;
use crate::slots::{Slot, SlotState, Slots};
use crate::store::{Batch, Store, StoreError};
use crate::transition::{self, Change, Refused};
use agentd_proto::{Message, StreamResponse, Task, TaskState, Timestamp};
use async_trait::async_trait;
use dashmap::{DashMap, DashSet};
use std::sync::{Arc, OnceLock};

/// How many times a change is made when other replicas keep committing
/// the task in between (each a version conflict).
const CONFLICT_ATTEMPTS: usize = 5;

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
    /// Limits of the reminders extension.
    pub reminders: crate::reminder::ReminderLimits,
    /// How many events the durable log keeps, and for how long.
    pub events_retain_count: u64,
    pub events_retain: std::time::Duration,
    /// Where the engine and everything it hands out record metrics.
    pub metrics: Arc<agentd_metrics::Metrics>,
    /// This replica's id and lease timing (used only on a store with leases).
    pub replica: ReplicaConfig,
    /// The JSON of a task's messages (its history) a new input may take it
    /// to: past it, a message that continues the task is refused (its
    /// context takes new tasks), so no one task grows without bound.
    pub max_task_history_bytes: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            push_enabled: true,
            input_modes: vec!["text/plain".into(), "text/markdown".into(), "application/json".into()],
            stream_capacity: 1024,
            reminders: crate::reminder::ReminderLimits::default(),
            events_retain_count: 100_000,
            events_retain: std::time::Duration::from_secs(7 * 24 * 3600),
            metrics: Arc::default(),
            replica: ReplicaConfig::default(),
            max_task_history_bytes: 32 << 20,
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
    /// Contexts whose first task is being created (see `claims.rs`).
    claims: Arc<ContextClaims>,
    /// Held by CreateTaskPushNotificationConfig from its config-id check to
    /// its commit, one lock per stripe of task ids (see `push.rs`).
    push_config_writes: push::ConfigWriteLocks,
    /// The parts the builder installed (commands, observers, link agents,
    /// gate keeper), set once by [`EngineBuilder::build`].
    installed: OnceLock<builder::Installed>,
    /// The agent of each live task started with its own (a subagent);
    /// every other task runs the engine's agent.
    task_agents: DashMap<String, Arc<dyn Agent>>,
    /// Conversations closed by `conversation.close`: new turns are refused.
    /// Each is a row committed with its closing, so `recover` loads them
    /// again: a restart keeps them closed.
    closed_contexts: DashSet<String>,
    /// Live child tasks (subagents) by parent task id, for reminders that
    /// propagate. In memory only: after a restart only waiting children
    /// survive, and those are not found again.
    children: DashMap<String, Vec<String>>,
    /// Every task the engine spawns is tracked here (see `lifecycle.rs`).
    background: crate::Background,
    /// The runs of turns, also on `background`: a shutdown waits for them.
    runs: tokio_util::task::TaskTracker,
    /// The last run generation given out: a run's generation is unique in
    /// the process, so a run that outlived its task's slot never takes a
    /// newer slot's run for its own.
    run_gens: std::sync::atomic::AtomicU64,
    /// Set when the daemon stops taking new work (shutdown began).
    stopping: std::sync::atomic::AtomicBool,
    /// Set when the runs left after the grace were stopped: a run that
    /// ends now leaves its task as the shutdown left it.
    halted: std::sync::atomic::AtomicBool,
    /// The task leases this replica holds (a store shared by replicas).
    leasing: leasing::Leasing,
    /// Runs waiting for their conversation's turn on another replica.
    context_waiters: serial::ContextWaiters,
}

/// The A2A engine: what the bindings hold. Every operation on it takes the
/// caller's [`Principal`] and authorizes itself; nothing on this type
/// starts, moves or settles a task without one, nor reaches the store.
/// Those powers are on [`Runtime`] (the agent runtime's handle) and
/// [`Outbox`] (push and bridge delivery), which the bindings never get.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
    /// Whether the Tasks this handle answers with carry the task
    /// annotations (the request activated that extension).
    annotate: bool,
}

impl Engine {
    fn new(inner: Inner) -> Self {
        Self { inner: Arc::new(inner), annotate: false }
    }

    /// This engine, answering with Tasks that carry the task annotations
    /// when `on` (a request that activated the extension) and without
    /// them otherwise. Cheap: a clone of the handle.
    pub fn annotating(&self, on: bool) -> Engine {
        Engine { inner: self.inner.clone(), annotate: on }
    }

    /// The client's view of a record (see [`read::view`]), annotated when
    /// this handle is.
    pub(crate) fn view(&self, rec: &TaskRecord, history_length: Option<i32>, artifacts: bool) -> Task {
        let mut t = read::view(rec, history_length, artifacts);
        if self.annotate {
            crate::annotations::of(rec).attach(&mut t);
        }
        t
    }

    /// [`Engine::view`] of a record the caller owns (see [`read::into_view`]).
    pub(crate) fn owned_view(&self, rec: TaskRecord, history_length: Option<i32>, artifacts: bool) -> Task {
        let annotations = self.annotate.then(|| crate::annotations::of(&rec));
        let mut t = read::into_view(rec, history_length, artifacts);
        if let Some(a) = annotations {
            a.attach(&mut t);
        }
        t
    }

    /// What the builder installed (nothing before `build`).
    fn installed(&self) -> &builder::Installed {
        self.inner.installed.get().unwrap_or(&builder::NOTHING_INSTALLED)
    }

    pub(crate) fn gate_keeper(&self) -> Option<&Arc<dyn GateKeeper>> {
        self.installed().gates.as_ref()
    }

    /// The agent running every task linked as `kind`, if one was installed.
    fn link_agent(&self, kind: LinkKind) -> Option<&Arc<dyn Agent>> {
        self.installed().link_agents.get(&kind)
    }

    /// Whether tasks linked as `kind` have an agent of their own kind.
    pub(crate) fn has_link_agent(&self, kind: LinkKind) -> bool {
        self.link_agent(kind).is_some()
    }

    /// A handle moving task `id` from outside a run (a gate's deadline).
    pub(crate) async fn control(&self, id: &str) -> Result<TaskControl, Error> {
        let rec = self.record(id).await?.ok_or_else(|| Error::task_not_found(id))?;
        let cancel = match self.inner.slots.get(id) {
            Some(slot) => slot.state.lock().await.cancel.clone(),
            None => tokio_util::sync::CancellationToken::new(),
        };
        Ok(TaskControl {
            runtime: Runtime::new(self.annotating(false)),
            task_id: id.to_owned(),
            context_id: rec.task.context_id.clone(),
            cancel,
        })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.inner.config
    }
    /// Number of live (non-terminal, loaded) tasks.
    pub fn live_tasks(&self) -> usize {
        self.inner.slots.len()
    }

    /// Whether a task interrupted by a restart or a stop is run again
    /// rather than failed: a link kind with its own agent
    /// ([`EngineBuilder::link_agent`]) resumes through it (workflow runs
    /// from their checkpoint, subagents through their manager), a turn when
    /// the engine's agent resumes from its step journal. A link kind with
    /// no agent installed cannot be resumed.
    pub(crate) fn resumable(&self, rec: &TaskRecord) -> bool {
        match rec.meta.link.as_ref().map(|l| l.kind) {
            Some(kind) if self.has_link_agent(kind) => true,
            None | Some(LinkKind::Turn) => self.inner.agent.resumes(),
            Some(_) => false,
        }
    }

    /// At start: reload the closed conversations, and let no task stay
    /// WORKING with nothing running it. Tasks that can resume (see
    /// [`Engine::resumable`]) are run again; the others fail with a status
    /// message that says why. Returns how many were failed.
    pub(crate) async fn recover(&self) -> Result<usize, Error> {
        let live = self.inner.store.tasks_in_states(&metrics::LIVE).await?;
        self.count_stored(&live);
        for context_id in self.inner.store.closed_contexts().await? {
            self.inner.closed_contexts.insert(context_id);
        }
        if let Some(leases) = self.inner.store.leases() {
            // Replicas share the store: only the work nobody holds is this
            // replica's to resume (or fail); the others' runs go on.
            return self.adopt_unheld(leases).await;
        }
        let stale: Vec<_> = live
            .into_iter()
            .filter(|r| matches!(r.state(), TaskState::Submitted | TaskState::Working))
            .collect();
        let (resumable, lost): (Vec<_>, Vec<_>) = stale.into_iter().partition(|rec| self.resumable(rec));
        // The lost ones fail first: a resumed run then finds the tasks it
        // had started (a step's subagent) already settled.
        for rec in &lost {
            let why = "agentd restarted while this task was running; its work could not be resumed";
            let change = Change::Status { state: TaskState::Failed, message: Some(Message::agent_text(why)) };
            self.apply_change(rec.id(), change).await?;
        }
        for rec in &resumable {
            self.resume(rec.id()).await?;
        }
        Ok(lost.len())
    }

    /// Starts a run again on a task that was running at a restart; its
    /// agent picks up from the task's checkpoint.
    async fn resume(&self, id: &str) -> Result<(), Error> {
        loop {
            let Some(slot) = self.slot(id).await? else { return Ok(()) };
            let mut st = slot.state.lock().await;
            if st.detached {
                continue;
            }
            let input = st.record.task.history.as_ref().and_then(|h| h.last().cloned()).unwrap_or_default();
            self.start_run(&mut st, input, true);
            return Ok(());
        }
    }

    /// The live slot of a task, loading it from the store when needed.
    /// `Ok(None)`: no such task. Terminal tasks get no slot.
    async fn slot(&self, id: &str) -> Result<Option<Arc<Slot>>, Error> {
        if let Some(s) = self.inner.slots.get(id) {
            return Ok(Some(s));
        }
        let Some(rec) = self.inner.store.get_task(id).await? else {
            return Ok(None);
        };
        if rec.state().is_terminal() {
            return Ok(None);
        }
        let slot = Slot::new(rec, self.inner.config.stream_capacity);
        Ok(Some(self.inner.slots.insert_or_get(id, slot)))
    }

    /// The current record of a task, live or stored.
    pub(crate) async fn record(&self, id: &str) -> Result<Option<TaskRecord>, Error> {
        if let Some(rec) = self.held_record(id).await {
            return Ok(Some(rec));
        }
        Ok(self.inner.store.get_task(id).await?)
    }

    /// The record of a task a slot holds, if one does.
    pub(crate) async fn held_record(&self, id: &str) -> Option<TaskRecord> {
        let s = self.inner.slots.get(id)?;
        let st = s.state.lock().await;
        (!st.detached).then(|| st.record.clone())
    }

    /// A record the principal may see, or TaskNotFound.
    pub(crate) async fn visible_record(&self, p: &Principal, id: &str) -> Result<TaskRecord, Error> {
        match self.record(id).await? {
            Some(r) if r.visible_to(p) => Ok(r),
            _ => Err(Error::task_not_found(id)),
        }
    }

    /// A record the principal may act on as its owner (or an operator):
    /// TaskNotFound when invisible, PermissionDenied when it sees the task
    /// only to answer its gate.
    pub(crate) async fn owned_record(
        &self,
        p: &Principal,
        id: &str,
        what: &str,
    ) -> Result<TaskRecord, Error> {
        let rec = self.visible_record(p, id).await?;
        if !p.can_see(&rec.owner) {
            return Err(answerer_only(p, id, what));
        }
        Ok(rec)
    }

    /// Applies one change to a live task (used by agent runs).
    pub(crate) async fn apply_change(&self, id: &str, change: Change) -> Result<(), Error> {
        // Only on a store replicas share is a change made again (after a
        // conflict, see `commit_locked`); otherwise it is moved in, not copied.
        let again = self.inner.store.leases().is_some();
        let mut change = Some(change);
        let f = |rec: &mut TaskRecord, now| {
            let change = if again { change.clone() } else { change.take() }.ok_or_else(Error::internal)?;
            transition::apply(rec, change, now).map_err(|r| refused(id, r))
        };
        self.mutate_then(id, Batch::default(), f, |_| ()).await
    }

    /// The one write path for existing tasks: lock the slot, then
    /// [`Engine::commit_locked`]. Returns the committed record.
    pub(crate) async fn mutate<F>(&self, id: &str, f: F) -> Result<TaskRecord, Error>
    where
        F: FnMut(&mut TaskRecord, Timestamp) -> Result<Vec<StreamResponse>, Error>,
    {
        self.mutate_with(id, Batch::default(), f).await
    }

    /// `mutate`, committing `extra` in the same batch.
    pub(crate) async fn mutate_with<F>(&self, id: &str, extra: Batch, f: F) -> Result<TaskRecord, Error>
    where
        F: FnMut(&mut TaskRecord, Timestamp) -> Result<Vec<StreamResponse>, Error>,
    {
        self.mutate_then(id, extra, f, TaskRecord::clone).await
    }

    /// `mutate_with`, answering with what `then` reads from the committed
    /// record (nothing, for a run's changes: no copy of the record).
    pub(crate) async fn mutate_then<F, R>(
        &self,
        id: &str,
        extra: Batch,
        f: F,
        then: impl FnOnce(&TaskRecord) -> R,
    ) -> Result<R, Error>
    where
        F: FnMut(&mut TaskRecord, Timestamp) -> Result<Vec<StreamResponse>, Error>,
    {
        loop {
            let Some(slot) = self.slot(id).await? else {
                return match self.inner.store.get_task(id).await? {
                    Some(r) => Err(refused(id, Refused::Terminal(r.state()))),
                    None => Err(Error::task_not_found(id)),
                };
            };
            let mut st = slot.state.lock().await;
            if st.detached {
                continue;
            }
            self.commit_locked(&slot, &mut st, f, extra).await?;
            return Ok(then(&st.record));
        }
    }

    /// Changes a copy of the record, commits it with its push deliveries and
    /// `extra`, then (and only then) adopts it as `st.record` and publishes
    /// its events.
    /// The caller holds the slot lock, which orders all changes of a task.
    ///
    /// On a store replicas share, another replica may have committed the
    /// task meanwhile (input, a cancel, an answer): the commit is refused
    /// as a conflict, the task is read again and `f` applied again to the
    /// new version, so neither change is lost (a few times at most; a task
    /// that ended meanwhile refuses the change).
    pub(crate) async fn commit_locked<F>(
        &self,
        slot: &Arc<Slot>,
        st: &mut SlotState,
        mut f: F,
        extra: Batch,
    ) -> Result<(), Error>
    where
        F: FnMut(&mut TaskRecord, Timestamp) -> Result<Vec<StreamResponse>, Error>,
    {
        if st.commit_in_doubt {
            self.settle_abandoned_commit(slot, st).await?;
            if st.detached {
                return Err(refused(st.record.id(), Refused::Terminal(st.record.state())));
            }
        }
        let shared = self.inner.store.leases().is_some();
        let mut extra = Some(extra);
        let mut attempt = 1;
        let (rec, events) = loop {
            let mut rec = st.record.clone();
            let now = Timestamp::now();
            let events = f(&mut rec, now)?;
            // A copy is kept while the change may have to be made again.
            let retry_left = shared && attempt < CONFLICT_ATTEMPTS;
            let mut batch = if retry_left { extra.clone() } else { extra.take() }.unwrap_or_default();
            emit::on_change(&st.record, &rec, &events, now, &mut batch);
            match self.commit_next(slot, st, &mut rec, &events, batch).await {
                Ok(()) => break (rec, events),
                Err(e @ Error::Store(StoreError::Conflict { .. })) if shared => {
                    if st.pending.is_some() {
                        // A creation refused as a conflict went in already: an
                        // abandoned commit of it landed after the task was read
                        // (a shared store's writers keep no order to wait on).
                        st.commit_in_doubt = true;
                        self.settle_abandoned_commit(slot, st).await?;
                    }
                    self.reload_changed_elsewhere(slot, st).await;
                    if st.record.state().is_terminal() {
                        return Err(refused(st.record.id(), Refused::Terminal(st.record.state())));
                    }
                    if !retry_left {
                        tracing::error!(task = %st.record.id(), attempt, error = %e, "the task kept changing on other replicas; the change is not committed");
                        return Err(e);
                    }
                    tracing::info!(task = %st.record.id(), version = st.record.version, "the task changed on another replica meanwhile; making the change again on its new version");
                    attempt += 1;
                }
                Err(e) => {
                    if let Error::Store(StoreError::Conflict { .. }) = &e {
                        // One process: another writer of the task is a bug.
                        tracing::error!(error = %e, "the task changed under its lock; the change is not committed");
                    }
                    return Err(e);
                }
            }
        };
        st.record = rec;
        for e in events {
            slot.publish(e);
        }
        let rec = &st.record;
        let ended = rec.state().is_terminal();
        if ended {
            // Whatever ended the task (cancel, failure), its run must stop.
            st.cancel.cancel();
            self.inner.task_agents.remove(rec.id());
            self.forget_child(rec);
            self.notify_ended(rec.id(), rec.state());
        }
        if ended || (!st.running && slot.followers() == 0) {
            st.detached = true;
            self.inner.slots.remove(st.record.id());
        }
        Ok(())
    }

    /// Commits `rec`, a changed copy of the slot's record, as the task's
    /// next version, with its events' push deliveries, `extra`, and the
    /// task's creation if that is still pending (then this commit is the
    /// creation: the same version). The store refuses a version that is
    /// not the next one; under the slot lock that means another writer
    /// changed the task, which is reported as an internal error. On
    /// failure nothing changed, and the creation stays pending; if the
    /// caller's future is dropped before the outcome, the slot is settled
    /// from the store (`abandoned`).
    pub(crate) async fn commit_next(
        &self,
        slot: &Arc<Slot>,
        st: &mut SlotState,
        rec: &mut TaskRecord,
        events: &[StreamResponse],
        extra: Batch,
    ) -> Result<(), Error> {
        let creating = st.pending.is_some();
        rec.version = if creating { st.record.version } else { st.record.version + 1 };
        let batch = match st.pending.clone() {
            Some(creation) => emit::absorb_first_change(creation, extra, &st.record),
            None => extra,
        };
        let id = rec.id();
        let whole = batch.task_json.iter().rev().find(|(of, _)| of == id).map(|(_, whole)| whole.clone());
        st.commit_in_doubt = true;
        let in_doubt = abandoned::InDoubtGuard::new(self, slot);
        let outcome = self.commit_record(rec, events, batch).await;
        in_doubt.disarm();
        st.commit_in_doubt = false;
        outcome?;
        st.whole_task = whole.map(|whole| (rec.version, whole));
        self.count_commit((!creating).then_some(&st.record), rec);
        if st.pending.take().is_some() {
            // The creation is in the store now: the store's record of the
            // context's owner takes over from the claim.
            st.claim = None;
        }
        Ok(())
    }

    /// Commits the creation of task `id` if it is still pending (see
    /// `create_task`): before a snapshot of it is published, or anything
    /// reads it from the store.
    pub(crate) async fn commit_pending(&self, id: &str) -> Result<(), Error> {
        if let Some(slot) = self.inner.slots.get(id) {
            let mut st = slot.state.lock().await;
            if st.pending.is_some() && !st.detached {
                self.commit_locked(&slot, &mut st, |_, _| Ok(Vec::new()), Batch::default()).await?;
            }
        }
        Ok(())
    }

    /// Commits a record, its events' push deliveries and `extra` in one batch.
    /// The record goes into the batch and comes back from the store, not
    /// copied; if the store could not hand it back (its writer died), `rec`
    /// is left empty, and the error says so.
    async fn commit_record(
        &self,
        rec: &mut TaskRecord,
        events: &[StreamResponse],
        mut batch: Batch,
    ) -> Result<(), Error> {
        batch.fences.extend(self.fence(rec.id()));
        // Push bodies are left out while no config may exist; a config
        // committed in this very batch (inline in a SendMessage) counts.
        let configs = !batch.push_upserts.is_empty() || self.inner.store.may_have_push_configs();
        if self.inner.config.push_enabled && configs {
            for e in events {
                batch.push_events.push((rec.task.id.clone(), push_body(e)));
            }
        }
        // Room for this one record: a first push would make room for four
        // (a record is near 1 KiB), past the allocator's per-thread cache.
        batch.tasks.reserve_exact(1);
        batch.tasks.push(take_record(rec));
        let (outcome, mut tasks) = self.inner.store.commit_giving_back(batch).await;
        if let Some(back) = tasks.pop() {
            *rec = back;
        }
        outcome.map_err(store_failed)
    }

    /// Starts an agent run for a task whose slot lock the caller holds.
    fn start_run(&self, st: &mut SlotState, input: Message, resumed: bool) {
        st.running = true;
        let generation = self.inner.run_gens.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        st.run_gen = generation;
        st.cancel = tokio_util::sync::CancellationToken::new();
        let control = TaskControl {
            runtime: Runtime::new(self.annotating(false)),
            task_id: st.record.task.id.clone(),
            context_id: st.record.task.context_id.clone(),
            cancel: st.cancel.clone(),
        };
        let engine = self.clone();
        let link_agent = || {
            let kind = st.record.meta.link.as_ref()?.kind;
            self.link_agent(kind).cloned()
        };
        let agent = match self.inner.task_agents.get(&control.task_id) {
            Some(a) => a.clone(),
            None => link_agent().unwrap_or_else(|| self.inner.agent.clone()),
        };
        let mut admission = self.inner.conversations.admit(&control.context_id);
        // Boxed: the run's future holds room for each of its awaits (the
        // claim, the turn, the finish), and spawning moves it several times
        // on its way into the task; a box moves as a pointer.
        let run = self.inner.runs.track_future(Box::pin(async move {
            let id = control.task_id.clone();
            if !engine.claim_run(&id).await {
                // Another replica runs it; this one only committed the input.
                engine.not_running_here(&id, generation).await;
                // The next turn here still waits for the one before this.
                engine.inner.conversations.release(admission).await;
                return;
            }
            tokio::select! {
                () = admission.wait_turn() => {}
                () = control.cancel.cancelled() => {}
            }
            if control.cancel.is_cancelled() {
                // Cancelled before its turn: the task is done with, and the
                // turn passes on only once the run before this one ended.
                engine.finish_run(&id, generation).await;
                engine.inner.conversations.release(admission).await;
                return;
            }
            // Across replicas too: the context's previous turn ended.
            let context_id = control.context_id.clone();
            if engine.take_context_turn(&context_id, &control.cancel).await {
                agent.run(Turn { input, control, resumed }).await;
            }
            engine.end_context_turn(&context_id).await;
            engine.inner.conversations.release(admission).await;
            engine.finish_run(&id, generation).await;
        }));
        // In the span of what started it (a request's, with its id): the
        // run's log lines, its commits' among them, say which request
        // caused them.
        self.inner.background.spawn(tracing::Instrument::in_current_span(run));
    }

    /// A run that did not start because another replica holds the task.
    async fn not_running_here(&self, id: &str, generation: u64) {
        if let Some(slot) = self.inner.slots.get(id) {
            let mut st = slot.state.lock().await;
            if st.run_gen != generation {
                return;
            }
            st.running = false;
            if !st.detached && slot.followers() == 0 {
                st.detached = true;
                self.inner.slots.remove(id);
            }
        }
    }

    /// After a run: a task still active with nothing running it fails.
    async fn finish_run(&self, id: &str, generation: u64) {
        // A task that ended while its run ran left memory then (its slot
        // went with the commit that ended it), or was loaded again since
        // for a read: either way no run of it is left here, and its lease
        // goes (held, it would be renewed for as long as the process lives).
        let Some(slot) = self.inner.slots.get(id) else {
            return self.release_after_run(id, true).await;
        };
        let mut st = slot.state.lock().await;
        if st.run_gen != generation {
            if !st.running {
                // Under the lock, as below.
                self.release_after_run(id, st.record.state().is_terminal()).await;
            }
            return; // or a newer run took over the task (and its lease)
        }
        let state = st.record.state();
        // After a shutdown stopped the run, the task stays as the
        // shutdown left it (failed, or a workflow run for resume).
        // A run that lost its task's lease leaves it to the adopter; so does
        // one that stopped because its lease's deadline passed, even if a
        // late renewal kept the lease (released below, it is adopted and
        // resumed, here or elsewhere).
        let unfinished = !state.is_terminal() && !state.is_interrupted();
        let fenced = self.run_was_fenced(id);
        if fenced && unfinished {
            tracing::info!(
                task = id,
                "the run stopped when its lease's deadline passed; the task is left to be adopted"
            );
        }
        let orphaned = !st.detached && unfinished && !self.is_halted() && self.holds(id) && !fenced;
        if orphaned {
            drop(st);
            let why = "the agent ended its run without a result";
            let change = Change::Status { state: TaskState::Failed, message: Some(Message::agent_text(why)) };
            // Boxed: rare, and the largest future this one would hold
            // room for (as would every run's, which awaits this one).
            if let Err(e) = Box::pin(self.apply_change(id, change)).await {
                tracing::warn!(task = id, error = %e, "could not fail an orphaned task");
            }
            st = slot.state.lock().await;
            if st.run_gen != generation {
                return;
            }
        }
        // The lease goes while the slot is locked and the run still counts
        // as running: a message arriving now waits for the lock, and then
        // starts a run that finds the lease free to claim, here or on
        // another replica. (Released after the lock, a message in between
        // found it held by this replica's ending run and ran nowhere.)
        // Halted: the lease goes with the others once the runs ended.
        self.release_after_run(id, st.record.state().is_terminal()).await;
        st.running = false;
        if !orphaned && !st.detached && slot.followers() == 0 {
            st.detached = true;
            self.inner.slots.remove(id);
        }
    }

    /// Gives up the lease of task `id`, whose run here ended: at once while
    /// the task may run again (its next message may go to another
    /// replica), within milliseconds with the others that end then once it
    /// `ended`. After a halt the leases go with the others, once the runs
    /// ended.
    async fn release_after_run(&self, id: &str, ended: bool) {
        if self.is_halted() {
            return;
        }
        if ended {
            self.release_soon(id);
        } else {
            self.release_run(id).await;
        }
    }

    /// The turns of `context_id` up to and including `task_id`.
    pub(crate) async fn conversation(
        &self,
        task_id: &str,
        context_id: &str,
    ) -> Result<Vec<ConversationTurn>, Error> {
        // The task itself must be in the store for the turns to end at it.
        self.commit_pending(task_id).await?;
        let tasks = self.inner.store.context_tasks(context_id).await?;
        // Replicas take a context's turns in the order they get its lease
        // (`serial.rs`), which may differ from the order of creation: a
        // turn created after this one that already ended ran before it.
        let shared = self.leases().is_some();
        let mut out = Vec::new();
        let mut past = false;
        for rec in tasks {
            if rec.id() == task_id {
                past = true;
            } else if !past || (shared && (rec.state().is_terminal() || rec.state().is_interrupted())) {
                out.push(turn_of(&rec));
            } else if !shared {
                break;
            }
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
            None => self.record(task_id).await?.ok_or_else(|| Error::task_not_found(task_id))?,
        };
        out.push(turn_of(&current));
        Ok(out)
    }

    /// Drops the slot of a task nobody runs or watches (after its last
    /// stream closed); the store keeps the task.
    pub(crate) async fn evict_idle(&self, id: &str) {
        if let Some(slot) = self.inner.slots.get(id) {
            let mut st = slot.state.lock().await;
            if !st.detached && !st.running && slot.followers() == 0 {
                st.detached = true;
                self.inner.slots.remove(id);
            }
        }
    }

    /// A task's step journal.
    pub(crate) async fn journal(&self, id: &str) -> Result<Vec<crate::journal::JournalEntry>, Error> {
        Ok(self.inner.store.journal(id).await?)
    }

    /// Commits journal entries of a live task, under its lock so that they
    /// are ordered with the task's changes: once the commit that ended the
    /// task (and removed its journal) is in, no entry joins it.
    pub(crate) async fn append_journal(
        &self,
        id: &str,
        entries: Vec<crate::journal::JournalEntry>,
    ) -> Result<(), Error> {
        loop {
            let Some(slot) = self.slot(id).await? else {
                return match self.inner.store.get_task(id).await? {
                    Some(r) => Err(refused(id, Refused::Terminal(r.state()))),
                    None => Err(Error::task_not_found(id)),
                };
            };
            let st = slot.state.lock().await;
            if st.detached {
                continue;
            }
            if st.pending.is_some() {
                // The task's creation is not committed yet: commit it with
                // the entries (their task must exist before them).
                drop(st);
                self.commit_pending(id).await?;
                continue;
            }
            let batch =
                Batch { journal: entries, fences: self.fence(id).into_iter().collect(), ..Batch::default() };
            return self.inner.store.commit(batch).await.map_err(store_failed);
        }
    }

    pub(crate) async fn take_steering(&self, id: &str) -> Vec<Message> {
        match self.inner.slots.get(id) {
            Some(slot) => std::mem::take(&mut slot.state.lock().await.steering),
            None => Vec::new(),
        }
    }
}

/// The task a SendMessage names (empty: none), for its span.
fn task_of(req: &agentd_proto::SendMessageRequest) -> &str {
    req.message.as_ref().map_or("", |m| m.task_id.as_str())
}

/// The context a SendMessage names (empty: none), for its span.
fn context_of(req: &agentd_proto::SendMessageRequest) -> &str {
    req.message.as_ref().map_or("", |m| m.context_id.as_str())
}

fn turn_of(rec: &TaskRecord) -> ConversationTurn {
    ConversationTurn {
        task_id: rec.task.id.clone(),
        state: rec.state(),
        messages: rec.task.history.clone().unwrap_or_default(),
    }
}

/// A push body: the event as a REST StreamResponse, never with history
/// nor annotations (a webhook receiver is not a party to the conversation).
fn push_body(e: &StreamResponse) -> String {
    let stripped;
    let e = match e {
        StreamResponse::Task(t) if t.history.is_some() => {
            let mut t = t.clone();
            t.history = None;
            agentd_proto::ext::task_annotations::detach(&mut t);
            stripped = StreamResponse::Task(t);
            &stripped
        }
        other => other,
    };
    serde_json::to_string(e).unwrap_or_default()
}

/// Refuses what only the owner (or an operator) may do to a principal
/// that sees the task to answer its gate.
pub(crate) fn answerer_only(p: &Principal, id: &str, what: &str) -> Error {
    Error::permission_denied(format!("{} may answer the gate of task {id:?} but not {what} it", p.id))
        .with_meta("taskId", id)
}

/// A failed commit of a task. A conflict means another writer committed
/// the task while this one held its lock (in one process that is a bug, with
/// several it is a lost race, made again by `commit_locked`): never "not
/// found", always a store failure.
fn store_failed(e: StoreError) -> Error {
    if let StoreError::Fenced { resource, epoch } = &e {
        tracing::warn!(lease = %resource, epoch, "another replica took this work over; the write is refused");
    }
    if let StoreError::Conflict { task_id, expected, found } = &e {
        tracing::debug!(task = %task_id, expected, found, "task changed by another writer since it was read");
    }
    Error::Store(e)
}

/// A change the state machine refused to task `id`.
pub(crate) fn refused(id: &str, r: Refused) -> Error {
    match r {
        Refused::Terminal(state) => Error::Terminal { id: id.to_owned(), state },
        Refused::Unspecified => Error::invalid(FieldPath::of("status.state"), r.to_string()),
        Refused::NotAllowed { .. } => Error::unsupported(r.to_string()),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests play concurrent callers")]
mod tests;

/// Moves the record out, leaving an empty one (nothing allocated) in its place.
fn take_record(rec: &mut TaskRecord) -> TaskRecord {
    let empty = TaskRecord {
        task: agentd_proto::Task::default(),
        owner: String::new(),
        created_at: rec.created_at,
        status_history: Vec::new(),
        meta: crate::record::TaskMeta::default(),
        version: rec.version,
    };
    std::mem::replace(rec, empty)
}
