//! `a2a.delegate` steps against a second agentd started by the test (its
//! `scripted` model answers): the peer's answer is the step's output and
//! reaches `finish`; canceling the run, with `workflow.cancel` or
//! CancelTask, while the peer still works cancels the peer's task.

use crate::common::scripted::*;
use crate::common::workflow::*;
use crate::common::*;
use serde_json::{Value, json};

const ASK_PEER: &str = r#"
steps:
  prep: {kind: assign, values: {topic: "{{inputs.topic}}"}}
  consult: {kind: a2a.delegate, depends_on: prep, peer: helper, message: "Summarize {{steps.prep.output.topic}}."}
  done: {kind: finish, depends_on: consult, output: {answer: "{{steps.consult.output}}"}}
"#;

/// A daemon running `ASK_PEER` whose peer `helper` is `peer`.
fn delegating(peer: &Scripted) -> (Scripted, tempfile::TempDir) {
    let peers = format!("a2a:\n  peers:\n    - name: helper\n      url: {}\n", peer.d.url);
    daemon_with(Some(&doc(&[("ask_peer", ASK_PEER)], "operator")), json!([]), false, &peers)
}

/// The peer's one task.
async fn peers_task(peer: &Scripted) -> Value {
    let page = peer.d.ok(B, "ListTasks", json!({})).await;
    let tasks = page["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1, "the peer got one task: {page}");
    tasks[0].clone()
}

#[tokio::test]
async fn a_delegated_step_completes_the_run_with_the_peers_answer() {
    let peer = scripted(json!([{"text": "Owls see in the dark."}]), "", false);
    let (s, _doc) = delegating(&peer);
    let t = run(&s.d, "ask_peer", json!({"topic": "owls"})).await;
    let t = match task_state(&t) {
        "TASK_STATE_COMPLETED" => t,
        _ => wait_state(&s.d, &id(&t), "TASK_STATE_COMPLETED", 20).await,
    };
    assert_eq!(result_part(&t)["data"], json!({"answer": "Owls see in the dark."}));
    let st = status(&s.d, &id(&t)).await;
    assert_eq!(st["steps"]["consult"]["output"], "Owls see in the dark.", "{st}");
    assert_eq!(st["steps"]["consult"]["attempts"], 1, "{st}");

    // The peer did the work: its model got the rendered message.
    let reqs = peer.recorded();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    let last = reqs[0]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"], "Summarize owls.", "{last}");
    assert_eq!(task_state(&peers_task(&peer).await), "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn canceling_a_run_cancels_the_peers_task() {
    for cancel in ["workflow.cancel", "CancelTask"] {
        let peer = scripted(json!([{"text": "too late", "delay_ms": 60000}]), "", false);
        let (s, _doc) = delegating(&peer);
        let start = command_now("workflow.run", json!({"workflow": "ask_peer", "inputs": {"topic": "owls"}}));
        let task_id = id(&task(&s.d.ok(B, "SendMessage", start).await));
        peer.wait_calls(1).await;
        let working = peers_task(&peer).await;
        assert_eq!(task_state(&working), "TASK_STATE_WORKING", "{cancel}: {working}");

        match cancel {
            "workflow.cancel" => {
                let st = read_op(&s.d, B, "workflow.cancel", json!({"run": task_id})).await;
                assert_eq!(st["state"], "TASK_STATE_CANCELED", "{st}");
            }
            _ => {
                let t = s.d.ok(B, "CancelTask", json!({"id": task_id})).await;
                assert_eq!(task_state(&t), "TASK_STATE_CANCELED", "{t}");
            }
        }
        let there = peer.d.wait_task(B, &id(&working), 20, |t| task_state(t) == "TASK_STATE_CANCELED").await;
        assert_eq!(task_state(&there), "TASK_STATE_CANCELED", "{cancel}");
        let here = s.d.ok(B, "GetTask", json!({"id": task_id})).await;
        assert_eq!(task_state(&here), "TASK_STATE_CANCELED", "{cancel}: the run stays canceled: {here}");
        assert!(here["artifacts"].as_array().is_none_or(|a| a.is_empty()), "{cancel}: no result: {here}");
    }
}
