//! `roleHint` with a provider configured for it: the daemon with the
//! `openai` model against the test's own OpenAI-compatible server and
//! `reminder_role_hints: true` sends a reminder hinted `system` as a system
//! message after the conversation; unhinted ones stay in the user block.

use super::*;
use crate::common::*;
use crate::model_support::{Mock, Reply, done, finish, stream_of, tool, usage};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_provider_configured_for_role_hints_places_hinted_reminders_in_their_role() {
    let mock = Mock::start(|n, _| {
        if n == 0 {
            let events = vec![
                tool(0, Some("c1"), Some("wait_a_moment"), "{}"),
                finish("tool_calls"),
                usage(5, 1),
                done(),
            ];
            Reply::After(
                Duration::from_millis(1500),
                Box::new(Reply::Sse { events, gap: Duration::ZERO, hang: false }),
            )
        } else {
            stream_of(&["ok"])
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("agentd.yaml");
    let yaml = format!(
        "model:\n  kind: openai\n  openai:\n    endpoints: [\"{}\"]\n    model: m\n    max_retries: 0\n    reminder_role_hints: true\n",
        mock.base
    );
    std::fs::write(&config, yaml).unwrap();
    let d = Daemon::start_in(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);
    let id = start_turn(&d).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while mock.hits() < 1 {
        assert!(std::time::Instant::now() < deadline, "the model was never called");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    inject(&d, &id, json!({"id": "sys", "body": "Stay within budget.", "roleHint": "system"})).await;
    inject(&d, &id, json!({"id": "plain", "body": "CI is green."})).await;
    d.wait_task(Binding::JsonRpc, &id, 20, |t| task_state(t) == "TASK_STATE_COMPLETED").await;

    let got = mock.received();
    assert_eq!(got.len(), 2);
    let first = got[0].body["messages"].as_array().unwrap().clone();
    let msgs = got[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), first.len() + 4, "assistant, tool result, then the two reminder messages");
    assert_eq!(msgs[..first.len()], first[..], "the prefix is unchanged");
    assert_eq!(
        msgs[msgs.len() - 2..],
        [
            json!({"role": "system", "content": "<system-reminder source=\"operator:local\" id=\"sys\">Stay within budget.</system-reminder>"}),
            json!({"role": "user", "content": "<system-reminder source=\"operator:local\" id=\"plain\">CI is green.</system-reminder>"}),
        ]
    );
}
