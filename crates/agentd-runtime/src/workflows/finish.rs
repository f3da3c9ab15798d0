//! The end of a run: its `finish` step writes the `result` artifact and
//! moves the task to its terminal state.

use super::Workflows;
use super::events::{RunEvent, RunEventState, StepEventStatus};
use super::exec::{Stop, update};
use super::state::RunState;
use agentd_core::TaskControl;
use agentd_proto::{Artifact, Message, Part, TaskState, new_id};
use agentd_workflow::{Definition, FinishStatus, StepKind, StepStatus};
use serde_json::Value;

impl Workflows {
    /// Ends the run at a `finish` step: the result artifact, then the
    /// terminal state, committed in that order.
    pub(super) async fn finish(
        &self,
        c: &TaskControl,
        def: &Definition,
        st: &RunState,
        id: &str,
    ) -> Result<(), Stop> {
        let StepKind::Finish { status, output, reason } = &def.steps[id].kind else { return Ok(()) };
        let scope = st.scope(c.task_id());
        let output = agentd_workflow::render(output, &scope)
            .map_err(|e| Stop::Fail(format!("step {id}: output: {e}")))?;
        let part = match &output {
            Value::String(s) => Part::text(s.clone()),
            other => Part::data(other.clone()),
        };
        let artifact = Artifact {
            artifact_id: new_id(),
            name: "result".into(),
            parts: vec![part],
            ..Artifact::default()
        };
        c.artifact(artifact, false, true).await?;
        let (state, text, word) = match status {
            FinishStatus::Completed => {
                (TaskState::Completed, format!("workflow {} finished", st.workflow), RunEventState::Completed)
            }
            FinishStatus::Failed => {
                let why = match reason {
                    Some(r) => match agentd_workflow::render(r, &scope) {
                        Ok(Value::String(s)) => s,
                        Ok(v) => v.to_string(),
                        Err(e) => e,
                    },
                    None => format!("workflow {} finished as failed at step {id}", st.workflow),
                };
                (TaskState::Failed, why, RunEventState::Failed)
            }
        };
        let sid = id.to_owned();
        let st = update(
            c,
            move |s, meta| {
                let step = s.step_mut(&sid);
                step.status = StepStatus::Done;
                step.output = output.clone();
                meta.gate = None;
            },
            Some((state, Some(Message::agent_text(text.clone())))),
        )
        .await?;
        self.step_event(c, &st, def, id, StepEventStatus::Done);
        self.emit(RunEvent::Run {
            run_id: st.run_id.clone(),
            task_id: c.task_id().to_owned(),
            workflow: st.workflow.clone(),
            state: word,
            reason: (state == TaskState::Failed).then_some(text),
        });
        Ok(())
    }
}
