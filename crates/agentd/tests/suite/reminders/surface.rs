//! The extension on the card, the activation echo, push webhooks without
//! reminder events (a real receiver), and `agentd remind` (`--propagate`
//! included).

use super::*;
use crate::common::scripted::*;
use crate::common::*;
use axum::extract::State;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::mpsc;

#[tokio::test]
async fn the_card_declares_the_extension_with_its_limits_and_the_method_echoes_activation() {
    let yaml = "reminders:\n  max_ttl_turns: 5\n  max_body_bytes: 100\n  max_pending_per_task: 3\n";
    let s = scripted(json!([tool_step("c1", 1500), {"text": "done"}]), yaml, false);
    let d = &s.d;
    let card: Value = d
        .http
        .get(format!("{}/.well-known/agent-card.json", d.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ext = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["uri"] == URI)
        .cloned()
        .expect("declared on the card");
    assert!(ext.get("required").is_none_or(|r| r == false), "never required: {ext}");
    assert_schema("RemindersCapabilities", &ext["params"]);
    assert_eq!(
        ext["params"],
        json!({"inject": true, "emit": true, "propagate": ["none", "subagents"],
               "roleHints": ["system", "developer", "user"], "maxTtlTurns": 5, "maxBodyBytes": 100,
               "maxPendingPerTask": 3})
    );

    let id = start_turn(d).await;
    let params = json!({"taskId": id, "reminder": {"body": "hi"}});
    let (h, r) = d.rpc_with("InjectTaskReminder", params.clone(), &[("A2A-Extensions", URI)]).await;
    assert!(r.get("result").is_some(), "{r}");
    assert_eq!(h.get("a2a-extensions").and_then(|v| v.to_str().ok()), Some(URI), "activation is echoed");
    let (h, r) = d.rpc_with("InjectTaskReminder", params, &[]).await;
    assert!(r.get("result").is_some(), "the method works without activation: {r}");
    assert!(h.get("a2a-extensions").is_none(), "nothing echoed when not activated");
    let body = json!({"reminder": {"id": "tenant-1", "body": "under a tenant"}});
    let (status, r) =
        d.rest(reqwest::Method::POST, &format!("/acme/tasks/{id}:injectReminder"), Some(body)).await;
    assert_eq!((status, &r["reminderId"]), (200, &json!("tenant-1")), "the route exists under a tenant: {r}");
}

async fn hook(State(tx): State<Arc<mpsc::UnboundedSender<Value>>>, body: String) -> &'static str {
    let _ = tx.send(serde_json::from_str(&body).unwrap_or(Value::String(body)));
    "ok"
}

#[tokio::test]
async fn push_webhooks_never_carry_reminder_events() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route("/hook", axum::routing::post(hook)).with_state(Arc::new(tx));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let yaml = "push:\n  allow_private: true\n";
    let s = scripted(json!([tool_step("c1", 1500), tool_step("c2", 0), {"text": "done"}]), yaml, false);
    let d = &s.d;
    let url = format!("http://127.0.0.1:{port}/hook");
    let params = json!({
        "message": user_msg("m1", "go"),
        "configuration": {"returnImmediately": true, "taskPushNotificationConfig": {"url": url}},
    });
    let mut watched = stream(d, "SendStreamingMessage", params, true).await;
    let first = watched.next().await.unwrap();
    let id = first["result"]["task"]["id"].as_str().unwrap().to_owned();
    s.wait_calls(1).await;
    inject(d, &id, json!({"body": "pushed? never", "ttlTurns": 2})).await;
    let frames = watched.collect().await;
    assert_eq!(reminder_events(&frames).len(), 3, "the events exist (emitted twice, expired): {frames:?}");

    let mut bodies = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !bodies.iter().any(|b: &Value| b["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED") {
        let b = tokio::time::timeout_at(deadline, rx.recv()).await.expect("the webhook got the end").unwrap();
        bodies.push(b);
    }
    assert!(bodies.len() >= 2, "{bodies:?}");
    for b in &bodies {
        assert!(!b.to_string().contains(URI), "a webhook body carries a reminder event: {b}");
    }
    server.abort();
}

#[tokio::test]
async fn agentd_remind_injects_from_the_command_line() {
    let s = slow_turn("");
    let d = &s.d;
    let id = start_turn(d).await;
    s.wait_calls(1).await;
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
            .arg("remind")
            .args(args)
            .args(["--url", &d.url])
            .output()
            .expect("run agentd remind")
    };
    let first = run(&[&id, "Use the staging database.", "--dedupe-key", "db", "--ttl", "2"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let first_id = String::from_utf8_lossy(&first.stdout).trim().to_owned();
    let second = run(&[&id, "Use the prod replica.", "--dedupe-key", "db"]);
    assert!(second.status.success());
    let second_id = String::from_utf8_lossy(&second.stdout).trim().to_owned();
    assert!(String::from_utf8_lossy(&second.stderr).contains(&first_id), "displaced is reported");
    let refused = run(&["no-such-task", "x"]);
    assert!(!refused.status.success(), "an unknown task fails the command");
    s.wait_calls(2).await;
    assert_eq!(reminder_ids(&s.recorded()[1]), [second_id]);
}

#[tokio::test]
async fn agentd_remind_propagate_copies_the_reminder_to_live_subagents() {
    let spawn = json!({"tool_calls": [{"id": "p1", "name": "spawn_subagent",
        "arguments": {"instruction": "You help.", "input": "Work.", "name": "helper"}}]});
    let steps = json!([
        spawn,                   // 1 parent
        tool_step("a1", 2000),   // 2 helper: the reminder arrives meanwhile
        {"text": "helper done"}, // 3 helper
        {"text": "all done"},    // 4 parent
    ]);
    let s = scripted(steps, "", false);
    let d = &s.d;
    let id = start_turn(d).await;
    s.wait_calls(2).await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["remind", &id, "Rebase first.", "--propagate", "--url", &d.url])
        .output()
        .expect("run agentd remind");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reminder = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    d.wait_task(Binding::JsonRpc, &id, 20, |t| task_state(t) == "TASK_STATE_COMPLETED").await;
    let ids: Vec<Vec<String>> = s.recorded().iter().map(reminder_ids).collect();
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert!(ids[2].len() == 1 && ids[2][0] != reminder, "the live helper got a copy: {ids:?}");
    assert_eq!(ids[3], [reminder], "the task itself got it: {ids:?}");
}

#[test]
fn agentd_prints_the_published_schema_bundle() {
    let bin = env!("CARGO_BIN_EXE_agentd");
    let out = std::process::Command::new(bin).args(["--extension-schema", "reminders"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/ext/reminders/schema.json");
    let published: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(printed, published, "regenerate docs/ext/reminders/schema.json (see its README)");
    let unknown = std::process::Command::new(bin).args(["--extension-schema", "nope"]).output().unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("reminders"), "the error lists the names");
}
