//! The data model (`agentd-proto`) against the generated prost types:
//! explicit field-by-field conversions, no JSON in between. Outgoing
//! conversions move their strings and cannot fail; incoming ones reject a
//! malformed message with the path of the field (`parts[0]`).

use super::pb;
use super::wkt::{
    FieldError, each, metadata_in, metadata_out, opt, timestamp_in, timestamp_out, value_in, value_out,
};
use agentd_proto::{
    Artifact, AuthenticationInfo, Message, Part, PartContent, Role, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskPushNotificationConfig, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use pb::part::Content;
use pb::stream_response::Payload;
use std::sync::Arc;

pub fn role_in(n: i32) -> Result<Role, FieldError> {
    Role::from_number(i64::from(n)).ok_or_else(|| FieldError::new("role", format!("unknown Role value {n}")))
}

pub fn state_in(n: i32, field: &str) -> Result<TaskState, FieldError> {
    TaskState::from_number(i64::from(n))
        .ok_or_else(|| FieldError::new(field, format!("unknown TaskState value {n}")))
}

// ---- Part ----

impl TryFrom<pb::Part> for Part {
    type Error = FieldError;
    fn try_from(p: pb::Part) -> Result<Self, FieldError> {
        let content = match p.content {
            None => {
                return Err(FieldError::new(
                    "",
                    "a part must have exactly one of `text`, `raw`, `url`, `data`",
                ));
            }
            Some(Content::Text(t)) => PartContent::Text(Arc::new(t)),
            Some(Content::Raw(b)) => PartContent::Raw(Arc::new(b)),
            Some(Content::Url(u)) => PartContent::Url(u),
            Some(Content::Data(v)) => PartContent::Data(Arc::new(value_in(v).map_err(|e| e.under("data"))?)),
        };
        Ok(Part {
            content,
            metadata: metadata_in(p.metadata, "metadata")?,
            filename: p.filename,
            media_type: p.media_type,
        })
    }
}

impl From<Part> for pb::Part {
    fn from(p: Part) -> Self {
        let content = match p.content {
            PartContent::Text(t) => Content::Text(Arc::unwrap_or_clone(t)),
            PartContent::Raw(b) => Content::Raw(Arc::unwrap_or_clone(b)),
            PartContent::Url(u) => Content::Url(u),
            PartContent::Data(v) => Content::Data(value_out(Arc::unwrap_or_clone(v))),
        };
        pb::Part {
            content: Some(content),
            metadata: metadata_out(p.metadata),
            filename: p.filename,
            media_type: p.media_type,
        }
    }
}

// ---- Message ----

impl TryFrom<pb::Message> for Message {
    type Error = FieldError;
    fn try_from(m: pb::Message) -> Result<Self, FieldError> {
        Ok(Message {
            message_id: m.message_id,
            context_id: m.context_id,
            task_id: m.task_id,
            role: role_in(m.role)?,
            parts: each(m.parts, "parts", Part::try_from)?,
            metadata: metadata_in(m.metadata, "metadata")?,
            extensions: m.extensions,
            reference_task_ids: m.reference_task_ids,
        })
    }
}

impl From<Message> for pb::Message {
    fn from(m: Message) -> Self {
        pb::Message {
            message_id: m.message_id,
            context_id: m.context_id,
            task_id: m.task_id,
            role: m.role.number(),
            parts: m.parts.into_iter().map(Into::into).collect(),
            metadata: metadata_out(m.metadata),
            extensions: m.extensions,
            reference_task_ids: m.reference_task_ids,
        }
    }
}

// ---- Artifact ----

impl TryFrom<pb::Artifact> for Artifact {
    type Error = FieldError;
    fn try_from(a: pb::Artifact) -> Result<Self, FieldError> {
        Ok(Artifact {
            artifact_id: a.artifact_id,
            name: a.name,
            description: a.description,
            parts: each(a.parts, "parts", Part::try_from)?,
            metadata: metadata_in(a.metadata, "metadata")?,
            extensions: a.extensions,
        })
    }
}

impl From<Artifact> for pb::Artifact {
    fn from(a: Artifact) -> Self {
        pb::Artifact {
            artifact_id: a.artifact_id,
            name: a.name,
            description: a.description,
            parts: a.parts.into_iter().map(Into::into).collect(),
            metadata: metadata_out(a.metadata),
            extensions: a.extensions,
        }
    }
}

// ---- TaskStatus and Task ----

impl TryFrom<pb::TaskStatus> for TaskStatus {
    type Error = FieldError;
    fn try_from(s: pb::TaskStatus) -> Result<Self, FieldError> {
        Ok(TaskStatus {
            state: state_in(s.state, "state")?,
            message: opt(s.message, "message", Message::try_from)?,
            timestamp: opt(s.timestamp, "timestamp", timestamp_in)?,
        })
    }
}

impl From<TaskStatus> for pb::TaskStatus {
    fn from(s: TaskStatus) -> Self {
        pb::TaskStatus {
            state: s.state.number(),
            message: s.message.map(Into::into),
            timestamp: s.timestamp.map(timestamp_out),
        }
    }
}

fn status_in(s: Option<pb::TaskStatus>) -> Result<TaskStatus, FieldError> {
    Ok(opt(s, "status", TaskStatus::try_from)?.unwrap_or_default())
}

/// proto3 cannot tell an empty list from an absent one: empty reads as absent.
fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

impl TryFrom<pb::Task> for Task {
    type Error = FieldError;
    fn try_from(t: pb::Task) -> Result<Self, FieldError> {
        Ok(Task {
            id: t.id,
            context_id: t.context_id,
            status: status_in(t.status)?,
            artifacts: non_empty(each(t.artifacts, "artifacts", Artifact::try_from)?),
            history: non_empty(each(t.history, "history", Message::try_from)?),
            metadata: metadata_in(t.metadata, "metadata")?,
        })
    }
}

impl From<Task> for pb::Task {
    fn from(t: Task) -> Self {
        pb::Task {
            id: t.id,
            context_id: t.context_id,
            status: Some(t.status.into()),
            artifacts: t.artifacts.unwrap_or_default().into_iter().map(Into::into).collect(),
            history: t.history.unwrap_or_default().into_iter().map(Into::into).collect(),
            metadata: metadata_out(t.metadata),
        }
    }
}

// ---- Stream events ----

impl TryFrom<pb::TaskStatusUpdateEvent> for TaskStatusUpdateEvent {
    type Error = FieldError;
    fn try_from(e: pb::TaskStatusUpdateEvent) -> Result<Self, FieldError> {
        Ok(TaskStatusUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            status: status_in(e.status)?,
            metadata: metadata_in(e.metadata, "metadata")?,
        })
    }
}

impl From<TaskStatusUpdateEvent> for pb::TaskStatusUpdateEvent {
    fn from(e: TaskStatusUpdateEvent) -> Self {
        pb::TaskStatusUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            status: Some(e.status.into()),
            metadata: metadata_out(e.metadata),
        }
    }
}

impl TryFrom<pb::TaskArtifactUpdateEvent> for TaskArtifactUpdateEvent {
    type Error = FieldError;
    fn try_from(e: pb::TaskArtifactUpdateEvent) -> Result<Self, FieldError> {
        Ok(TaskArtifactUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            artifact: opt(e.artifact, "artifact", Artifact::try_from)?.unwrap_or_default(),
            append: e.append,
            last_chunk: e.last_chunk,
            metadata: metadata_in(e.metadata, "metadata")?,
        })
    }
}

impl From<TaskArtifactUpdateEvent> for pb::TaskArtifactUpdateEvent {
    fn from(e: TaskArtifactUpdateEvent) -> Self {
        pb::TaskArtifactUpdateEvent {
            task_id: e.task_id,
            context_id: e.context_id,
            artifact: Some(e.artifact.into()),
            append: e.append,
            last_chunk: e.last_chunk,
            metadata: metadata_out(e.metadata),
        }
    }
}

impl TryFrom<pb::StreamResponse> for StreamResponse {
    type Error = FieldError;
    fn try_from(r: pb::StreamResponse) -> Result<Self, FieldError> {
        Ok(match r.payload {
            None => return Err(FieldError::new("payload", "a StreamResponse must have exactly one member")),
            Some(Payload::Task(t)) => StreamResponse::Task(Task::try_from(t).map_err(|e| e.under("task"))?),
            Some(Payload::Message(m)) => {
                StreamResponse::Message(Message::try_from(m).map_err(|e| e.under("message"))?)
            }
            Some(Payload::StatusUpdate(s)) => StreamResponse::StatusUpdate(
                TaskStatusUpdateEvent::try_from(s).map_err(|e| e.under("status_update"))?,
            ),
            Some(Payload::ArtifactUpdate(a)) => StreamResponse::ArtifactUpdate(
                TaskArtifactUpdateEvent::try_from(a).map_err(|e| e.under("artifact_update"))?,
            ),
        })
    }
}

impl From<StreamResponse> for pb::StreamResponse {
    fn from(r: StreamResponse) -> Self {
        let payload = match r {
            StreamResponse::Task(t) => Payload::Task(t.into()),
            StreamResponse::Message(m) => Payload::Message(m.into()),
            StreamResponse::StatusUpdate(s) => Payload::StatusUpdate(s.into()),
            StreamResponse::ArtifactUpdate(a) => Payload::ArtifactUpdate(a.into()),
        };
        pb::StreamResponse { payload: Some(payload) }
    }
}

// ---- Push configs ----

impl From<pb::TaskPushNotificationConfig> for TaskPushNotificationConfig {
    fn from(c: pb::TaskPushNotificationConfig) -> Self {
        TaskPushNotificationConfig {
            tenant: c.tenant,
            id: c.id,
            task_id: c.task_id,
            url: c.url,
            token: c.token,
            authentication: c
                .authentication
                .map(|a| AuthenticationInfo { scheme: a.scheme, credentials: a.credentials }),
        }
    }
}

impl From<TaskPushNotificationConfig> for pb::TaskPushNotificationConfig {
    fn from(c: TaskPushNotificationConfig) -> Self {
        pb::TaskPushNotificationConfig {
            tenant: c.tenant,
            id: c.id,
            task_id: c.task_id,
            url: c.url,
            token: c.token,
            authentication: c
                .authentication
                .map(|a| pb::AuthenticationInfo { scheme: a.scheme, credentials: a.credentials }),
        }
    }
}
