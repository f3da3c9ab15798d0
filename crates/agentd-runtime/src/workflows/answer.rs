//! Answers to human gates: the [`GateKeeper`] half of [`Workflows`]. The
//! engine calls it under the task's lock before it commits the answer; a
//! valid answer is recorded as the step's output in that same commit.

use super::Workflows;
use super::state::RunState;
use crate::commands::ops::check_with;
use agentd_core::{Error, FieldPath, GateKeeper, Invalid, TaskRecord};
use agentd_proto::{Message, PartContent};
use agentd_workflow::StepStatus;
use serde_json::Value;

impl GateKeeper for Workflows {
    fn accept(&self, rec: &mut TaskRecord, answer: &Message) -> Result<(), Error> {
        let Some(open) = rec.meta.gate.clone() else { return Ok(()) };
        let mut st = RunState::from_checkpoint(rec.meta.checkpoint.as_ref()).map_err(Error::Internal)?;
        let Some(step) = st.gate.as_ref().map(|g| g.step.clone()) else {
            return Err(Error::Internal("the run has no open gate".into()));
        };
        let value = answer_value(answer, open.ask_schema.as_ref())?;
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
    let mut out = e.under(&FieldPath::default().member("answer"));
    out.lead = Some("the answer does not satisfy the gate's schema".into());
    Error::Invalid(out)
}

/// The answer a message carries: its DataPart, or its text, parsed as JSON
/// unless the schema asks for a string.
fn answer_value(m: &Message, schema: Option<&Value>) -> Result<Value, Error> {
    if let Some(v) = m.parts.iter().find_map(|p| match &p.content {
        PartContent::Data(v) => Some(Value::clone(v)),
        _ => None,
    }) {
        return Ok(v);
    }
    let text = m.text();
    let wants_string = schema.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("string");
    if schema.is_none() || wants_string {
        return Ok(Value::String(text));
    }
    serde_json::from_str(text.trim()).map_err(|e| {
        Error::invalid(FieldPath::of("message.parts"),
            format!("the gate expects an answer matching its schema: a DataPart, or text that parses as JSON ({e})"),
        )
    })
}
