//! The command extension's ops (design §7), `https://agentd.dev/a2a/ext/command`:
//! the engine routes a message carrying `{"agentd": {"op": …}}` here; each
//! op is checked (known, granted to the caller's role, arguments valid
//! against its schema) and then run deterministically, with no model call.
//! See `docs/commands.md`.

pub mod ops;

use crate::subagents::{Spawn, SubagentManager, task_id_of};
use crate::workflows::Workflows;
use agentd_core::{
    CommandHandler, CommandOutcome, Error, FieldPath, LinkKind, Principal, PrincipalRole, Runtime,
    SendOutcome, TaskRecord,
};
use agentd_proto::{AgentSkill, Message, Metadata, Part, Role, SendMessageRequest, new_id};
use async_trait::async_trait;
use ops::Schemas;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

/// The extension's URI.
pub const URI: &str = "https://agentd.dev/a2a/ext/command";

/// Which ops each role may run. Operators may run every op; anonymous
/// callers none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grants {
    user: BTreeSet<String>,
    agent: BTreeSet<String>,
}

impl Default for Grants {
    fn default() -> Self {
        let d: BTreeSet<String> = ops::DEFAULT_GRANTS.iter().map(|s| (*s).to_owned()).collect();
        Self { user: d.clone(), agent: d }
    }
}

impl Grants {
    /// Grants from config; an op name that is not an op is an error naming it.
    pub fn new(user: &[String], agent: &[String]) -> Result<Self, String> {
        let known = ops::names();
        let check = |role: &str, list: &[String]| -> Result<BTreeSet<String>, String> {
            for op in list {
                if !known.contains(&op.as_str()) {
                    return Err(format!(
                        "commands.grants.{role}: {op:?} is not a command op (ops: {})",
                        known.join(", ")
                    ));
                }
            }
            Ok(list.iter().cloned().collect())
        };
        Ok(Self { user: check("user", user)?, agent: check("agent", agent)? })
    }

    pub fn allows(&self, role: PrincipalRole, op: &str) -> bool {
        match role {
            PrincipalRole::Operator => true,
            PrincipalRole::User => self.user.contains(op),
            PrincipalRole::Agent => self.agent.contains(op),
            PrincipalRole::Anonymous => false,
        }
    }
}

fn role_name(role: PrincipalRole) -> &'static str {
    match role {
        PrincipalRole::Operator => "operator",
        PrincipalRole::User => "user",
        PrincipalRole::Agent => "agent",
        PrincipalRole::Anonymous => "anonymous",
    }
}

/// The extension's card `params`: `{"ops": [{op, description, startsWork, schema}]}`.
pub fn card_params() -> Metadata {
    let ops: Vec<Value> = ops::all()
        .iter()
        .map(|o| json!({"op": o.op, "description": o.description, "startsWork": o.starts_work, "schema": o.schema}))
        .collect();
    let mut m = Metadata::new();
    m.insert("ops".into(), Value::Array(ops));
    m
}

/// One card skill per op, mirroring the extension's params.
pub fn skills() -> Vec<AgentSkill> {
    ops::all()
        .iter()
        .map(|o| AgentSkill {
            id: format!("command:{}", o.op),
            name: format!("Command {}", o.op),
            description: format!(
                "{} Send a DataPart {{\"agentd\": {{\"op\": \"{}\", …}}}} (extension {URI}).",
                o.description, o.op
            ),
            tags: vec!["command".into()],
            input_modes: vec!["application/json".into()],
            ..AgentSkill::default()
        })
        .collect()
}

/// The command handler the engine calls.
pub struct Commands {
    grants: Grants,
    /// Compiled on the first command: start-up does not pay for them.
    schemas: std::sync::OnceLock<Schemas>,
    subagents: Arc<SubagentManager>,
    workflows: Option<Arc<Workflows>>,
    model: String,
    started: Instant,
}

impl Commands {
    /// `model` is the provider kind the `status` op reports.
    pub fn new(grants: Grants, subagents: Arc<SubagentManager>, model: &str) -> Self {
        Self {
            grants,
            schemas: std::sync::OnceLock::new(),
            subagents,
            workflows: None,
            model: model.to_owned(),
            started: Instant::now(),
        }
    }

    fn schemas(&self) -> &Schemas {
        self.schemas.get_or_init(Schemas::compile)
    }

    /// Runs the `workflow.*` ops with `workflows`.
    pub fn with_workflows(mut self, workflows: Arc<Workflows>) -> Self {
        self.workflows = Some(workflows);
        self
    }

    fn workflows(&self) -> Result<&Arc<Workflows>, Error> {
        self.workflows.as_ref().ok_or_else(|| Error::unsupported("this agent runs no workflows"))
    }

    fn check(&self, p: &Principal, op: &str, args: &Value) -> Result<(), Error> {
        if !self.schemas().knows(op) {
            return Err(Error::invalid(
                FieldPath::default().member("op"),
                format!("{op:?} is not a command op; this agent runs: {}", ops::names().join(", ")),
            ));
        }
        if !self.grants.allows(p.role, op) {
            let role = role_name(p.role);
            return Err(Error::permission_denied(format!(
                "the command op {op:?} is not granted to role {role} ({}); an operator may run it, \
                     or grant it in commands.grants.{role}",
                p.id
            ))
            .with_meta("op", op)
            .with_meta("role", role));
        }
        self.schemas().check(op, args)
    }

    async fn status(&self, p: &Principal, engine: &Runtime) -> Result<Value, Error> {
        let l = self.subagents.limits();
        let mut status = json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptimeSecs": self.started.elapsed().as_secs(),
            "liveTasks": engine.live_tasks(),
            "model": self.model,
            "subagents": {
                "live": self.subagents.live_count(),
                "maxLive": l.max_live,
                "maxDepth": l.max_depth,
                "maxTokens": l.max_tokens,
            },
            "principal": {"id": p.id, "role": role_name(p.role)},
        });
        // Replicas on a shared store, for operators: who is alive, who
        // holds which task's run.
        if p.role == PrincipalRole::Operator
            && let Some((replicas, leases)) = engine.replicas().await?
        {
            let replicas: Vec<Value> =
                replicas.iter().map(|r| json!({"id": r.id, "seenMsAgo": r.seen_ms_ago})).collect();
            let leases: Vec<Value> = leases
                .iter()
                .map(|l| {
                    json!({"resource": l.resource, "holder": l.holder, "epoch": l.epoch, "expiresInMs": l.expires_in_ms})
                })
                .collect();
            status["replica"] = json!({"id": engine.replica_id(), "replicas": replicas, "leases": leases});
        }
        Ok(status)
    }

    /// The subagent a handle (or task id) names, if the caller may see it.
    async fn subagent(&self, p: &Principal, engine: &Runtime, id: &str) -> Result<TaskRecord, Error> {
        let not_found =
            || Error::not_found(format!("no subagent {id:?} is visible to you")).with_meta("subagent", id);
        let task_id = task_id_of(id);
        let rec = engine.task_record(p, task_id).await.map_err(|e| match e {
            Error::TaskNotFound { .. } => not_found(),
            e => e,
        })?;
        match &rec.meta.link {
            Some(l) if l.kind == LinkKind::Subagent && (id == task_id || l.id == id) => Ok(rec),
            _ => Err(not_found()),
        }
    }

    fn subagent_status(&self, rec: &TaskRecord) -> Value {
        let handle = rec.meta.link.as_ref().map(|l| l.id.clone()).unwrap_or_default();
        let last =
            rec.task.status.message.as_ref().or_else(|| rec.task.history.as_ref().and_then(|h| h.last()));
        let children: Vec<Value> = self
            .subagents
            .live_children(rec.id())
            .into_iter()
            .map(|(handle, task_id)| json!({"handle": handle, "taskId": task_id}))
            .collect();
        json!({
            "handle": handle,
            "taskId": rec.id(),
            "contextId": rec.task.context_id,
            "state": rec.state().as_str(),
            "parent": rec.meta.parent,
            "command": rec.meta.command,
            "liveChildren": children,
            "lastMessage": last,
        })
    }

    async fn kill(&self, p: &Principal, engine: &Runtime, rec: &TaskRecord) -> Result<Value, Error> {
        let handle = rec.meta.link.as_ref().map(|l| l.id.clone()).unwrap_or_default();
        let mut canceled = Vec::new();
        // Who is below is read first: canceling the subagent sets off the
        // same cascade from the engine's observer.
        let below = self.subagents.descendants(rec.id());
        if !rec.state().is_terminal() {
            match engine.cancel_because(p, rec.id(), &format!("killed by {} (subagent.kill)", p.id)).await {
                Ok(_) => {
                    self.subagents.ended(rec.id());
                    canceled.push(rec.id().to_owned());
                }
                Err(Error::NotCancelable { .. }) => {} // ended meanwhile
                Err(e) => return Err(e),
            }
        }
        let why = format!("canceled because its parent subagent {handle} was killed");
        canceled.extend(self.subagents.cancel_all(engine, below, &why).await);
        let now = engine.task_record(p, rec.id()).await?;
        Ok(json!({"handle": handle, "taskId": rec.id(), "state": now.state().as_str(), "canceled": canceled}))
    }

    async fn send_to(
        &self,
        p: &Principal,
        engine: &Runtime,
        rec: &TaskRecord,
        input: String,
    ) -> Result<TaskRecord, Error> {
        let message = Message {
            message_id: new_id(),
            task_id: rec.id().to_owned(),
            role: Role::User,
            parts: vec![Part::text(input)],
            ..Message::default()
        };
        let req = SendMessageRequest { message: Some(message), ..SendMessageRequest::default() };
        match engine.send(p, req, true).await? {
            // The engine answers with the task's events from now on.
            SendOutcome::Task(events) => drop(events),
            SendOutcome::Message(_) => return Err(Error::internal()),
        }
        engine.task_record(p, rec.id()).await
    }
}

/// The most gates `gate.list` answers with.
pub const GATE_LIST_MAX: usize = 100;

/// `gate.list`: the open gates addressed to `p` on others' tasks, as the
/// engine decides, with what a client needs to render and answer each.
async fn gate_list(p: &Principal, engine: &Runtime) -> Result<Value, Error> {
    let (recs, truncated) = engine.gates_addressed_to(p, GATE_LIST_MAX).await?;
    let gates: Vec<Value> = recs
        .iter()
        .map(|r| {
            let gate = r.meta.gate.clone().unwrap_or_default();
            let run = r.meta.link.as_ref().filter(|l| l.kind == LinkKind::Run).map(|l| l.id.clone());
            json!({
                "taskId": r.id(),
                "contextId": r.task.context_id,
                "runId": run,
                "step": gate.step,
                "question": r.task.status.message.as_ref().map(Message::text).unwrap_or_default(),
                "askSchema": gate.ask_schema,
                "askChannel": gate.ask_channel,
                "openedAt": r.task.status.timestamp,
            })
        })
        .collect();
    Ok(json!({"gates": gates, "truncated": truncated}))
}

fn arg(args: &Value, name: &str) -> String {
    args.get(name).and_then(Value::as_str).unwrap_or_default().to_owned()
}

#[async_trait]
impl CommandHandler for Commands {
    async fn run(
        &self,
        p: &Principal,
        op: &str,
        args: Value,
        engine: &Runtime,
    ) -> Result<CommandOutcome, Error> {
        self.check(p, op, &args)?;
        let reply = match op {
            "status" => self.status(p, engine).await?,
            "subagent.spawn" => {
                let spawn = Spawn {
                    id: None,
                    owner: p.id.clone(),
                    parent: None,
                    instruction: arg(&args, "instruction"),
                    input: arg(&args, "input"),
                    name: args.get("name").and_then(Value::as_str).map(str::to_owned),
                    command: Some(op.to_owned()),
                    max_tokens: None,
                    tools: None,
                    within: Default::default(),
                };
                return Ok(CommandOutcome::Started(self.subagents.spawn(engine, spawn).await?));
            }
            "subagent.send" => {
                let rec = self.subagent(p, engine, &arg(&args, "id")).await?;
                return Ok(CommandOutcome::Started(
                    self.send_to(p, engine, &rec, arg(&args, "input")).await?,
                ));
            }
            "subagent.status" => {
                let rec = self.subagent(p, engine, &arg(&args, "id")).await?;
                self.subagent_status(&rec)
            }
            "subagent.kill" => {
                let rec = self.subagent(p, engine, &arg(&args, "id")).await?;
                self.kill(p, engine, &rec).await?
            }
            "workflow.run" => {
                let inputs = args.get("inputs").cloned().unwrap_or_else(|| json!({}));
                let rec = self.workflows()?.start(p, engine, &arg(&args, "workflow"), inputs).await?;
                return Ok(CommandOutcome::Started(rec));
            }
            "workflow.status" => {
                let w = self.workflows()?;
                let rec = w.find(p, engine, &arg(&args, "run")).await?;
                w.status(&engine.owned_task_record(p, rec.id(), "read the status of").await?)
            }
            "workflow.cancel" => {
                let w = self.workflows()?;
                let rec = w.find(p, engine, &arg(&args, "run")).await?;
                engine.owned_task_record(p, rec.id(), "cancel").await?;
                if !rec.state().is_terminal() {
                    let why = format!("canceled by {} (workflow.cancel)", p.id);
                    match engine.cancel_because(p, rec.id(), &why).await {
                        Ok(_) => {}
                        Err(Error::NotCancelable { .. }) => {} // ended meanwhile
                        Err(e) => return Err(e),
                    }
                }
                w.status(&engine.task_record(p, rec.id()).await?)
            }
            "workflow.signal" => {
                let w = self.workflows()?;
                let rec = w.find(p, engine, &arg(&args, "run")).await?;
                engine.owned_task_record(p, rec.id(), "signal").await?;
                let data = args.get("data").cloned().unwrap_or(Value::Null);
                w.signal(engine, &rec, &arg(&args, "signal"), data).await?
            }
            "gate.list" => gate_list(p, engine).await?,
            "conversation.get" => {
                let ctx = arg(&args, "contextId");
                let turns: Vec<Value> = engine
                    .context_turns(p, &ctx, &FieldPath::default().member("contextId"))
                    .await?
                    .iter()
                    .map(|t| {
                        json!({
                            "taskId": t.id(),
                            "state": t.state().as_str(),
                            "messages": t.task.history.clone().unwrap_or_default(),
                        })
                    })
                    .collect();
                json!({"contextId": ctx, "closed": engine.context_closed(&ctx), "turns": turns})
            }
            "conversation.close" => {
                let ctx = arg(&args, "contextId");
                let why = format!("the conversation was closed by {} (conversation.close)", p.id);
                let canceled =
                    engine.close_context(p, &ctx, &FieldPath::default().member("contextId"), &why).await?;
                json!({"contextId": ctx, "closed": true, "canceled": canceled})
            }
            other => {
                // Known to the schema table but not dispatched: a bug.
                tracing::error!(op = other, "command op without an implementation");
                return Err(Error::internal());
            }
        };
        Ok(CommandOutcome::Reply(reply))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_default_to_status_and_own_work_and_refuse_unknown_ops() {
        let g = Grants::default();
        assert!(g.allows(PrincipalRole::User, "status"));
        assert!(!g.allows(PrincipalRole::User, "subagent.spawn"));
        assert!(g.allows(PrincipalRole::Operator, "subagent.spawn"));
        assert!(!g.allows(PrincipalRole::Anonymous, "status"));
        let e = Grants::new(&["status".into(), "nope".into()], &[]).unwrap_err();
        assert!(e.contains("\"nope\"") && e.contains("commands.grants.user"), "{e}");
    }

    #[test]
    fn card_params_list_every_op_with_its_schema() {
        let p = card_params();
        let ops = p["ops"].as_array().unwrap();
        assert_eq!(ops.len(), ops::names().len());
        assert!(ops.iter().all(|o| o["schema"]["type"] == "object" && o["description"].is_string()));
    }
}
