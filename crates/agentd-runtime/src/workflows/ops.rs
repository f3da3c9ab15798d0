//! The `workflow.*` command ops: start a run, read it, cancel it, signal it.

use super::Workflows;
use super::events::{RunEvent, RunEventState};
use super::ids::{run_id, task_id_of};
use super::state::{RunState, now_ms};
use crate::commands::ops::check_with;
use agentd_core::{
    Error, FieldPath, LinkKind, Principal, Runtime, StartTask, TaskLink, TaskMeta, TaskRecord,
};
use agentd_proto::{Message, Part, Role, new_id};
use serde_json::{Value, json};

/// Who a new run belongs to and where it hangs.
#[derive(Clone, Debug, Default)]
pub struct RunStart {
    /// The principal id owning the run's task.
    pub owner: String,
    /// The task that started it (a turn calling `run_workflow`), if any.
    pub parent: Option<String>,
    /// The run task's id; a fresh one when `None`.
    pub id: Option<String>,
}

impl Workflows {
    /// `workflow.run {workflow, inputs}`: checks the inputs against the
    /// definition's schema and starts the run's task, owned by the caller.
    pub async fn start(
        &self,
        p: &Principal,
        engine: &Runtime,
        workflow: &str,
        inputs: Value,
    ) -> Result<TaskRecord, Error> {
        let run = RunStart { owner: p.id.clone(), parent: None, id: None };
        self.start_run(engine, run, workflow, inputs).await
    }

    /// Starts a run of `workflow` as `run` says: the one start of both the
    /// `workflow.run` op and the `run_workflow` tool.
    pub async fn start_run(
        &self,
        engine: &Runtime,
        run: RunStart,
        workflow: &str,
        inputs: Value,
    ) -> Result<TaskRecord, Error> {
        let Some(def) = self.catalog.definition(workflow) else {
            let known = self.catalog.names();
            return Err(Error::invalid(
                FieldPath::default().member("workflow"),
                format!(
                    "no workflow named {workflow:?} (workflows: {})",
                    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                ),
            ));
        };
        if let Some(schema) = &def.inputs_schema {
            let v = jsonschema::validator_for(schema).map_err(|e| {
                Error::Internal(format!("the inputs schema of {workflow:?} does not compile: {e}"))
            })?;
            check_with(&v, &inputs)
                .map_err(|e| Error::Invalid(e.under(&FieldPath::default().member("inputs"))))?;
        }
        let RunStart { owner, parent, id } = run;
        let task_id = id.unwrap_or_else(new_id);
        let run = run_id(workflow, &task_id);
        let started = now_ms();
        let state = RunState {
            run_id: run.clone(),
            workflow: workflow.to_owned(),
            hash: def.hash.clone(),
            source: def.source.clone(),
            inputs: inputs.clone(),
            started_ms: started,
            deadline_ms: def.limits.deadline.map(|d| started.saturating_add(d.as_millis() as i64)),
            executions: 0,
            steps: Default::default(),
            gate: None,
            signals: Default::default(),
            answered: None,
        };
        let input = Message {
            message_id: new_id(),
            role: Role::User,
            parts: vec![Part::data(json!({"workflow": workflow, "inputs": inputs}))],
            ..Message::default()
        };
        let start = StartTask {
            owner,
            id: Some(task_id.clone()),
            context_id: None,
            input,
            meta: TaskMeta {
                link: Some(TaskLink::new(LinkKind::Run, &run)),
                command: Some("workflow.run".into()),
                checkpoint: Some(state.to_value()),
                parent,
                ..TaskMeta::default()
            },
            agent: None,
        };
        let rec = engine.start_task(start).await?;
        self.emit(RunEvent::Run {
            run_id: run,
            task_id,
            workflow: workflow.to_owned(),
            state: RunEventState::Started,
            reason: None,
        });
        Ok(rec)
    }

    /// The run a run id (or task id) names, if the caller may see it.
    pub async fn find(&self, p: &Principal, engine: &Runtime, run: &str) -> Result<TaskRecord, Error> {
        let not_found =
            || Error::not_found(format!("no workflow run {run:?} is visible to you")).with_meta("run", run);
        let task_id = task_id_of(run).ok_or_else(not_found)?;
        let rec = engine.task_record(p, &task_id).await.map_err(|e| match e {
            Error::TaskNotFound { .. } => not_found(),
            e => e,
        })?;
        match &rec.meta.link {
            Some(l) if l.kind == LinkKind::Run && (run == task_id || l.id == run) => Ok(rec),
            _ => Err(not_found()),
        }
    }

    /// `workflow.status`: the run's state, steps and open gate.
    pub fn status(&self, rec: &TaskRecord) -> Value {
        let st = RunState::from_checkpoint(rec.meta.checkpoint.as_ref()).ok();
        let steps: serde_json::Map<String, Value> = st
            .iter()
            .flat_map(|s| &s.steps)
            .map(|(id, s)| {
                (
                    id.clone(),
                    json!({"status": s.status, "output": s.output, "error": s.error, "attempts": s.attempts}),
                )
            })
            .collect();
        let waiting = rec.state() == agentd_proto::TaskState::InputRequired;
        let gate = st.as_ref().and_then(|s| s.gate.as_ref()).filter(|_| waiting).map(|g| {
            json!({
                "step": g.step,
                "question": g.question,
                "channel": g.channel,
                "askSchema": rec.meta.gate.as_ref().and_then(|o| o.ask_schema.clone()),
                "escalated": g.escalated,
                "announced": g.announced,
            })
        });
        json!({
            "runId": rec.meta.link.as_ref().map(|l| l.id.clone()),
            "taskId": rec.id(),
            "workflow": st.as_ref().map(|s| s.workflow.clone()),
            "definitionHash": st.as_ref().map(|s| s.hash.clone()),
            "state": rec.state().as_str(),
            "steps": steps,
            "plan": st.as_ref().map(plan),
            "gate": gate,
            "lastMessage": rec.task.status.message,
        })
    }

    /// `workflow.signal {run, signal, data?}`: records the signal where the
    /// run's guards and templates read it (`run.signals.<name>`).
    pub async fn signal(
        &self,
        engine: &Runtime,
        rec: &TaskRecord,
        signal: &str,
        data: Value,
    ) -> Result<Value, Error> {
        if rec.state().is_terminal() {
            return Err(Error::unsupported(format!(
                "the run is {} and takes no more signals",
                rec.state().as_str()
            )));
        }
        let c = engine.control(rec.id()).await?;
        let name = signal.to_owned();
        c.commit(
            move |meta| {
                if let Ok(mut s) = RunState::from_checkpoint(meta.checkpoint.as_ref()) {
                    s.signals.insert(name.clone(), data.clone());
                    meta.checkpoint = Some(s.to_value());
                }
            },
            None,
        )
        .await?;
        Ok(json!({"runId": rec.meta.link.as_ref().map(|l| l.id.clone()), "signal": signal, "accepted": true}))
    }
}

/// The steps of the run's pinned definition as a graph, in id order:
/// `[{id, kind, dependsOn}]` (dependencies explicit and implied), so a
/// client can draw the run before its steps are recorded. Empty when the
/// pinned definition cannot be read (the run fails on its own then).
fn plan(st: &RunState) -> Value {
    let Ok(def) = agentd_workflow::parse(&st.workflow, &st.source) else {
        return json!([]);
    };
    def.steps
        .values()
        .map(|s| json!({"id": s.id, "kind": s.kind.name(), "dependsOn": s.depends_on}))
        .collect()
}
