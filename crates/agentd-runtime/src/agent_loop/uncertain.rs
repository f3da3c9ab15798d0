//! A tool call a restart cut: journaled as started, with no result. Its
//! tool's [`OnUncertain`] policy decides whether it runs again, fails the
//! turn, is reported to the model, or waits on a person's answer
//! (`docs/durability.md`, "Uncertain effects").

use super::tools::{Offer, OnUncertain, UncertainGate};
use super::{Stop, uncertain_failure};
use crate::model::ToolCall;
use agentd_core::approval::{ApprovalOutcome, ApprovalRequest};
use agentd_core::{TaskControl, ToolStart};

/// What the model is told of a call that is not run again.
pub(super) const REPORTED: &str = "interrupted; outcome unknown";

/// How a cut call goes on.
pub(super) enum Resolved {
    /// Run it again: the same key, the next attempt; `approved` when a
    /// person said so.
    Again { start: ToolStart, approved: bool },
    /// Not run again: this is its result for the model.
    Result(Result<String, String>),
}

/// Applies the tool's policy to the cut call `before`. A call that
/// journaled what it started elsewhere (`progressed`) and whose tool
/// follows that is run again: it adopts, it does not start anew.
pub(super) async fn resolve(
    c: &TaskControl,
    offer: &Offer,
    call: &ToolCall,
    before: &ToolStart,
    progressed: bool,
) -> Result<Resolved, Stop> {
    let again = |approved| Resolved::Again {
        start: ToolStart { attempt: before.attempt + 1, ..before.clone() },
        approved,
    };
    if progressed && offer.follows_progress(&call.name) {
        return Ok(again(false));
    }
    match offer.on_uncertain(&call.name) {
        OnUncertain::Retry => Ok(again(false)),
        OnUncertain::Fail => Err(Stop::Fail(uncertain_failure(&call.name))),
        OnUncertain::Report => Ok(Resolved::Result(Err(reported(&call.name)))),
        OnUncertain::Ask(gate) => match ask(c, call, gate).await? {
            None => Ok(again(true)),
            Some(refusal) => Ok(Resolved::Result(Err(format!("{REPORTED}; not run again: {refusal}")))),
        },
    }
}

/// The error result of a call reported, not run again.
fn reported(tool: &str) -> String {
    format!(
        "{REPORTED}: the call of {tool} was cut by a restart of agentd before its result was recorded, \
         and it is not run again"
    )
}

/// Asks whether to run the call again: `None` when approved, else why not.
async fn ask(c: &TaskControl, call: &ToolCall, gate: UncertainGate) -> Result<Option<String>, Stop> {
    let arguments =
        serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Object(Default::default()));
    let req = ApprovalRequest {
        tool: call.name.clone(),
        server: gate.server,
        arguments,
        channel: gate.channel,
        answerers: gate.answerers,
        timeout: gate.timeout,
        idempotent: false,
        interrupted: true,
    };
    let outcome = c.await_approval(req).await?;
    Ok(match outcome {
        ApprovalOutcome::TimedOut { waited } => {
            Some(format!("nobody answered within {}s whether to run it again", waited.as_secs()))
        }
        other => other.refusal(&call.name),
    })
}
