//! The quick start works: the default daemon answers a message over both
//! bindings and serves its card.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn default_daemon_answers_over_both_bindings() {
    let d = Daemon::start(&[]);
    let card: serde_json::Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", d.url)).await.unwrap().json().await.unwrap();
    assert_eq!(card["supportedInterfaces"][0]["url"], json!(d.jsonrpc_url()));
    let r = d.call("SendMessage", send_params("m1", "hello", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(r["task"]["status"]["message"]["parts"][0]["text"], "echo: hello");
    let (status, body) =
        d.rest(reqwest::Method::POST, "/message:send", Some(send_params("m2", "again", None))).await;
    assert_eq!(status, 200);
    assert_eq!(body["task"]["status"]["state"], "TASK_STATE_COMPLETED");
}
