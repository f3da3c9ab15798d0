//! What the engine stores about a task beyond the A2A `Task` itself.

use agentd_proto::{Task, TaskPushNotificationConfig, TaskState, Timestamp};
use serde::{Deserialize, Serialize};

/// One entry of a task's state history, stamped with its commit time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusEntry {
    pub state: TaskState,
    pub timestamp: Timestamp,
}

/// What kind of work a task tracks (the task-annotations `link.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkKind {
    /// A turn of a conversation: a natural-language message; `id` is the task id.
    Turn,
    /// A workflow run; `id` is `<workflow>-<id>`.
    Run,
    /// A subagent; `id` is its handle.
    Subagent,
}

/// The work a task tracks: `{kind, id}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLink {
    pub kind: LinkKind,
    pub id: String,
}

impl TaskLink {
    pub fn new(kind: LinkKind, id: impl Into<String>) -> Self {
        Self { kind, id: id.into() }
    }
}

/// Facts about how a task came to be, stored with it; the task-annotations
/// extension carries them (`crate::annotations`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskMeta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<TaskLink>,
    /// The task that started this one (a subagent's parent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The command op that started the task (`subagent.spawn`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The human gate the task waits on, while it is INPUT_REQUIRED on one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<OpenGate>,
    /// The tool call waiting for (or just given) a human's approval, with
    /// the gate it opened (`crate::approval`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<crate::approval::PendingApproval>,
    /// The durable state of the work the task tracks, owned by the runtime
    /// that runs it (a workflow run's steps and outputs), committed with
    /// the task so that a restart resumes from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<serde_json::Value>,
    /// Model calls the task's agent loop made: the `turn` of reminder events.
    #[serde(skip_serializing_if = "is_zero")]
    pub model_calls: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A human gate that is open on a task: what the answer must satisfy and
/// where the question was routed (the task-annotations `askSchema` and
/// `askChannel`). Cleared when the gate closes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OpenGate {
    /// The JSON Schema an answer must satisfy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask_schema: Option<serde_json::Value>,
    /// The channel of the human the gate is addressed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ask_channel: Option<String>,
    /// The step of the run that asks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Principal ids that may see the task and answer the gate besides its
    /// owner and operators (the principal bound to the addressed human).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answerers: Vec<String>,
}

impl TaskMeta {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A task as stored: the full A2A Task (all history, all artifacts) plus the
/// facts A2A has no field for.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    /// `history` and `artifacts` are always `Some` in a record.
    pub task: Task,
    /// The principal id that started the task.
    pub owner: String,
    pub created_at: Timestamp,
    /// Every state the task has been in, oldest first.
    pub status_history: Vec<StatusEntry>,
    /// Link, parent and starting command.
    pub meta: TaskMeta,
    /// Which commit of the task this is: 1 for its creation, one more for
    /// each commit after it. A record in a batch carries the version it is
    /// committed as; the store refuses it unless the task is at the version
    /// before (a new task: not there at all), so two writers that read the
    /// same version cannot both commit (see `store.rs`).
    pub version: u64,
}

/// Whether `p` may see a task of `owner` with `meta`: its owner,
/// operators, and while a gate is open, the principals it is addressed to.
pub fn visible_to(owner: &str, meta: &TaskMeta, p: &crate::Principal) -> bool {
    p.can_see(owner) || meta.gate.as_ref().is_some_and(|g| g.answerers.contains(&p.id))
}

impl TaskRecord {
    pub fn id(&self) -> &str {
        &self.task.id
    }
    pub fn state(&self) -> TaskState {
        self.task.status.state
    }
    /// Whether `p` may see the task ([`visible_to`]).
    pub fn visible_to(&self, p: &crate::Principal) -> bool {
        visible_to(&self.owner, &self.meta, p)
    }
    /// The status timestamp, the ListTasks sort key (ms since the epoch).
    pub fn updated_ms(&self) -> i64 {
        self.task.status.timestamp.map(|t| t.millis()).unwrap_or(0)
    }
}

/// A delivery waiting in the outbox: a push event for one of the task's
/// push configs, or a gate announcement for a bridge channel.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxItem {
    pub id: i64,
    pub task_id: String,
    /// Whose delivery it is, the unit delivery is shared fairly between:
    /// the principal that registered the push config, or for a bridge row
    /// the task's owner (empty when the store has no such task).
    pub owner: String,
    /// Where it goes.
    pub target: OutboxTarget,
    /// The JSON to POST (a StreamResponse for push, the channel's body for a bridge).
    pub body: String,
    /// Delivery attempts made so far.
    pub attempts: u32,
}

/// The destination of an outbox row.
#[derive(Clone, Debug, PartialEq)]
pub enum OutboxTarget {
    /// A push notification config of the task (joined at read time).
    Push(TaskPushNotificationConfig),
    /// A bridge channel, stored with the row.
    Bridge(BridgeTarget),
}

impl OutboxTarget {
    /// What orders deliveries: a push config id, or `bridge:<channel>`.
    pub fn key(&self) -> String {
        match self {
            OutboxTarget::Push(c) => c.id.clone(),
            OutboxTarget::Bridge(b) => format!("bridge:{}", b.channel),
        }
    }
}

/// Where a bridge delivers: the channel, its kind and URL. The signing
/// secret is not stored; the deliverer looks it up by channel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BridgeTarget {
    pub channel: String,
    /// `webhook` or `slack`.
    pub kind: String,
    pub url: String,
}

/// A bridge delivery to enqueue in a commit.
#[derive(Clone, Debug, PartialEq)]
pub struct BridgeDelivery {
    pub task_id: String,
    pub target: BridgeTarget,
    pub body: String,
}
