//! The task-annotations object of a record: what the engine recorded about
//! a task, in the shape `docs/ext/task-annotations` specifies.

use crate::record::{LinkKind, TaskRecord};
use agentd_proto::TaskState;
use agentd_proto::ext::task_annotations::{self as ta, StatusChange, TaskAnnotations};

/// Builds the annotations of `rec`. The gate members appear only while the
/// task waits for input on a gate that declares them.
pub fn of(rec: &TaskRecord) -> TaskAnnotations {
    let link = match &rec.meta.link {
        Some(l) => ta::Link { kind: link_kind(l.kind), id: l.id.clone() },
        // Records from before links were stored are conversation turns.
        None => ta::Link { kind: ta::LinkKind::Turn, id: rec.task.id.clone() },
    };
    let gate = rec.meta.gate.as_ref().filter(|_| rec.state() == TaskState::InputRequired);
    TaskAnnotations {
        link,
        created: rec.status_history.first().map_or(rec.created_at, |e| e.timestamp),
        status_history: rec
            .status_history
            .iter()
            .map(|e| StatusChange { state: e.state, ts: e.timestamp })
            .collect(),
        principal: Some(rec.owner.clone()),
        ask_schema: gate.and_then(|g| g.ask_schema.clone()),
        ask_channel: gate.and_then(|g| g.ask_channel.clone()),
        command: rec.meta.command.clone(),
    }
}

fn link_kind(k: LinkKind) -> ta::LinkKind {
    match k {
        LinkKind::Turn => ta::LinkKind::Turn,
        LinkKind::Run => ta::LinkKind::Run,
        LinkKind::Subagent => ta::LinkKind::Subagent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{OpenGate, StatusEntry, TaskLink, TaskMeta};
    use agentd_proto::{Task, TaskStatus, Timestamp};
    use serde_json::json;

    fn rec(state: TaskState, meta: TaskMeta) -> TaskRecord {
        let t0 = Timestamp::from_millis(1_000).unwrap();
        let t1 = Timestamp::from_millis(2_000).unwrap();
        TaskRecord {
            task: Task {
                id: "t1".into(),
                status: TaskStatus { state, message: None, timestamp: Some(t1) },
                ..Task::default()
            },
            owner: "user:alice".into(),
            created_at: t0,
            status_history: vec![
                StatusEntry { state: TaskState::Submitted, timestamp: t0 },
                StatusEntry { state, timestamp: t1 },
            ],
            meta,
            version: 2,
        }
    }

    #[test]
    fn built_from_the_record() {
        let meta = TaskMeta {
            link: Some(TaskLink::new(LinkKind::Run, "triage-01")),
            command: Some("workflow.run".into()),
            ..TaskMeta::default()
        };
        let a = of(&rec(TaskState::Working, meta));
        let v = serde_json::to_value(&a).unwrap();
        assert_eq!(
            v,
            json!({
                "link": {"kind": "run", "id": "triage-01"},
                "created": "1970-01-01T00:00:01.000Z",
                "statusHistory": [
                    {"state": "TASK_STATE_SUBMITTED", "ts": "1970-01-01T00:00:01.000Z"},
                    {"state": "TASK_STATE_WORKING", "ts": "1970-01-01T00:00:02.000Z"}
                ],
                "principal": "user:alice",
                "command": "workflow.run"
            })
        );
    }

    #[test]
    fn gate_members_only_while_input_is_required() {
        let gate = OpenGate {
            ask_schema: Some(json!({"type": "boolean"})),
            ask_channel: Some("#ops".into()),
            ..OpenGate::default()
        };
        let meta = TaskMeta { gate: Some(gate), ..TaskMeta::default() };
        let waiting = of(&rec(TaskState::InputRequired, meta.clone()));
        assert_eq!(waiting.ask_channel.as_deref(), Some("#ops"));
        assert_eq!(waiting.ask_schema, Some(json!({"type": "boolean"})));
        let working = of(&rec(TaskState::Working, meta));
        assert_eq!((working.ask_schema, working.ask_channel), (None, None));
        assert_eq!(working.link, ta::Link { kind: ta::LinkKind::Turn, id: "t1".into() });
    }
}
