//! The daemon with `--model openai` against the test's own
//! OpenAI-compatible server: a user chats with a real (mock) model over A2A,
//! tokens stream through, and a failing first endpoint fails over.

use crate::common::*;
use crate::model_support::{Mock, error, stream_of};
use serde_json::json;

fn openai_daemon(dir: &std::path::Path, endpoints: &[&str]) -> Daemon {
    let config = dir.join("agentd.yaml");
    let list = endpoints.iter().map(|e| format!("\"{e}\"")).collect::<Vec<_>>().join(", ");
    let yaml = format!(
        "model:\n  kind: openai\n  openai:\n    endpoints: [{list}]\n    model: test-model\n    max_retries: 0\n    backoff_ms: 1\n"
    );
    std::fs::write(&config, yaml).unwrap();
    Daemon::start_in(&dir.join("data"), &["--config", config.to_str().unwrap()])
}

#[tokio::test]
async fn a_failing_endpoint_fails_over_and_the_answer_streams_through() {
    let down = Mock::start(|_, _| error(503, "overloaded", Vec::new())).await;
    let up = Mock::start(|_, _| stream_of(&["Hello", ", ", "world"])).await;
    let dir = tempfile::tempdir().unwrap();
    let d = openai_daemon(dir.path(), &[&down.base, &up.base]);

    assert_eq!(streamed_reply(&d, "hi there").await, "Hello, world");

    assert_eq!(down.hits(), 1, "the first endpoint was tried");
    let got = up.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body["model"], "test-model");
    let msgs = got[0].body["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs.last().unwrap(), &json!({"role": "user", "content": "hi there"}));
}

#[tokio::test]
async fn when_every_endpoint_fails_the_turn_fails_with_the_servers_reason() {
    let down = Mock::start(|_, _| error(400, "context length exceeded", Vec::new())).await;
    let dir = tempfile::tempdir().unwrap();
    let d = openai_daemon(dir.path(), &[&down.base]);
    let r = d.call("SendMessage", send_params("m1", "hi", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_FAILED");
    let why = r["task"]["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.contains("context length exceeded"), "{why}");
}
