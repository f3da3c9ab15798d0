//! What the engine stores about a task beyond the A2A `Task` itself.

use agentd_proto::{Task, TaskPushNotificationConfig, TaskState, Timestamp};
use serde::{Deserialize, Serialize};

/// One entry of a task's state history, stamped with its commit time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusEntry {
    pub state: TaskState,
    pub timestamp: Timestamp,
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
}

impl TaskRecord {
    pub fn id(&self) -> &str {
        &self.task.id
    }
    pub fn state(&self) -> TaskState {
        self.task.status.state
    }
    /// The status timestamp, the ListTasks sort key (ms since the epoch).
    pub fn updated_ms(&self) -> i64 {
        self.task.status.timestamp.map(|t| t.millis()).unwrap_or(0)
    }
}

/// A push delivery waiting in the outbox, joined with its config.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboxItem {
    pub id: i64,
    pub task_id: String,
    pub config: TaskPushNotificationConfig,
    /// The StreamResponse JSON to POST.
    pub body: String,
    /// Delivery attempts made so far.
    pub attempts: u32,
}
