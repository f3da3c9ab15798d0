//! The daemon with `--model anthropic` against the test's own Messages API
//! server: a user chats over A2A, tokens stream through, an overloaded
//! model fails over to the fallback model, the key goes by reference, and a
//! tool call the model makes comes back to it as a `tool_result` under its id.

use crate::anthropic_support::{api_error, stream_text, stream_tool_use};
use crate::common::*;
use crate::model_support::Mock;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// `--model anthropic` with `--model-url` and `--model-name`, and a config
/// file for what has no flag (the fallback model, no retries, the key's file).
fn anthropic_daemon(dir: &Path, endpoint: &str) -> Daemon {
    let key = dir.join("anthropic-key");
    std::fs::write(&key, "sk-ant-test-key\n").unwrap();
    let config = dir.join("agentd.yaml");
    let yaml = format!(
        "model:\n  anthropic:\n    api_key: file:{}\n    fallback_models: [claude-small]\n    max_retries: 0\n",
        key.display()
    );
    std::fs::write(&config, yaml).unwrap();
    let args = ["--config", config.to_str().unwrap(), "--model", "anthropic", "--model-url", endpoint];
    Daemon::start_in(&dir.join("data"), &[&args[..], &["--model-name", "claude-big"]].concat())
}

#[tokio::test]
async fn an_overloaded_model_fails_over_and_the_answer_streams_through() {
    let mock = Mock::start(|_, r| match r.body["model"].as_str() {
        Some("claude-big") => api_error(529, "overloaded_error", "Overloaded", Vec::new()),
        _ => stream_text(&["Hello", ", ", "world"]),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let d = anthropic_daemon(dir.path(), &mock.root);

    assert_eq!(streamed_reply(&d, "hi there").await, "Hello, world");

    let got = mock.received();
    let models: Vec<&str> = got.iter().map(|r| r.body["model"].as_str().unwrap()).collect();
    assert_eq!(models, ["claude-big", "claude-small"], "the named model first, then the fallback");
    assert_eq!(got[1].path, "/v1/messages");
    assert_eq!(got[1].headers["x-api-key"], "sk-ant-test-key");
    assert_eq!(got[1].headers["anthropic-version"], "2023-06-01");
    let body = &got[1].body;
    assert!(body["system"].as_str().is_some_and(|s| !s.is_empty()), "the instruction is the system field");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi there"}]}])
    );
    assert!(!d.log.lock().unwrap().contains("sk-ant-test-key"), "the key is never logged");
}

#[tokio::test]
async fn a_tool_call_comes_back_as_a_tool_result_under_its_id() {
    let mock = Mock::start(|n, _| match n {
        0 => stream_tool_use("Trying. ", "toolu_7", "no_such_tool", &["{\"x\": 1}"]),
        _ => stream_text(&["Done."]),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let d = anthropic_daemon(dir.path(), &mock.root);
    let r = d.call("SendMessage", send_params("m1", "use a tool", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");

    let got = mock.received();
    assert_eq!(got.len(), 2);
    let messages = got[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(
        messages[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Trying. "},
            {"type": "tool_use", "id": "toolu_7", "name": "no_such_tool", "input": {"x": 1}},
        ]})
    );
    let result = &messages[2];
    assert_eq!(result["role"], "user");
    let block = &result["content"][0];
    assert_eq!(
        (&block["type"], &block["tool_use_id"], &block["is_error"]),
        (&json!("tool_result"), &json!("toolu_7"), &json!(true))
    );
    assert!(block["content"].as_str().unwrap().contains("no tool named"), "{block}");
}

#[tokio::test]
async fn readiness_asks_the_messages_api_for_its_models_with_the_key() {
    let mock = Mock::start(|_, _| stream_text(&["unused"])).await;
    let dir = tempfile::tempdir().unwrap();
    let d = anthropic_daemon(dir.path(), &mock.root);
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        let body: Value = reqwest::get(format!("{}/readyz", d.url)).await.unwrap().json().await.unwrap();
        if body["checks"]["model"]["detail"] != "not probed yet" {
            break body;
        }
        assert!(Instant::now() < deadline, "never probed: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(body["ready"], true, "{body}");
    let detail = body["checks"]["model"]["detail"].as_str().unwrap();
    assert!(detail.contains("lists claude-small but not \"claude-big\""), "{detail}");
    let probe = &mock.probes()[0];
    assert_eq!(probe["x-api-key"], "sk-ant-test-key");
    assert_eq!(probe["anthropic-version"], "2023-06-01");
    assert!(probe.get("authorization").is_none());
}
