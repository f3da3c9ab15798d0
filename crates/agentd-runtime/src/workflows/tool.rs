//! `run_workflow`: the model's way to run one of the instruction
//! document's workflows. The run is a child of the calling task (same
//! owner, its parent), started as the `workflow.run` op starts one; the
//! call waits for it to end, through its human gates (a person answers
//! those, so the run goes on), and the model gets the run's result. The
//! run task's id is the call's journaled id, so a call a restart cut adopts
//! the run its first attempt started, never a second (`docs/workflows.md`).

use super::ops::RunStart;
use super::{Catalog, Workflows};
use crate::agent_loop::{CallKey, OnUncertain, Tool};
use crate::model::ToolSpec;
use crate::subagents::daemon_principal;
use agentd_core::{Error, TaskControl, TaskRecord};
use agentd_proto::{PartContent, TaskState};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock, Weak};

pub const TOOL_NAME: &str = "run_workflow";

/// The workflows a [`RunWorkflowTool`] starts runs of: the tool is made
/// before them (their subagents hold the tools), so it is told them once
/// they exist. Weak: the workflows hold the tools through their subagents.
#[derive(Clone, Default)]
pub struct WorkflowsHandle(Arc<OnceLock<Weak<Workflows>>>);

impl WorkflowsHandle {
    pub fn set(&self, workflows: &Arc<Workflows>) {
        let _ = self.0.set(Arc::downgrade(workflows));
    }

    fn get(&self) -> Option<Arc<Workflows>> {
        self.0.get().and_then(Weak::upgrade)
    }
}

pub struct RunWorkflowTool {
    spec: ToolSpec,
    workflows: WorkflowsHandle,
}

impl RunWorkflowTool {
    /// The tool, or `None` when the document declares no workflow.
    pub fn new(catalog: &Catalog, workflows: WorkflowsHandle) -> Option<Self> {
        let names = catalog.names();
        if names.is_empty() {
            return None;
        }
        let mut description = String::from(
            "Runs one of this agent's workflows with the given inputs and waits for it to end, through \
             its human gates (people answer those); the run's result is returned. Workflows:",
        );
        for name in &names {
            let Some(def) = catalog.definition(name) else { continue };
            description.push_str(&format!("\n- {name}: {}", def.description.as_deref().unwrap_or("")));
            if let Some(schema) = &def.inputs_schema {
                description.push_str(&format!(" Inputs (JSON Schema): {schema}"));
            }
        }
        let parameters = json!({
            "type": "object",
            "properties": {
                "workflow": {"type": "string", "enum": names, "description": "Which workflow."},
                "inputs": {"type": "object", "description": "The run's inputs, as the workflow declares them."}
            },
            "required": ["workflow"],
            "additionalProperties": false
        });
        let spec = ToolSpec { name: TOOL_NAME.into(), description, parameters };
        Some(Self { spec, workflows })
    }
}

#[async_trait]
impl Tool for RunWorkflowTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, args: Value, control: &TaskControl) -> Result<String, String> {
        self.run(args, control, None).await
    }

    /// A retry after a restart adopts the run the first attempt started
    /// (its task id is the call's journaled id), never a second.
    fn on_uncertain(&self) -> OnUncertain {
        OnUncertain::Retry
    }

    async fn call_keyed(&self, args: Value, control: &TaskControl, key: &CallKey) -> Result<String, String> {
        self.run(args, control, Some(key)).await
    }
}

impl RunWorkflowTool {
    async fn run(&self, args: Value, control: &TaskControl, key: Option<&CallKey>) -> Result<String, String> {
        let workflow = args
            .get("workflow")
            .and_then(Value::as_str)
            .ok_or("`workflow` is required: the name of one of the workflows")?;
        let inputs = args.get("inputs").cloned().unwrap_or_else(|| json!({}));
        let workflows = self.workflows.get().ok_or("the workflows are not available")?;
        let me = control.record().await.map_err(|e| e.to_string())?;
        let engine = control.runtime();
        let adopted = match key {
            Some(k) if k.attempt > 1 => engine.record(&k.id).await.map_err(|e| e.to_string())?,
            _ => None,
        };
        let run = match adopted {
            Some(run) => run,
            None => {
                let start = RunStart {
                    owner: me.owner.clone(),
                    parent: Some(me.id().to_owned()),
                    id: key.map(|k| k.id.clone()),
                };
                workflows.start_run(engine, start, workflow, inputs).await.map_err(|e| describe(&e))?
            }
        };
        let run_id = run.meta.link.as_ref().map_or_else(|| run.id().to_owned(), |l| l.id.clone());
        let done = tokio::select! {
            r = engine.terminal(run.id()) => r.map_err(|e| e.to_string())?,
            () = control.cancelled().cancelled() => {
                if !engine.is_halted() {
                    // Nobody is left to read its result. (A stop leaves it
                    // be: the turn resumes and adopts it.)
                    let why = format!("canceled because its parent task {} ended", me.id());
                    if let Err(e) = engine.cancel_because(&daemon_principal(), run.id(), &why).await {
                        tracing::debug!(run = %run_id, error = %e, "the run had ended already");
                    }
                }
                return Err(format!("the task ended while workflow run {run_id} was working"));
            }
        };
        let status = done.task.status.message.as_ref().map(|m| m.text()).unwrap_or_default();
        match done.state() {
            TaskState::Completed => Ok(result_of(&done).unwrap_or(status)),
            s if s.is_terminal() => Err(format!("workflow run {run_id} ended {}: {status}", s.as_str())),
            // No longer live while not ended: shown as it rests.
            _ => Ok(format!("workflow run {run_id} is waiting for input: {status}")),
        }
    }
}

/// The run's `result` artifact: its text, or its data as JSON.
fn result_of(run: &TaskRecord) -> Option<String> {
    let artifact = run.task.artifacts.as_ref()?.iter().rev().find(|a| a.name == "result")?;
    let parts: Vec<String> = artifact
        .parts
        .iter()
        .filter_map(|p| match &p.content {
            PartContent::Text(t) => Some(t.to_string()),
            PartContent::Data(v) => Some(v.to_string()),
            _ => None,
        })
        .collect();
    Some(parts.join("\n"))
}

/// What the model is told of a refused start: each violation by field.
fn describe(e: &Error) -> String {
    if e.violations().is_empty() {
        return e.to_string();
    }
    let each: Vec<String> =
        e.violations().iter().map(|v| format!("`{}` {}", v.field, v.description)).collect();
    each.join("; ")
}
