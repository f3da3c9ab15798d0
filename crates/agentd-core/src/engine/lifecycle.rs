//! Stopping the engine. A shutdown first stops taking new work (a new
//! message is refused as Unavailable), then lets the running turns finish
//! within a grace, then stops what is left: each such task gets an
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
    /// meanwhile, a queued turn or a subagent, included); true when none
    /// is left.
    pub(crate) async fn drain_runs(&self, grace: Duration) -> bool {
        self.inner.runs.close();
        tokio::time::timeout(grace, self.inner.runs.wait()).await.is_ok()
    }

    /// Stops every run still going: its task fails with [`STOPPED`], or,
    /// when it can resume (a workflow run, a journaled turn) or a tool call
    /// waits for its approval, is left for the next start. Waits up
    /// to `within` for the runs to end. Returns how many tasks failed.
    pub(crate) async fn halt(&self, within: Duration) -> usize {
        self.inner.halted.store(true, Ordering::SeqCst);
        let mut failed = 0;
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
                continue;
            }
            let change =
                Change::Status { state: TaskState::Failed, message: Some(Message::agent_text(STOPPED)) };
            let id = st.record.id().to_owned();
            let fail =
                |rec: &mut _, now| transition::apply(rec, change.clone(), now).map_err(|r| refused(&id, r));
            match self.commit_locked(&slot, &mut st, fail, Batch::default()).await {
                Ok(_) => failed += 1,
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
        failed
    }
}
