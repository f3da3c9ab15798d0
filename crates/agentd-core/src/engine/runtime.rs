//! [`Runtime`]: the agent runtime's handle on the engine. It can do what
//! an [`Engine`] can (it derefs to one) and what no binding may: start a
//! task on a principal's behalf decided elsewhere, wait for a task to
//! settle, move a task from outside its run, write events to the feed,
//! read tasks without authorization, and run the engine's lifecycle
//! (recovery, drain, halt, retention). Only [`super::EngineBuilder`] and
//! the engine itself make one; the bindings hold a plain [`Engine`].

use super::{Engine, StartTask};
use crate::agent::TaskControl;
use crate::error::Error;
use crate::record::TaskRecord;
use agentd_proto::TaskState;
use agentd_proto::ext::events::{EventKind, LifecycleEvent};
use ref_cast::{RefCastCustom, ref_cast_custom};
use serde_json::Value;
use std::time::Duration;

#[derive(Clone, RefCastCustom)]
#[repr(transparent)]
pub struct Runtime {
    engine: Engine,
}

impl std::ops::Deref for Runtime {
    type Target = Engine;
    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl Runtime {
    pub(crate) fn new(engine: Engine) -> Self {
        Self { engine }
    }

    /// The runtime view of an engine the engine itself holds (to hand the
    /// command handler a runtime without a clone). Crate-private: a binding
    /// cannot turn its engine into a runtime.
    #[ref_cast_custom]
    pub(crate) fn of(engine: &Engine) -> &Runtime;

    /// The A2A engine (what a binding holds).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Starts work on the runtime's behalf: creates and commits a SUBMITTED
    /// task as `start` describes, starts its run, and returns the record as
    /// committed. Nobody is authorized here: the caller (the runtime, on
    /// behalf of a principal it checked) decides the owner.
    pub async fn start_task(&self, start: StartTask) -> Result<TaskRecord, Error> {
        self.engine.start_task(start).await
    }

    /// Waits until a task is terminal or waits for input, and returns its
    /// record then (a parent waiting on a subagent).
    pub async fn settled(&self, id: &str) -> Result<TaskRecord, Error> {
        self.engine.settled(id).await
    }

    /// [`Runtime::settled`], except that a task waiting for a tool call's
    /// approval is not settled yet: its run goes on once it is answered.
    pub async fn settled_past_approvals(&self, id: &str) -> Result<TaskRecord, Error> {
        self.engine.settled_past_approvals(id).await
    }

    /// Waits until task `id` is terminal, through its waits for input (a
    /// run's human gates): a person answers those.
    pub async fn terminal(&self, id: &str) -> Result<TaskRecord, Error> {
        self.engine.terminal(id).await
    }

    /// A handle moving task `id` from outside a run (a gate's deadline).
    pub async fn control(&self, id: &str) -> Result<TaskControl, Error> {
        self.engine.control(id).await
    }

    /// The current record of a task, live or stored, whoever owns it.
    pub async fn record(&self, id: &str) -> Result<Option<TaskRecord>, Error> {
        self.engine.record(id).await
    }

    /// The stored tasks in any of `states`, whoever owns them.
    pub async fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, Error> {
        Ok(self.engine.inner.store.tasks_in_states(states).await?)
    }

    /// Appends an event of any kind about a task to the durable log and
    /// publishes it to the feed once committed. Its visibility is the
    /// task's: the owner and operators. `data` is the kind's payload as the
    /// events schema bundle describes it. TaskNotFound when no such task.
    pub async fn emit_event(&self, kind: EventKind, task_id: &str, data: Value) -> Result<(), Error> {
        self.engine.emit_event(kind, task_id, data).await
    }

    /// The daemon started or is stopping: a `lifecycle` event every
    /// principal may see.
    pub async fn emit_lifecycle(&self, event: LifecycleEvent, version: &str) -> Result<(), Error> {
        self.engine.emit_lifecycle(event, version).await
    }

    /// Removes the events retention no longer keeps (by count and age).
    pub async fn prune_events(&self) -> Result<(), Error> {
        self.engine.prune_events().await
    }

    /// At start: reload the closed conversations, and let no task stay
    /// WORKING with nothing running it. Workflow runs resume from their
    /// checkpoint, turns of an agent that resumes from their step journal;
    /// the others fail with a status message that says why. Returns how
    /// many were failed.
    pub async fn recover(&self) -> Result<usize, Error> {
        self.engine.recover().await
    }

    /// Whether a stop halted the runs: a run canceled now is interrupted,
    /// to resume at the next start, not ended (a tool waiting on a child
    /// leaves the child be).
    pub fn is_halted(&self) -> bool {
        self.engine.is_halted()
    }

    /// Stops taking new work: from now on a new message is refused.
    pub fn stop_accepting(&self) {
        self.engine.stop_accepting();
    }

    /// Waits up to `grace` for every run of a turn to end (runs started
    /// meanwhile, a queued turn or a subagent, included), or until every
    /// run left waits for a person.
    pub async fn drain_runs(&self, grace: Duration) -> super::Drained {
        self.engine.drain_runs(grace).await
    }

    /// Stops every run still going: its task fails with
    /// [`super::lifecycle::STOPPED`], or, when it can resume (a workflow
    /// run, a journaled turn), is left for the next start to resume. Waits up to `within` for the runs to end.
    pub async fn halt(&self, within: Duration) -> super::Halted {
        self.engine.halt(within).await
    }
}
