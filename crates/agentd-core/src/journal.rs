//! The step journal of a task (`docs/durability.md`): what a run of the
//! agent loop learned and started, committed before the run acts on it,
//! so that a restart resumes the turn instead of failing it. Entries are
//! rows of their own, never part of `Task.history` or of push bodies; the
//! commit that ends the task removes them (a terminal task never resumes).

use crate::reminder::DeliveredReminder;
use agentd_proto::Message;
use serde::{Deserialize, Serialize};

/// One entry: the `seq`-th of its task's journal (from 1, no gaps).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub task_id: String,
    pub seq: u32,
    pub step: StepRecord,
}

/// What an entry records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepRecord {
    /// Reminders delivered to a model call about to be made (committed
    /// with their delivery, only when there are some).
    ModelInput(ModelInput),
    /// A model call and its whole response, with the input it consumed.
    Model(ModelStep),
    /// A tool call is about to run (its result is not known yet).
    ToolStarted(ToolStart),
    /// What a tool call returned: its output, or why it failed.
    ToolResult(ToolOutcome),
    /// A running tool call learned the id of what it started elsewhere (a
    /// peer agent's task): a restart follows that, never starts another.
    ToolProgress(ToolProgress),
}

/// What a model call about to be made was given besides the conversation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelInput {
    pub step: u32,
    pub reminders: Vec<DeliveredReminder>,
}

/// A model call of a turn (`step` counts from 1) and its response.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelStep {
    pub step: u32,
    /// When the turn's first run began (ms since the epoch): the turn's
    /// deadline counts from here across restarts.
    pub turn_started_ms: i64,
    /// How many messages of the task's own history the turn's model input
    /// began with; later ones reached it as steering input.
    pub history_len: usize,
    /// Steering input consumed just before this call.
    pub steering: Vec<Message>,
    /// Reminders delivered to this call.
    pub reminders: Vec<DeliveredReminder>,
    pub text: String,
    pub tool_calls: Vec<JournalToolCall>,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A tool call as the model asked for it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool call about to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolStart {
    pub step: u32,
    /// The call's place among the step's tool calls (from 0).
    pub call: u32,
    pub name: String,
    /// 1 for the first run of the call, one more for each retry after a
    /// restart found it started without a result.
    pub attempt: u32,
    /// The idempotency key the call carries: the same on every attempt.
    pub key: String,
    /// An id made at the first attempt for what the call starts (a
    /// subagent's task id), so that a retry adopts it instead of starting
    /// another.
    pub id: String,
}

/// What a running tool call started outside this daemon, committed as soon
/// as it is known and before the call goes on waiting for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolProgress {
    pub step: u32,
    /// The call's place among the step's tool calls (from 0).
    pub call: u32,
    /// Where it runs: the configured name of the A2A peer.
    pub peer: String,
    /// The id of the task the peer made for the call.
    pub task_id: String,
}

/// A tool call's result as the model gets it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOutcome {
    pub step: u32,
    /// The call's place among the step's tool calls (from 0).
    pub call: u32,
    /// `Ok`: the tool's output; `Err`: why the call failed.
    pub result: Result<String, String>,
}

impl JournalEntry {
    /// The stored form (JSON), the same for every backend.
    pub fn encode(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(&self.step)
    }

    pub fn decode(task_id: &str, seq: u32, body: &str) -> Result<Self, serde_json::Error> {
        Ok(JournalEntry { task_id: task_id.to_owned(), seq, step: serde_json::from_str(body)? })
    }
}
