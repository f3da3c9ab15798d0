//! Built-in tools that start work elsewhere adopt it after `kill -9`
//! instead of starting it again (`docs/durability.md`): `delegate` follows
//! the task its peer (a second real daemon) made for the first attempt.
//! The peer's turn waits in the Python MCP server's `hold` tool until the
//! test releases it, so the kill lands while the delegator waits.

use super::{Durable, reply};
use crate::common::*;
use crate::mcp_servers::{HttpServer, skipped};
use serde_json::{Value, json};
use std::path::Path;

/// A peer daemon whose scripted turn calls `py__hold`, then answers.
fn holding_peer(dir: &Path, server: &HttpServer) -> Daemon {
    let steps = json!([
        {"tool_calls": [{"name": "py__hold", "arguments": {}}]},
        {"text": "the peer's answer"}
    ]);
    let script = dir.join("script.json");
    std::fs::write(&script, serde_json::to_vec(&steps).expect("steps")).expect("script");
    let yaml = format!(
        "model:\n  kind: scripted\n  script: {}\nmcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n",
        script.display(),
        server.url()
    );
    let cfg = write_config(dir, &yaml);
    Daemon::start_in(&dir.join("data"), &["--config", cfg.to_str().expect("utf-8")])
}

/// How often the server's `hold` ran.
async fn hold_calls(server: &HttpServer) -> u64 {
    let url = format!("http://127.0.0.1:{}/calls", server.port);
    let counts: Value = reqwest::get(&url).await.expect("GET /calls").json().await.expect("JSON counts");
    counts["hold"].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_delegate_waits_follows_the_peers_task_and_never_sends_the_message_again() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let peer_dir = tempfile::tempdir().expect("tempdir");
    let peer = holding_peer(peer_dir.path(), &server);
    let steps = json!([
        {"tool_calls": [{"name": "delegate", "arguments": {"peer": "b", "objective": "review the plan"}}]},
        {"text": "Reviewed."}
    ]);
    let peers = format!("a2a:\n  peers:\n    - name: b\n      url: {}\n", peer.url);
    let mut s = Durable::start(steps, &server, &peers);
    let id = s.send("get the plan reviewed").await;
    // The peer's task id is journaled; the peer's turn waits in `hold`.
    s.wait_log("peer task recorded", 1).await;
    s.kill9_and_restart();
    s.wait_log("following a delegated task again", 1).await;
    server.release();

    let t = s.wait_end(&id).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}; log:\n{}", s.d.log());
    assert_eq!(reply(&t), "Reviewed.", "{t}");
    let theirs = peer.call("ListTasks", json!({"pageSize": 10, "historyLength": 10})).await;
    assert_eq!(theirs["totalSize"], 1, "the peer got exactly one task: {theirs}");
    let task = &theirs["tasks"][0];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let asked: Vec<&Value> =
        task["history"].as_array().expect("history").iter().filter(|m| m["role"] == "ROLE_USER").collect();
    assert_eq!(asked.len(), 1, "one message reached the peer: {task}");
    assert_eq!(hold_calls(&server).await, 1, "the peer's turn ran once");
    let calls = s.recorded();
    assert_eq!(calls.len(), 2, "the delegator's model was asked twice in all: {calls:#?}");
    assert_eq!(tool_results(&calls[1]), ["the peer's answer"], "the tool result is the peer's answer");
}
