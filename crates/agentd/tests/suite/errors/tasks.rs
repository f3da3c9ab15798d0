//! Errors about tasks, on both bindings: unknown tasks, terminal tasks,
//! a mismatched context, unsupported content, push turned off, and REST
//! paths that name no operation.

use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn id_of(r: &Value) -> String {
    r["task"]["id"].as_str().expect("task id").to_owned()
}

#[tokio::test]
async fn an_unknown_task_is_not_found_on_every_operation() {
    let d = Daemon::start(&["--agent", "tck", "--push-allow-private"]);
    let t = "no-such-task";
    let ops = [
        ("GetTask", json!({"id": t})),
        ("CancelTask", json!({"id": t})),
        ("SendMessage", tck_on("tck-complete-task", t)),
        ("CreateTaskPushNotificationConfig", json!({"taskId": t, "url": "http://127.0.0.1:9/hook"})),
        ("GetTaskPushNotificationConfig", json!({"taskId": t, "id": "c1"})),
        ("ListTaskPushNotificationConfigs", json!({"taskId": t})),
        ("DeleteTaskPushNotificationConfig", json!({"taskId": t, "id": "c1"})),
    ];
    for b in BINDINGS {
        for (method, params) in &ops {
            let e = expect_error(d.op(b, method, params.clone()).await, -32001);
            let key = if b == Binding::Rest { "details" } else { "data" };
            assert_eq!(
                e.error[key][0]["metadata"]["taskId"], t,
                "{b:?} {method}: ErrorInfo names the task: {}",
                e.error
            );
        }
        for (method, params) in
            [("SubscribeToTask", json!({"id": t})), ("SendStreamingMessage", tck_on("tck-stream-001", t))]
        {
            let s = d.stream(b, method, params).await;
            expect_error(Err(s.refused().await), -32001);
        }
    }
    // The REST body is exactly a google.rpc.Status under `error`.
    let r = d.raw(Method::GET, &d.rest_url("/tasks/no-such-task"), None, &[("A2A-Version", "1.0")]).await;
    assert_eq!(r.status, 404);
    assert!(r.header("content-type").starts_with("application/json"), "{}", r.header("content-type"));
    let body = r.json();
    let keys =
        |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<BTreeSet<_>>()).unwrap_or_default();
    assert_eq!(keys(&body), BTreeSet::from(["error".to_owned()]), "{body}");
    let want = ["code", "details", "message", "status"].map(str::to_owned);
    assert_eq!(keys(&body["error"]), BTreeSet::from(want), "{body}");
    assert_eq!(body["error"]["status"], "NOT_FOUND", "{body}");
}

#[tokio::test]
async fn terminal_tasks_refuse_messages_and_subscriptions_before_any_stream() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        for scenario in ["tck-complete-task", "tck-reject-task"] {
            let id = id_of(&d.ok(b, "SendMessage", tck(scenario)).await);
            let before = d.ok(b, "GetTask", json!({"id": id})).await;
            expect_error(d.op(b, "SendMessage", tck_on("tck-complete-task", &id)).await, -32004);
            for (method, params) in [
                ("SubscribeToTask", json!({"id": id})),
                ("SendStreamingMessage", tck_on("tck-stream-001", &id)),
            ] {
                let s = d.stream(b, method, params).await;
                assert!(!s.sse.is_sse(), "{b:?} {method}: refused before the stream opens");
                assert!(
                    s.sse.content_type.starts_with("application/json"),
                    "{b:?} {method}: {}",
                    s.sse.content_type
                );
                expect_error(Err(s.refused().await), -32004);
            }
            let after = d.ok(b, "GetTask", json!({"id": id})).await;
            assert_eq!(after, before, "{b:?} {scenario}: a terminal task does not change");
        }
    }
}

#[tokio::test]
async fn a_context_that_does_not_match_the_task_is_invalid() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let r = d.ok(b, "SendMessage", tck("tck-input-required")).await;
        let (id, ctx) = (id_of(&r), r["task"]["contextId"].clone());
        let mut p = tck_on("tck-complete-task", &id);
        p["message"]["contextId"] = json!(uid("another-context"));
        expect_error(d.op(b, "SendMessage", p.clone()).await, -32602).assert_field("message.contextId");
        let t = d.ok(b, "GetTask", json!({"id": id})).await;
        assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{b:?}: the refused message changed nothing");
        p["message"]["contextId"] = ctx;
        let r = d.ok(b, "SendMessage", p).await;
        assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED", "{b:?}: the matching context is fine");
    }
}

#[tokio::test]
async fn a_part_of_an_unsupported_media_type_is_refused() {
    let d = Daemon::start(&["--agent", "tck"]);
    let png = json!({"raw": "iVBORw0KGgo=", "filename": "a.png", "mediaType": "image/png"});
    for b in BINDINGS {
        let mut p = tck("tck-complete-task");
        p["message"]["parts"] = json!([{"text": "look"}, png]);
        let e = expect_error(d.op(b, "SendMessage", p.clone()).await, -32005);
        assert!(e.error["message"].as_str().unwrap_or("").contains("image/png"), "{b:?}: {}", e.error);
        let s = d.stream(b, "SendStreamingMessage", p).await;
        expect_error(Err(s.refused().await), -32005);
    }
    let l = d.ok(Binding::JsonRpc, "ListTasks", json!({})).await;
    assert_eq!(l["totalSize"], 0, "refused messages create no task: {l}");
    let mut p = tck("tck-complete-task");
    p["message"]["parts"][0]["mediaType"] = json!("text/plain");
    d.ok(Binding::Rest, "SendMessage", p).await;
}

#[tokio::test]
async fn push_operations_fail_when_push_is_turned_off() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_with_env(tmp.path(), &["--agent", "tck"], &[("AGENTD_PUSH_ENABLED", "false")]);
    let card = d.raw(Method::GET, &format!("{}/.well-known/agent-card.json", d.url), None, &[]).await.json();
    assert_eq!(card["capabilities"]["pushNotifications"], false, "the card tells the truth: {card}");
    let id = id_of(&d.call("SendMessage", tck("tck-input-required")).await);
    let url = "https://hooks.example.com/a2a";
    for b in BINDINGS {
        for (method, params) in [
            ("CreateTaskPushNotificationConfig", json!({"taskId": id, "url": url})),
            ("GetTaskPushNotificationConfig", json!({"taskId": id, "id": "c1"})),
            ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
            ("DeleteTaskPushNotificationConfig", json!({"taskId": id, "id": "c1"})),
        ] {
            expect_error(d.op(b, method, params).await, -32003);
        }
        let mut p = tck("tck-complete-task");
        p["configuration"] = json!({"taskPushNotificationConfig": {"url": url}});
        expect_error(d.op(b, "SendMessage", p).await, -32003);
    }
}

#[tokio::test]
async fn rest_paths_without_an_operation_are_json_404s() {
    let d = Daemon::start(&[]);
    let cases = [
        (Method::GET, "/nothing-here/at/all/x"),
        (Method::GET, "/tasks/t/pushNotificationConfigs/c/extra"),
        (Method::DELETE, "/tasks/t"),
        (Method::GET, "/message:send"),
        (Method::POST, "/tasks/t:explode"),
        (Method::PUT, "/tasks"),
        (Method::GET, ""),
        (Method::POST, "/"),
    ];
    for (method, path) in cases {
        let r = d.raw(method.clone(), &d.rest_url(path), None, &[("A2A-Version", "1.0")]).await;
        assert_eq!(r.status, 404, "{method} {path}: {}", r.text);
        assert!(r.header("content-type").starts_with("application/json"), "{method} {path}");
        let body = r.json();
        assert_eq!(body["error"]["code"], 404, "{method} {path}: {body}");
        assert!(body["error"]["message"].is_string() && body["error"]["status"].is_string(), "{body}");
    }
}
