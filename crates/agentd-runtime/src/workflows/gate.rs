//! Human gates: opening one (INPUT_REQUIRED with the question, the task's
//! open gate, the bridge's announcement) and the gate's deadlines (`escalate_after`,
//! `timeout`), which are absolute times in the checkpoint and are armed
//! again at startup.

use super::Workflows;
use super::events::{GateAction, RunEvent, RunEventState};
use super::exec::{Stop, fmt_duration, update, update_with};
use super::state::{GateState, RunState, now_ms};
use agentd_core::{
    Batch, BridgeDelivery, Error, GateAnnouncement, LinkKind, OpenGate, Runtime, TaskControl, TaskRecord,
};
use agentd_proto::{Message, TaskState};
use agentd_workflow::{Definition, Fallback, StepKind, StepStatus, render};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// What comes due while a gate is open.
enum Due {
    Escalate,
    Timeout,
    Deadline,
}

/// The principal value of a `!human` entry that means "operators only".
const OPERATORS: &str = "operator";

impl Workflows {
    /// Opens the gate of step `id`: one commit moves the task to
    /// INPUT_REQUIRED with the question, records the gate and queues its
    /// announcement (a bridge that cannot hand over its row announces right
    /// after); then its deadlines are armed.
    pub(super) async fn open_gate(
        &self,
        c: &TaskControl,
        def: &Definition,
        st: &RunState,
        id: &str,
    ) -> Result<(), Stop> {
        let StepKind::Human { question, schema, to, escalate_after, .. } = &def.steps[id].kind else {
            return Ok(());
        };
        let person = self
            .catalog
            .person(to)
            .ok_or_else(|| Stop::Fail(format!("step {id}: no human named {to:?} is declared")))?
            .clone();
        let question = match render(question, &st.scope(c.task_id())) {
            Ok(Value::String(s)) => s,
            Ok(v) => v.to_string(),
            Err(e) => return Err(Stop::Fail(format!("step {id}: question: {e}"))),
        };
        let now = now_ms();
        let at = |d: Option<Duration>| d.map(|d| now.saturating_add(d.as_millis() as i64));
        let mut gate = GateState {
            step: id.to_owned(),
            question: question.clone(),
            channel: person.channel.clone().unwrap_or_default(),
            opened_ms: now,
            timeout_ms: at(def.steps[id].timeout),
            escalate_ms: at(escalate_after.or(person.escalate_after)),
            escalated: false,
            timed_out: false,
            announced: false,
        };
        let row = self.announcement_row(c.task_id(), &st.run_id, &gate, schema.clone(), false).await;
        gate.announced = matches!(row, Row::Queued(_));
        let open = OpenGate {
            ask_schema: schema.clone(),
            ask_channel: person.channel.clone(),
            step: Some(id.to_owned()),
            answerers: if person.principal == OPERATORS {
                Vec::new()
            } else {
                vec![person.principal.clone()]
            },
        };
        let sid = id.to_owned();
        let fallback = matches!(row, Row::Unsupported);
        let st = update_with(
            c,
            move |s, meta| {
                s.step_mut(&sid).status = StepStatus::Waiting;
                s.gate = Some(gate.clone());
                meta.gate = Some(open.clone());
            },
            Some((TaskState::InputRequired, Some(Message::agent_text(question)))),
            row.into_batch(),
        )
        .await?;
        self.emit(RunEvent::Gate {
            run_id: st.run_id.clone(),
            task_id: c.task_id().to_owned(),
            step: id.to_owned(),
            action: GateAction::Opened,
            channel: person.channel.clone().unwrap_or_default(),
        });
        if fallback {
            self.first_announce(c, &st, schema.clone()).await;
        }
        self.arm(c.runtime().clone(), c.task_id().to_owned(), now);
        Ok(())
    }

    /// The announcement of `gate` as an outbox row to commit with the change
    /// that opens (or escalates) it.
    async fn announcement_row(
        &self,
        task_id: &str,
        run_id: &str,
        gate: &GateState,
        ask_schema: Option<Value>,
        escalation: bool,
    ) -> Row {
        let Some(bridge) = &self.deps.bridge else { return Row::Skipped };
        if gate.channel.is_empty() {
            return Row::Skipped;
        }
        let a = announcement(task_id, run_id, gate, ask_schema, escalation);
        match bridge.delivery(&a).await {
            None => Row::Unsupported,
            Some(Ok(row)) => Row::Queued(row),
            Some(Err(e)) => {
                tracing::warn!(task = task_id, error = %e, "the gate could not be announced");
                Row::Skipped
            }
        }
    }

    /// Announces a gate that opened and records that the bridge took it.
    async fn first_announce(&self, c: &TaskControl, st: &RunState, ask_schema: Option<Value>) {
        if self.announce(c.task_id(), st, ask_schema, false).await {
            let _ = update(
                c,
                |s, _| {
                    if let Some(g) = &mut s.gate {
                        g.announced = true
                    }
                },
                None,
            )
            .await;
        }
    }

    /// Hands the gate to the bridge; true when it took it.
    async fn announce(
        &self,
        task_id: &str,
        st: &RunState,
        ask_schema: Option<Value>,
        escalation: bool,
    ) -> bool {
        let (Some(bridge), Some(gate)) = (&self.deps.bridge, &st.gate) else { return false };
        if gate.channel.is_empty() {
            return false;
        }
        let a = announcement(task_id, &st.run_id, gate, ask_schema, escalation);
        match bridge.announce(a).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(task = task_id, error = %e, "the gate could not be announced");
                false
            }
        }
    }

    /// Arms the deadlines of the gates open now, and announces those the
    /// bridge had not taken (at startup; with replicas on one store also
    /// every lease ttl, for the gates of a replica that died).
    pub async fn rearm_gates(self: &Arc<Self>, engine: &Runtime) -> Result<usize, Error> {
        let waiting = engine.tasks_in_states(&[TaskState::InputRequired]).await?;
        let mut n = 0;
        for rec in waiting {
            if rec.meta.link.as_ref().is_some_and(|l| l.kind == LinkKind::Run) && rec.meta.gate.is_some() {
                let Some((st, gate)) = open_gate_of(&rec) else { continue };
                if !gate.announced
                    && engine.hold(&gate_lease(rec.id())).await
                    && let Ok(c) = engine.control(rec.id()).await
                {
                    let schema = rec.meta.gate.as_ref().and_then(|g| g.ask_schema.clone());
                    self.first_announce(&c, &st, schema).await;
                }
                self.arm(engine.clone(), rec.id().to_owned(), gate.opened_ms);
                n += 1;
            }
        }
        Ok(n)
    }

    /// Watches the gate open on `task_id` until it closes: re-announces
    /// at `escalate_after`, applies the fallback at `timeout`.
    /// One watcher per gate (task and opening time): a gate opened while
    /// recovery also arms the gates it finds is watched once.
    fn arm(&self, engine: Runtime, task_id: String, opened_ms: i64) {
        let key = (task_id, opened_ms);
        if !self.watching.insert(key.clone()) {
            return;
        }
        let this = self.me.upgrade();
        // Dropped at shutdown: a restart arms the gates again. With replicas
        // on one store, one at a time watches a gate (its lease): another
        // arms it again when this one dies (`rearm_gates` runs periodically).
        engine.background().clone().spawn_until_shutdown(async move {
            let Some(this) = this else { return };
            let lease = gate_lease(&key.0);
            if engine.hold(&lease).await {
                this.watch(engine.clone(), key.0.clone()).await;
                engine.let_go(&lease).await;
            }
            this.watching.remove(&key);
        });
    }

    async fn watch(&self, engine: Runtime, task_id: String) {
        loop {
            let Ok(c) = engine.control(&task_id).await else { return };
            let Ok(rec) = c.record().await else { return };
            let Some((st, gate)) = open_gate_of(&rec) else { return };
            let due = [
                (gate.escalate_ms.filter(|_| !gate.escalated), Due::Escalate),
                (gate.timeout_ms.filter(|_| !gate.timed_out), Due::Timeout),
                (st.deadline_ms, Due::Deadline),
            ];
            let Some((at, what)) = due.into_iter().filter_map(|(t, d)| Some((t?, d))).min_by_key(|(t, _)| *t)
            else {
                return;
            };
            let wait = Duration::from_millis((at - now_ms()).max(0) as u64);
            tokio::time::sleep(wait).await;
            if !engine.holds(&gate_lease(&task_id)) {
                return; // another replica watches the gate now
            }
            let Ok(rec) = c.record().await else { return };
            match open_gate_of(&rec) {
                Some((_, now)) if now.step == gate.step && now.opened_ms == gate.opened_ms => {}
                _ => return, // answered, canceled, or another gate
            }
            let result = match what {
                Due::Escalate => self.escalate(&c, &rec).await,
                Due::Timeout => self.time_out(&c, &st, &gate).await,
                Due::Deadline => self.past_deadline(&c, &st).await,
            };
            if result.is_err() {
                return;
            }
        }
    }

    /// The run's `limits.deadline` passed while it waited at a gate.
    async fn past_deadline(&self, c: &TaskControl, st: &RunState) -> Result<(), Stop> {
        let def = agentd_workflow::parse(&st.workflow, &st.source).map_err(|_| Stop::Gone)?;
        let why = super::exec::deadline_reason(&def);
        update(
            c,
            |s, meta| {
                s.gate = None;
                meta.gate = None;
            },
            Some((TaskState::Failed, Some(Message::agent_text(why.clone())))),
        )
        .await?;
        self.emit(RunEvent::Run {
            run_id: st.run_id.clone(),
            task_id: c.task_id().to_owned(),
            workflow: st.workflow.clone(),
            state: RunEventState::Failed,
            reason: Some(why),
        });
        Err(Stop::Gone) // the run is over: stop watching
    }

    /// Re-announces the gate, recorded as escalated in the same commit that
    /// queues the announcement: a restart neither loses nor repeats it.
    async fn escalate(&self, c: &TaskControl, rec: &TaskRecord) -> Result<(), Stop> {
        let schema = rec.meta.gate.as_ref().and_then(|g| g.ask_schema.clone());
        let Some((before, open)) = open_gate_of(rec) else { return Ok(()) };
        let row = self.announcement_row(c.task_id(), &before.run_id, &open, schema.clone(), true).await;
        let fallback = matches!(row, Row::Unsupported);
        let st = update_with(
            c,
            |s, _| {
                if let Some(g) = &mut s.gate {
                    g.escalated = true
                }
            },
            None,
            row.into_batch(),
        )
        .await?;
        let Some(gate) = &st.gate else { return Ok(()) };
        self.emit(RunEvent::Gate {
            run_id: st.run_id.clone(),
            task_id: c.task_id().to_owned(),
            step: gate.step.clone(),
            action: GateAction::Escalated,
            channel: gate.channel.clone(),
        });
        if fallback {
            self.announce(c.task_id(), &st, schema, true).await;
        }
        Ok(())
    }

    async fn time_out(&self, c: &TaskControl, st: &RunState, gate: &GateState) -> Result<(), Stop> {
        let def = agentd_workflow::parse(&st.workflow, &st.source).map_err(|_| Stop::Gone)?;
        let fallback = match def.step(&gate.step).map(|s| &s.kind) {
            Some(StepKind::Human { fallback, .. }) => *fallback,
            _ => Fallback::Fail,
        };
        let waited = fmt_duration(Duration::from_millis(
            (gate.timeout_ms.unwrap_or(0) - gate.opened_ms).max(0) as u64,
        ));
        let event = |action| RunEvent::Gate {
            run_id: st.run_id.clone(),
            task_id: c.task_id().to_owned(),
            step: gate.step.clone(),
            action,
            channel: gate.channel.clone(),
        };
        match fallback {
            Fallback::Wait => {
                update(
                    c,
                    |s, _| {
                        if let Some(g) = &mut s.gate {
                            g.timed_out = true
                        }
                    },
                    None,
                )
                .await?;
                self.emit(event(GateAction::TimedOut));
            }
            Fallback::Fail => {
                let why =
                    format!("step {}: nobody answered within {waited} (timeout, fallback: fail)", gate.step);
                let (sid, err) = (gate.step.clone(), why.clone());
                update(
                    c,
                    move |s, meta| {
                        let step = s.step_mut(&sid);
                        step.status = StepStatus::Failed;
                        step.error = Some(err.clone());
                        s.gate = None;
                        meta.gate = None;
                    },
                    Some((TaskState::Failed, Some(Message::agent_text(why.clone())))),
                )
                .await?;
                self.emit(event(GateAction::TimedOut));
                self.emit(RunEvent::Run {
                    run_id: st.run_id.clone(),
                    task_id: c.task_id().to_owned(),
                    workflow: st.workflow.clone(),
                    state: RunEventState::Failed,
                    reason: Some(why),
                });
            }
        }
        Ok(())
    }
}

fn open_gate_of(rec: &TaskRecord) -> Option<(RunState, GateState)> {
    if rec.state() != TaskState::InputRequired {
        return None;
    }
    let st = RunState::from_checkpoint(rec.meta.checkpoint.as_ref()).ok()?;
    let gate = st.gate.clone()?;
    Some((st, gate))
}

/// What a gate's announcement becomes before the commit that opens (or
/// escalates) the gate.
enum Row {
    /// An outbox row, committed with the gate.
    Queued(BridgeDelivery),
    /// No bridge, no channel, or the channel cannot be delivered to (logged).
    Skipped,
    /// The bridge queues its own rows: announce after the commit.
    Unsupported,
}

impl Row {
    fn into_batch(self) -> Batch {
        match self {
            Row::Queued(row) => Batch { bridge_deliveries: vec![row], ..Batch::default() },
            Row::Skipped | Row::Unsupported => Batch::default(),
        }
    }
}

fn announcement(
    task_id: &str,
    run_id: &str,
    gate: &GateState,
    ask_schema: Option<Value>,
    escalation: bool,
) -> GateAnnouncement {
    GateAnnouncement {
        task_id: task_id.to_owned(),
        run_id: Some(run_id.to_owned()),
        question: gate.question.clone(),
        ask_schema,
        channel: gate.channel.clone(),
        escalation,
        answer_hint: format!("agentd answer {task_id} '<answer as JSON>'"),
    }
}

/// The lease of watching the gate of run task `task_id` (replicas).
fn gate_lease(task_id: &str) -> String {
    format!("gate:{task_id}")
}
