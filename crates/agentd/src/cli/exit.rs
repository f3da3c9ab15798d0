//! Exit codes of `agentd`, so scripts can tell what happened without
//! reading the text. `README.md` ("Exit codes") lists the same table.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done: the task completed, or waits for input |
//! | 1 | an error: the daemon refused the request, a file could not be read, … |
//! | 2 | usage: a flag or argument is wrong (clap) |
//! | 3 | the daemon could not be reached at `--url` |
//! | 4 | the task ended FAILED |
//! | 5 | the task ended REJECTED |
//! | 6 | the task ended CANCELED |
//! | 7 | TLS: the daemon's certificate is not trusted or not for `--url`'s host, or the daemon requires or refused a client certificate |

use agentd_proto::{Task, TaskState};
use std::fmt;

pub const ERROR: u8 = 1;
pub const USAGE: u8 = 2;
pub const UNREACHABLE: u8 = 3;
pub const FAILED: u8 = 4;
pub const REJECTED: u8 = 5;
pub const CANCELED: u8 = 6;
pub const TLS: u8 = 7;

/// An error that ends the program with its own exit code.
#[derive(Debug)]
pub struct Exit {
    pub code: u8,
    pub message: String,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// The exit code an error stands for: its own, or 1.
pub fn code_of(e: &anyhow::Error) -> u8 {
    e.chain().find_map(|c| c.downcast_ref::<Exit>()).map_or(ERROR, |x| x.code)
}

/// The exit code of a task that ended this way, if it did not succeed.
pub fn for_state(state: TaskState) -> Option<u8> {
    match state {
        TaskState::Failed => Some(FAILED),
        TaskState::Rejected => Some(REJECTED),
        TaskState::Canceled => Some(CANCELED),
        _ => None,
    }
}

/// `Err` with the task's exit code when it ended FAILED, REJECTED or
/// CANCELED: the error names the task, its state and the reason the
/// daemon gave (its status message).
pub fn check_task(task: &Task) -> anyhow::Result<()> {
    let Some(code) = for_state(task.status.state) else {
        return Ok(());
    };
    let mut message = format!("task {} ended {}", task.id, super::output::state_name(task.status.state));
    if !task.context_id.is_empty() {
        message.push_str(&format!(" (context {})", task.context_id));
    }
    if let Some(reason) = super::output::status_text(&task.status) {
        message.push_str(&format!(": {reason}"));
    }
    Err(Exit { code, message }.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_proto::Message;

    #[test]
    fn each_unsuccessful_end_has_its_own_code_with_the_reason() {
        let mut t = Task { id: "t1".into(), context_id: "c1".into(), ..Default::default() };
        for ok in [TaskState::Completed, TaskState::InputRequired, TaskState::AuthRequired] {
            t.status.state = ok;
            assert!(check_task(&t).is_ok(), "{ok:?}");
        }
        t.status.state = TaskState::Failed;
        t.status.message = Some(Message::agent_text("model unavailable"));
        let e = check_task(&t).unwrap_err();
        assert_eq!(code_of(&e), FAILED);
        assert_eq!(e.to_string(), "task t1 ended FAILED (context c1): model unavailable");
        t.status.state = TaskState::Rejected;
        assert_eq!(code_of(&check_task(&t).unwrap_err()), REJECTED);
        t.status.state = TaskState::Canceled;
        let e = check_task(&t).unwrap_err().context("wrapped");
        assert_eq!(code_of(&e), CANCELED, "found through context");
        assert_eq!(code_of(&anyhow::anyhow!("plain")), ERROR);
        let codes = [ERROR, USAGE, UNREACHABLE, FAILED, REJECTED, CANCELED, TLS];
        let distinct: std::collections::BTreeSet<u8> = codes.into_iter().collect();
        assert_eq!(distinct.len(), codes.len());
    }
}
