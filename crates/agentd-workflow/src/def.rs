//! The typed definition a YAML body becomes.

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// A validated workflow: steps form a DAG with at least one `finish`.
#[derive(Clone, Debug)]
pub struct Definition {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema a run's inputs must satisfy (`inputs.schema`).
    pub inputs_schema: Option<Value>,
    pub limits: Limits,
    /// Steps by id, in id order.
    pub steps: BTreeMap<String, Step>,
    /// The YAML the definition was read from: a run keeps it, so it can be
    /// read again after a restart even if the document changed.
    pub source: String,
    /// SHA-256 (hex) of `name` and `source`: which definition a run uses.
    pub hash: String,
}

/// Bounds on one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Limits {
    /// Step executions (retries count); `None`: no bound.
    pub steps: Option<u32>,
    /// Model tokens per `agent`/`subagent` step.
    pub tokens: Option<u64>,
    /// Wall time from the run's start.
    pub deadline: Option<Duration>,
}

#[derive(Clone, Debug)]
pub struct Step {
    pub id: String,
    pub kind: StepKind,
    /// Explicit and implied dependencies (switch arms, parallel branches).
    pub depends_on: Vec<String>,
    /// A CEL guard: the step runs only when it is true.
    pub when: Option<String>,
    pub timeout: Option<Duration>,
    pub retry: Retry,
    pub on_error: ErrorPolicy,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Retry {
    /// Further attempts after the first failure.
    pub max: u32,
    pub backoff: Duration,
}

/// What a failed step (after its retries) does to the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ErrorPolicy {
    /// The run fails, naming the step and the reason.
    #[default]
    Fail,
    /// The run goes on; the step's output is `{"error": reason}`.
    Continue,
}

/// After a gate's `timeout`: fail the run, or keep waiting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fallback {
    #[default]
    Fail,
    Wait,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FinishStatus {
    #[default]
    Completed,
    Failed,
}

/// One arm of a `switch`: when `when` holds, `steps` run and the other
/// arms' steps are skipped.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub when: String,
    pub steps: Vec<String>,
}

/// What a step does. String fields are templates rendered when it runs.
#[derive(Clone, Debug, PartialEq)]
pub enum StepKind {
    /// A model turn with the agent's instruction and tools.
    Agent { prompt: Value, tools: Option<Vec<String>> },
    /// A subagent with its own instruction.
    Subagent { instruction: Value, input: Value, name: Option<String>, tools: Option<Vec<String>> },
    /// A human gate.
    Human {
        question: Value,
        schema: Option<Value>,
        /// The human's name (`@human/<name>` without the prefix).
        to: String,
        fallback: Fallback,
        escalate_after: Option<Duration>,
    },
    /// Work sent to a configured A2A peer.
    Delegate { peer: String, message: Value },
    /// Values computed from templates; the output is `values` rendered.
    Assign { values: Value },
    /// Picks the first case whose guard holds (else `default`).
    Switch { cases: Vec<Case>, default: Vec<String> },
    /// Joins `branches`, which run concurrently; the output maps each
    /// branch to its output.
    Parallel { branches: Vec<String> },
    /// Ends the run with `status` and `output`.
    Finish { status: FinishStatus, output: Value, reason: Option<Value> },
}

impl StepKind {
    pub fn name(&self) -> &'static str {
        match self {
            StepKind::Agent { .. } => "agent",
            StepKind::Subagent { .. } => "subagent",
            StepKind::Human { .. } => "human",
            StepKind::Delegate { .. } => "a2a.delegate",
            StepKind::Assign { .. } => "assign",
            StepKind::Switch { .. } => "switch",
            StepKind::Parallel { .. } => "parallel",
            StepKind::Finish { .. } => "finish",
        }
    }
}

impl Definition {
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.get(id)
    }
}
