//! The task-annotations extension end to end, on both bindings: present,
//! valid (every object is checked against the published schema by the
//! harness) and echoed exactly when the request activates it; absent, with
//! `metadata` absent, when it does not; private to the task's readers;
//! never in webhook bodies; `statusHistory` complete, ordered and durable.

use crate::common::annotations::URI;
use crate::common::*;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use std::time::Duration;

const ON: [(&str, &str); 1] = [("A2A-Extensions", URI)];

fn echo(h: &HeaderMap) -> Option<String> {
    h.get("a2a-extensions").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

/// The annotations of a Task (panics when absent).
fn ann(task: &Value) -> &Value {
    let a = &task["metadata"][URI];
    assert!(a.is_object(), "the task carries no annotations: {task}");
    a
}

fn states(a: &Value) -> Vec<String> {
    a["statusHistory"]
        .as_array()
        .expect("statusHistory")
        .iter()
        .map(|e| e["state"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Entries oldest first with non-decreasing timestamps, `created` the first
/// one, the last one the task's current state.
fn assert_history(task: &Value) {
    let a = ann(task);
    let h = a["statusHistory"].as_array().expect("statusHistory");
    assert_eq!(h[0]["state"], "TASK_STATE_SUBMITTED", "{a}");
    assert_eq!(a["created"], h[0]["ts"], "created is the first entry: {a}");
    let ts: Vec<chrono::DateTime<chrono::FixedOffset>> = h
        .iter()
        .map(|e| chrono::DateTime::parse_from_rfc3339(e["ts"].as_str().expect("ts")).expect("rfc3339"))
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "timestamps never decrease: {a}");
    assert_eq!(
        h.last().expect("entry")["state"],
        task["status"]["state"],
        "the last entry is the current state: {a}"
    );
}

/// Without activation: no annotations and no `metadata` at all.
fn assert_plain(task: &Value) {
    assert!(task.get("metadata").is_none(), "metadata must be absent without activation: {task}");
}

#[tokio::test]
async fn unary_methods_annotate_exactly_when_activated() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        // SendMessage.
        let (h, r) = d.op_with(b, "SendMessage", tck("tck-input-required"), &ON).await;
        let task = r.expect("send")["task"].clone();
        assert_eq!(echo(&h).as_deref(), Some(URI), "{b:?}: SendMessage echoes the URI");
        let a = ann(&task);
        assert_eq!(a["link"], json!({"kind": "turn", "id": task["id"]}), "{b:?}");
        assert_eq!(a["principal"], "operator:local");
        assert_eq!(states(a).last().map(String::as_str), Some("TASK_STATE_INPUT_REQUIRED"));
        assert_history(&task);
        let id = task["id"].as_str().expect("id").to_owned();

        let (h, r) = d.op_with(b, "SendMessage", tck("tck-complete-task"), &[]).await;
        assert_plain(&r.expect("send")["task"]);
        assert_eq!(echo(&h), None, "{b:?}: nothing activated, nothing echoed");

        // Unknown URIs are neither activated nor echoed.
        let mixed = format!("https://example.com/ext/unknown, {URI}");
        let (h, r) = d.op_with(b, "GetTask", json!({"id": id}), &[("A2A-Extensions", &mixed)]).await;
        assert_eq!(echo(&h).as_deref(), Some(URI), "{b:?}: only the known URI is echoed");
        assert_history(&r.expect("get"));
        let (h, r) = d
            .op_with(
                b,
                "GetTask",
                json!({"id": id}),
                &[("A2A-Extensions", "https://example.com/ext/unknown")],
            )
            .await;
        assert_eq!(echo(&h), None, "{b:?}: an unknown URI is not echoed");
        assert_plain(&r.expect("get"));
        // The legacy header name activates too.
        let (h, r) = d.op_with(b, "GetTask", json!({"id": id}), &[("X-A2A-Extensions", URI)]).await;
        assert_eq!(echo(&h).as_deref(), Some(URI));
        assert_history(&r.expect("get"));

        // ListTasks: every task annotated, or none.
        let (h, r) = d.op_with(b, "ListTasks", json!({"pageSize": 100}), &ON).await;
        assert_eq!(echo(&h).as_deref(), Some(URI), "{b:?}: ListTasks echoes");
        let page = r.expect("list");
        let tasks = page["tasks"].as_array().expect("tasks");
        assert!(tasks.len() >= 2);
        tasks.iter().for_each(assert_history);
        let (h, r) = d.op_with(b, "ListTasks", json!({"pageSize": 100}), &[]).await;
        assert_eq!(echo(&h), None);
        r.expect("list")["tasks"].as_array().expect("tasks").iter().for_each(assert_plain);

        // CancelTask.
        let (h, r) = d.op_with(b, "CancelTask", json!({"id": id}), &ON).await;
        assert_eq!(echo(&h).as_deref(), Some(URI), "{b:?}: CancelTask echoes");
        let canceled = r.expect("cancel");
        assert_eq!(task_state(&canceled), "TASK_STATE_CANCELED");
        assert_history(&canceled);
        let s = states(ann(&canceled));
        assert_eq!(
            &s[s.len() - 2..],
            ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED"],
            "{b:?}: every state in order"
        );
        let (h, r) = d.op_with(b, "CancelTask", json!({"id": id}), &[]).await;
        assert_eq!(echo(&h), None);
        assert_plain(&r.expect("cancel of a canceled task answers its snapshot"));

        // A method the extension does not apply to neither activates nor echoes it.
        let (h, _) = d.op_with(b, "ListTaskPushNotificationConfigs", json!({"taskId": id}), &ON).await;
        assert_eq!(echo(&h), None, "{b:?}: not applicable to push config methods");
    }
    assert!(crate::common::annotations::validated() > 10, "the harness validated what it saw");
}

#[tokio::test]
async fn stream_task_payloads_are_annotated_exactly_when_activated() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let (h, mut ev) = d.stream_with(b, "SendStreamingMessage", tck("tck-stream-001"), &ON).await;
        assert_eq!(echo(&h).as_deref(), Some(URI), "{b:?}: the stream's response echoes");
        let all = ev.collect().await;
        assert_eq!(kind(&all[0]), "task");
        assert_history(&all[0]["task"]);
        for e in &all[1..] {
            assert!(!e.to_string().contains(URI), "{b:?}: only task payloads carry annotations: {e}");
        }

        let (h, mut ev) = d.stream_with(b, "SendStreamingMessage", tck("tck-stream-001"), &[]).await;
        assert_eq!(echo(&h), None);
        let all = ev.collect().await;
        assert_plain(&all[0]["task"]);
        assert!(all.iter().all(|e| !e.to_string().contains(URI)), "{b:?}: {all:?}");

        // SubscribeToTask on a waiting task: the first frame is the task.
        let waiting = d.ok(b, "SendMessage", tck("tck-input-required")).await["task"]["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let (h, mut ev) = d.stream_with(b, "SubscribeToTask", json!({"id": waiting}), &ON).await;
        assert_eq!(echo(&h).as_deref(), Some(URI), "{b:?}: SubscribeToTask echoes");
        let first = ev.next().await.expect("first frame");
        assert_history(&first["task"]);
        assert_eq!(task_state(&first["task"]), "TASK_STATE_INPUT_REQUIRED");
        let (h, mut plain) = d.stream_with(b, "SubscribeToTask", json!({"id": waiting}), &[]).await;
        assert_eq!(echo(&h), None);
        assert_plain(&plain.next().await.expect("first frame")["task"]);
        d.ok(b, "CancelTask", json!({"id": waiting})).await;
        let rest = ev.collect().await;
        assert_eq!(state(rest.last().expect("a final event")), Some("TASK_STATE_CANCELED"));
        drop(plain);
    }
}

#[tokio::test]
async fn the_status_history_survives_restarts_and_kill_9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::start_in(dir.path(), &["--agent", "tck"]);
    let b = Binding::JsonRpc;
    let (_, r) = d.op_with(b, "SendMessage", tck("tck-complete-task"), &ON).await;
    let done = r.expect("send")["task"].clone();
    assert_history(&done);
    let done_id = done["id"].as_str().expect("id").to_owned();
    let mut working = tck("test-resubscribe-message-id");
    working["configuration"] = json!({"returnImmediately": true});
    let working_id = d.ok(b, "SendMessage", working).await["task"]["id"].as_str().expect("id").to_owned();
    d.wait_task(b, &working_id, 10, |t| task_state(t) == "TASK_STATE_WORKING").await;
    assert_eq!(d.stop().code(), Some(0));

    let mut d = Daemon::process_in(dir.path(), &["--agent", "tck"]);
    let (_, r) = d.op_with(b, "GetTask", json!({"id": done_id}), &ON).await;
    let again = r.expect("get");
    assert_eq!(ann(&again), ann(&done), "the history of a finished task is exactly as it was");
    let (_, r) = d.op_with(b, "GetTask", json!({"id": working_id}), &ON).await;
    let failed = r.expect("get");
    assert_history(&failed);
    assert_eq!(states(ann(&failed)), ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_FAILED"]);

    // kill -9: acknowledged history is there after the restart.
    let waiting = d.ok(b, "SendMessage", tck("tck-input-required")).await["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (_, r) = d.op_with(b, "GetTask", json!({"id": waiting}), &ON).await;
    let before = r.expect("get");
    d.kill9();
    let d = Daemon::start_in(dir.path(), &["--agent", "tck"]);
    let (_, r) = d.op_with(b, "GetTask", json!({"id": waiting}), &ON).await;
    assert_eq!(ann(&r.expect("get")), ann(&before), "a waiting task keeps its history across kill -9");
}

#[tokio::test]
async fn annotations_are_seen_only_by_the_task_readers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let principals::Principals { d: _daemon, alice, bob, ops } = principals::start(dir.path(), "");
    for b in BINDINGS {
        let (_, r) = alice.op_with(b, "SendMessage", tck("tck-input-required"), &ON).await;
        let task = r.expect("send")["task"].clone();
        assert_eq!(ann(&task)["principal"], "user:alice");
        let id = task["id"].as_str().expect("id").to_owned();

        let (h, r) = bob.op_with(b, "GetTask", json!({"id": id}), &ON).await;
        expect_error(r, -32001);
        assert_eq!(echo(&h).as_deref(), Some(URI), "{b:?}: activation is echoed on errors too");
        let (_, r) = bob.op_with(b, "ListTasks", json!({"pageSize": 100}), &ON).await;
        assert!(!r.expect("list").to_string().contains(&id), "{b:?}: bob never sees alice's task");
        let (_, r) = bob.op_with(b, "CancelTask", json!({"id": id}), &ON).await;
        expect_error(r, -32001);
        let (_, ev) = bob.stream_with(b, "SubscribeToTask", json!({"id": id}), &ON).await;
        let e = ev.refused().await;
        assert_eq!(e.reason().as_deref(), Some("TASK_NOT_FOUND"));

        let (_, r) = ops.op_with(b, "GetTask", json!({"id": id}), &ON).await;
        let seen = r.expect("operators see every task");
        assert_eq!(ann(&seen)["principal"], "user:alice");
        let (_, r) = ops.op_with(b, "ListTasks", json!({"pageSize": 100}), &ON).await;
        assert!(r.expect("list").to_string().contains(&id));
        let (_, r) = alice.op_with(b, "CancelTask", json!({"id": id}), &ON).await;
        assert_history(&r.expect("cancel"));
    }
}

/// A webhook receiver on port 0 that keeps every body.
async fn receiver() -> (u16, tokio::sync::mpsc::UnboundedReceiver<Value>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: String| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(serde_json::from_str(&body).unwrap_or(Value::String(body)));
                "ok"
            }
        }),
    );
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (port, rx, server)
}

/// Whether `v` has a member named `name` anywhere.
fn has_member(v: &Value, name: &str) -> bool {
    match v {
        Value::Object(o) => o.contains_key(name) || o.values().any(|c| has_member(c, name)),
        Value::Array(a) => a.iter().any(|c| has_member(c, name)),
        _ => false,
    }
}

#[tokio::test]
async fn webhook_bodies_carry_neither_annotations_nor_history() {
    let d = Daemon::start(&["--agent", "tck", "--push-allow-private"]);
    let (port, mut rx, server) = receiver().await;
    let url = format!("http://127.0.0.1:{port}/hook");
    for b in BINDINGS {
        // Registered inline by a request that activated the extension.
        let mut p = tck("tck-stream-001");
        p["configuration"] = json!({"taskPushNotificationConfig": {"url": url}});
        let (h, r) = d.op_with(b, "SendMessage", p, &ON).await;
        assert_eq!(echo(&h).as_deref(), Some(URI));
        let task = r.expect("send")["task"].clone();
        assert_history(&task);
        // Registered separately on a waiting task, then resumed and canceled.
        let waiting = d.ok(b, "SendMessage", tck("tck-input-required")).await["task"]["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let (_, r) = d
            .op_with(b, "CreateTaskPushNotificationConfig", json!({"taskId": waiting, "url": url}), &ON)
            .await;
        r.expect("register");
        let (_, r) = d.op_with(b, "CancelTask", json!({"id": waiting}), &ON).await;
        r.expect("cancel");

        let mut bodies = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        let ended = |bodies: &[Value], id: &str, s: &str| {
            bodies
                .iter()
                .any(|v| v["statusUpdate"]["taskId"] == id && v["statusUpdate"]["status"]["state"] == s)
        };
        while !(ended(&bodies, task["id"].as_str().unwrap_or(""), "TASK_STATE_COMPLETED")
            && ended(&bodies, &waiting, "TASK_STATE_CANCELED"))
        {
            let v = tokio::time::timeout_at(deadline, rx.recv())
                .await
                .expect("webhook deliveries in time")
                .expect("body");
            bodies.push(v);
        }
        for v in &bodies {
            assert!(!v.to_string().contains(URI), "{b:?}: a webhook body carries annotations: {v}");
            assert!(!has_member(v, "history"), "{b:?}: a webhook body carries history: {v}");
            assert!(!has_member(v, "statusHistory"), "{b:?}: {v}");
        }
    }
    server.abort();
}
