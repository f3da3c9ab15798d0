//! Runs the worked example of `docs/reminders.md` against the daemon: the
//! documented request gets the documented answer, the model receives the
//! documented block, and the stream carries the documented events.

use super::*;
use crate::common::scripted::*;
use crate::common::*;
use serde_json::{Value, json};

/// The JSON block after `<!-- worked-example: NAME -->` in the page.
fn block(page: &str, name: &str) -> Value {
    let marker = format!("<!-- worked-example: {name} -->");
    let after = page.split(&marker).nth(1).unwrap_or_else(|| panic!("docs/reminders.md has no {marker}"));
    let fence = after.split("```json\n").nth(1).expect("a json fence follows the marker");
    let text = fence.split("\n```").next().unwrap();
    serde_json::from_str(text).unwrap_or_else(|e| panic!("the {name} block is not JSON: {e}"))
}

#[tokio::test]
async fn the_worked_example_of_the_docs_runs_as_written() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/reminders.md")).unwrap();
    let s =
        scripted(json!([tool_step("c1", 1500), tool_step("c2", 0), {"text": "rebased and done"}]), "", false);
    let d = &s.d;
    let sent = d
        .call("SendMessage", json!({"message": user_msg("m1", "Fix the build."), "configuration": {"returnImmediately": true}}))
        .await;
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let mut watched = stream(d, "SubscribeToTask", json!({"id": id}), true).await;
    s.wait_calls(1).await;

    let mut request = block(&page, "request");
    request["params"]["taskId"] = json!(id);
    let r = d.http.post(d.jsonrpc_url()).header("A2A-Version", "1.0").json(&request).send().await.unwrap();
    let mut answer: Value = r.json().await.unwrap();
    let accepted = answer["result"]["acceptedAt"].take();
    assert!(accepted.as_str().is_some_and(|t| t.ends_with('Z')), "{answer}");
    let mut documented = block(&page, "response");
    documented["result"]["acceptedAt"] = Value::Null;
    assert_eq!(answer, documented);

    let frames = watched.collect().await;
    let reqs = s.recorded();
    let want = block(&page, "model-input");
    for (i, req) in reqs.iter().enumerate() {
        let last = req["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(last == &want, i == 1 || i == 2, "call {}: {last}", i + 1);
    }
    assert_eq!(Value::Array(reminder_events(&frames)), block(&page, "events"));
    let task = d.call("GetTask", json!({"id": id})).await;
    let history: Vec<&str> =
        task["history"].as_array().unwrap().iter().map(|m| m["parts"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(history, ["Fix the build.", "rebased and done"]);
}
