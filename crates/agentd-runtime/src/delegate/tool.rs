//! `delegate`: the model's way to hand an objective to a configured A2A
//! peer. The call waits for the peer's task; the result is the peer's
//! answer text. When the calling task ends while waiting, the peer's task
//! is cancelled with it.

use super::{DelegateError, DelegateRequest, Delegator};
use crate::agent_loop::Tool;
use crate::model::ToolSpec;
use agentd_core::TaskControl;
use agentd_proto::{Message, Part, Role, Task, TaskState, new_id};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;

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
        let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
        let peer = field("peer").ok_or("`peer` is required: the name of a configured peer")?;
        let objective = field("objective").ok_or("`objective` is required: what the peer should do")?;
        let message = Message {
            message_id: new_id(),
            role: Role::User,
            parts: vec![Part::text(objective)],
            ..Default::default()
        };
        let request = DelegateRequest { peer: peer.to_owned(), message };
        let task = self.delegator.delegate(request, control.cancelled().child_token()).await.map_err(
            |e| match e {
                DelegateError::UnknownPeer(_) => {
                    format!("{e}; peers: [{}]", self.delegator.peers().join(", "))
                }
                other => other.to_string(),
            },
        )?;
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
