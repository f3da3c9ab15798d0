//! A run's checkpoint (its pinned definition, its inputs, its steps'
//! outputs) is the daemon's own: it never reaches a client, whether in a
//! task, its annotations, a stream frame, an events-feed event or a push
//! body.

use crate::common::annotations::URI as ANNOTATIONS;
use crate::common::feed::{EVENTS, feed_with};
use crate::common::receiver::Receiver;
use crate::common::scripted::*;
use crate::common::workflow::*;
use crate::common::*;
use serde_json::{Value, json};
use std::time::Duration;

const GATED: &str = r#"
steps:
  prep: {kind: assign, values: {note: "kept-in-the-checkpoint"}}
  ask:
    kind: human
    depends_on: prep
    question: "Ship {{inputs.what}}?"
    schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
    to: "@human/approver"
  done: {kind: finish, depends_on: ask, output: "{{steps.ask.output.ok}}"}
"#;

/// Strings only the checkpoint holds: an input no step uses, a step's
/// output no later step uses, a key of the definition, the member names.
const PRIVATE: [&str; 5] =
    ["input-only-7f3", "kept-in-the-checkpoint", "depends_on", "checkpoint", "definition"];

/// `v` without the messages clients sent (the command that started the run
/// rightly echoes its inputs in the task's history).
fn without_user_messages(v: &Value) -> Value {
    match v {
        Value::Object(o) if o.get("role").is_some_and(|r| r == "ROLE_USER") => Value::Null,
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), without_user_messages(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(without_user_messages).collect()),
        other => other.clone(),
    }
}

fn assert_private(what: &str, v: &Value) {
    let text = without_user_messages(v).to_string();
    for p in PRIVATE {
        assert!(!text.contains(p), "{what} shows the checkpoint ({p}): {text}");
    }
}

#[tokio::test]
async fn the_checkpoint_never_reaches_the_wire() {
    let config = "push:\n  allow_private: true\n";
    let (s, _doc) = daemon_with(Some(&doc(&[("gated", GATED)], "operator")), json!([]), false, config);
    let both = format!("{EVENTS}, {ANNOTATIONS}");
    let activate = [("A2A-Extensions", both.as_str())];
    let (_, mut feed) = feed_with(&s.d, json!({"fromSeq": 0}), &both).await;
    feed.hello().await;
    let mut rx = Receiver::start(0).await;

    let start = command(
        "workflow.run",
        json!({"workflow": "gated", "inputs": {"what": "v2", "tag": "input-only-7f3"}}),
    );
    let (_, r) = s.d.op_with(B, "SendMessage", start, &activate).await;
    let t = task(&r.unwrap_or_else(|e| panic!("SendMessage: {}", e.error)));
    assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{t}");
    assert!(t["metadata"].get(ANNOTATIONS).is_some(), "annotated: {t}");
    assert_private("the task SendMessage answered", &t);
    let task_id = id(&t);
    let push = json!({"taskId": task_id, "url": rx.url()});
    s.d.ok(B, "CreateTaskPushNotificationConfig", push).await;

    for b in BINDINGS {
        let (_, got) = s.d.op_with(b, "GetTask", json!({"id": task_id}), &activate).await;
        assert_private("GetTask", &got.unwrap());
        let (_, list) = s.d.op_with(b, "ListTasks", json!({}), &activate).await;
        assert_private("ListTasks", &list.unwrap());
        let (_, mut sub) = s.d.stream_with(b, "SubscribeToTask", json!({"id": task_id}), &activate).await;
        assert_private("SubscribeToTask", &sub.next().await.expect("a first frame"));
    }

    let msg = json!({"message": {"messageId": uid("a"), "role": "ROLE_USER", "taskId": task_id,
        "parts": [{"data": {"ok": true}}]}});
    let (_, mut ev) = s.d.stream_with(B, "SendStreamingMessage", msg, &activate).await;
    let frames = ev.collect().await;
    assert_eq!(frames.iter().filter_map(state).next_back(), Some("TASK_STATE_COMPLETED"), "{frames:?}");
    assert_private("the answer's stream", &Value::Array(frames));
    let done = s.d.ok(B, "GetTask", json!({"id": task_id})).await;
    assert_private("the completed task", &done);

    let events = feed
        .until(|e| {
            e["kind"] == "task"
                && e["data"]["id"] == task_id
                && e["data"]["status"]["state"] == "TASK_STATE_COMPLETED"
        })
        .await;
    assert!(events.iter().any(|e| e["kind"] == "gate"), "the run's events are in the feed: {events:?}");
    assert_private("the events feed", &Value::Array(events));

    let hits = rx.until_state(&task_id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    for h in &hits {
        assert_private("a push body", &h.body);
    }
}
