//! `delegate`: the model's way to hand an objective to a configured A2A
//! peer. The call waits for the peer's task; the result is the peer's
//! answer text. When the calling task ends while waiting, the peer's task
//! is cancelled with it. The peer's task id is journaled as soon as the
//! peer names it: after a restart the call follows that task instead of
//! sending the objective again (`docs/durability.md`).

use super::{DelegateError, DelegateRequest, Delegator, TaskWatch};
use crate::agent_loop::{CallKey, Tool};
use crate::model::ToolSpec;
use agentd_core::TaskControl;
use agentd_proto::{Message, Part, Role, Task, TaskState, new_id};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub const TOOL_NAME: &str = "delegate";

pub struct DelegateTool {
    delegator: Arc<dyn Delegator>,
}

impl DelegateTool {
    /// The tool, or `None` when no peer is configured (a tool with no
    /// possible argument would only mislead the model).
    pub fn new(delegator: Arc<dyn Delegator>) -> Option<Self> {
        (!delegator.peers().is_empty()).then_some(Self { delegator })
    }
}

/// What the peer answered: its artifacts' text, else its status message.
pub fn answer_text(task: &Task) -> String {
    let artifacts: Vec<String> = task
        .artifacts
        .iter()
        .flatten()
        .map(|a| a.parts.iter().filter_map(Part::as_text).collect::<String>())
        .filter(|t| !t.is_empty())
        .collect();
    if !artifacts.is_empty() {
        return artifacts.join("\n");
    }
    task.status.message.as_ref().map(Message::text).unwrap_or_default()
}

#[async_trait]
impl Tool for DelegateTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL_NAME.into(),
            description: "Sends an objective to another A2A agent (a configured peer) and waits for its \
                answer, which is returned as the result."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "peer": {"type": "string", "enum": self.delegator.peers(), "description": "Which peer agent."},
                    "objective": {"type": "string", "minLength": 1, "description": "What the peer should do, self-contained."}
                },
                "required": ["peer", "objective"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, args: Value, control: &TaskControl) -> Result<String, String> {
        self.run(args, control, None).await
    }

    /// A call cut by a restart before the peer named its task is not sent
    /// again (an agentd peer would start a second task: it does not
    /// recognise a repeated messageId), so its policy is the default
    /// `fail`; one cut after is run again and follows that task.
    fn follows_progress(&self) -> bool {
        true
    }

    async fn call_keyed(&self, args: Value, control: &TaskControl, key: &CallKey) -> Result<String, String> {
        self.run(args, control, Some(key)).await
    }
}

/// Journals the peer's task as the call's progress.
struct Journaled<'a> {
    key: &'a CallKey,
    control: &'a TaskControl,
    peer: &'a str,
}

#[async_trait]
impl TaskWatch for Journaled<'_> {
    async fn started(&self, task_id: &str) -> Result<(), String> {
        self.key.record_progress(self.control, self.peer, task_id).await.map_err(|e| e.to_string())?;
        tracing::debug!(
            task = self.control.task_id(),
            peer = self.peer,
            peer_task = task_id,
            "peer task recorded"
        );
        Ok(())
    }
}

impl DelegateTool {
    async fn run(&self, args: Value, control: &TaskControl, key: Option<&CallKey>) -> Result<String, String> {
        let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
        let peer = field("peer").ok_or("`peer` is required: the name of a configured peer")?;
        let objective = field("objective").ok_or("`objective` is required: what the peer should do")?;
        // Not tied to the task's token directly: a stop of agentd (the turn
        // resumes and follows the peer's task) must not cancel it.
        let cancel = CancellationToken::new();
        let work = async {
            match key.and_then(|k| k.progress.as_ref()) {
                Some(p) => self.delegator.follow(&p.peer, &p.task_id, cancel.clone()).await,
                None => {
                    // The call's journaled id: every attempt sends the same messageId.
                    let message = Message {
                        message_id: key.map_or_else(new_id, |k| k.id.clone()),
                        role: Role::User,
                        parts: vec![Part::text(objective)],
                        ..Default::default()
                    };
                    let request = DelegateRequest { peer: peer.to_owned(), message };
                    match key {
                        Some(key) => {
                            let watch = Journaled { key, control, peer };
                            self.delegator.delegate_watched(request, cancel.clone(), &watch).await
                        }
                        None => self.delegator.delegate(request, cancel.clone()).await,
                    }
                }
            }
        };
        tokio::pin!(work);
        let outcome = tokio::select! {
            r = &mut work => r,
            () = control.cancelled().cancelled() => {
                if control.runtime().is_halted() {
                    return Err(format!("agentd stopped while peer {peer} worked"));
                }
                // The task ended: the peer's task is cancelled with it.
                cancel.cancel();
                work.await
            }
        };
        let task = outcome.map_err(|e| match e {
            DelegateError::UnknownPeer(_) => format!("{e}; peers: [{}]", self.delegator.peers().join(", ")),
            other => other.to_string(),
        })?;
        let answer = answer_text(&task);
        match task.status.state {
            TaskState::Completed => Ok(answer),
            TaskState::InputRequired | TaskState::AuthRequired => {
                Ok(format!("peer {peer} is waiting for input on its task {}: {answer}", task.id))
            }
            s => Err(format!("peer {peer} ended its task {} {}: {answer}", task.id, s.as_str())),
        }
    }
}
