//! Answers to human gates: the [`GateKeeper`] half of [`Workflows`]. The
//! engine calls it under the task's lock before it commits the answer; a
//! valid answer is recorded as the step's output in that same commit.

use super::Workflows;
use super::state::RunState;
use crate::commands::ops::check_with;
use agentd_core::{Error, GateKeeper, Invalid, TaskRecord};
use agentd_proto::Message;
use agentd_workflow::StepStatus;

impl GateKeeper for Workflows {
    fn accept(&self, rec: &mut TaskRecord, answer: &Message) -> Result<(), Error> {
        let Some(open) = rec.meta.gate.clone() else { return Ok(()) };
        let mut st = RunState::from_checkpoint(rec.meta.checkpoint.as_ref()).map_err(Error::Internal)?;
        let Some(step) = st.gate.as_ref().map(|g| g.step.clone()) else {
            return Err(Error::Internal("the run has no open gate".into()));
        };
        let value = agentd_core::approval::answer_value(answer, open.ask_schema.as_ref())?;
        if let Some(schema) = &open.ask_schema {
            let v = jsonschema::validator_for(schema)
                .map_err(|e| Error::Internal(format!("the gate's schema does not compile: {e}")))?;
            check_with(&v, &value).map_err(located)?;
        }
        let s = st.step_mut(&step);
        s.status = StepStatus::Done;
        s.output = value;
        st.answered = st.gate.take();
        rec.meta.gate = None;
        rec.meta.checkpoint = Some(st.to_value());
        Ok(())
    }
}

/// Violations of an answer, named from `answer` (`answer.approve`).
fn located(e: Invalid) -> Error {
    agentd_core::approval::answer_invalid(e.violations)
}
