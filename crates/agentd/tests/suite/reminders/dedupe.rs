//! Dedupe by key, two keys side by side, idempotent re-send by id, and the
//! SendMessage compatibility path.

use super::*;
use crate::common::scripted::*;
use crate::common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn a_newer_reminder_displaces_the_older_with_its_key_and_other_keys_stay() {
    let steps = json!([tool_step("c1", 1500), {"text": "done"}]);
    let s = scripted(steps, "", false);
    let d = &s.d;
    let id = start_turn(d).await;
    let mut watched = stream(d, "SubscribeToTask", json!({"id": id}), true).await;
    s.wait_calls(1).await;
    let old = inject(d, &id, json!({"id": "old", "body": "CI is red", "dedupeKey": "ci"})).await;
    assert_eq!(old["displaced"], json!([]));
    let other = inject(d, &id, json!({"id": "budget", "body": "Mind the budget", "dedupeKey": "cost"})).await;
    assert_eq!(other["displaced"], json!([]), "another key displaces nothing");
    let new = inject(d, &id, json!({"id": "new", "body": "CI is green", "dedupeKey": "ci"})).await;
    assert_eq!(new["displaced"], json!(["old"]));
    // The same id again: the original result, no second reminder.
    let again = inject(d, &id, json!({"id": "new", "body": "CI is green", "dedupeKey": "ci"})).await;
    assert_eq!(again, new, "a repeated id answers the original result");
    let old_again = inject(d, &id, json!({"id": "old", "body": "CI is red", "dedupeKey": "ci"})).await;
    assert_eq!(old_again, old, "an ended reminder's id still answers its original result");

    let frames = watched.collect().await;
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reminder_ids(&reqs[0]), Vec::<String>::new());
    assert_eq!(reminder_ids(&reqs[1]), ["budget", "new"], "the displaced one never reaches the model");
    let events = reminder_events(&frames);
    assert_eq!(events[0], json!({"event": "deduped", "reminderId": "old", "displacedBy": "new"}));
    let emitted: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "emitted")
        .map(|e| e["reminderId"].as_str().unwrap())
        .collect();
    assert_eq!(emitted, ["budget", "new"], "each delivered once; no duplicate from the repeated id");
}

#[tokio::test]
async fn a_send_message_carrying_a_reminder_is_an_injection() {
    let steps = json!([tool_step("c1", 1500), {"text": "done"}]);
    let s = scripted(steps, "", false);
    let d = &s.d;
    let id = start_turn(d).await;
    s.wait_calls(1).await;
    for (b, rid) in [(Binding::JsonRpc, "via-rpc"), (Binding::Rest, "via-rest")] {
        let mut m = user_msg(&uid("compat"), "this text is not a turn");
        m["taskId"] = json!(id);
        m["metadata"] = json!({URI: {"reminder": {"id": rid, "body": format!("sent {rid}")}}});
        let r = d.ok(b, "SendMessage", json!({"message": m})).await;
        assert_eq!(r["task"]["id"], json!(id), "{b:?}: the reply is the task: {r}");
    }
    // Without a taskId, and with a malformed envelope: InvalidParams naming the field.
    let mut m = user_msg(&uid("compat"), "x");
    m["metadata"] = json!({URI: {"reminder": {"body": "b"}}});
    expect_error(d.op(Binding::Rest, "SendMessage", json!({"message": m.clone()})).await, -32602)
        .assert_field("message.taskId");
    m["taskId"] = json!(id);
    m["metadata"] = json!({URI: {"reminder": {"body": "b", "ttlTurns": "two"}}});
    expect_error(d.op(Binding::JsonRpc, "SendMessage", json!({"message": m.clone()})).await, -32602)
        .assert_field(&format!("message.metadata[\"{URI}\"].reminder.ttlTurns"));
    m["metadata"] = json!({URI: {"reminder": {}}});
    let e = expect_error(d.op(Binding::JsonRpc, "SendMessage", json!({"message": m})).await, -32602);
    let body = format!("message.metadata[\"{URI}\"].reminder.body");
    assert_eq!(e.fields(), [body.as_str()], "{}", e.error);
    assert_eq!(e.error["message"], json!(format!("{body}: is required")));
    // The SendMessage around the reminder is checked as any other, and a
    // refused one injects nothing (the model's request below has the two
    // reminders sent above only).
    let carrying = |f: &dyn Fn(&mut Value, &mut Value)| {
        let mut m = user_msg(&uid("compat"), "x");
        m["taskId"] = json!(id);
        m["metadata"] = json!({URI: {"reminder": {"body": "refused"}}});
        let mut p = json!({});
        f(&mut m, &mut p);
        p["message"] = m;
        p
    };
    let bad: Vec<(Value, &str)> = vec![
        (carrying(&|m, _| m["messageId"] = json!("")), "message.messageId"),
        (carrying(&|m, _| m["parts"] = json!([])), "message.parts"),
        (carrying(&|m, _| m["contextId"] = json!("not-the-tasks-context")), "message.contextId"),
        (carrying(&|_, p| p["configuration"] = json!({"historyLength": -1})), "configuration.historyLength"),
        (
            carrying(&|_, p| {
                p["configuration"] =
                    json!({"taskPushNotificationConfig": {"url": "https://example.com/hook"}})
            }),
            "configuration.taskPushNotificationConfig",
        ),
    ];
    for (p, field) in bad {
        expect_error(d.op(Binding::JsonRpc, "SendMessage", p.clone()).await, -32602).assert_field(field);
    }
    let mut unsupported = carrying(&|_, _| {});
    unsupported["message"]["parts"] = json!([{"text": "x", "mediaType": "application/x-unsupported"}]);
    expect_error(d.op(Binding::JsonRpc, "SendMessage", unsupported).await, -32005);

    let done = d.wait_task(Binding::JsonRpc, &id, 20, |t| task_state(t) == "TASK_STATE_COMPLETED").await;
    let reqs = s.recorded();
    assert_eq!(reminder_ids(&reqs[1]), ["via-rpc", "via-rest"]);
    let history = done["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "the carrying messages enter no history: {done}");
    assert!(!done.to_string().contains("this text is not a turn"), "{done}");
}
