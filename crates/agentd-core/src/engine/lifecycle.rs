//! Stopping the engine. A shutdown first stops taking new work (a new
//! message is refused as Unavailable), then lets the running turns finish
//! within a grace (or until the runs left all wait for a person), then
//! stops what is left: each such task gets an
//! explicit FAILED status saying the daemon stopped while it ran (not the
//! message `recover` writes after a crash), except the runs that can resume
//! (workflow runs from their checkpoint, turns from their step journal),
//! which are stopped where they are and resume at the next start.

use super::{Engine, refused};
use crate::error::Error;
use crate::store::Batch;
use crate::transition::{self, Change};
use agentd_proto::{Message, TaskState};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often a drain checks whether the runs left all wait for a person.
const WAITING_CHECK: Duration = Duration::from_millis(100);

/// How [`Engine::drain_runs`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drained {
    /// Every run ended.
    All,
    /// Every run left waits for a person (an approval, a gate).
    WaitingForPeople,
    /// The grace ran out with runs still going.
    GraceOver,
}

/// What [`Engine::halt`] did with the runs still going.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Halted {
    /// Tasks failed with [`STOPPED`]: their agent cannot resume them.
    pub failed: usize,
    /// Runs stopped where they were, for the next start to resume (or, a
    /// call waiting for its approval, to keep waiting).
    pub left: usize,
}

/// The status message of a task whose turn a shutdown stopped.
pub const STOPPED: &str =
    "agentd was stopped while this task was running and its turn did not finish within the shutdown grace";

impl Engine {
    /// The tracker and shutdown token of every task the engine spawns;
    /// the daemon registers its own background tasks on it too.
    pub fn background(&self) -> &crate::Background {
        &self.inner.background
    }

    /// Stops taking new work: from now on a new message is refused.
    pub(crate) fn stop_accepting(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
    }

    /// Whether [`Engine::stop_accepting`] was called.
    pub(crate) fn is_stopping(&self) -> bool {
        self.inner.stopping.load(Ordering::SeqCst)
    }

    pub(crate) fn is_halted(&self) -> bool {
        self.inner.halted.load(Ordering::SeqCst)
    }

    /// Unavailable while the daemon shuts down.
    pub(super) fn refuse_when_stopping(&self) -> Result<(), Error> {
        if self.is_stopping() {
            return Err(Error::Unavailable(
                "agentd is shutting down and takes no new messages; send it again once the agent is back"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Waits up to `grace` for every run of a turn to end (runs started
    /// meanwhile, a queued turn or a subagent, included). A run that waits
    /// for a person (a tool call's approval, a workflow's gate) cannot end
    /// by itself within any grace: once every run left waits for one, the
    /// wait ends there (they are left for the next start by [`Engine::halt`]).
    pub(crate) async fn drain_runs(&self, grace: Duration) -> Drained {
        self.inner.runs.close();
        let deadline = tokio::time::Instant::now() + grace;
        let mut check = tokio::time::interval(WAITING_CHECK);
        loop {
            tokio::select! {
                biased;
                () = self.inner.runs.wait() => return Drained::All,
                () = tokio::time::sleep_until(deadline) => return Drained::GraceOver,
                _ = check.tick() => {
                    if self.runs_wait_for_people().await {
                        return Drained::WaitingForPeople;
                    }
                }
            }
        }
    }

    /// Whether some run is going and every run going waits for a person:
    /// its task is INPUT_REQUIRED or AUTH_REQUIRED while its run lives.
    async fn runs_wait_for_people(&self) -> bool {
        let mut waiting = 0;
        for slot in self.inner.slots.all() {
            let st = slot.state.lock().await;
            if st.detached || !st.running {
                continue;
            }
            if !matches!(st.record.state(), TaskState::InputRequired | TaskState::AuthRequired) {
                return false;
            }
            waiting += 1;
        }
        waiting > 0
    }

    /// Stops every run still going: its task fails with [`STOPPED`], or,
    /// when it can resume (a workflow run, a journaled turn) or a tool call
    /// waits for its approval, is left for the next start. Waits up
    /// to `within` for the runs to end.
    pub(crate) async fn halt(&self, within: Duration) -> Halted {
        self.inner.halted.store(true, Ordering::SeqCst);
        let mut halted = Halted::default();
        for slot in self.inner.slots.all() {
            let mut st = slot.state.lock().await;
            // A detached slot's task ended (or left memory) meanwhile.
            if st.detached || !st.running {
                continue;
            }
            let resumable = self.resumable(&st.record);
            // A call waiting for its approval keeps it: the gate and its
            // record stay for the next start, as after a crash.
            let approving = st.record.state() == TaskState::InputRequired
                && st.record.meta.approval.as_ref().is_some_and(|a| a.decision.is_none());
            if resumable || approving {
                st.cancel.cancel();
                halted.left += 1;
                continue;
            }
            let change =
                Change::Status { state: TaskState::Failed, message: Some(Message::agent_text(STOPPED)) };
            let id = st.record.id().to_owned();
            let fail =
                |rec: &mut _, now| transition::apply(rec, change.clone(), now).map_err(|r| refused(&id, r));
            match self.commit_locked(&slot, &mut st, fail, Batch::default()).await {
                Ok(_) => halted.failed += 1,
                Err(e) => {
                    tracing::warn!(task = %st.record.id(), error = %e, "could not record that a shutdown stopped the task")
                }
            }
        }
        if tokio::time::timeout(within, self.inner.runs.wait()).await.is_err() {
            tracing::warn!(runs = self.inner.runs.len(), "runs still going after they were stopped");
        }
        // What is left resumes on another replica at once (a shared store).
        self.release_all().await;
        halted
    }
}
