//! Subagents (design §8): an agent loop with its own instruction and its
//! own context, started by the `subagent.spawn` command or by the model's
//! `spawn_subagent` tool, tracked by a task with link
//! `{kind: subagent, id: <handle>}` owned by whoever it works for.
//!
//! The handle is `<name>-<task id>`, so a handle resolves to its task with
//! no table (and still does after a restart). What lives only in memory is
//! the tree of live subagents: parent, depth, and the limits on depth and
//! count. Cancelling a parent (CancelTask, `subagent.kill`) cancels its
//! live children, through the engine's [`TaskObserver`] hook.
//!
//! Boundary: everything here reaches a subagent through the engine (start,
//! send, cancel, read) and never shares memory with its run, so a
//! process-per-subagent runtime could replace the in-process `LoopAgent`
//! behind [`SubagentManager::spawn`] without changing the callers.

mod tool;

pub use tool::SpawnSubagentTool;

use crate::agent_loop::{Limits, LoopAgent, Tools};
use crate::model::ModelProvider;
use crate::narrowing::Narrowing;
use agentd_core::{
    Agent, Error, LinkKind, Principal, PrincipalRole, Runtime, StartTask, TaskLink, TaskMeta, TaskObserver,
    TaskRecord, Turn,
};
use agentd_proto::{Message, Part, Role, TaskState, new_id};
use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Limits on subagents, from the `subagents` config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubagentLimits {
    /// Nesting: a subagent spawned by a command or a turn is at depth 1.
    pub max_depth: u32,
    /// Subagents not yet ended, daemon-wide.
    pub max_live: usize,
    /// Tokens per turn of a subagent (its agent loop's `max_tokens`).
    pub max_tokens: u64,
}

impl Default for SubagentLimits {
    fn default() -> Self {
        Self { max_depth: 3, max_live: 8, max_tokens: 100_000 }
    }
}

/// The default name, the first part of a handle.
pub const DEFAULT_NAME: &str = "subagent";

/// What to start.
#[derive(Clone, Debug)]
pub struct Spawn {
    /// The subagent's task id when the caller made it (a tool call's
    /// journaled id, so a retry finds the subagent); else a new one.
    pub id: Option<String>,
    /// The principal id the subagent works for (its task's owner).
    pub owner: String,
    /// The task that spawned it, if a task did.
    pub parent: Option<String>,
    pub instruction: String,
    pub input: String,
    pub name: Option<String>,
    /// The command op that started it, if one did.
    pub command: Option<String>,
    /// Tokens per turn when lower than `subagents.max_tokens` (a workflow's
    /// `limits.tokens`).
    pub max_tokens: Option<u64>,
    /// The tool sets it gets (`crate::narrowing`), within its parent's;
    /// `None`: `spawn_subagent` alone.
    pub tools: Option<Vec<String>>,
    /// What its parent may use (default: everything the daemon has).
    pub within: Narrowing,
}

/// A live subagent.
#[derive(Clone, Debug)]
struct Live {
    parent: Option<String>,
    depth: u32,
    handle: String,
}

pub struct SubagentManager {
    model: Arc<dyn ModelProvider>,
    loop_limits: Limits,
    limits: SubagentLimits,
    /// Live subagents by task id.
    live: Mutex<HashMap<String, Live>>,
    /// The daemon's tools, which subagents' tool sets narrow (set once).
    tools: OnceLock<Tools>,
    /// To hand the `spawn_subagent` tool to the subagents themselves.
    me: Weak<SubagentManager>,
}

/// The principal the manager acts as (cascades, bookkeeping): children
/// belong to their parent's owner, and the cascade acts for the daemon.
pub(crate) fn daemon_principal() -> Principal {
    Principal::new("operator:agentd", PrincipalRole::Operator)
}

/// The task id inside a handle (`<name>-<task id>`), or the id itself.
pub fn task_id_of(handle: &str) -> &str {
    let n = handle.len();
    if n > 36
        && handle.is_char_boundary(n - 36)
        && handle.as_bytes()[n - 37] == b'-'
        && uuid::Uuid::parse_str(&handle[n - 36..]).is_ok()
    {
        &handle[n - 36..]
    } else {
        handle
    }
}

impl SubagentManager {
    /// `loop_limits` are the daemon's agent-loop limits; a subagent's turn
    /// gets them with `max_tokens` from `limits`.
    pub fn new(model: Arc<dyn ModelProvider>, loop_limits: Limits, limits: SubagentLimits) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            model,
            loop_limits,
            limits,
            live: Mutex::new(HashMap::new()),
            tools: OnceLock::new(),
            me: me.clone(),
        })
    }

    pub fn limits(&self) -> &SubagentLimits {
        &self.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many subagents have not ended.
    pub fn live_count(&self) -> usize {
        self.lock().len()
    }

    /// The `spawn_subagent` tool, spawning children of the calling task.
    pub fn tool(&self) -> Option<SpawnSubagentTool> {
        self.me.upgrade().map(|m| SpawnSubagentTool::new(m, Narrowing::default()))
    }

    /// The daemon's tools: what subagents' tool sets pick from. Set once,
    /// after the tools (which hold this manager's `spawn_subagent`) exist.
    pub fn set_tools(&self, tools: Tools) {
        // Without this manager's own tool: kept, it would keep the manager
        // (and the MCP servers among the tools) alive in a cycle.
        let _ = self.tools.set(tools.without(tool::TOOL_NAME));
    }

    /// A subagent's tools: the daemon's, narrowed to its parent's and then
    /// to its own sets, with a `spawn_subagent` that passes that on.
    fn tools_in(&self, scope: Narrowing) -> Tools {
        let mut tools = self.tools.get().cloned().unwrap_or_default();
        if let Some(m) = self.me.upgrade() {
            tools = tools.replacing(Arc::new(SpawnSubagentTool::new(m, scope.clone())));
        }
        tools.narrowed(scope)
    }

    /// Starts a subagent: checks the limits, reserves its place, and starts
    /// its task (SUBMITTED, then its own agent loop). The record returned
    /// is the task as created.
    pub async fn spawn(&self, engine: &Runtime, spawn: Spawn) -> Result<TaskRecord, Error> {
        if self.live_count() >= self.limits.max_live {
            self.prune(engine).await;
        }
        let id = spawn.id.clone().unwrap_or_else(new_id);
        let name = spawn.name.clone().unwrap_or_else(|| DEFAULT_NAME.to_owned());
        let handle = format!("{name}-{id}");
        {
            let mut live = self.lock();
            let depth = spawn.parent.as_ref().and_then(|p| live.get(p)).map_or(0, |p| p.depth) + 1;
            if depth > self.limits.max_depth {
                return Err(limit_error(
                    "max_depth",
                    self.limits.max_depth as usize,
                    format!(
                        "a subagent here would be at depth {depth}, over the limit of {} (subagents.max_depth)",
                        self.limits.max_depth
                    ),
                ));
            }
            if live.len() >= self.limits.max_live {
                return Err(limit_error(
                    "max_live",
                    self.limits.max_live,
                    format!(
                        "{} subagents are running, the limit (subagents.max_live); wait for one to end or kill one",
                        live.len()
                    ),
                ));
            }
            live.insert(id.clone(), Live { parent: spawn.parent.clone(), depth, handle: handle.clone() });
        }
        let own = spawn.tools.clone().unwrap_or_else(|| vec![tool::TOOL_NAME.to_owned()]);
        let scope = spawn.within.then(&own);
        let max_tokens = spawn.max_tokens.map_or(self.limits.max_tokens, |m| m.min(self.limits.max_tokens));
        let made = Made { instruction: spawn.instruction, max_tokens, scope: scope.levels().to_vec() };
        let agent = self.agent(&made);
        let input = Message {
            message_id: new_id(),
            role: Role::User,
            parts: vec![Part::text(spawn.input)],
            ..Message::default()
        };
        let start = StartTask {
            owner: spawn.owner,
            id: Some(id.clone()),
            context_id: None,
            input,
            meta: TaskMeta {
                link: Some(TaskLink::new(LinkKind::Subagent, &handle)),
                parent: spawn.parent,
                command: spawn.command,
                checkpoint: Some(made.to_checkpoint()),
                ..TaskMeta::default()
            },
            agent: Some(Arc::new(agent)),
        };
        let started = engine.start_task(start).await;
        if started.is_err() {
            self.lock().remove(&id);
        }
        started
    }

    /// The agent loop of a subagent made as `made` says.
    fn agent(&self, made: &Made) -> LoopAgent {
        let tools = self.tools_in(Narrowing::from_levels(made.scope.clone()));
        let limits = Limits {
            max_tokens: made.max_tokens,
            max_tokens_key: "subagents.max_tokens",
            ..self.loop_limits.clone()
        };
        LoopAgent::new(self.model.clone(), made.instruction.clone(), limits, tools)
    }

    /// Forgets a subagent that ended. The observer does it too; whoever
    /// cancels one does it at once, so that a spawn right after finds the
    /// place free.
    pub fn ended(&self, task_id: &str) {
        self.lock().remove(task_id);
    }

    /// Forgets the subagents that ended but are still counted: the observer
    /// runs just after a task's end is committed, and a spawn may come in
    /// between (a client that saw one subagent finish and spawns the next).
    async fn prune(&self, engine: &Runtime) {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        for id in ids {
            match engine.task_record(&daemon_principal(), &id).await {
                Ok(rec) if !rec.state().is_terminal() => {}
                Ok(_) => self.ended(&id),
                Err(Error::TaskNotFound { .. }) => {} // reserved, not yet committed
                Err(e) => tracing::warn!(task = %id, error = %e, "could not check a subagent"),
            }
        }
    }

    /// The handles of the live subagents whose parent is `task_id`.
    pub fn live_children(&self, task_id: &str) -> Vec<(String, String)> {
        let live = self.lock();
        let mut out: Vec<(String, String)> = live
            .iter()
            .filter(|(_, l)| l.parent.as_deref() == Some(task_id))
            .map(|(id, l)| (l.handle.clone(), id.clone()))
            .collect();
        out.sort();
        out
    }

    /// Every live subagent below `task_id`, children before grandchildren.
    pub fn descendants(&self, task_id: &str) -> Vec<String> {
        let live = self.lock();
        let mut out: Vec<String> = Vec::new();
        let mut frontier = vec![task_id.to_owned()];
        while let Some(parent) = frontier.pop() {
            for (id, l) in live.iter() {
                if l.parent.as_deref() == Some(parent.as_str()) && !out.contains(id) {
                    out.push(id.clone());
                    frontier.push(id.clone());
                }
            }
        }
        out
    }

    /// Cancels every live subagent below `task_id`; returns their task ids.
    pub async fn cancel_below(&self, engine: &Runtime, task_id: &str, why: &str) -> Vec<String> {
        self.cancel_all(engine, self.descendants(task_id), why).await
    }

    /// Cancels the subagents `ids` (with `why` as their status message);
    /// returns those that are canceled now (by this call or another).
    pub async fn cancel_all(&self, engine: &Runtime, ids: Vec<String>, why: &str) -> Vec<String> {
        let mut canceled = Vec::new();
        for id in ids {
            match engine.cancel_because(&daemon_principal(), &id, why).await {
                Ok(t) if t.status.state == TaskState::Canceled => {
                    self.ended(&id);
                    canceled.push(id);
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(task = %id, error = %e, "cascade: subagent already ended"),
            }
        }
        canceled
    }
}

fn limit_error(limit: &str, value: usize, message: String) -> Error {
    Error::unsupported(message)
        .with_meta("limit", format!("subagents.{limit}"))
        .with_meta("value", value.to_string())
}

/// How a subagent was made, kept in its task's checkpoint: its agent lives
/// in memory, and a restart (or a message to a subagent waiting for input
/// after one) makes it again from this.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Made {
    instruction: String,
    max_tokens: u64,
    /// Its tool sets with its ancestors' (`Narrowing`).
    scope: Vec<Vec<String>>,
}

impl Made {
    fn to_checkpoint(&self) -> serde_json::Value {
        serde_json::json!({ "subagent": self })
    }

    fn from_checkpoint(checkpoint: Option<&serde_json::Value>) -> Option<Made> {
        serde_json::from_value(checkpoint?.get("subagent")?.clone()).ok()
    }
}

/// The agent of subagent tasks whose own agent is not in memory (after a
/// restart): the agent loop made again from the task's checkpoint, which
/// resumes the turn from its step journal.
#[async_trait]
impl Agent for SubagentManager {
    fn resumes(&self) -> bool {
        true
    }

    async fn run(&self, turn: Turn) {
        let rec = match turn.control.record().await {
            Ok(rec) => rec,
            Err(e) => {
                return tracing::warn!(task = turn.control.task_id(), error = %e, "could not read a subagent");
            }
        };
        let Some(made) = Made::from_checkpoint(rec.meta.checkpoint.as_ref()) else {
            let why = "this subagent's instruction was not kept (it was started by an older agentd), so it cannot go on";
            if let Err(e) = turn.control.fail(why).await {
                tracing::warn!(task = rec.id(), error = %e, "could not fail a subagent");
            }
            return;
        };
        if let Some(handle) = rec.meta.link.as_ref().map(|l| l.id.clone()) {
            let mut live = self.lock();
            let depth = rec.meta.parent.as_ref().and_then(|p| live.get(p)).map_or(0, |p| p.depth) + 1;
            live.entry(rec.id().to_owned()).or_insert(Live {
                parent: rec.meta.parent.clone(),
                depth,
                handle,
            });
        }
        self.agent(&made).run(turn).await;
    }
}

#[async_trait]
impl TaskObserver for SubagentManager {
    fn end_committed(&self, task_id: &str, state: TaskState) -> bool {
        self.ended(task_id);
        // A parent that was canceled or failed has nobody left to report to.
        matches!(state, TaskState::Canceled | TaskState::Failed)
    }

    async fn task_ended(&self, engine: &Runtime, task_id: &str, state: TaskState) {
        let ended = match state {
            TaskState::Canceled => "was canceled",
            TaskState::Failed => "failed",
            _ => return,
        };
        let why = format!("canceled because its parent task {task_id} {ended}");
        self.cancel_below(engine, task_id, &why).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_resolves_to_its_task_id() {
        let id = new_id();
        assert_eq!(task_id_of(&format!("helper-{id}")), id);
        assert_eq!(task_id_of(&format!("a_b-{id}")), id);
        assert_eq!(task_id_of(&id), id, "a bare task id is itself");
        assert_eq!(task_id_of("helper-123"), "helper-123", "not a handle: left alone");
        assert_eq!(task_id_of(&format!("x{id}")), format!("x{id}"), "the dash is required");
    }
}
