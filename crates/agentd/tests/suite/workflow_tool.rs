//! The `run_workflow` tool (`docs/workflows.md`): a turn runs one of the
//! document's workflows as its child and gets the run's result; a run
//! waiting at a human gate when `kill -9` hits is adopted after the
//! restart, never started twice.

use crate::common::workflow::*;
use crate::common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A run with no gate: its result is a greeting of `inputs.who`.
const GREET: &str = r#"
description: Greets someone.
inputs:
  schema: {type: object, properties: {who: {type: string}}, required: [who], additionalProperties: false}
steps:
  done: {kind: finish, output: "hello {{inputs.who}}"}
"#;

fn call(workflow: &str, inputs: Value) -> Value {
    json!({"tool_calls": [{"name": "run_workflow", "arguments": {"workflow": workflow, "inputs": inputs}}]})
}

async fn tasks(d: &Daemon) -> Vec<Value> {
    let all = d.call("ListTasks", json!({"pageSize": 50, "includeArtifacts": true})).await;
    all["tasks"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_turn_runs_a_workflow_with_the_tool_and_gets_its_result() {
    let document = doc(&[("greet", GREET)], "operator");
    let steps =
        json!([call("greet", json!({"who": 5})), call("greet", json!({"who": "ann"})), {"text": "Greeted."}]);
    let (s, _dir) = daemon(Some(&document), steps, false);
    let r = s.d.call("SendMessage", send_params(&uid("m"), "greet ann", None)).await;
    let id = r["task"]["id"].as_str().expect("a task").to_owned();
    let t = wait_for_state(&s.d, &id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert!(t.to_string().contains("Greeted."), "{t}");

    let reqs = s.recorded();
    assert_eq!(reqs.len(), 3, "{reqs:#?}");
    let tool =
        reqs[0]["tools"].as_array().expect("tools").iter().find(|t| t["name"] == "run_workflow").cloned();
    let tool = tool.expect("run_workflow is offered");
    assert_eq!(tool["parameters"]["properties"]["workflow"]["enum"], json!(["greet"]), "{tool}");
    assert!(tool["description"].as_str().unwrap_or_default().contains("Greets someone."), "{tool}");
    let refused = tool_results(&reqs[1]);
    assert!(refused[0].contains("inputs") && refused[0].contains("who"), "bad inputs named: {refused:?}");
    assert_eq!(tool_results(&reqs[2])[1], "hello ann", "the run's result is the tool result");
    // One run, a child of the turn's task, owned like it.
    let runs: Vec<Value> = tasks(&s.d).await.into_iter().filter(|t| t["id"] != id.as_str()).collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(task_state(&runs[0]), "TASK_STATE_COMPLETED");
    assert_eq!(result_part(&runs[0])["text"], "hello ann", "{}", runs[0]);
}

#[tokio::test]
async fn without_workflows_the_model_has_no_run_workflow_tool() {
    let document = doc(&[], "operator");
    let (s, _dir) = daemon(Some(&document), json!([{"text": "hi"}]), false);
    let r = s.d.call("SendMessage", send_params(&uid("m"), "hello", None)).await;
    wait_for_state(
        &s.d,
        r["task"]["id"].as_str().expect("id"),
        "TASK_STATE_COMPLETED",
        Duration::from_secs(15),
    )
    .await;
    let offered = s.recorded()[0]["tools"].to_string();
    assert!(!offered.contains("run_workflow"), "{offered}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_run_waits_at_a_gate_adopts_that_run_and_the_turn_gets_its_result() {
    let document = doc(&[("review", REVIEW)], "operator");
    let steps = json!([call("review", json!({"what": "v2"})), {"text": "Shipped."}]);
    let (mut s, _dir) = daemon_resuming(Some(&document), steps, false, "", true);
    let mut p = send_params(&uid("m"), "ship v2", None);
    p["configuration"] = json!({"returnImmediately": true});
    let r = s.d.call("SendMessage", p).await;
    let parent = r["task"]["id"].as_str().expect("a task").to_owned();
    // The run waits at its gate.
    let deadline = Instant::now() + Duration::from_secs(60);
    let run = loop {
        let waiting = tasks(&s.d).await.into_iter().find(|t| task_state(t) == "TASK_STATE_INPUT_REQUIRED");
        if let Some(run) = waiting {
            break id(&run);
        }
        assert!(Instant::now() < deadline, "the run never reached its gate; log:\n{}", s.d.log());
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    s.kill9_and_restart();
    assert_eq!(task_state(&s.d.call("GetTask", json!({"id": parent})).await), "TASK_STATE_WORKING");
    answer(&s.d, &run, json!({"data": {"ok": true}})).await.expect("the gate takes the answer");

    let t = wait_state(&s.d, &parent, "TASK_STATE_COMPLETED", 60).await;
    assert!(t.to_string().contains("Shipped."), "{t}");
    let all = tasks(&s.d).await;
    assert_eq!(all.len(), 2, "the turn and exactly one run: {all:?}");
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 2, "{reqs:#?}");
    assert_eq!(tool_results(&reqs[1]), ["true"], "the model got the run's result");
}

#[tokio::test]
async fn cancelling_the_turn_cancels_the_run_it_waits_for() {
    let document = doc(&[("review", REVIEW)], "operator");
    let steps = json!([call("review", json!({"what": "v3"})), {"text": "unreached"}]);
    let (s, _dir) = daemon(Some(&document), steps, false);
    let mut p = send_params(&uid("m"), "ship v3", None);
    p["configuration"] = json!({"returnImmediately": true});
    let parent = s.d.call("SendMessage", p).await["task"]["id"].as_str().expect("a task").to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    let run = loop {
        let waiting = tasks(&s.d).await.into_iter().find(|t| task_state(t) == "TASK_STATE_INPUT_REQUIRED");
        if let Some(run) = waiting {
            break id(&run);
        }
        assert!(Instant::now() < deadline, "the run never reached its gate; log:\n{}", s.d.log());
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    s.d.call("CancelTask", json!({"id": parent})).await;
    let t = wait_state(&s.d, &run, "TASK_STATE_CANCELED", 30).await;
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert!(why.contains(&parent), "the run says which task ended: {t}");
    assert_eq!(s.recorded().len(), 1, "the model was not asked again");
}
