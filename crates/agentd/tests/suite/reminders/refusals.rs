//! Every refusal of InjectTaskReminder on both bindings, and who may remind
//! a task (its owner and operators; everyone else sees no task).

use super::*;
use crate::common::scripted::*;
use crate::common::*;
use serde_json::{Value, json};

const LIMITS: &str = "reminders:\n  max_body_bytes: 64\n  max_ttl_turns: 3\n  max_pending_per_task: 2\n";

fn params(task: &str, reminder: Value) -> Value {
    json!({"taskId": task, "reminder": reminder})
}

/// A daemon whose model answers alice's first turn only after 30 s, and
/// that turn's task id, its model call under way.
async fn alice_working() -> (Scripted, String) {
    let slow = json!({"text": "late", "deltas": ["late"], "delay_ms": 30000});
    let s = scripted(json!([slow]), LIMITS, true);
    let sent = s
        .alice()
        .ok(
            Binding::JsonRpc,
            "SendMessage",
            json!({"message": user_msg("m1", "go"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    s.wait_calls(1).await;
    (s, id)
}

#[tokio::test]
async fn bad_reminders_unknown_and_ended_tasks_and_strangers_are_refused_on_both_bindings() {
    let (s, id) = alice_working().await;
    let (alice, bob, bot, ops) = (s.alice(), s.bob(), s.bot(), s.ops());

    let cases: Vec<(Value, &str)> = vec![
        (params(&id, json!({"body": ""})), "reminder.body"),
        (params(&id, json!({"body": "   "})), "reminder.body"),
        (params(&id, json!({"body": "x".repeat(65)})), "reminder.body"),
        (params(&id, json!({"body": "b", "ttlTurns": 0})), "reminder.ttlTurns"),
        (params(&id, json!({"body": "b", "ttlTurns": 4})), "reminder.ttlTurns"),
        (params(&id, json!({"body": "b", "ttlTurns": -1})), "reminder.ttlTurns"),
        (params(&id, json!({"body": "b", "roleHint": "boss"})), "reminder.roleHint"),
        (params(&id, json!({"body": "b", "propagate": "everyone"})), "reminder.propagate"),
        // Only the names: not the tagged form serde would otherwise take.
        (params(&id, json!({"body": "b", "roleHint": {"user": null}})), "reminder.roleHint"),
        (params(&id, json!({"body": "b", "propagate": {"subagents": null}})), "reminder.propagate"),
        (params(&id, json!({"body": "b", "id": ""})), "reminder.id"),
        (params(&id, json!({"body": "b", "dedupeKey": ""})), "reminder.dedupeKey"),
        (params(&id, json!({"body": "b", "colour": "red"})), "reminder.colour"),
        (params(&id, json!({})), "reminder.body"),
        (json!({"reminder": {"body": "b"}, "extra": 1}), "extra"),
    ];
    for b in BINDINGS {
        for (p, field) in &cases {
            if b == Binding::Rest && p.get("taskId").is_none() {
                continue; // the REST path always names the task
            }
            let e = expect_error(alice.op(b, "InjectTaskReminder", p.clone()).await, -32602);
            assert!(
                e.fields().iter().any(|f| f == field),
                "{b:?} {p}: expected a violation of {field}: {}",
                e.error
            );
        }
        let unknown = params("no-such-task", json!({"body": "b"}));
        expect_error(alice.op(b, "InjectTaskReminder", unknown).await, -32001);
        // Strangers see no task: a user who does not own it, and an agent.
        for stranger in [&bob, &bot] {
            expect_error(
                stranger.op(b, "InjectTaskReminder", params(&id, json!({"body": "b"}))).await,
                -32001,
            );
        }
    }

    // The owner and an operator may. Two are active, the limit: a third
    // is refused on both bindings, naming the limit; one that reuses a
    // key replaces instead of adding, so it is accepted.
    let a1 = params(&id, json!({"id": "a1", "body": "from alice", "dedupeKey": "k"}));
    let mine = alice.ok(Binding::Rest, "InjectTaskReminder", a1.clone()).await;
    ops.ok(Binding::JsonRpc, "InjectTaskReminder", params(&id, json!({"body": "from ops"}))).await;
    for b in BINDINGS {
        let e = expect_error(
            alice.op(b, "InjectTaskReminder", params(&id, json!({"body": "third"}))).await,
            -32004,
        );
        let msg = e.error["message"].as_str().unwrap_or("");
        assert!(msg.contains("max_pending_per_task"), "{b:?}: the refusal names the limit: {msg}");
    }
    let keyed = params(&id, json!({"body": "k again", "dedupeKey": "k"}));
    let replaced = alice.ok(Binding::JsonRpc, "InjectTaskReminder", keyed).await;
    assert_eq!(replaced["displaced"], json!(["a1"]));

    alice.ok(Binding::JsonRpc, "CancelTask", json!({"id": id})).await;
    for b in BINDINGS {
        expect_error(
            alice.op(b, "InjectTaskReminder", params(&id, json!({"body": "too late"}))).await,
            -32004,
        );
    }
    // An id already accepted still answers its original result.
    assert_eq!(alice.ok(Binding::JsonRpc, "InjectTaskReminder", a1).await, mine);
}

#[tokio::test]
async fn a_missing_or_mistyped_member_is_named_as_the_core_methods_name_it() {
    let (s, id) = alice_working().await;
    let alice = s.alice();

    let object = "invalid type: integer `5`, expected a JSON object";
    let cases: Vec<(Value, &str, String)> = vec![
        (json!({"taskId": id}), "reminder", "reminder: is required".into()),
        (params(&id, json!({})), "reminder.body", "reminder.body: is required".into()),
        (json!({"reminder": {"body": "b"}}), "taskId", "taskId: is required".into()),
        (params(&id, json!(5)), "reminder", format!("reminder: {object}")),
    ];
    for b in BINDINGS {
        for (p, field, message) in &cases {
            if b == Binding::Rest && p.get("taskId").is_none() {
                continue; // the REST path always names the task
            }
            let e = expect_error(alice.op(b, "InjectTaskReminder", p.clone()).await, -32602);
            assert_eq!(e.fields(), [*field], "{b:?} {p}: {}", e.error);
            assert_eq!(e.error["message"], json!(message), "{b:?} {p}");
        }
    }
    // None was kept: the task's two places for reminders are both free.
    for body in ["one", "two"] {
        alice.ok(Binding::JsonRpc, "InjectTaskReminder", params(&id, json!({"body": body}))).await;
    }
    expect_error(
        alice.op(Binding::JsonRpc, "InjectTaskReminder", params(&id, json!({"body": "3"}))).await,
        -32004,
    );
}

#[tokio::test]
async fn source_defaults_to_the_callers_principal() {
    let steps = json!([tool_step("c1", 1500), {"text": "done"}]);
    let s = scripted(steps, "", true);
    let (alice, ops) = (s.alice(), s.ops());
    let sent = alice
        .ok(
            Binding::JsonRpc,
            "SendMessage",
            json!({"message": user_msg("m1", "go"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    s.wait_calls(1).await;
    alice.ok(Binding::Rest, "InjectTaskReminder", params(&id, json!({"id": "ra", "body": "a"}))).await;
    ops.ok(Binding::JsonRpc, "InjectTaskReminder", params(&id, json!({"id": "ro", "body": "o"}))).await;
    let named = params(&id, json!({"id": "rn", "body": "n", "source": "agent:monitor"}));
    alice.ok(Binding::JsonRpc, "InjectTaskReminder", named).await;
    s.wait_calls(2).await;
    let block = s.recorded()[1]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    let want = [
        r#"<system-reminder source="user:alice" id="ra">a</system-reminder>"#,
        r#"<system-reminder source="operator:ops" id="ro">o</system-reminder>"#,
        r#"<system-reminder source="agent:monitor" id="rn">n</system-reminder>"#,
    ];
    assert_eq!(block, json!(want.join("\n")));
}
