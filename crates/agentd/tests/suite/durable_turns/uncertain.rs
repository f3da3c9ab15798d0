//! A tool call cut by `kill -9` between its start and its result, under
//! the `ask` and `report` policies (`docs/durability.md`, "Uncertain
//! effects"). The Python MCP server counts the calls of its `slow` tool
//! (`GET /calls`): that count shows whether a call ran again.

use super::{Durable, reply, status_text};
use crate::common::annotations::URI as ANNOTATIONS;
use crate::common::tool_results;
use crate::common::uid;
use crate::common::workflow::{B, answer};
use crate::mcp_servers::{HttpServer, skipped};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How often the server's `slow` ran.
async fn slow_calls(server: &HttpServer) -> u64 {
    let url = format!("http://127.0.0.1:{}/calls", server.port);
    let counts: Value = reqwest::get(&url).await.expect("GET /calls").json().await.expect("JSON counts");
    counts["slow"].as_u64().unwrap_or(0)
}

/// Waits until the server has received `n` calls of `slow`: the daemon logs
/// a call as started before its request reaches the server.
async fn wait_slow_calls(s: &Durable, server: &HttpServer, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while slow_calls(server).await < n {
        assert!(Instant::now() < deadline, "the server never saw {n} call(s) of slow; log:\n{}", s.d.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls task `id` until it is in `want`; returns it.
async fn wait_state(s: &Durable, id: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let t = s.d.call("GetTask", json!({"id": id})).await;
        if t["status"]["state"] == want {
            return t;
        }
        assert!(Instant::now() < deadline, "task {id} never reached {want}: {t}; log:\n{}", s.d.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cut_by_kill_9_under_ask_waits_on_a_gate_approve_runs_it_again_and_deny_tells_the_model() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    // `slow` is allowed without asking; only its interruption asks.
    let yaml = format!(
        "    - name: gate\n      http: {{url: '{}'}}\n      timeout_secs: 120\n      \
         policy: {{tools: {{slow: allow}}, on_interrupt: ask}}\n",
        server.url()
    );
    let steps = json!([
        {"text": "A.", "tool_calls": [{"name": "gate__slow", "arguments": {"seconds": 3}}]},
        {"text": "B.", "tool_calls": [{"name": "gate__slow", "arguments": {"seconds": 3}}]},
        {"text": "A done."},
        {"text": "B done."}
    ]);
    let mut s = Durable::start(steps, &server, &yaml);
    let a = s.send("task a").await;
    s.wait_tool_started(1).await;
    let b = s.send("task b").await;
    s.wait_tool_started(2).await;
    wait_slow_calls(&s, &server, 2).await;
    s.kill9_and_restart();
    assert_eq!(slow_calls(&server).await, 2, "each call started once before the kill");

    // After the restart each task asks, on the approval gate's schema,
    // whether to run its cut call again, saying plainly what happened.
    for id in [&a, &b] {
        wait_state(&s, id, "TASK_STATE_INPUT_REQUIRED").await;
        let (_, r) = s.d.op_with(B, "GetTask", json!({"id": id}), &[("A2A-Extensions", ANNOTATIONS)]).await;
        let t = r.expect("GetTask");
        let question = status_text(&t);
        assert!(
            question.contains("gate__slow")
                && question.contains("interrupted by a restart")
                && question.contains("outcome is unknown"),
            "{question}"
        );
        assert_eq!(t["metadata"][ANNOTATIONS]["askSchema"]["required"], json!(["approve"]), "{t}");
    }
    assert_eq!(slow_calls(&server).await, 2, "nothing runs again before an answer");

    // Approved: the call runs once more, its next attempt with the same key.
    answer(&s.d, &a, json!({"data": {"approve": true}})).await.expect("approve");
    let done = s.wait_end(&a).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(reply(&done), "A.\n\nA done.", "{done}");
    assert_eq!(slow_calls(&server).await, 3, "the approved call ran once more");
    let key = format!("key={a}:1:0");
    let log = s.d.log();
    assert!(
        log.lines().any(|l| l.contains("tool call started") && l.contains(&key) && l.contains("attempt=2")),
        "attempt 2 with the first attempt's key {key}: {log}"
    );

    // Denied: not run again, and the model is told so and goes on.
    answer(&s.d, &b, json!({"data": {"approve": false, "note": "it already ran"}})).await.expect("deny");
    let done = s.wait_end(&b).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(reply(&done), "B.\n\nB done.", "{done}");
    assert_eq!(slow_calls(&server).await, 3, "the denied call did not run again");
    let calls = s.recorded();
    assert_eq!(calls.len(), 4, "{calls:#?}");
    let results = tool_results(&calls[3]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("interrupted; outcome unknown; not run again: denied by ")
            && results[0].ends_with(": it already ran"),
        "{results:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_cut_by_kill_9_is_reported_to_the_model_as_interrupted_and_not_run_again() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    // `slow` needs an approval and is not idempotent: by default a cut
    // call of it is reported, not run again.
    let yaml = format!(
        "    - name: gate\n      http: {{url: '{}'}}\n      timeout_secs: 120\n      \
         policy: {{tools: {{slow: ask}}}}\n",
        server.url()
    );
    let steps = json!([
        {"text": "A.", "tool_calls": [{"name": "gate__slow", "arguments": {"seconds": 3}}]},
        {"text": "A done."}
    ]);
    let mut s = Durable::start(steps, &server, &yaml);
    let id = s.send("task a").await;
    wait_state(&s, &id, "TASK_STATE_INPUT_REQUIRED").await;
    // Answered without waiting for the turn: the kill must come while the call runs.
    let msg = json!({"messageId": uid("answer"), "role": "ROLE_USER", "taskId": id, "parts": [{"data": {"approve": true}}]});
    s.d.call("SendMessage", json!({"message": msg, "configuration": {"returnImmediately": true}})).await;
    wait_slow_calls(&s, &server, 1).await;
    s.kill9_and_restart();

    let done = s.wait_end(&id).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "the turn goes on: {done}");
    assert_eq!(slow_calls(&server).await, 1, "the cut call was not made again");
    let calls = s.recorded();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    let results = tool_results(&calls[1]);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains("interrupted; outcome unknown"), "{results:?}");
    assert!(!s.d.log().contains("attempt=2"), "no second attempt: {}", s.d.log());
}

/// The `_meta` of every call of the server's `meta` tool, in order.
async fn metas(server: &HttpServer) -> Vec<Value> {
    let url = format!("http://127.0.0.1:{}/metas", server.port);
    let all: Value = reqwest::get(&url).await.expect("GET /metas").json().await.expect("JSON metas");
    all.as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_call_carries_its_idempotency_key_in_meta_the_same_on_the_retry_after_kill_9() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let steps = json!([
        {"tool_calls": [{"name": "py__meta", "arguments": {"seconds": 3}}]},
        {"text": "Keyed."}
    ]);
    let mut s = Durable::start(steps, &server, "durability:\n  retry_tools: [py__meta]\n");
    let id = s.send("call it").await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while metas(&server).await.is_empty() {
        assert!(Instant::now() < deadline, "the call never reached the server; log:\n{}", s.d.log());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.kill9_and_restart();
    let t = s.wait_end(&id).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(reply(&t), "Keyed.", "{t}");

    let seen = metas(&server).await;
    assert_eq!(seen.len(), 2, "the call and its retry: {seen:?}");
    let key = format!("{id}:1:0");
    for (i, meta) in seen.iter().enumerate() {
        assert_eq!(meta["dev.agentd/idempotency-key"], key.as_str(), "call {i}: {meta}");
        assert_eq!(meta["dev.agentd/attempt"], i + 1, "call {i}: {meta}");
    }
    // What the retried call answered is what the model got.
    let calls = s.recorded();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    let answered: Value = serde_json::from_str(&tool_results(&calls[1])[0]).expect("the tool answers JSON");
    assert_eq!(answered, seen[1], "the model got the retried call's result");
}
