//! A run's task annotations (`docs/ext/task-annotations/README.md`): the
//! run link, the command that started it, and while its gate is open the
//! gate's answer schema and the addressed human's channel, on GetTask and
//! on the stream that started the run; every object is validated against
//! the published schema by the harness. The run's checkpoint (definition,
//! inputs, step outputs) stays inside the daemon.

use crate::common::annotations::{URI as ANNOTATIONS, validated};
use crate::common::scripted::*;
use crate::common::workflow::*;
use crate::common::*;
use serde_json::{Value, json};

const GATED: &str = r#"
steps:
  prep: {kind: assign, values: {note: "kept-in-the-checkpoint"}}
  ask:
    kind: human
    depends_on: prep
    question: "Ship {{inputs.what}}?"
    schema: {type: object, properties: {ok: {type: boolean}}, required: [ok], additionalProperties: false}
    to: "@human/approver"
  done: {kind: finish, depends_on: ask, output: "{{steps.ask.output.ok}}"}
"#;

const ACTIVATE: [(&str, &str); 1] = [("A2A-Extensions", ANNOTATIONS)];

fn ask_schema() -> Value {
    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false})
}

/// GetTask with the annotations activated; returns the annotations.
async fn annotations(d: &Daemon, b: Binding, task_id: &str) -> Value {
    let (_, r) = d.op_with(b, "GetTask", json!({"id": task_id}), &ACTIVATE).await;
    let t = r.unwrap_or_else(|e| panic!("{b:?} GetTask: {}", e.error));
    t["metadata"][ANNOTATIONS].clone()
}

fn assert_run_link(a: &Value) {
    assert_eq!(a["link"]["kind"], "run", "{a}");
    let run_id = a["link"]["id"].as_str().unwrap_or_else(|| panic!("a link id: {a}"));
    let ulid = run_id.strip_prefix("gated-").unwrap_or_else(|| panic!("<workflow>-<ULID>: {run_id}"));
    assert!(
        ulid.len() == 26 && ulid.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()),
        "a ULID after the workflow name: {run_id}"
    );
    assert_eq!(a["command"], "workflow.run", "{a}");
}

fn assert_open_gate(a: &Value) {
    assert_run_link(a);
    assert_eq!(a["askSchema"], ask_schema(), "the step's schema: {a}");
    assert_eq!(a["askChannel"], "@channel/ops", "the approver's channel as written: {a}");
}

fn assert_no_gate(a: &Value) {
    assert_run_link(a);
    assert!(a.get("askSchema").is_none() && a.get("askChannel").is_none(), "gate members gone: {a}");
}

/// The annotations of the `task` payloads of a stream (status updates
/// carry none, as the extension's page says).
fn annotated(frames: &[Value]) -> Vec<&Value> {
    frames.iter().filter_map(|f| f.get("task")).filter_map(|t| t["metadata"].get(ANNOTATIONS)).collect()
}

#[tokio::test]
async fn an_open_gate_is_annotated_on_get_task_send_message_and_streams_until_answered() {
    let (s, _doc) = daemon(Some(&doc(&[("gated", GATED)], "operator")), json!([]), false);
    for b in BINDINGS {
        let before = validated();
        // SendMessage answers with the task waiting at the gate.
        let start = command("workflow.run", json!({"workflow": "gated", "inputs": {"what": "v2"}}));
        let (_, r) = s.d.op_with(b, "SendMessage", start, &ACTIVATE).await;
        let t = task(&r.unwrap_or_else(|e| panic!("{b:?} SendMessage: {}", e.error)));
        assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{b:?}: {t}");
        assert_open_gate(&t["metadata"][ANNOTATIONS]);
        let task_id = id(&t);
        assert_open_gate(&annotations(&s.d, b, &task_id).await);

        // A stream opened on the waiting run starts with it, annotated.
        let (_, mut sub) = s.d.stream_with(b, "SubscribeToTask", json!({"id": task_id}), &ACTIVATE).await;
        let first = sub.next().await.unwrap_or_else(|| panic!("{b:?}: the subscription's first frame"));
        assert_open_gate(&first["task"]["metadata"][ANNOTATIONS]);
        drop(sub);

        // Not activated: no annotations at all.
        let plain = s.d.ok(b, "GetTask", json!({"id": task_id})).await;
        assert!(plain.get("metadata").is_none_or(|m| m.get(ANNOTATIONS).is_none()), "{plain}");
        assert!(validated() >= before + 3, "the harness validated what it saw");

        answer(&s.d, &task_id, json!({"data": {"ok": true}})).await.unwrap();
        wait_state(&s.d, &task_id, "TASK_STATE_COMPLETED", 20).await;
        assert_no_gate(&annotations(&s.d, b, &task_id).await);
    }
}

#[tokio::test]
async fn the_stream_that_starts_a_run_annotates_its_task_with_the_run_link() {
    let (s, _doc) = daemon(Some(&doc(&[("gated", GATED)], "operator")), json!([]), false);
    for b in BINDINGS {
        let start = command("workflow.run", json!({"workflow": "gated", "inputs": {"what": "v2"}}));
        let (_, mut ev) = s.d.stream_with(b, "SendStreamingMessage", start, &ACTIVATE).await;
        let frames = ev.collect().await;
        assert_eq!(
            frames.iter().filter_map(state).next_back(),
            Some("TASK_STATE_INPUT_REQUIRED"),
            "{b:?}: {frames:?}"
        );
        let seen = annotated(&frames);
        assert!(!seen.is_empty(), "{b:?}: the stream's task is annotated: {frames:?}");
        for a in seen {
            assert_run_link(a);
            if a.get("askSchema").is_some() {
                assert_open_gate(a);
            }
        }
    }
}

#[tokio::test]
async fn an_answered_gate_is_no_longer_annotated_on_the_answers_stream() {
    let (s, _doc) = daemon(Some(&doc(&[("gated", GATED)], "operator")), json!([]), false);
    let t = run(&s.d, "gated", json!({"what": "v3"})).await;
    let task_id = id(&t);
    let msg = json!({"message": {"messageId": uid("a"), "role": "ROLE_USER", "taskId": task_id,
        "parts": [{"data": {"ok": false}}]}});
    let (_, mut ev) = s.d.stream_with(B, "SendStreamingMessage", msg, &ACTIVATE).await;
    let frames = ev.collect().await;
    assert_eq!(frames.iter().filter_map(state).next_back(), Some("TASK_STATE_COMPLETED"), "{frames:?}");
    for f in &frames {
        if let Some(a) =
            f.get("task").or_else(|| f.get("statusUpdate")).and_then(|x| x["metadata"].get(ANNOTATIONS))
        {
            assert_no_gate(a);
        }
    }
}
