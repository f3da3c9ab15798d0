//! Reminders as the engine keeps them (design §6): ambient context for a
//! running task, delivered at each model call until it has reached
//! `ttl_turns` of them, displaced by a newer one with the same dedupe key.
//! Stored in their own rows, never in the task's history.
//!
//! Every lifecycle event is made by [`lifecycle_event`]; the engine
//! publishes them from one place (`Engine::publish_reminder_events`).

use agentd_proto::ext::reminders::{Propagate, ReminderEvent, ReminderEventKind, RoleHint, URI};
use agentd_proto::{Metadata, StreamResponse, TaskStatus, TaskStatusUpdateEvent, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Limits on reminders, from the `reminders` config (also the card params).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReminderLimits {
    pub max_ttl_turns: u32,
    pub max_body_bytes: u32,
    /// Active reminders one task may hold; memory per task stays bounded.
    pub max_pending_per_task: u32,
}

impl Default for ReminderLimits {
    fn default() -> Self {
        Self { max_ttl_turns: 16, max_body_bytes: 8 * 1024, max_pending_per_task: 32 }
    }
}

/// Why a reminder stopped being active.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum ReminderEnd {
    /// Delivered to `ttl_turns` model calls.
    Expired,
    /// Displaced by the newer reminder `by` with the same dedupe key.
    Deduped { by: String },
}

/// One reminder of one task. A copy propagated to a subagent task is a
/// record of its own (own id) that names the reminder it was copied from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReminderRecord {
    pub task_id: String,
    pub id: String,
    pub body: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_key: Option<String>,
    pub ttl_turns: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_hint: Option<RoleHint>,
    pub source: String,
    #[serde(default)]
    pub propagate: Propagate,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    pub accepted_at: Timestamp,
    /// What the injection displaced: kept to answer a repeated id the same.
    #[serde(default)]
    pub displaced: Vec<String>,
    /// Model calls reached so far.
    #[serde(default)]
    pub delivered: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<ReminderEnd>,
    /// `task id/reminder id` of the reminder this copy propagated from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copied_from: Option<String>,
}

impl ReminderRecord {
    pub fn is_active(&self) -> bool {
        self.ended.is_none()
    }
}

/// A reminder handed to a model call (journaled with it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeliveredReminder {
    pub id: String,
    pub source: String,
    pub body: String,
    pub role_hint: Option<RoleHint>,
}

/// The one constructor of lifecycle events.
pub fn lifecycle_event(kind: ReminderEventKind, r: &ReminderRecord, turn: Option<u64>) -> ReminderEvent {
    let (turn, remaining_turns) = match kind {
        ReminderEventKind::Emitted => (turn, Some(r.ttl_turns.saturating_sub(r.delivered))),
        _ => (None, None),
    };
    let displaced_by = match &r.ended {
        Some(ReminderEnd::Deduped { by }) if kind == ReminderEventKind::Deduped => Some(by.clone()),
        _ => None,
    };
    ReminderEvent { event: kind, reminder_id: r.id.clone(), turn, remaining_turns, displaced_by }
}

/// A lifecycle event as a stream carries it: a status update with the
/// task's status unchanged and the event under `metadata[URI]`.
pub fn stream_event(
    task_id: &str,
    context_id: &str,
    status: &TaskStatus,
    ev: &ReminderEvent,
) -> StreamResponse {
    let mut metadata = Metadata::new();
    metadata.insert(URI.into(), serde_json::to_value(ev).unwrap_or(Value::Null));
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task_id.to_owned(),
        context_id: context_id.to_owned(),
        status: status.clone(),
        metadata: Some(metadata),
    })
}

/// Whether a stream event is a reminder lifecycle event (shown only to
/// streams whose request activated the extension; never pushed).
pub fn is_lifecycle_event(ev: &StreamResponse) -> bool {
    matches!(ev, StreamResponse::StatusUpdate(s) if s.metadata.as_ref().is_some_and(|m| m.contains_key(URI)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_proto::{TaskState, TaskStatus};

    fn record(delivered: u32, ended: Option<ReminderEnd>) -> ReminderRecord {
        ReminderRecord {
            task_id: "t".into(),
            id: "r".into(),
            body: "b".into(),
            dedupe_key: None,
            ttl_turns: 3,
            role_hint: None,
            source: "user:a".into(),
            propagate: Propagate::None,
            metadata: None,
            accepted_at: Timestamp::from_millis(1).unwrap(),
            displaced: Vec::new(),
            delivered,
            ended,
            copied_from: None,
        }
    }

    #[test]
    fn each_event_carries_only_its_members() {
        let e = lifecycle_event(ReminderEventKind::Emitted, &record(1, None), Some(4));
        assert_eq!((e.turn, e.remaining_turns, e.displaced_by), (Some(4), Some(2), None));
        let deduped = record(1, Some(ReminderEnd::Deduped { by: "n".into() }));
        let e = lifecycle_event(ReminderEventKind::Deduped, &deduped, Some(4));
        assert_eq!((e.turn, e.remaining_turns, e.displaced_by.as_deref()), (None, None, Some("n")));
        let e = lifecycle_event(ReminderEventKind::Expired, &record(3, Some(ReminderEnd::Expired)), None);
        assert_eq!((e.turn, e.remaining_turns, e.displaced_by), (None, None, None));
    }

    #[test]
    fn stream_events_keep_the_status_and_are_recognised() {
        let status = TaskStatus { state: TaskState::InputRequired, ..TaskStatus::default() };
        let ev = lifecycle_event(ReminderEventKind::Expired, &record(3, None), None);
        let s = stream_event("t", "c", &status, &ev);
        assert!(is_lifecycle_event(&s));
        let StreamResponse::StatusUpdate(u) = &s else { panic!("a status update") };
        assert_eq!(u.status, status, "the state is unchanged");
        let plain = StreamResponse::StatusUpdate(TaskStatusUpdateEvent { metadata: None, ..u.clone() });
        assert!(!is_lifecycle_event(&plain));
    }
}
