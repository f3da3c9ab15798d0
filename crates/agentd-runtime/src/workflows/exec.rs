//! Driving a run: take the ready steps, skip those whose guard or switch
//! says so, run the others (concurrently), open a gate when only gates are
//! left, and end at a `finish` step. Every change is a commit of the run's
//! checkpoint (with the task's state when it moves), so what a client sees
//! and what a restart resumes from agree.

use super::Workflows;
use super::events::{GateAction, RunEvent, RunEventState, StepEventStatus};
use super::state::{RunState, now_ms};
use agentd_core::{Batch, TaskControl, TaskMeta};
use agentd_proto::{Message, TaskState};
use agentd_workflow::{Definition, ErrorPolicy, Guard, StepKind, StepStatus, ready_steps};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use std::time::Duration;

/// Why driving stopped early.
pub(super) enum Stop {
    /// The task no longer accepts changes (canceled, ended elsewhere).
    Gone,
    /// The run fails with this reason.
    Fail(String),
}

impl From<agentd_core::Error> for Stop {
    /// Only a run whose task is gone stops quietly; a change that failed
    /// otherwise (a store write) fails the run, saying why.
    fn from(e: agentd_core::Error) -> Self {
        if e.task_gone() { Stop::Gone } else { Stop::Fail(crate::agent_loop::failure_reason(&e)) }
    }
}

/// Commits `f` applied to the run state (and the rest of the meta) with
/// an optional state change; returns the run state as committed.
pub(super) async fn update(
    c: &TaskControl,
    f: impl FnMut(&mut RunState, &mut TaskMeta) + Send,
    status: Option<(TaskState, Option<Message>)>,
) -> Result<RunState, Stop> {
    update_with(c, f, status, Batch::default()).await
}

/// `update`, committing `extra` (a gate's announcement) in the same batch.
pub(super) async fn update_with(
    c: &TaskControl,
    mut f: impl FnMut(&mut RunState, &mut TaskMeta) + Send,
    status: Option<(TaskState, Option<Message>)>,
    extra: Batch,
) -> Result<RunState, Stop> {
    let rec = c
        .commit_with(
            move |meta| {
                if let Ok(mut s) = RunState::from_checkpoint(meta.checkpoint.as_ref()) {
                    f(&mut s, meta);
                    meta.checkpoint = Some(s.to_value());
                }
            },
            status,
            extra,
        )
        .await?;
    RunState::from_checkpoint(rec.meta.checkpoint.as_ref()).map_err(Stop::Fail)
}

impl Workflows {
    pub(super) async fn drive_run(&self, c: TaskControl) {
        match self.drive(&c).await {
            Ok(()) | Err(Stop::Gone) => {}
            Err(Stop::Fail(why)) => self.fail_run(&c, &why).await,
        }
    }

    async fn fail_run(&self, c: &TaskControl, why: &str) {
        let st =
            update(c, |_, meta| meta.gate = None, Some((TaskState::Failed, Some(Message::agent_text(why)))))
                .await;
        if let Err(Stop::Fail(e)) = &st {
            tracing::error!(task = c.task_id(), reason = why, error = %e, "could not fail the run");
        }
        // Steps still running (a branch beside the failed one, a step past
        // the deadline) stop with the run.
        let because = format!("canceled because workflow run task {} failed", c.task_id());
        self.deps.subagents.cancel_below(c.runtime(), c.task_id(), &because).await;
        if let Ok(st) = st {
            self.emit(RunEvent::Run {
                run_id: st.run_id,
                task_id: c.task_id().to_owned(),
                workflow: st.workflow,
                state: RunEventState::Failed,
                reason: Some(why.to_owned()),
            });
        }
    }

    pub(super) fn step_event(
        &self,
        c: &TaskControl,
        st: &RunState,
        def: &Definition,
        id: &str,
        status: StepEventStatus,
    ) {
        let error = st.steps.get(id).and_then(|s| s.error.clone());
        self.emit(RunEvent::Step {
            run_id: st.run_id.clone(),
            task_id: c.task_id().to_owned(),
            step: id.to_owned(),
            kind: def.step(id).map_or("", |s| s.kind.name()),
            status,
            error,
        });
    }

    async fn drive(&self, c: &TaskControl) -> Result<(), Stop> {
        let rec = c.record().await?;
        let st = RunState::from_checkpoint(rec.meta.checkpoint.as_ref()).map_err(Stop::Fail)?;
        let def = agentd_workflow::parse(&st.workflow, &st.source).map_err(|e| {
            Stop::Fail(format!(
                "the run's definition cannot be read: {}",
                e.first().map(|e| e.to_string()).unwrap_or_default()
            ))
        })?;
        if def.hash != st.hash {
            return Err(Stop::Fail("the run's pinned definition does not match its hash".into()));
        }
        let answered = st.answered.clone();
        // Steps left running by a restart run again (a started child task
        // is adopted); an answered gate is reported once.
        let mut st = update(
            c,
            |s, _| {
                s.answered = None;
                let gate_open = s.gate.is_some();
                for step in s.steps.values_mut() {
                    let waits = step.status == StepStatus::Waiting && !gate_open;
                    if step.status == StepStatus::Running || waits {
                        step.status = StepStatus::Pending;
                    }
                }
            },
            (rec.state() != TaskState::Working).then_some((TaskState::Working, None)),
        )
        .await?;
        if let Some(gate) = answered {
            self.emit(RunEvent::Gate {
                run_id: st.run_id.clone(),
                task_id: c.task_id().to_owned(),
                step: gate.step.clone(),
                action: GateAction::Answered,
                channel: gate.channel,
            });
            self.step_event(c, &st, &def, &gate.step, StepEventStatus::Done);
        }
        loop {
            if c.cancelled().is_cancelled() {
                return Err(Stop::Gone);
            }
            if st.deadline_ms.is_some_and(|d| now_ms() >= d) {
                return Err(Stop::Fail(deadline_reason(&def)));
            }
            let ready = ready_steps(&def.steps, &st.statuses());
            if ready.is_empty() {
                return Err(Stop::Fail(
                    "the run cannot go on: no step is ready and no finish step was reached".into(),
                ));
            }
            let mut skip = Vec::new();
            for id in &ready {
                if self.skipped(&def, &st, id, c.task_id())? {
                    skip.push(id.clone());
                }
            }
            if !skip.is_empty() {
                let ids = skip.clone();
                st = update(
                    c,
                    move |s, _| {
                        for id in &ids {
                            s.step_mut(id).status = StepStatus::Skipped;
                        }
                    },
                    None,
                )
                .await?;
                for id in &skip {
                    self.step_event(c, &st, &def, id, StepEventStatus::Skipped);
                }
                continue;
            }
            if let Some(id) = ready.iter().find(|id| matches!(def.steps[*id].kind, StepKind::Finish { .. })) {
                return self.finish(c, &def, &st, id).await;
            }
            let (gates, work): (Vec<String>, Vec<String>) =
                ready.into_iter().partition(|id| matches!(def.steps[id].kind, StepKind::Human { .. }));
            if !work.is_empty() {
                st = self.run_wave(c, &def, st, work).await?;
                continue;
            }
            // Only gates are ready: open the first; the answer resumes the run.
            return self.open_gate(c, &def, &st, &gates[0]).await;
        }
    }

    /// Whether a ready step is skipped: an arm a switch did not choose,
    /// a step all of whose dependencies were skipped, or a false guard.
    fn skipped(&self, def: &Definition, st: &RunState, id: &str, task_id: &str) -> Result<bool, Stop> {
        let step = &def.steps[id];
        for dep in &step.depends_on {
            if let StepKind::Switch { cases, default } = &def.steps[dep].kind
                && st.status(dep) == StepStatus::Done
            {
                let is_arm =
                    cases.iter().any(|c| c.steps.iter().any(|s| s == id)) || default.iter().any(|s| s == id);
                let chosen = st.steps[dep].output.get("steps").and_then(Value::as_array);
                if is_arm && !chosen.is_some_and(|c| c.iter().any(|s| s == id)) {
                    return Ok(true);
                }
            }
        }
        if !step.depends_on.is_empty() && step.depends_on.iter().all(|d| st.status(d) == StepStatus::Skipped)
        {
            return Ok(true);
        }
        if let Some(w) = &step.when {
            let guard = Guard::compile(w).map_err(|e| Stop::Fail(format!("step {id}: when: {e}")))?;
            let holds =
                guard.eval(&st.scope(task_id)).map_err(|e| Stop::Fail(format!("step {id}: when: {e}")))?;
            return Ok(!holds);
        }
        Ok(false)
    }

    /// Runs `ids` concurrently; each is recorded running before it starts
    /// and done (or failed) as soon as it ends.
    async fn run_wave(
        &self,
        c: &TaskControl,
        def: &Definition,
        st: RunState,
        ids: Vec<String>,
    ) -> Result<RunState, Stop> {
        if let Some(max) = def.limits.steps
            && st.executions as usize + ids.len() > max as usize
        {
            return Err(Stop::Fail(format!(
                "the run reached its limit of {max} step executions (limits.steps) before steps {}",
                ids.join(", ")
            )));
        }
        let started = ids.clone();
        let mut st = update(
            c,
            move |s, _| {
                s.executions += started.len() as u32;
                for id in &started {
                    let step = s.step_mut(id);
                    step.status = StepStatus::Running;
                    step.attempts += 1;
                }
            },
            None,
        )
        .await?;
        for id in &ids {
            self.step_event(c, &st, def, id, StepEventStatus::Running);
        }
        let scope = st.scope(c.task_id());
        let mut running: FuturesUnordered<_> = ids
            .iter()
            .map(|id| {
                let child = st.steps.get(id).and_then(|s| s.child.clone());
                let scope = scope.clone();
                async move { (id.clone(), self.attempt_all(c, def, id, &scope, child).await) }
            })
            .collect();
        let deadline = st.deadline_ms.map(|d| Duration::from_millis((d - now_ms()).max(0) as u64));
        loop {
            let next = match deadline {
                Some(left) => tokio::select! {
                    n = running.next() => n,
                    () = tokio::time::sleep(left) => return Err(Stop::Fail(deadline_reason(def))),
                },
                None => running.next().await,
            };
            let Some((id, result)) = next else { break };
            let policy = def.steps[&id].on_error;
            let (status, output, error) = match result {
                Ok(v) => (StepStatus::Done, v, None),
                Err(e) if policy == ErrorPolicy::Continue => {
                    (StepStatus::Done, serde_json::json!({"error": e}), Some(e))
                }
                Err(e) => (StepStatus::Failed, Value::Null, Some(e)),
            };
            let (sid, err) = (id.clone(), error.clone());
            st = update(
                c,
                move |s, _| {
                    let step = s.step_mut(&sid);
                    step.status = status;
                    step.output = output.clone();
                    step.error = err.clone();
                },
                None,
            )
            .await?;
            self.step_event(
                c,
                &st,
                def,
                &id,
                if status == StepStatus::Done { StepEventStatus::Done } else { StepEventStatus::Failed },
            );
            if status == StepStatus::Failed {
                let kind = def.steps[&id].kind.name();
                return Err(Stop::Fail(format!("step {id} ({kind}) failed: {}", error.unwrap_or_default())));
            }
        }
        Ok(st)
    }

    /// One step with its retries and timeout.
    async fn attempt_all(
        &self,
        c: &TaskControl,
        def: &Definition,
        id: &str,
        scope: &agentd_workflow::Scope,
        mut child: Option<String>,
    ) -> Result<Value, String> {
        let step = &def.steps[id];
        let mut last = String::new();
        for attempt in 0..=step.retry.max {
            if attempt > 0 {
                tokio::time::sleep(step.retry.backoff).await;
            }
            let run = self.execute(c, step, def.limits.tokens, scope, child.take());
            let result = match step.timeout {
                Some(t) => match tokio::time::timeout(t, run).await {
                    Ok(r) => r,
                    Err(_) => {
                        self.cancel_child(c, id).await;
                        Err(format!("it did not finish within its timeout of {}", fmt_duration(t)))
                    }
                },
                None => run.await,
            };
            match result {
                Ok(v) => return Ok(v),
                Err(e) => last = e,
            }
            if c.cancelled().is_cancelled() {
                break;
            }
        }
        if step.retry.max > 0 {
            last = format!("{last} (after {} attempts)", step.retry.max + 1);
        }
        Err(last)
    }
}

pub(super) fn deadline_reason(def: &Definition) -> String {
    let d = def.limits.deadline.map(fmt_duration).unwrap_or_default();
    format!("the run passed its deadline of {d} (limits.deadline)")
}

pub(super) fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_millis() != 0 || s == 0 {
        format!("{}ms", d.as_millis())
    } else if s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}
