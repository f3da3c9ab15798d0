//! Workflow runs (design §8, `docs/workflows.md`): a run is a task linked
//! `{kind: run, id: "<workflow>-<ULID>"}` whose agent is [`Workflows`]. The
//! run's state (the pinned definition, inputs, each step's status and
//! output, the open gate) is the task's checkpoint, committed with it:
//! a step is recorded running before its effect and done after, so a
//! restart resumes at the first unfinished step.
//!
//! Human gates: a `human` step moves the task to INPUT_REQUIRED with the
//! question; the answer is a message naming the task, checked by the
//! [`GateKeeper`] half of [`Workflows`] before the engine commits it.

mod answer;
mod exec;
mod finish;
mod gate;
mod ids;
mod ops;
mod state;
mod steps;
mod tool;

pub mod events;

#[cfg(test)]
mod tests;

pub use events::{FeedSink, RunEvent, RunEventSink};
pub use ids::{run_id, task_id_of};
pub use ops::RunStart;
pub use state::RunState;
pub use tool::{RunWorkflowTool, TOOL_NAME as RUN_WORKFLOW, WorkflowsHandle};

use crate::delegate::Delegator;
use crate::subagents::SubagentManager;
use agentd_core::{Agent, EngineBuilder, GateBridge, Runtime, Turn};
use agentd_proto::TaskState;
use agentd_proto::ext::events::RunEventState;
use agentd_workflow::{Definition, StepKind};
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A person gates can be addressed to (`!human` entries).
#[derive(Clone, Debug, PartialEq)]
pub struct Person {
    pub name: String,
    /// The `channel` of the `!human` entry as the document writes it
    /// (`@channel/<name>`): the gate's `askChannel`, its events' `channel`
    /// and the bridge body's `channel`.
    pub channel: Option<String>,
    /// Who answers for this person: a principal id (`user:carol`), or
    /// `operator` for operators only.
    pub principal: String,
    pub escalate_after: Option<Duration>,
}

/// The workflows and people of the instruction document.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    definitions: BTreeMap<String, Definition>,
    people: BTreeMap<String, Person>,
}

impl Catalog {
    /// Checks that every gate is addressed to a declared person; the
    /// errors read `workflow "x": steps.ask.to: …`.
    pub fn new(definitions: Vec<Definition>, people: Vec<Person>) -> Result<Catalog, Vec<String>> {
        let people: BTreeMap<String, Person> = people.into_iter().map(|p| (p.name.clone(), p)).collect();
        let mut errors = Vec::new();
        for d in &definitions {
            for s in d.steps.values() {
                if let StepKind::Human { to, .. } = &s.kind
                    && !people.contains_key(to)
                {
                    let known: Vec<&str> = people.keys().map(String::as_str).collect();
                    errors.push(format!(
                        "workflow {:?}: steps.{}.to: no human named {to:?} is declared (declared: {})",
                        d.name,
                        s.id,
                        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                    ));
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Catalog { definitions: definitions.into_iter().map(|d| (d.name.clone(), d)).collect(), people })
    }

    pub fn definition(&self, name: &str) -> Option<&Definition> {
        self.definitions.get(name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.definitions.keys().map(String::as_str).collect()
    }

    pub fn person(&self, name: &str) -> Option<&Person> {
        self.people.get(name)
    }

    /// The workflows as the command extension's card `params.workflows`
    /// lists them: `[{name, description, inputs}]`, `inputs` the JSON
    /// Schema of a run's inputs (`null` when the definition has none), so
    /// a client can build the form that starts a run.
    pub fn card_entries(&self) -> Vec<serde_json::Value> {
        self.definitions
            .values()
            .map(|d| serde_json::json!({"name": d.name, "description": d.description, "inputs": d.inputs_schema}))
            .collect()
    }

    /// One card skill per workflow: how to start it.
    pub fn skills(&self) -> Vec<agentd_proto::AgentSkill> {
        self.definitions
            .values()
            .map(|d| agentd_proto::AgentSkill {
                id: format!("workflow:{}", d.name),
                name: format!("Workflow {}", d.name),
                description: format!(
                    "{} Start it with the command {{\"agentd\": {{\"op\": \"workflow.run\", \"workflow\": \"{}\", \"inputs\": {{…}}}}}}.",
                    d.description.as_deref().unwrap_or("A workflow of this agent."),
                    d.name
                ),
                tags: vec!["workflow".into()],
                input_modes: vec!["application/json".into()],
                ..agentd_proto::AgentSkill::default()
            })
            .collect()
    }
}

/// What runs use besides the engine.
pub struct WorkflowDeps {
    /// Runs `agent` and `subagent` steps (children of the run's task).
    pub subagents: Arc<SubagentManager>,
    /// The instruction an `agent` step's model turn gets.
    pub system_prompt: String,
    pub bridge: Option<Arc<dyn GateBridge>>,
    pub delegator: Option<Arc<dyn Delegator>>,
    pub events: Option<Arc<dyn RunEventSink>>,
}

/// The workflow runtime: starts runs, drives them as their tasks' agent,
/// keeps their gates.
pub struct Workflows {
    catalog: Catalog,
    deps: WorkflowDeps,
    /// To hand gate watchers an owned handle.
    me: Weak<Workflows>,
    /// The gates being watched for their deadlines: (task id, opened at).
    watching: dashmap::DashSet<(String, i64)>,
}

impl Workflows {
    pub fn new(catalog: Catalog, deps: WorkflowDeps) -> Arc<Self> {
        Arc::new_cyclic(|me| Self { catalog, deps, me: me.clone(), watching: Default::default() })
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Adds workflows to the engine being built: the agent of run tasks
    /// (new and resumed), the keeper of their gates, and the observer of
    /// runs canceled from outside.
    pub fn install(self: &Arc<Self>, builder: EngineBuilder) -> EngineBuilder {
        builder
            .link_agent(agentd_core::LinkKind::Run, self.clone())
            .gate_keeper(self.clone())
            .observer(self.clone())
    }

    fn emit(&self, event: RunEvent) {
        events::emit(self.deps.events.as_deref(), event);
    }
}

#[async_trait]
impl Agent for Workflows {
    async fn run(&self, turn: Turn) {
        self.drive_run(turn.control).await;
    }
}

/// A run canceled from outside (CancelTask, `workflow.cancel`, a closed
/// conversation) never reaches its own code again: its `run` event comes
/// from here, after the cancel was committed, through the same sink as its
/// other events so it is never ahead of them.
#[async_trait]
impl agentd_core::TaskObserver for Workflows {
    fn end_committed(&self, _: &str, state: TaskState) -> bool {
        state == TaskState::Canceled
    }

    async fn task_ended(&self, engine: &Runtime, task_id: &str, _: TaskState) {
        let Ok(Some(rec)) = engine.record(task_id).await else { return };
        let Some(link) = rec.meta.link.as_ref().filter(|l| l.kind == agentd_core::LinkKind::Run) else {
            return;
        };
        let workflow = state::RunState::from_checkpoint(rec.meta.checkpoint.as_ref())
            .map(|s| s.workflow)
            .unwrap_or_default();
        self.emit(RunEvent::Run {
            run_id: link.id.clone(),
            task_id: task_id.to_owned(),
            workflow,
            state: RunEventState::Canceled,
            reason: rec.task.status.message.as_ref().map(|m| m.text()),
        });
    }
}
