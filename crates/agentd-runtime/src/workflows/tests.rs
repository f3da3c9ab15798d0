//! The runtime in process, with paused time: gate announcements and their
//! deadlines, and the `a2a.delegate` step over a stand-in delegator.

use super::*;
use crate::agent_loop::Limits;
use crate::delegate::{DelegateError, DelegateRequest};
use crate::model::ScriptedProvider;
use crate::subagents::SubagentLimits;
use agentd_core::{
    EngineBuilder, EngineConfig, Error, GateAnnouncement, Principal, PrincipalRole, PushUrlPolicy,
};
use agentd_proto::{Artifact, Part, Task, TaskState, TaskStatus};
use agentd_store::MemoryStore;
use agentd_workflow::parse;
use serde_json::json;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

struct NoPush;

#[async_trait]
impl PushUrlPolicy for NoPush {
    async fn check(&self, _: &str) -> Result<(), String> {
        Err("no push here".into())
    }
}

/// Records every run event as `kind:what` (`gate:opened`, `step:done`).
#[derive(Default)]
struct Feed(Mutex<Vec<String>>);

impl RunEventSink for Feed {
    fn emit(&self, e: &RunEvent) {
        let what = match e {
            RunEvent::Run { state, .. } => format!("run:{state}"),
            RunEvent::Step { step, status, .. } => format!("step:{step}:{status}"),
            RunEvent::Gate { action, .. } => format!("gate:{action}"),
        };
        self.0.lock().unwrap().push(what);
    }
}

#[derive(Default)]
struct Bridge(Mutex<Vec<GateAnnouncement>>);

#[async_trait]
impl GateBridge for Bridge {
    async fn announce(&self, a: GateAnnouncement) -> Result<(), Error> {
        self.0.lock().unwrap().push(a);
        Ok(())
    }
}

/// Answers `done` with a DataPart, waits on `slow` until canceled.
#[derive(Default)]
struct Peer {
    canceled: Mutex<bool>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl Delegator for Peer {
    fn peers(&self) -> Vec<String> {
        vec!["done".into(), "slow".into()]
    }
    async fn delegate(&self, r: DelegateRequest, cancel: CancellationToken) -> Result<Task, DelegateError> {
        self.asked.lock().unwrap().push(r.message.text());
        if r.peer == "slow" {
            cancel.cancelled().await;
            *self.canceled.lock().unwrap() = true;
            return Err(DelegateError::Cancelled);
        }
        Ok(Task {
            id: "peer-task".into(),
            status: TaskStatus { state: TaskState::Completed, ..TaskStatus::default() },
            artifacts: Some(vec![Artifact {
                parts: vec![Part::data(json!({"n": 7}))],
                ..Artifact::default()
            }]),
            ..Task::default()
        })
    }
}

const DOC: &str = r#"
steps:
  ask:
    kind: human
    question: "Go?"
    to: "@human/lead"
    escalate_after: 30m
    timeout: 2h
  done: {kind: finish, depends_on: ask}
"#;

const DELEGATE: &str = r#"
steps:
  away: {kind: a2a.delegate, peer: "{{inputs.peer}}", message: "count for {{inputs.peer}}"}
  done: {kind: finish, depends_on: away, output: "{{steps.away.output.n}}"}
"#;

const LATE: &str = r#"
limits: {deadline: 1h}
steps:
  ask: {kind: human, question: "Go?", to: "@human/lead"}
  done: {kind: finish, depends_on: ask}
"#;

const ADOPT: &str = r#"
steps:
  work: {kind: agent, prompt: "work"}
  done: {kind: finish, depends_on: work, output: "{{steps.work.output}}"}
"#;

struct Setup {
    engine: Runtime,
    bridge: Arc<Bridge>,
    peer: Arc<Peer>,
    workflows: Arc<Workflows>,
    subagents: Arc<SubagentManager>,
    feed: Arc<Feed>,
}

fn setup() -> Setup {
    setup_with(Vec::new())
}

fn setup_with(script: Vec<crate::model::ScriptStep>) -> Setup {
    setup_for(script, "operator")
}

/// A setup whose `lead` is bound to `principal`.
fn setup_for(script: Vec<crate::model::ScriptStep>, principal: &str) -> Setup {
    let builder = EngineBuilder::new(
        Arc::new(MemoryStore::new()),
        Arc::new(crate::EchoAgent),
        Arc::new(NoPush),
        EngineConfig::default(),
    );
    let model = Arc::new(ScriptedProvider::from_steps(script));
    let subagents = SubagentManager::new(model, Limits::default(), SubagentLimits::default());
    let bridge = Arc::new(Bridge::default());
    let peer = Arc::new(Peer::default());
    let feed = Arc::new(Feed::default());
    let defs = vec![
        parse("gate", DOC).unwrap(),
        parse("away", DELEGATE).unwrap(),
        parse("adopt", ADOPT).unwrap(),
        parse("late", LATE).unwrap(),
    ];
    let lead = Person {
        name: "lead".into(),
        channel: Some("ops".into()),
        principal: principal.into(),
        escalate_after: None,
    };
    let workflows = Workflows::new(
        Catalog::new(defs, vec![lead]).unwrap(),
        WorkflowDeps {
            subagents: subagents.clone(),
            system_prompt: "You help.".into(),
            bridge: Some(bridge.clone()),
            delegator: Some(peer.clone()),
            events: Some(feed.clone()),
        },
    );
    let engine = workflows.install(builder).observer(subagents.clone()).build();
    Setup { engine, bridge, peer, workflows, subagents, feed }
}

fn alice() -> Principal {
    Principal::new("user:alice", PrincipalRole::User)
}

async fn settle(engine: &Runtime, id: &str) -> agentd_core::TaskRecord {
    engine.settled(id).await.unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_gates_addressed_to_a_principal_are_listed_newest_first_within_the_limit() {
    let s = setup_for(Vec::new(), "user:bob");
    let bob = Principal::new("user:bob", PrincipalRole::User);
    let mut runs = Vec::new();
    for _ in 0..3 {
        let rec = s.workflows.start(&alice(), &s.engine, "late", json!({})).await.unwrap();
        assert_eq!(settle(&s.engine, rec.id()).await.state(), TaskState::InputRequired);
        runs.push(rec.id().to_owned());
    }
    let ids = |recs: &[agentd_core::TaskRecord]| recs.iter().map(|r| r.id().to_owned()).collect::<Vec<_>>();
    let (two, more) = s.engine.gates_addressed_to(&bob, 2).await.unwrap();
    assert_eq!((ids(&two), more), (vec![runs[2].clone(), runs[1].clone()], true));
    let (all, more) = s.engine.gates_addressed_to(&bob, 3).await.unwrap();
    assert_eq!((ids(&all).len(), more), (3, false));
    let (own, _) = s.engine.gates_addressed_to(&alice(), 10).await.unwrap();
    assert!(own.is_empty(), "the owner's gates are in her ListTasks, not here");
}

#[tokio::test(start_paused = true)]
async fn a_gate_is_announced_escalated_and_timed_out() {
    let s = setup();
    let rec = s.workflows.start(&alice(), &s.engine, "gate", json!({})).await.unwrap();
    let rec = settle(&s.engine, rec.id()).await;
    assert_eq!(rec.state(), TaskState::InputRequired);
    let gate = rec.meta.gate.clone().unwrap();
    assert_eq!((gate.ask_channel.as_deref(), gate.step.as_deref()), (Some("ops"), Some("ask")));
    {
        let sent = s.bridge.0.lock().unwrap();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].question, "Go?");
        assert_eq!(sent[0].channel, "ops");
        assert!(!sent[0].escalation);
        assert_eq!(sent[0].run_id.as_deref(), rec.meta.link.as_ref().map(|l| l.id.as_str()));
    }
    // As at a restart: the gate is watched once, and announced once.
    assert_eq!(s.workflows.rearm_gates(&s.engine).await.unwrap(), 1);
    assert_eq!(s.bridge.0.lock().unwrap().len(), 1, "the bridge took it already");
    // Paused time runs ahead to the escalation, then to the timeout.
    tokio::time::sleep(std::time::Duration::from_secs(31 * 60)).await;
    {
        let sent = s.bridge.0.lock().unwrap();
        assert_eq!(sent.len(), 2, "re-announced, once");
        assert!(sent[1].escalation);
    }
    let now = s.engine.task_record(&alice(), rec.id()).await.unwrap();
    assert_eq!(now.state(), TaskState::InputRequired, "escalation does not close the gate");
    tokio::time::sleep(std::time::Duration::from_secs(2 * 3600)).await;
    let end = s.engine.task_record(&alice(), rec.id()).await.unwrap();
    assert_eq!(end.state(), TaskState::Failed);
    assert_eq!(end.meta.gate, None, "the gate closed with the run");
    let why = end.task.status.message.as_ref().unwrap().text();
    assert_eq!(why, "step ask: nobody answered within 2h (timeout, fallback: fail)");
    assert_eq!(
        *s.feed.0.lock().unwrap(),
        ["run:started", "gate:opened", "gate:escalated", "gate:timed_out", "run:failed"],
        "the feed tells the story, each event once"
    );
}

#[tokio::test]
async fn a_delegated_step_returns_the_peers_result_and_cancel_reaches_the_peer() {
    let s = setup();
    let rec = s.workflows.start(&alice(), &s.engine, "away", json!({"peer": "done"})).await.unwrap();
    let rec = settle(&s.engine, rec.id()).await;
    assert_eq!(rec.state(), TaskState::Completed, "{:?}", rec.task.status);
    let result = &rec.task.artifacts.as_ref().unwrap()[0];
    assert_eq!(result.parts[0], Part::data(json!(7)));
    assert_eq!(s.peer.asked.lock().unwrap()[0], "count for done");
    assert_eq!(
        *s.feed.0.lock().unwrap(),
        ["run:started", "step:away:running", "step:away:done", "step:done:done", "run:completed"]
    );

    let rec = s.workflows.start(&alice(), &s.engine, "away", json!({"peer": "slow"})).await.unwrap();
    while s.peer.asked.lock().unwrap().len() < 2 {
        tokio::task::yield_now().await;
    }
    s.engine.cancel_because(&alice(), rec.id(), "stop").await.unwrap();
    for _ in 0..100 {
        if *s.peer.canceled.lock().unwrap() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the cancel did not reach the peer");
}

#[tokio::test]
async fn a_step_whose_subagent_finished_before_a_restart_takes_its_answer() {
    let step = crate::model::ScriptStep { text: Some("from child".into()), ..Default::default() };
    let s = setup_with(vec![step]);
    let spawn = crate::subagents::Spawn {
        id: None,
        owner: "user:alice".into(),
        parent: None,
        instruction: "You help.".into(),
        input: "work".into(),
        name: None,
        command: None,
        max_tokens: None,
        tools: None,
        within: Default::default(),
    };
    let child = s.subagents.spawn(&s.engine, spawn).await.unwrap();
    assert_eq!(settle(&s.engine, child.id()).await.state(), TaskState::Completed);
    // A run as a restart finds it: step `work` running, its child done.
    let def = parse("adopt", ADOPT).unwrap();
    let task_id = agentd_proto::new_id();
    let mut state = RunState {
        run_id: run_id("adopt", &task_id),
        workflow: "adopt".into(),
        hash: def.hash.clone(),
        source: def.source.clone(),
        inputs: json!({}),
        started_ms: 0,
        deadline_ms: None,
        executions: 1,
        steps: Default::default(),
        gate: None,
        signals: Default::default(),
        answered: None,
    };
    let work = state.step_mut("work");
    work.status = agentd_workflow::StepStatus::Running;
    work.child = Some(child.id().to_owned());
    let start = agentd_core::StartTask {
        owner: "user:alice".into(),
        id: Some(task_id.clone()),
        context_id: None,
        input: agentd_proto::Message::agent_text("resume"),
        meta: agentd_core::TaskMeta {
            link: Some(agentd_core::TaskLink::new(agentd_core::LinkKind::Run, &state.run_id)),
            checkpoint: Some(state.to_value()),
            ..Default::default()
        },
        agent: None,
    };
    s.engine.start_task(start).await.unwrap();
    let rec = settle(&s.engine, &task_id).await;
    // The model has no step left: had the step run again, the run would fail.
    assert_eq!(rec.state(), TaskState::Completed, "{:?}", rec.task.status);
    assert_eq!(rec.task.artifacts.as_ref().unwrap()[0].parts[0], Part::text("from child"));
}

#[tokio::test(start_paused = true)]
async fn a_run_waiting_at_a_gate_fails_at_its_deadline() {
    let s = setup();
    let rec = s.workflows.start(&alice(), &s.engine, "late", json!({})).await.unwrap();
    assert_eq!(settle(&s.engine, rec.id()).await.state(), TaskState::InputRequired);
    tokio::time::sleep(std::time::Duration::from_secs(59 * 60)).await;
    let now = s.engine.task_record(&alice(), rec.id()).await.unwrap();
    assert_eq!(now.state(), TaskState::InputRequired, "not yet");
    tokio::time::sleep(std::time::Duration::from_secs(2 * 60)).await;
    let end = s.engine.task_record(&alice(), rec.id()).await.unwrap();
    assert_eq!(end.state(), TaskState::Failed);
    assert_eq!(
        end.task.status.message.as_ref().unwrap().text(),
        "the run passed its deadline of 1h (limits.deadline)"
    );
    assert_eq!(end.meta.gate, None);
}
