//! Tasks: the live ones by state and link kind, their transitions, their
//! creations, and the human gates open on them.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Live {
    state: &'static str,
    link_kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Transition {
    from: &'static str,
    to: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    link_kind: &'static str,
}

pub struct Tasks {
    live: Family<Live, Gauge>,
    transitions: Family<Transition, Counter>,
    created: Family<Kind, Counter>,
    gates_open: Gauge,
}

impl Tasks {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let s = Self {
            live: Family::default(),
            transitions: Family::default(),
            created: Family::default(),
            gates_open: Gauge::default(),
        };
        registry.register(
            "agentd_tasks",
            "Tasks not in a terminal state, by state and link kind (none, turn, run, subagent); \
             counted from the store at start, then moved by each committed change",
            s.live.clone(),
        );
        registry.register(
            "agentd_task_transitions",
            "Committed status changes of tasks, by state before and after",
            s.transitions.clone(),
        );
        registry.register("agentd_tasks_created", "Tasks created, by link kind", s.created.clone());
        registry.register(
            "agentd_gates_open",
            "Human gates open (workflow gates and tool-call approvals) on tasks waiting for an answer",
            s.gates_open.clone(),
        );
        s
    }

    /// Moves the live count of `(state, link_kind)` by `delta`.
    pub fn live_add(&self, state: &'static str, link_kind: &'static str, delta: i64) {
        self.live.get_or_create(&Live { state, link_kind }).inc_by(delta);
    }

    pub fn transition(&self, from: &'static str, to: &'static str) {
        self.transitions.get_or_create(&Transition { from, to }).inc();
    }

    pub fn created(&self, link_kind: &'static str) {
        self.created.get_or_create(&Kind { link_kind }).inc();
    }

    pub fn gates_add(&self, delta: i64) {
        self.gates_open.inc_by(delta);
    }
}
