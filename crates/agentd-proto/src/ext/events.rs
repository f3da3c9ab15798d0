//! The events extension (`docs/ext/events/README.md`): one durable feed of
//! what happens in the daemon, `agentd.events/SubscribeToEvents` over SSE.
//! Every frame is the `result` of a JSON-RPC response: one `hello`, then
//! `event`s, and a `goodbye` when the daemon closes the feed.

use crate::{A2aError, FieldViolation, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.as_str() == s)
    }
}

/// The params of `agentd.events/SubscribeToEvents`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscribeParams {
    /// The last `seq` the client has seen: the feed resumes right after it.
    /// Absent: live events from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub from_seq: Option<u64>,
    /// Only these kinds; absent: every kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<EventKind>")]
    pub kinds: Option<Vec<EventKind>>,
}

impl SubscribeParams {
    /// Strict decoding: an unknown member, a wrong type or an unknown kind
    /// is InvalidParams naming the member.
    pub fn decode(params: &Value) -> Result<Self, A2aError> {
        let obj = match params {
            Value::Null => return Ok(Self::default()),
            Value::Object(o) => o,
            _ => return Err(A2aError::invalid_field("params", "must be an object {fromSeq?, kinds?}")),
        };
        let mut v = Vec::new();
        let mut out = Self::default();
        let bad =
            |field: String, description: &str| FieldViolation { field, description: description.into() };
        for (key, value) in obj {
            match (key.as_str(), value) {
                ("fromSeq" | "from_seq", Value::Null) | ("kinds", Value::Null) => {}
                ("fromSeq" | "from_seq", n) => match n.as_u64() {
                    Some(n) => out.from_seq = Some(n),
                    None => v.push(bad("fromSeq".into(), "must be a non-negative integer")),
                },
                ("kinds", Value::Array(items)) => {
                    let mut kinds = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        match item.as_str().and_then(EventKind::parse) {
                            Some(k) => kinds.push(k),
                            None => v.push(bad(
                                format!("kinds[{i}]"),
                                "is not an event kind (task, run, step, gate, subagent, conversation, \
                                 reminder, lifecycle)",
                            )),
                        }
                    }
                    out.kinds = Some(kinds);
                }
                ("kinds", _) => v.push(bad("kinds".into(), "must be an array of event kinds")),
                (other, _) => v.push(bad(other.to_owned(), "is not a member of SubscribeToEvents params")),
            }
        }
        crate::validate::finish(v)?;
        Ok(out)
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
    #[schemars(schema_with = "super::schema::timestamp")]
    pub ts: Timestamp,
    pub kind: EventKind,
    /// Depends on `kind`; see `$defs`.
    #[schemars(schema_with = "super::schema::any_object")]
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
    #[schemars(schema_with = "super::schema::task_state")]
    pub state: crate::TaskState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubagentEvent {
    Started,
    Ended,
}

/// The schema bundle printed by `agentd --extension-schema events`: the
/// frame at its root, the params and each kind's `data` under `$defs`,
/// tied to `kind` by `if`/`then`.
pub fn schema_bundle() -> Value {
    use super::schema::generate;
    let mut root = generate::<Frame>(SCHEMA_ID);
    let defs: [(&str, Value); 4] = [
        ("SubscribeParams", generate::<SubscribeParams>("")),
        ("LifecycleData", generate::<LifecycleData>("")),
        ("ConversationData", generate::<ConversationData>("")),
        ("SubagentData", generate::<SubagentData>("")),
    ];
    let Some(root_defs) = root.as_object_mut().map(|o| o.entry("$defs").or_insert_with(|| json!({}))) else {
        return root;
    };
    for (name, mut schema) in defs {
        if let Some(o) = schema.as_object_mut() {
            o.remove("$schema");
            o.remove("$id");
            // Nested definitions move up: `$ref`s point at `#/$defs/...`.
            if let Some(Value::Object(inner)) = o.remove("$defs") {
                for (k, v) in inner {
                    root_defs[k.as_str()] = v;
                }
            }
        }
        root_defs[name] = schema;
    }
    let task = json!({
        "type": "object",
        "description": "an A2A Task (history capped); with the task-annotations extension also activated, \
                        its metadata carries the annotations",
        "required": ["id", "status"]
    });
    root_defs["TaskData"] = task;
    let by_kind = |kind: &str, def: &str| {
        json!({"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
               "then": {"properties": {"data": {"$ref": format!("#/$defs/{def}")}}}})
    };
    if let Some(event) = root_defs.get_mut("Event").and_then(Value::as_object_mut) {
        event.insert(
            "allOf".into(),
            json!([
                by_kind("task", "TaskData"),
                by_kind("lifecycle", "LifecycleData"),
                by_kind("conversation", "ConversationData"),
                by_kind("subagent", "SubagentData"),
            ]),
        );
    }
    root
}
