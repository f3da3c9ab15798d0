//! The task metrics the engine moves: live tasks by state and link kind,
//! transitions, creations and open gates, each moved once a change is
//! committed, and counted from the store at start (`recover`) so they are
//! right after a restart.

use super::Engine;
use crate::record::{LinkKind, TaskRecord};
use agentd_metrics::Metrics;
use agentd_proto::TaskState;

/// The states of tasks that are not over: what `agentd_tasks` counts.
pub(super) const LIVE: [TaskState; 4] =
    [TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired];

impl Engine {
    /// The daemon's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.config.metrics
    }

    /// Moves the task metrics by a committed change of `after`; `before`
    /// is the committed record it replaced (`None`: this commit created it).
    pub(super) fn count_commit(&self, before: Option<&TaskRecord>, after: &TaskRecord) {
        let tasks = &self.metrics().tasks;
        let kind = link_kind(after);
        let from = match before {
            Some(b) => b.state(),
            None => {
                tasks.created(kind);
                live_add(self.metrics(), TaskState::Submitted, kind, 1);
                TaskState::Submitted
            }
        };
        let to = after.state();
        if from != to {
            tasks.transition(state(from), state(to));
            live_add(self.metrics(), from, kind, -1);
            live_add(self.metrics(), to, kind, 1);
        }
        let gate_before = before.is_some_and(|b| b.meta.gate.is_some());
        match (gate_before, after.meta.gate.is_some()) {
            (false, true) => tasks.gates_add(1),
            (true, false) => tasks.gates_add(-1),
            _ => {}
        }
    }

    /// Counts the tasks the store holds in a live state (at start).
    pub(super) fn count_stored(&self, live: &[TaskRecord]) {
        for rec in live {
            live_add(self.metrics(), rec.state(), link_kind(rec), 1);
            if rec.meta.gate.is_some() {
                self.metrics().tasks.gates_add(1);
            }
        }
    }
}

fn live_add(m: &Metrics, s: TaskState, kind: &'static str, delta: i64) {
    if !s.is_terminal() {
        m.tasks.live_add(state(s), kind, delta);
    }
}

/// The label of a state: its A2A name without the prefix, lower case.
pub(crate) fn state(s: TaskState) -> &'static str {
    match s {
        TaskState::Unspecified => "unspecified",
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::InputRequired => "input_required",
        TaskState::AuthRequired => "auth_required",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::Rejected => "rejected",
    }
}

fn link_kind(rec: &TaskRecord) -> &'static str {
    match rec.meta.link.as_ref().map(|l| l.kind) {
        None => "none",
        Some(LinkKind::Turn) => "turn",
        Some(LinkKind::Run) => "run",
        Some(LinkKind::Subagent) => "subagent",
    }
}
