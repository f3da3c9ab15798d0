//! One tool of an MCP server as a tool of the agent loop.

use crate::hub::Inner;
use crate::policy::{Ask, Decision};
use crate::render;
use crate::server::CallError;
use agentd_core::{ApprovalRequest, TaskControl};
use agentd_proto::ext::events::{EventKind, ToolData, ToolOutcome};
use agentd_runtime::agent_loop::{CallKey, OnUncertain, Tool};
use agentd_runtime::model::ToolSpec;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

pub struct McpTool {
    hub: Arc<Inner>,
    /// The owning server (its index in the hub).
    server: usize,
    tool: rmcp::model::Tool,
    /// The name the model sees.
    name: String,
}

impl McpTool {
    pub(crate) fn new(hub: Arc<Inner>, server: usize, tool: rmcp::model::Tool, name: String) -> Self {
        Self { hub, server, tool, name }
    }

    /// The server that owns the tool.
    pub fn server(&self) -> &str {
        &self.hub.servers[self.server].spec.name
    }

    /// The tool's name on its server.
    pub fn tool(&self) -> &str {
        &self.tool.name
    }

    /// Whether its policy lets a call whose outcome is unknown (interrupted
    /// by a crash) be made again (`policy.idempotent`).
    pub fn idempotent(&self) -> bool {
        self.hub.policy.idempotent(self.server(), &self.tool)
    }
}

#[async_trait]
impl Tool for McpTool {
    /// What a call a restart cut gets: the policy's `on_interrupt`
    /// (`docs/durability.md`).
    fn on_uncertain(&self) -> OnUncertain {
        self.hub.policy.on_interrupt(self.server(), &self.tool)
    }

    /// A call a person approved running again after a restart cut it is
    /// not asked about a second time.
    /// Every call of a turn carries its idempotency key to the server
    /// (`_meta`, [`idempotency_meta`]), the same on a retry.
    async fn call_keyed(&self, args: Value, control: &TaskControl, key: &CallKey) -> Result<String, String> {
        self.call_approved(args, control, key.rerun_approved, Some(key)).await
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.tool.description.as_deref().unwrap_or_default().to_owned(),
            parameters: Value::Object((*self.tool.input_schema).clone()),
        }
    }

    async fn call(&self, args: Value, control: &TaskControl) -> Result<String, String> {
        self.call_approved(args, control, false, None).await
    }
}

impl McpTool {
    /// Calls the tool, then records a `tool` event on the task (visible to
    /// its owner and operators, like the task); `approved`: an `ask` of the
    /// policy was already answered yes.
    async fn call_approved(
        &self,
        args: Value,
        control: &TaskControl,
        approved: bool,
        key: Option<&CallKey>,
    ) -> Result<String, String> {
        let started = std::time::Instant::now();
        let (outcome, answer) = self.invoke_with_outcome(args.clone(), Some(control), approved, key).await;
        let (secs, label) = (started.elapsed().as_secs_f64(), outcome_label(outcome));
        control.runtime().engine().metrics().tools.call(self.server(), self.tool(), label, secs);
        let data = ToolData {
            task_id: control.task_id().to_owned(),
            server: self.server().to_owned(),
            tool: self.tool().to_owned(),
            name: self.name.clone(),
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            outcome,
            arguments: args,
            result: render::cut(match &answer {
                Ok(text) | Err(text) => text.clone(),
            }),
        };
        let data = serde_json::to_value(&data).unwrap_or(Value::Null);
        if let Err(e) = control.runtime().emit_event(EventKind::Tool, control.task_id(), data).await {
            tracing::warn!(task = control.task_id(), tool = %self.name, error = %e, "could not record the tool event");
        }
        answer
    }
}

/// The outcome label of a call's metrics: as its `tool` event says it.
fn outcome_label(o: ToolOutcome) -> &'static str {
    match o {
        ToolOutcome::Ok => "ok",
        ToolOutcome::Error => "error",
        ToolOutcome::Failed => "failed",
        ToolOutcome::Denied => "denied",
    }
}

/// The `_meta` member of a `tools/call` request naming who the call is:
/// its idempotency key (`<task id>:<step>:<call>`, the same on every
/// attempt, so a server can recognise a retry and not act twice) and the
/// attempt (1, then 2, … after restarts). Namespaced as MCP asks of keys
/// that are not the protocol's.
pub fn idempotency_meta(key: &CallKey) -> serde_json::Map<String, Value> {
    let mut meta = serde_json::Map::new();
    meta.insert(IDEMPOTENCY_KEY.into(), Value::from(key.key.clone()));
    meta.insert(ATTEMPT.into(), Value::from(key.attempt));
    meta
}

/// The `_meta` key of a call's idempotency key.
pub const IDEMPOTENCY_KEY: &str = "dev.agentd/idempotency-key";
/// The `_meta` key of a call's attempt number.
pub const ATTEMPT: &str = "dev.agentd/attempt";

impl McpTool {
    /// Waits for a human's approval of this exact call: `None` when it was
    /// approved, else what the model is told.
    async fn approval(&self, ask: Ask, args: &Value, control: &TaskControl) -> Option<String> {
        let req = ApprovalRequest {
            tool: self.name.clone(),
            server: Some(self.server().to_owned()),
            arguments: args.clone(),
            channel: ask.channel,
            answerers: ask.answerers,
            timeout: ask.timeout,
            idempotent: ask.idempotent,
            interrupted: false,
        };
        match control.await_approval(req).await {
            Ok(outcome) => outcome.refusal(&self.name),
            Err(e) => Some(format!("the call of {} was not made: {e}", self.name)),
        }
    }

    /// Decides, then calls the tool on its server: the text of its result,
    /// or why there is none (an `isError` result is an error too).
    /// Outside a task, a call the policy asks about is denied: there is no
    /// task to wait on.
    pub async fn invoke(&self, args: Value) -> Result<String, String> {
        self.invoke_with_outcome(args, None, false, None).await.1
    }

    async fn invoke_with_outcome(
        &self,
        args: Value,
        control: Option<&TaskControl>,
        approved: bool,
        key: Option<&CallKey>,
    ) -> (ToolOutcome, Result<String, String>) {
        let (server, tool) = (self.server(), self.tool());
        let denied = match (self.hub.policy.decide(server, &self.tool, &args), control) {
            (Decision::Allow, _) => None,
            (Decision::Ask(_), Some(_)) if approved => None,
            (Decision::Deny(why), _) => Some(format!("the call of {} was denied: {why}", self.name)),
            (Decision::Ask(ask), Some(control)) => self.approval(ask, &args, control).await,
            (Decision::Ask(_), None) => {
                Some(format!("the call of {} needs an approval, and no task can wait for one", self.name))
            }
        };
        if let Some(why) = denied {
            return (ToolOutcome::Denied, Err(why));
        }
        let Value::Object(args) = args else {
            return (ToolOutcome::Failed, Err("the arguments must be a JSON object".into()));
        };
        let background = match self.hub.background() {
            Ok(b) => b,
            Err(e) => return (ToolOutcome::Failed, Err(e)),
        };
        let meta = key.map(idempotency_meta);
        match self.hub.servers[self.server].call(tool, args, meta, background).await {
            Ok(result) => match render::render(&result) {
                (text, true) => (ToolOutcome::Error, Err(format!("the tool reported an error: {text}"))),
                (text, false) => (ToolOutcome::Ok, Ok(text)),
            },
            Err(e @ (CallError::Unavailable(_) | CallError::Refused(_) | CallError::Timeout(_))) => {
                (ToolOutcome::Failed, Err(e.to_string()))
            }
        }
    }
}
