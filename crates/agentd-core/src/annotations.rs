//! The task-annotations object of a record: what the engine recorded about
//! a task, in the shape `docs/ext/task-annotations` specifies.

use crate::record::{LinkKind, StatusEntry, TaskRecord};
use agentd_proto::ext::task_annotations::{self as ta, StatusChange, TaskAnnotations};
use agentd_proto::{TaskState, Timestamp};
use serde::{Serialize, Serializer};
use serde_json::Value;

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

/// [`of`] as it is written out, lent from the record: the same JSON, with
/// nothing copied only to be serialized (an event's annotations).
pub fn lent(rec: &TaskRecord) -> impl Serialize + '_ {
    let (kind, id) = match &rec.meta.link {
        Some(l) => (link_kind(l.kind), l.id.as_str()),
        None => (ta::LinkKind::Turn, rec.task.id.as_str()),
    };
    let gate = rec.meta.gate.as_ref().filter(|_| rec.state() == TaskState::InputRequired);
    Lent {
        link: LentLink { kind, id },
        created: rec.status_history.first().map_or(rec.created_at, |e| e.timestamp),
        status_history: StatusChanges(&rec.status_history),
        principal: Some(rec.owner.as_str()),
        ask_schema: gate.and_then(|g| g.ask_schema.as_ref()),
        ask_channel: gate.and_then(|g| g.ask_channel.as_deref()),
        command: rec.meta.command.as_deref(),
    }
}

/// `TaskAnnotations`, member for member, borrowed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Lent<'a> {
    link: LentLink<'a>,
    created: Timestamp,
    status_history: StatusChanges<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    principal: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ask_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ask_channel: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    command: Option<&'a str>,
}

#[derive(Serialize)]
struct LentLink<'a> {
    kind: ta::LinkKind,
    id: &'a str,
}

struct StatusChanges<'a>(&'a [StatusEntry]);

impl Serialize for StatusChanges<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|e| StatusChange { state: e.state, ts: e.timestamp }))
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

    /// A gate asking #ops for a yes or no.
    fn ops_gate() -> OpenGate {
        OpenGate {
            ask_schema: Some(json!({"type": "boolean"})),
            ask_channel: Some("#ops".into()),
            ..OpenGate::default()
        }
    }

    #[test]
    fn gate_members_only_while_input_is_required() {
        let gate = ops_gate();
        let meta = TaskMeta { gate: Some(gate), ..TaskMeta::default() };
        let waiting = of(&rec(TaskState::InputRequired, meta.clone()));
        assert_eq!(waiting.ask_channel.as_deref(), Some("#ops"));
        assert_eq!(waiting.ask_schema, Some(json!({"type": "boolean"})));
        let working = of(&rec(TaskState::Working, meta));
        assert_eq!((working.ask_schema, working.ask_channel), (None, None));
        assert_eq!(working.link, ta::Link { kind: ta::LinkKind::Turn, id: "t1".into() });
    }

    #[test]
    fn lent_writes_the_same_json() {
        let gate = ops_gate();
        let metas = [
            TaskMeta::default(),
            TaskMeta { gate: Some(gate), command: Some("workflow.run".into()), ..TaskMeta::default() },
            TaskMeta { link: Some(TaskLink::new(LinkKind::Subagent, "helper-1")), ..TaskMeta::default() },
        ];
        for meta in metas {
            for state in [TaskState::Working, TaskState::InputRequired] {
                let mut r = rec(state, meta.clone());
                let want = serde_json::to_string(&of(&r)).unwrap();
                assert_eq!(serde_json::to_string(&lent(&r)).unwrap(), want);
                r.status_history.clear();
                let want = serde_json::to_string(&of(&r)).unwrap();
                assert_eq!(serde_json::to_string(&lent(&r)).unwrap(), want, "no status history");
            }
        }
    }
}
