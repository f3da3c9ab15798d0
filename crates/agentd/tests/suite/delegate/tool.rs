//! The `delegate` tool, driven by the scripted model of a real daemon, and
//! the daemon's peer configuration (file, environment, flags).

use super::{PEER_AUTH, TOKEN, wait_working};
use crate::common::*;
use serde_json::{Value, json};
use std::time::Duration;

fn scripted_daemon(dir: &std::path::Path, steps: Value, peers: &str) -> (Daemon, std::path::PathBuf) {
    let script = dir.join("script.json");
    std::fs::write(&script, serde_json::to_vec(&steps).unwrap()).unwrap();
    let record = dir.join("requests.jsonl");
    let yaml = format!(
        "model:\n  kind: scripted\n  script: {}\n  record_to: {}\n{peers}",
        script.display(),
        record.display()
    );
    let cfg = write_config(dir, &yaml);
    (Daemon::start_in(&dir.join("data"), &["--config", cfg.to_str().unwrap()]), record)
}

fn recorded(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"].as_array().into_iter().flatten().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn the_model_delegates_with_the_tool_and_gets_the_peers_answer() {
    // The peer is the default agent with the echo model.
    let peer = Daemon::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "delegate", "arguments": {"peer": "echoer", "objective": "summarize the plan"}}]},
        {"tool_calls": [{"id": "c2", "name": "delegate", "arguments": {"peer": "nobody", "objective": "x"}}]},
        {"text": "The peer said its part."}
    ]);
    let peers = format!("a2a:\n  peers:\n    - name: echoer\n      url: {}\n", peer.url);
    let (d, record) = scripted_daemon(dir.path(), steps, &peers);
    let r = d.call("SendMessage", send_params("m1", "Ask the peer.", None)).await;
    let id = r["task"]["id"].as_str().unwrap();
    let t = wait_for_state(&d, id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert!(t.to_string().contains("The peer said its part."), "{t}");

    let reqs = recorded(&record);
    assert_eq!(reqs.len(), 3);
    assert!(tool_names(&reqs[0]).contains(&"delegate".to_owned()), "{:?}", tool_names(&reqs[0]));
    let enum_ = &reqs[0]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "delegate").unwrap()["parameters"]
        ["properties"]["peer"]["enum"];
    assert_eq!(enum_, &json!(["echoer"]));
    let tool_result = |req: &Value| req["messages"].as_array().unwrap().last().unwrap().clone();
    let first = tool_result(&reqs[1]);
    assert_eq!(first["role"], "tool");
    assert_eq!(first["content"], "echo: summarize the plan", "{first}");
    let second = tool_result(&reqs[2]);
    let text = second["content"].as_str().unwrap();
    assert!(text.contains("\"nobody\"") && text.contains("echoer"), "{text}");

    // The peer ran a real task for it.
    let list = peer.call("ListTasks", json!({})).await;
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1, "{list}");
}

#[tokio::test]
async fn cancelling_a_delegating_task_cancels_the_peers_task() {
    // The peer's model takes a minute to answer.
    let peer_dir = tempfile::tempdir().unwrap();
    let (peer, _) = scripted_daemon(peer_dir.path(), json!([{"text": "too late", "delay_ms": 60000}]), "");
    let dir = tempfile::tempdir().unwrap();
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "delegate", "arguments": {"peer": "b", "objective": "take your time"}}]},
        {"text": "unreached"}
    ]);
    let peers = format!("a2a:\n  peers:\n    - name: b\n      url: {}\n", peer.url);
    let (d, _record) = scripted_daemon(dir.path(), steps, &peers);
    let r = d
        .call(
            "SendMessage",
            json!({"message": user_msg("m1", "go"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = r["task"]["id"].as_str().unwrap();
    let theirs = wait_working(&peer).await;
    d.call("CancelTask", json!({"id": id})).await;
    wait_for_state(&d, id, "TASK_STATE_CANCELED", Duration::from_secs(10)).await;
    wait_for_state(&peer, &theirs, "TASK_STATE_CANCELED", Duration::from_secs(10)).await;
}

#[tokio::test]
async fn peers_from_the_environment_delegate_with_credentials_that_never_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), PEER_AUTH);
    let peer = Daemon::start_with_env(
        &dir.path().join("peer"),
        &["--config", cfg.to_str().unwrap()],
        &[("PEER_TOKEN", TOKEN)],
    )
    .with_token(TOKEN);
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "delegate", "arguments": {"peer": "b", "objective": "hello peer"}}]},
        {"text": "ok"}
    ]);
    let script = dir.path().join("script.json");
    std::fs::write(&script, serde_json::to_vec(&steps).unwrap()).unwrap();
    let peers = format!("b={};credentials=env:B_TOKEN", peer.url);
    let d = Daemon::start_with_env(
        &dir.path().join("caller"),
        &["--model", "scripted", "--model-script", script.to_str().unwrap()],
        &[("AGENTD_A2A_PEERS", peers.as_str()), ("B_TOKEN", TOKEN), ("AGENTD_LOG", "debug")],
    );
    let r = d.call("SendMessage", send_params("m1", "go", None)).await;
    let id = r["task"]["id"].as_str().unwrap();
    let t = wait_for_state(&d, id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert!(t.to_string().contains("ok"), "{t}");
    // The authenticated peer ran it.
    let list = peer.call("ListTasks", json!({})).await;
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1, "{list}");
    assert!(list.to_string().contains("echo: hello peer"), "{list}");
    assert!(!d.log().contains(TOKEN), "the peer token reached the log");
}

#[test]
fn bad_peer_configuration_stops_the_daemon_with_the_reason() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"]).arg(dir.path()).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&["--a2a-peer", "b=http://127.0.0.1:9;credentials=env:AGENTD_TEST_NO_SUCH_VAR"], &[]);
    assert!(
        e.contains("a2a.peers[b].credentials") && e.contains("AGENTD_TEST_NO_SUCH_VAR is not set"),
        "{e}"
    );
    let e = run(&["--a2a-peer", "b=ftp://h"], &[]);
    assert!(e.contains("a2a.peers[b].url"), "{e}");
    let e = run(&["--a2a-peer", "b=http://h;credentials=plaintext"], &[]);
    assert!(e.contains("--a2a-peer") && e.contains("env:NAME"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let twice = "a2a:\n  peers:\n    - {name: a, url: 'http://h'}\n    - {name: a, url: 'http://i'}\n";
    let cfg = write_config(dir.path(), twice);
    let e = run(&["--config", cfg.to_str().unwrap()], &[]);
    assert!(e.contains("\"a\" is used twice"), "{e}");
}

#[tokio::test]
async fn without_peers_the_model_has_no_delegate_tool() {
    let dir = tempfile::tempdir().unwrap();
    let (d, record) = scripted_daemon(dir.path(), json!([{"text": "hi"}]), "");
    let r = d.call("SendMessage", send_params("m1", "hello", None)).await;
    wait_for_state(&d, r["task"]["id"].as_str().unwrap(), "TASK_STATE_COMPLETED", Duration::from_secs(15))
        .await;
    let reqs = recorded(&record);
    assert_eq!(reqs.len(), 1);
    assert!(!tool_names(&reqs[0]).contains(&"delegate".to_owned()), "{:?}", tool_names(&reqs[0]));
}
