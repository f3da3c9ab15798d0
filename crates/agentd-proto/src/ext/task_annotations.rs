//! The task-annotations extension (`docs/ext/task-annotations/README.md`):
//! facts about a task that the A2A Task has no field for, carried in
//! `Task.metadata[URI]` to requests that activated the extension.

use crate::{Task, TaskState, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The extension's URI, also its key in `Task.metadata`.
pub const URI: &str = "https://agentd.dev/a2a/ext/task-annotations";
/// The `$id` of its schema bundle.
pub const SCHEMA_ID: &str = "https://agentd.dev/a2a/ext/task-annotations/schema.json";

/// The annotations object. Closed: the schema refuses a member it does not
/// name, and decoding refuses one too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(
    title = "agentd task annotations",
    description = "What agentd knows about a task beyond the A2A Task: the object under \
                   Task.metadata[\"https://agentd.dev/a2a/ext/task-annotations\"]."
)]
pub struct TaskAnnotations {
    /// What the task tracks.
    pub link: Link,
    /// When the task was created; equals the first `statusHistory` entry.
    #[schemars(schema_with = "super::schema::timestamp")]
    pub created: Timestamp,
    /// Every state the task has been in, oldest first, with commit times.
    pub status_history: Vec<StatusChange>,
    /// Who started the task (its owner principal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub principal: Option<String>,
    /// The JSON Schema of the answer an INPUT_REQUIRED gate asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::any_schema")]
    pub ask_schema: Option<Value>,
    /// The channel an INPUT_REQUIRED gate is also announced on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub ask_channel: Option<String>,
    /// The command op that started the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub command: Option<String>,
}

/// What a task tracks: `{kind, id}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub kind: LinkKind,
    /// The run id (`<workflow>-<id>`), the subagent handle, or the turn id.
    pub id: String,
}

/// `run` (a workflow run), `subagent` (a subagent handle) or `turn` (a
/// conversation turn).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    Run,
    Subagent,
    Turn,
}

/// One entry of `statusHistory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusChange {
    /// The A2A `TaskState` name.
    #[schemars(schema_with = "super::schema::task_state")]
    pub state: TaskState,
    /// When the change was committed.
    #[schemars(schema_with = "super::schema::timestamp")]
    pub ts: Timestamp,
}

impl TaskAnnotations {
    /// Puts the annotations into `task.metadata` under [`URI`].
    pub fn attach(&self, task: &mut Task) {
        if let Ok(v) = serde_json::to_value(self) {
            task.metadata.get_or_insert_with(Default::default).insert(URI.to_owned(), v);
        }
    }
}

/// Removes the annotations from a task, and `metadata` with them when
/// nothing else is in it.
pub fn detach(task: &mut Task) {
    if let Some(m) = &mut task.metadata {
        m.remove(URI);
        if m.is_empty() {
            task.metadata = None;
        }
    }
}

/// The schema bundle printed by `agentd --extension-schema task-annotations`.
pub fn schema_bundle() -> Value {
    super::schema::generate::<TaskAnnotations>(SCHEMA_ID)
}
