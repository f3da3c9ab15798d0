//! The events extension (`docs/ext/events/README.md`): one durable feed of
//! what happens in the daemon, `agentd.events/SubscribeToEvents` over SSE.
//! Every frame is the `result` of a JSON-RPC response: one `hello`, then
//! `event`s, and a `goodbye` when the daemon closes the feed.

mod bundle;
mod params;

pub use bundle::schema_bundle;
pub use params::SubscribeParams;

use crate::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The extension's URI.
pub const URI: &str = "https://agentd.dev/a2a/ext/events";
/// The `$id` of its schema bundle.
pub const SCHEMA_ID: &str = "https://agentd.dev/a2a/ext/events/schema.json";
/// The JSON-RPC method that opens the feed.
pub const METHOD: &str = "agentd.events/SubscribeToEvents";
/// The feed's format version, sent in `hello`.
pub const VERSION: u32 = 1;
/// The ErrorInfo reason when the method is called without activating the
/// extension.
pub const NOT_ACTIVATED: &str = "EXTENSION_NOT_ACTIVATED";

/// What an event is about. Every kind is in the schema; which ones a
/// daemon emits is listed in the extension's page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EventKind {
    /// A task changed; `data` is the Task (history capped).
    Task,
    /// A workflow run changed.
    Run,
    /// A step of a workflow run changed.
    Step,
    /// A human gate opened or closed.
    Gate,
    /// A subagent started or ended.
    Subagent,
    /// A conversation got a turn or was closed.
    Conversation,
    /// A reminder was emitted, deduplicated or expired.
    Reminder,
    /// The daemon started or is stopping.
    Lifecycle,
    /// The agent called a tool of an MCP server.
    Tool,
}

impl EventKind {
    pub const ALL: &'static [EventKind] = &[
        EventKind::Task,
        EventKind::Run,
        EventKind::Step,
        EventKind::Gate,
        EventKind::Subagent,
        EventKind::Conversation,
        EventKind::Reminder,
        EventKind::Lifecycle,
        EventKind::Tool,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Task => "task",
            EventKind::Run => "run",
            EventKind::Step => "step",
            EventKind::Gate => "gate",
            EventKind::Subagent => "subagent",
            EventKind::Conversation => "conversation",
            EventKind::Reminder => "reminder",
            EventKind::Lifecycle => "lifecycle",
            EventKind::Tool => "tool",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.as_str() == s)
    }
}

/// One frame of the feed, the `result` of a JSON-RPC response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(
    title = "agentd events feed frame",
    description = "The result of each JSON-RPC response on the agentd.events/SubscribeToEvents stream."
)]
pub enum Frame {
    Hello(Hello),
    Event(Event),
    Goodbye(Goodbye),
}

/// The first frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// The last `seq` committed when the feed opened (0 for an empty log).
    pub seq: u64,
    /// Whether the feed resumes after the requested `fromSeq`.
    pub resume: bool,
    /// Whether events after `fromSeq` are no longer retained (or `fromSeq`
    /// is ahead of the log): the client must rebuild its state from reads;
    /// the feed continues live after `seq`.
    pub resync: bool,
    /// The feed's format version.
    pub version: u32,
}

/// One event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Durable, strictly increasing across restarts.
    pub seq: u64,
    /// When the change that caused the event was committed.
    #[schemars(schema_with = "crate::ext::schema::timestamp")]
    pub ts: Timestamp,
    pub kind: EventKind,
    /// Depends on `kind`; see `$defs`.
    #[schemars(schema_with = "crate::ext::schema::any_object")]
    pub data: Value,
}

/// The last frame when the daemon closes the feed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Goodbye {
    /// The last `seq` delivered on this feed: reconnect with it as `fromSeq`.
    pub seq: u64,
    pub reason: GoodbyeReason,
}

/// Why the feed closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GoodbyeReason {
    /// The daemon is stopping.
    Shutdown,
    /// This subscriber fell behind past what the log retains.
    Lagged,
}

/// `data` of a `lifecycle` event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LifecycleData {
    pub event: LifecycleEvent,
    /// The daemon's version.
    pub version: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LifecycleEvent {
    Started,
    Stopping,
}

/// `data` of a `conversation` event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConversationData {
    pub context_id: String,
    pub event: ConversationEvent,
    /// The turn's task (`turn` events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub task_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConversationEvent {
    /// A new turn (task) started in the conversation.
    Turn,
    /// The conversation was closed.
    Closed,
}

/// `data` of a `reminder` event: the task it concerns and the lifecycle
/// event, as the task's streams carry it in the reminders extension's
/// metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReminderData {
    pub task_id: String,
    #[serde(flatten)]
    pub event: crate::ext::reminders::ReminderEvent,
}

/// `data` of a `subagent` event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubagentData {
    /// The subagent's handle.
    pub handle: String,
    pub task_id: String,
    /// The task that spawned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub parent_task_id: Option<String>,
    pub event: SubagentEvent,
    /// Its task's state when the event was committed.
    #[schemars(schema_with = "crate::ext::schema::task_state")]
    pub state: crate::TaskState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubagentEvent {
    Started,
    Ended,
}

/// `data` of a `run` event: a workflow run started or ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunData {
    /// The run's id, `<workflow>-<ULID>` (its task's link id).
    pub run_id: String,
    /// The run's task.
    pub task_id: String,
    /// The workflow's name.
    pub workflow: String,
    pub state: RunEventState,
    /// Why the run failed or was canceled (`failed`, `canceled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub reason: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunEventState {
    Started,
    Completed,
    Failed,
    Canceled,
}

/// `data` of a `step` event: a step of a run started, ended or was skipped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StepData {
    pub run_id: String,
    pub task_id: String,
    /// The step's id in the workflow.
    pub step: String,
    /// The step's kind (`agent`, `human`, `a2a.delegate`, …).
    pub kind: String,
    pub status: StepEventStatus,
    /// What went wrong (`failed`, or `done` under `on_error: continue`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub error: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepEventStatus {
    /// Recorded running before its effect (not for `human` steps, whose
    /// gate events say when they wait, nor `finish`).
    Running,
    Done,
    Skipped,
    Failed,
}

/// `data` of a `gate` event: a human gate opened, was answered, escalated
/// or timed out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GateData {
    pub run_id: String,
    pub task_id: String,
    /// The `human` step.
    pub step: String,
    pub action: GateAction,
    /// The addressed human's channel, when one is declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub channel: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateAction {
    Opened,
    Answered,
    /// `escalate_after` passed: announced again; the gate stays open.
    Escalated,
    /// `timeout` passed; the step's `fallback` applies.
    TimedOut,
}

/// `data` of a `tool` event: one call of an MCP server's tool by a task's
/// turn. Like every event of a task, only the task's owner and operators
/// see it, so the arguments and the result travel with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolData {
    pub task_id: String,
    /// The MCP server (its name in the configuration or document).
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// The name the model called it by (`<server>__<tool>`).
    pub name: String,
    pub duration_ms: u64,
    pub outcome: ToolOutcome,
    /// The arguments the model gave.
    #[schemars(schema_with = "crate::ext::schema::any_object")]
    pub arguments: Value,
    /// What the model got back: the result's text, or why there is none
    /// (at most 64 KiB).
    pub result: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutcome {
    /// The tool answered.
    Ok,
    /// The tool answered with an error result (`isError`).
    Error,
    /// No answer: the server was down, failed, refused the call or timed out.
    Failed,
    /// The call was not made: the tool policy denied it.
    Denied,
}

/// The wire names of the run, step and gate event enums.
macro_rules! wire_names {
    ($($t:ty { $($v:ident => $n:literal),* })*) => {$(
        impl $t {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$v => $n),* }
            }
        }
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}

wire_names! {
    RunEventState { Started => "started", Completed => "completed", Failed => "failed", Canceled => "canceled" }
    StepEventStatus { Running => "running", Done => "done", Skipped => "skipped", Failed => "failed" }
    GateAction { Opened => "opened", Answered => "answered", Escalated => "escalated", TimedOut => "timed_out" }
    ToolOutcome { Ok => "ok", Error => "error", Failed => "failed", Denied => "denied" }
}
