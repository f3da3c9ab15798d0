//! The agent loop end to end: the real daemon with the `scripted` model,
//! whose recorded requests (a JSON line per model call) are the evidence of
//! what the model was given.

use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

struct Scripted {
    daemon: Daemon,
    record: PathBuf,
    _dir: tempfile::TempDir,
}

/// A daemon whose model replays `steps`; `limits` is YAML for the `limits` key.
fn scripted(steps: Value, limits: &str) -> Scripted {
    scripted_as(steps, limits, false)
}

/// `scripted`, as an `agentd serve` process when `process` (kill -9).
fn scripted_as(steps: Value, limits: &str, process: bool) -> Scripted {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, serde_json::to_vec(&steps).unwrap()).unwrap();
    let record = dir.path().join("requests.jsonl");
    let config = dir.path().join("agentd.yaml");
    let yaml = format!(
        "model:\n  kind: scripted\n  script: {}\n  record_to: {}\nlimits:\n{}\n",
        script.display(),
        record.display(),
        if limits.is_empty() { "  max_steps: 16".to_owned() } else { limits.to_owned() }
    );
    std::fs::write(&config, yaml).unwrap();
    let data = dir.path().join("data");
    let args = ["--config", config.to_str().unwrap()];
    let daemon = if process { Daemon::process_in(&data, &args) } else { Daemon::start_in(&data, &args) };
    Scripted { daemon, record, _dir: dir }
}

fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("recorded request is JSON"))
        .collect()
}

/// (role, content) of every message of a recorded request.
fn roles(req: &Value) -> Vec<(String, String)> {
    req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap_or("").to_owned()))
        .collect()
}

/// Waits until the model has received `n` requests.
async fn wait_calls(path: &Path, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while recorded(path).len() < n {
        assert!(Instant::now() < deadline, "the model never got call {n}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_state(d: &Daemon, id: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let t = d.call("GetTask", json!({"id": id})).await;
        if t["status"]["state"] == want {
            return t;
        }
        assert!(Instant::now() < deadline, "task never reached {want}: {t}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_second_turn_of_a_conversation_sees_the_first() {
    let s = scripted(json!([{"text": "Nice to meet you, Ada."}, {"text": "You are Ada."}]), "");
    let d = &s.daemon;
    let first = d.call("SendMessage", send_params("m1", "My name is Ada.", None)).await;
    let ctx = first["task"]["contextId"].as_str().unwrap().to_owned();
    assert_eq!(first["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let mut m = user_msg("m2", "What is my name?");
    m["contextId"] = json!(ctx);
    let second = d.call("SendMessage", json!({"message": m})).await;
    assert_eq!(second["task"]["status"]["message"]["parts"][0]["text"], "You are Ada.");
    let reqs = recorded(&s.record);
    assert_eq!(reqs.len(), 2);
    let msgs = roles(&reqs[1]);
    assert_eq!(msgs[0].0, "system", "the instruction comes first");
    assert_eq!(
        msgs[1..].to_vec(),
        vec![
            ("user".to_owned(), "My name is Ada.".to_owned()),
            ("assistant".to_owned(), "Nice to meet you, Ada.".to_owned()),
            ("user".to_owned(), "What is my name?".to_owned()),
        ]
    );
    assert_eq!(roles(&reqs[0]).len(), 2, "the first turn saw only the system prompt and its message");
}

#[tokio::test]
async fn tokens_stream_as_ordered_artifact_updates() {
    let deltas = ["The ", "quick ", "brown ", "fox"];
    let s = scripted(json!([{"deltas": deltas, "delay_ms": 60}]), "  stream_flush_ms: 10");
    let d = &s.daemon;
    let mut st = d.rpc_stream("SendStreamingMessage", send_params("m1", "go", None)).await;
    let events = st.collect().await;
    let payloads: Vec<&Value> = events.iter().map(|e| &e["result"]).collect();
    assert!(payloads[0].get("task").is_some());
    let chunks: Vec<&Value> = payloads.iter().filter_map(|p| p.get("artifactUpdate")).collect();
    assert!(chunks.len() >= 3, "deltas arrive as separate updates, not one blob: {chunks:?}");
    let text: String = chunks.iter().map(|c| c["artifact"]["parts"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(text, deltas.concat(), "in order, nothing lost or repeated");
    assert!(chunks[0]["append"].as_bool() != Some(true), "the first chunk starts the artifact");
    assert!(chunks[1..].iter().all(|c| c["append"] == true), "later chunks append");
    assert_eq!(chunks.last().unwrap()["lastChunk"], true);
    assert_eq!(payloads.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn tool_calls_loop_back_to_the_model_with_their_results() {
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": "x"}}]},
        {"text": "done"}
    ]);
    let s = scripted(steps, "");
    let r = s.daemon.call("SendMessage", send_params("m1", "use a tool", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let reqs = recorded(&s.record);
    assert_eq!(reqs.len(), 2, "one call for the tool request, one after its result");
    let msgs = reqs[1]["messages"].as_array().unwrap();
    let n = msgs.len();
    assert_eq!(msgs[n - 2]["role"], "assistant");
    assert_eq!(msgs[n - 2]["tool_calls"][0]["name"], "lookup");
    assert_eq!(msgs[n - 1]["role"], "tool");
    assert_eq!(msgs[n - 1]["tool_call_id"], "c1");
    assert!(
        msgs[n - 1]["content"].as_str().unwrap().contains("no tool named \"lookup\""),
        "an unknown tool is reported to the model, not a crash: {}",
        msgs[n - 1]
    );
}

async fn failed_with(s: &Scripted, needle: &str) {
    let r = s.daemon.call("SendMessage", send_params("m1", "loop", None)).await;
    let t = &r["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_FAILED", "{t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.contains(needle), "the status message says which limit: {why}");
}

#[tokio::test]
async fn each_limit_stops_a_runaway_loop_with_a_clear_failure() {
    let call = json!({"tool_calls": [{"name": "again"}]});
    failed_with(&scripted(json!([call, call, call, call]), "  max_steps: 3"), "limit of 3 model calls").await;
    let costly =
        json!({"tool_calls": [{"name": "again"}], "usage": {"input_tokens": 600, "output_tokens": 10}});
    failed_with(&scripted(json!([costly, costly, costly]), "  max_tokens: 1000"), "over its limit of 1000")
        .await;
    let slow = json!({"deltas": ["a", "b", "c"], "delay_ms": 800});
    let s = scripted(json!([slow]), "  deadline_secs: 1");
    let started = Instant::now();
    failed_with(&s, "deadline of 1 s").await;
    assert!(started.elapsed() < Duration::from_secs(2), "the deadline stops the call, not just the loop");
}

#[tokio::test]
async fn cancel_mid_stream_stops_the_model_call() {
    let slow = json!({"deltas": ["a", "b", "c", "d", "e", "f"], "delay_ms": 400});
    let s = scripted(json!([slow, {"text": "the next turn"}]), "");
    let d = &s.daemon;
    let mut p = send_params("m1", "stream", None);
    p["configuration"] = json!({"returnImmediately": true});
    let task = d.call("SendMessage", p).await["task"].clone();
    let (id, ctx) = (task["id"].as_str().unwrap().to_owned(), task["contextId"].clone());
    wait_calls(&s.record, 1).await;
    let started = Instant::now();
    let t = d.call("CancelTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED");
    // The turns of a conversation run one at a time: the next one starts
    // only once the canceled run has ended.
    let mut next = send_params("m2", "next", None);
    next["message"]["contextId"] = ctx;
    let after = d.call("SendMessage", next).await;
    assert_eq!(after["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{after}");
    assert!(started.elapsed() < Duration::from_secs(2), "the cancel stopped the slow model call");
    let t = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED", "nothing overrides a cancel");
    let calls = recorded(&s.record);
    assert_eq!(calls.len(), 2, "no model call after the cancel but the next turn's");
    assert_eq!(roles(&calls[1]).last().map(|(_, text)| text.as_str()), Some("next"), "{}", calls[1]);
}

#[tokio::test]
async fn steering_input_reaches_the_next_model_call() {
    let steps = json!([
        {"tool_calls": [{"name": "wait"}], "delay_ms": 700},
        {"text": "adjusted"}
    ]);
    let s = scripted(steps, "");
    let d = &s.daemon;
    let mut p = send_params("m1", "start", None);
    p["configuration"] = json!({"returnImmediately": true});
    let id = d.call("SendMessage", p).await["task"]["id"].as_str().unwrap().to_owned();
    wait_calls(&s.record, 1).await;
    let steer = d.call("SendMessage", send_params("m2", "focus on the summary", Some(&id))).await;
    assert_eq!(steer["task"]["id"], json!(id), "steering answers with the same task");
    wait_state(d, &id, "TASK_STATE_COMPLETED").await;
    let reqs = recorded(&s.record);
    assert_eq!(reqs.len(), 2);
    let before: Vec<String> = roles(&reqs[0]).into_iter().map(|(_, c)| c).collect();
    let after: Vec<String> = roles(&reqs[1]).into_iter().map(|(_, c)| c).collect();
    assert!(!before.iter().any(|c| c == "focus on the summary"));
    assert!(after.iter().any(|c| c == "focus on the summary"), "the next step sees it: {after:?}");
    let t = d.call("GetTask", json!({"id": id})).await;
    let texts: Vec<&str> =
        t["history"].as_array().unwrap().iter().filter_map(|m| m["parts"][0]["text"].as_str()).collect();
    assert!(texts.contains(&"focus on the summary"), "steering input is kept in the task history");
}

#[tokio::test]
async fn a_model_error_fails_the_turn_with_the_reason() {
    let s = scripted(json!([{"error": {"status": 503, "message": "overloaded"}}]), "");
    failed_with(&s, "overloaded").await;
}

#[tokio::test]
async fn a_restart_in_the_middle_of_a_model_call_makes_the_call_again_and_completes() {
    let slow = json!({"deltas": ["a", "b", "c"], "delay_ms": 700});
    let mut s = scripted_as(json!([slow]), "", true);
    let mut p = send_params("m1", "long work", None);
    p["configuration"] = json!({"returnImmediately": true});
    let id = s.daemon.call("SendMessage", p).await["task"]["id"].as_str().unwrap().to_owned();
    wait_calls(&s.record, 1).await;
    s.daemon.kill9();
    let data = s.daemon.data_dir.clone();
    let config = s._dir.path().join("agentd.yaml");
    let d = Daemon::start_in(&data, &["--config", config.to_str().unwrap()]);
    // The interrupted call has no journaled response: it is made again
    // (the script starts over, so it gets the same answer).
    let t = wait_for_state(&d, &id, "TASK_STATE_COMPLETED", Duration::from_secs(60)).await;
    assert_eq!(
        t["artifacts"][0]["parts"][0]["text"], "abc",
        "the reply once, whatever was streamed before: {t}"
    );
    assert_eq!(recorded(&s.record).len(), 2, "the call was made once before the kill and once after");
}

#[tokio::test]
async fn a_streamed_reply_is_stored_as_one_text_part_equal_to_the_stream() {
    let deltas: Vec<String> = (0..40).map(|i| format!("w{i} ")).collect();
    let limits = "  stream_flush_ms: 1\npush:\n  allow_private: true";
    let s = scripted(json!([{"deltas": deltas, "delay_ms": 5}]), limits);
    let d = &s.daemon;
    let mut rx = crate::common::receiver::Receiver::start(0).await;
    let mut p = send_params("m1", "go", None);
    p["configuration"] = json!({"taskPushNotificationConfig": {"url": rx.url()}});
    let events = d.rpc_stream("SendStreamingMessage", p).await.collect().await;
    let id = events[0]["result"]["task"]["id"].as_str().unwrap().to_owned();
    let text_of = |updates: &[&Value]| -> String {
        updates
            .iter()
            .map(|u| {
                let parts = u["artifact"]["parts"].as_array().unwrap();
                assert_eq!(parts.len(), 1, "a chunk is one part: {u}");
                parts[0]["text"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let chunks: Vec<&Value> = events.iter().filter_map(|e| e["result"].get("artifactUpdate")).collect();
    assert!(chunks.len() >= 3, "the stream stays incremental: {chunks:?}");
    let streamed = text_of(&chunks);
    assert_eq!(streamed, deltas.concat());

    let one_part = |t: &Value, what: &str| {
        let parts = t["artifacts"][0]["parts"].as_array().unwrap_or_else(|| panic!("{what}: {t}"));
        assert_eq!(parts.len(), 1, "{what}: the stored reply is one part, not one per chunk: {t}");
        assert_eq!(parts[0]["text"], streamed.as_str(), "{what}: the whole streamed text");
    };
    one_part(&d.call("GetTask", json!({"id": id})).await, "GetTask");
    let page = d.call("ListTasks", json!({"includeArtifacts": true})).await;
    let listed = page["tasks"].as_array().unwrap().iter().find(|t| t["id"] == id.as_str()).unwrap();
    one_part(listed, "ListTasks");
    let hits = rx.until_state(&id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    let pushed: Vec<&Value> = hits.iter().filter_map(|h| h.body.get("artifactUpdate")).collect();
    assert_eq!(text_of(&pushed), streamed, "webhooks get the chunks, each one part, in order");
}

#[tokio::test]
async fn the_texts_of_a_multi_step_turn_are_separated_by_a_blank_line() {
    let step = json!([
        {"text": "Let me look that up.", "tool_calls": [{"name": "lookup"}]},
        {"text": "agentd is a daemon."}
    ]);
    let both = json!([step[0], step[1], step[0], step[1]]);
    let s = scripted(both, "");
    let want = "Let me look that up.\n\nagentd is a daemon.";
    let r = s.daemon.call("SendMessage", send_params("m1", "What is agentd?", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(r["task"]["artifacts"][0]["parts"], json!([{"text": want}]), "the stored reply: {r}");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["send", "--url", &s.daemon.url, "What is agentd?"])
        .output()
        .expect("run agentd send");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{want}\n"), "the CLI's streamed reply");
}
