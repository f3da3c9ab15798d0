//! What each kind of step does once it runs. `agent` and `subagent` steps
//! run as subagents, children of the run's task: cancelling the run
//! cancels them, and a child started before a restart is adopted.

use super::Workflows;
use super::exec::{Stop, update};
use crate::subagents::Spawn;
use agentd_core::{Principal, PrincipalRole, TaskControl, TaskRecord};
use agentd_proto::{Message, Part, PartContent, Role, TaskState, new_id};
use agentd_workflow::{Guard, Scope, Step, StepKind, render};
use serde_json::{Map, Value, json};

/// The name of the subagents steps start (the first part of their handle).
const CHILD_NAME: &str = "workflow";

fn daemon() -> Principal {
    Principal::new("operator:agentd", PrincipalRole::Operator)
}

fn text_of(v: Value) -> String {
    match v {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl Workflows {
    /// One attempt of `step`. `child`: a task a previous attempt started
    /// (before a restart); `max_tokens`: the run's `limits.tokens`.
    pub(super) async fn execute(
        &self,
        c: &TaskControl,
        step: &Step,
        max_tokens: Option<u64>,
        scope: &Scope,
        child: Option<String>,
    ) -> Result<Value, String> {
        let r = |v: &Value| render(v, scope);
        match &step.kind {
            StepKind::Agent { prompt, tools } => {
                let input = text_of(r(prompt)?);
                let work = (self.deps.system_prompt.clone(), input, tools.clone());
                self.child_step(c, &step.id, work, max_tokens, child).await
            }
            StepKind::Subagent { instruction, input, tools, .. } => {
                let work = (text_of(r(instruction)?), text_of(r(input)?), tools.clone());
                self.child_step(c, &step.id, work, max_tokens, child).await
            }
            StepKind::Assign { values } => r(values),
            StepKind::Switch { cases, default } => {
                for (i, case) in cases.iter().enumerate() {
                    if Guard::compile(&case.when)?.eval(scope)? {
                        return Ok(json!({"case": i, "steps": case.steps}));
                    }
                }
                Ok(json!({"case": "default", "steps": default}))
            }
            StepKind::Parallel { branches } => {
                let outputs: Map<String, Value> = branches
                    .iter()
                    .map(|b| {
                        (
                            b.clone(),
                            scope.steps.get(b).and_then(|s| s.get("output")).cloned().unwrap_or_default(),
                        )
                    })
                    .collect();
                Ok(Value::Object(outputs))
            }
            StepKind::Delegate { peer, message } => {
                let peer = text_of(r(&Value::String(peer.clone()))?);
                self.delegate(c, &peer, r(message)?).await
            }
            // Gates and finish are not run as work (see exec.rs).
            StepKind::Human { .. } | StepKind::Finish { .. } => Ok(Value::Null),
        }
    }

    /// Runs a subagent for a step and returns its answer; adopts `child`
    /// when it already finished or still runs.
    async fn child_step(
        &self,
        c: &TaskControl,
        step: &str,
        (instruction, input, tools): (String, String, Option<Vec<String>>),
        max_tokens: Option<u64>,
        child: Option<String>,
    ) -> Result<Value, String> {
        let engine = c.runtime();
        let adopted = match child {
            Some(id) => match engine.task_record(&daemon(), &id).await {
                Ok(rec) if rec.state() == TaskState::Completed || !rec.state().is_terminal() => Some(id),
                _ => None,
            },
            None => None,
        };
        let id = match adopted {
            Some(id) => id,
            None => {
                let owner = c.record().await.map_err(|e| e.to_string())?.owner;
                let spawn = Spawn {
                    id: None,
                    owner,
                    parent: Some(c.task_id().to_owned()),
                    instruction,
                    input,
                    name: Some(CHILD_NAME.into()),
                    command: None,
                    max_tokens,
                    tools,
                    within: Default::default(),
                };
                let rec = self.deps.subagents.spawn(engine, spawn).await.map_err(|e| e.to_string())?;
                let (sid, cid) = (step.to_owned(), rec.id().to_owned());
                update(c, move |s, _| s.step_mut(&sid).child = Some(cid.clone()), None).await.map_err(
                    |stop| match stop {
                        Stop::Gone => "the run ended".to_owned(),
                        Stop::Fail(why) => why,
                    },
                )?;
                rec.id().to_owned()
            }
        };
        let rec = tokio::select! {
            r = engine.settled_past_approvals(&id) => r.map_err(|e| e.to_string())?,
            () = c.cancelled().cancelled() => return Err("the run was canceled".into()),
        };
        child_result(&rec)
    }

    /// Cancels the child task a step started, if any (after a timeout).
    pub(super) async fn cancel_child(&self, c: &TaskControl, step: &str) {
        let Ok(rec) = c.record().await else { return };
        let Ok(st) = super::RunState::from_checkpoint(rec.meta.checkpoint.as_ref()) else { return };
        if let Some(child) = st.steps.get(step).and_then(|s| s.child.clone()) {
            let why = format!("canceled: workflow step {step} timed out");
            let _ = c.runtime().cancel_because(&daemon(), &child, &why).await;
            self.deps.subagents.ended(&child);
        }
    }

    async fn delegate(&self, c: &TaskControl, peer: &str, message: Value) -> Result<Value, String> {
        let Some(delegator) = &self.deps.delegator else {
            return Err(format!(
                "no A2A peers are configured, so nothing can be delegated to {peer:?} (a2a.peers)"
            ));
        };
        let part = match message {
            Value::String(s) => Part::text(s),
            other => Part::data(other),
        };
        let msg = Message { message_id: new_id(), role: Role::User, parts: vec![part], ..Message::default() };
        let req = crate::delegate::DelegateRequest { peer: peer.to_owned(), message: msg };
        let task = delegator.delegate(req, c.cancelled().clone()).await.map_err(|e| e.to_string())?;
        if task.status.state != TaskState::Completed {
            let why = task.status.message.as_ref().map(Message::text).unwrap_or_default();
            return Err(format!("the peer's task ended {}: {why}", task.status.state.as_str()));
        }
        let parts: Vec<&Part> = task.artifacts.iter().flatten().flat_map(|a| &a.parts).collect();
        Ok(parts_value(&parts).unwrap_or_else(|| {
            Value::String(task.status.message.as_ref().map(Message::text).unwrap_or_default())
        }))
    }
}

/// A finished child's answer: its final message's text.
fn child_result(rec: &TaskRecord) -> Result<Value, String> {
    let text = rec.task.status.message.as_ref().map(Message::text).unwrap_or_default();
    match rec.state() {
        TaskState::Completed => Ok(Value::String(text)),
        TaskState::InputRequired => {
            Err("the step's subagent asked for input, which a workflow step cannot give".into())
        }
        s => Err(format!("its subagent ended {}: {text}", s.as_str())),
    }
}

/// The value of result parts: a lone DataPart's data, else the texts.
fn parts_value(parts: &[&Part]) -> Option<Value> {
    if let [p] = parts
        && let PartContent::Data(v) = &p.content
    {
        return Some(Value::clone(v));
    }
    let texts: Vec<&str> = parts.iter().filter_map(|p| p.as_text()).collect();
    (!texts.is_empty()).then(|| Value::String(texts.join("\n")))
}
