//! A run's durable state, kept in its task's checkpoint and committed with
//! it: the pinned definition, the inputs, every step's status and output,
//! and the open gate's deadlines (absolute, so they survive restarts).

use agentd_workflow::StepStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    pub run_id: String,
    pub workflow: String,
    /// The definition's content hash and its YAML: the run keeps the
    /// definition it started with even if the document changes.
    pub hash: String,
    pub source: String,
    pub inputs: Value,
    pub started_ms: i64,
    /// When the run must have finished (`limits.deadline`), ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
    /// Step executions so far, retries included (`limits.steps`).
    #[serde(default)]
    pub executions: u32,
    #[serde(default)]
    pub steps: BTreeMap<String, StepState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateState>,
    /// Signals received (`workflow.signal`), by name: `run.signals.<name>`.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub signals: Map<String, Value>,
    /// A gate answered but not yet reported as an event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<GateState>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepState {
    pub status: StepStatus,
    #[serde(default)]
    pub output: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub attempts: u32,
    /// The task doing the step's work (a subagent), once started: after a
    /// restart its result is adopted instead of starting it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
}

impl StepState {
    pub fn new(status: StepStatus) -> Self {
        Self { status, output: Value::Null, error: None, attempts: 0, child: None }
    }
}

/// The gate open on the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateState {
    pub step: String,
    pub question: String,
    pub channel: String,
    pub opened_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_ms: Option<i64>,
    #[serde(default)]
    pub escalated: bool,
    /// The timeout passed with `fallback: wait`: the gate stays open.
    #[serde(default)]
    pub timed_out: bool,
    /// The bridge took the announcement; until then a restart announces
    /// the gate again.
    #[serde(default)]
    pub announced: bool,
}

impl RunState {
    pub fn from_checkpoint(v: Option<&Value>) -> Result<RunState, String> {
        let v = v.ok_or("the task holds no run state")?;
        serde_json::from_value(v.clone()).map_err(|e| format!("the run state cannot be read: {e}"))
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    pub fn status(&self, id: &str) -> StepStatus {
        self.steps.get(id).map_or(StepStatus::Pending, |s| s.status)
    }

    pub fn statuses(&self) -> BTreeMap<String, StepStatus> {
        self.steps.iter().map(|(k, s)| (k.clone(), s.status)).collect()
    }

    pub fn step_mut(&mut self, id: &str) -> &mut StepState {
        self.steps.entry(id.to_owned()).or_insert_with(|| StepState::new(StepStatus::Pending))
    }

    /// What templates and guards see.
    pub fn scope(&self, task_id: &str) -> agentd_workflow::Scope {
        let steps: Map<String, Value> = self
            .steps
            .iter()
            .map(|(k, s)| (k.clone(), json!({"output": s.output, "status": s.status})))
            .collect();
        agentd_workflow::Scope {
            inputs: self.inputs.clone(),
            run: json!({"id": self.run_id, "workflow": self.workflow, "taskId": task_id, "signals": self.signals}),
            steps: Value::Object(steps),
        }
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
