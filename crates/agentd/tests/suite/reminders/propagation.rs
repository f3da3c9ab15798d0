//! `propagate: "subagents"`: a reminder reaches the target's live subagent
//! and one it spawns while the reminder is active, each copy with its own
//! id and its own events. Script steps are consumed in call order, parent
//! and children alike.

use super::*;
use crate::common::scripted::*;
use crate::common::*;
use serde_json::{Value, json};

fn spawn_call(id: &str, name: &str) -> Value {
    let args = json!({"instruction": "You help.", "input": format!("Work, {name}."), "name": name});
    json!({"tool_calls": [{"id": id, "name": "spawn_subagent", "arguments": args}]})
}

#[tokio::test]
async fn a_propagating_reminder_reaches_live_and_later_subagents_as_copies() {
    let steps = json!([
        spawn_call("p1", "first"),           // 1 parent
        tool_step("a1", 2000),               // 2 first child: the reminder arrives meanwhile
        {"text": "first done"},              // 3 first child
        spawn_call("p2", "second"),          // 4 parent
        {"text": "second done"},             // 5 second child, spawned while active
        {"text": "all done"},                // 6 parent
    ]);
    let s = scripted(steps, "", false);
    let d = &s.d;
    let sent = d
        .call(
            "SendMessage",
            json!({"message": user_msg("m1", "Delegate."), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let parent = sent["task"]["id"].as_str().unwrap().to_owned();
    s.wait_calls(2).await;
    let page = d.call("ListTasks", json!({})).await;
    let child = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .find(|t| *t != parent)
        .expect("the first child is listed");
    let mut child_events = stream(d, "SubscribeToTask", json!({"id": child}), true).await;
    let r = inject(
        d,
        &parent,
        json!({"id": "rebase", "body": "Rebase first.", "ttlTurns": 2, "propagate": "subagents"}),
    )
    .await;
    assert_eq!(r["reminderId"], "rebase");

    let done = d.wait_task(Binding::JsonRpc, &parent, 20, |t| task_state(t) == "TASK_STATE_COMPLETED").await;
    assert_eq!(done["status"]["message"]["parts"][0]["text"], "all done");
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 6);
    let ids: Vec<Vec<String>> = reqs.iter().map(reminder_ids).collect();
    assert!(ids[0].is_empty() && ids[1].is_empty(), "nothing before the injection: {ids:?}");
    assert_eq!(ids[3], ["rebase"], "the parent's own reminder: {ids:?}");
    assert_eq!(ids[5], ["rebase"], "ttl 2 on the parent: {ids:?}");
    let (first_copy, second_copy) = (&ids[2], &ids[4]);
    assert_eq!(first_copy.len(), 1, "the live child got a copy: {ids:?}");
    assert_eq!(second_copy.len(), 1, "the child spawned while active got a copy: {ids:?}");
    assert!(
        first_copy[0] != "rebase" && second_copy[0] != "rebase" && first_copy[0] != second_copy[0],
        "each copy has its own id: {ids:?}"
    );
    let body =
        reqs[2]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(body.contains("Rebase first.") && body.contains("source=\"operator:local\""), "{body}");

    let events = reminder_events(&child_events.collect().await);
    assert_eq!(
        events,
        [json!({"event": "emitted", "reminderId": first_copy[0], "turn": 2, "remainingTurns": 1}),],
        "the copy's events are the child's own (it ended after one more call)"
    );
}
