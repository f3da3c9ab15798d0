//! `spawn_subagent`: the model's way to hand a piece of work to a subagent.
//! The subagent is a child of the calling task (same owner), and the call
//! waits for it to finish: the model gets the subagent's final answer as
//! the tool result. When the calling task ends while waiting (canceled,
//! failed), the wait stops and the subagent is canceled with it: nobody is
//! left to read its answer.

use super::{Spawn, SubagentManager};
use crate::agent_loop::{CallKey, OnUncertain, Tool};
use crate::commands::ops::{check_with, spawn_schema};
use crate::model::ToolSpec;
use crate::narrowing::Narrowing;
use agentd_core::{Error, TaskControl, TaskRecord};
use agentd_proto::TaskState;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

pub const TOOL_NAME: &str = "spawn_subagent";

pub struct SpawnSubagentTool {
    manager: Arc<SubagentManager>,
    /// Compiled at the first call, off the daemon's start.
    schema: std::sync::OnceLock<jsonschema::Validator>,
    /// What the calling agent may use: its children get no more.
    scope: Narrowing,
}

impl SpawnSubagentTool {
    pub fn new(manager: Arc<SubagentManager>, scope: Narrowing) -> Self {
        Self { manager, schema: std::sync::OnceLock::new(), scope }
    }

    fn schema(&self) -> &jsonschema::Validator {
        self.schema
            .get_or_init(|| jsonschema::validator_for(&parameters()).expect("the spawn schema compiles"))
    }
}

/// The command's spawn schema and the tool sets the subagent gets.
fn parameters() -> Value {
    let mut schema = spawn_schema();
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "tools".into(),
            serde_json::json!({
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": "The tool sets the subagent gets, out of yours: tool names, globs over them \
                    (`tickets__read_*`), or MCP server names (all their tools). Without it, it gets spawn_subagent alone.",
            }),
        );
    }
    schema
}

fn describe(e: &Error) -> String {
    if e.violations().is_empty() {
        e.to_string()
    } else {
        e.violations()
            .iter()
            .map(|v| format!("`{}` {}", v.field, v.description))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[async_trait]
impl Tool for SpawnSubagentTool {
    fn spec(&self) -> ToolSpec {
        let mut parameters = parameters();
        if let Some(o) = parameters.as_object_mut() {
            o.remove("$schema");
        }
        ToolSpec {
            name: TOOL_NAME.into(),
            description: "Hands a self-contained piece of work to a subagent with its own instruction \
                and waits for its final answer, which is returned as the result."
                .into(),
            parameters,
        }
    }

    async fn call(&self, args: Value, control: &TaskControl) -> Result<String, String> {
        self.run(args, control, None).await
    }

    /// A retry after a restart adopts the subagent the first attempt
    /// started (its task id is the call's journaled id), never a second.
    fn on_uncertain(&self) -> OnUncertain {
        OnUncertain::Retry
    }

    async fn call_keyed(&self, args: Value, control: &TaskControl, key: &CallKey) -> Result<String, String> {
        self.run(args, control, Some(key)).await
    }
}

impl SpawnSubagentTool {
    async fn run(&self, args: Value, control: &TaskControl, key: Option<&CallKey>) -> Result<String, String> {
        check_with(self.schema(), &args).map_err(|e| describe(&Error::Invalid(e)))?;
        let me = control.record().await.map_err(|e| e.to_string())?;
        let engine = control.runtime();
        let adopted = match key {
            Some(k) if k.attempt > 1 => engine.record(&k.id).await.map_err(|e| e.to_string())?,
            _ => None,
        };
        let child = match adopted {
            Some(child) => child,
            None => self.spawn(&args, &me, control, key).await?,
        };
        let handle = child.meta.link.as_ref().map(|l| l.id.clone()).unwrap_or_else(|| child.id().to_owned());
        let done = tokio::select! {
            r = engine.settled_past_approvals(child.id()) => r.map_err(|e| e.to_string())?,
            () = control.cancelled().cancelled() => {
                if !engine.is_halted() {
                    // Nobody is left to read its answer. (A stop leaves it
                    // be: the parent resumes and adopts it.)
                    let why = format!("canceled because its parent task {} ended", me.id());
                    self.manager.cancel_below(engine, me.id(), &why).await;
                }
                return Err(format!("the task ended while subagent {handle} was working"));
            }
        };
        let answer = done.task.status.message.as_ref().map(|m| m.text()).unwrap_or_default();
        match done.state() {
            TaskState::Completed => Ok(answer),
            TaskState::InputRequired => Ok(format!(
                "subagent {handle} is waiting for input: {answer} (send it with the subagent.send command)"
            )),
            s => Err(format!("subagent {handle} ended {}: {answer}", s.as_str())),
        }
    }

    async fn spawn(
        &self,
        args: &Value,
        me: &TaskRecord,
        control: &TaskControl,
        key: Option<&CallKey>,
    ) -> Result<TaskRecord, String> {
        let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
        let spawn = Spawn {
            id: key.map(|k| k.id.clone()),
            owner: me.owner.clone(),
            parent: Some(me.id().to_owned()),
            instruction: field("instruction").unwrap_or_default(),
            input: field("input").unwrap_or_default(),
            name: field("name"),
            command: None,
            max_tokens: None,
            tools: args
                .get("tools")
                .and_then(Value::as_array)
                .map(|sets| sets.iter().filter_map(Value::as_str).map(str::to_owned).collect()),
            within: self.scope.clone(),
        };
        self.manager.spawn(control.runtime(), spawn).await.map_err(|e| describe(&e))
    }
}
