//! A workflow run waiting at a human gate when the replica that ran it is
//! killed: the answer, sent to another replica, is committed there and the
//! run goes on from its checkpoint on one replica, once; the gate's
//! deadline is kept by another replica.

use super::*;
use crate::common::scripted::{command, task};
use crate::common::workflow::{REVIEW, doc, result_part};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_at_a_gate_of_a_killed_replica_finishes_once_after_its_answer_reaches_another_replica() {
    let idle = || json!([]);
    let document = doc(&[("review", REVIEW)], "operator");
    let Some(mut rs) = Replicas::start_with([idle(), idle(), idle()], None, Some(&document)).await else {
        return;
    };
    let started = rs.r[0]
        .d
        .call("SendMessage", command("workflow.run", json!({"workflow": "review", "inputs": {"what": "v1"}})))
        .await;
    let run = task(&started);
    assert_eq!(run["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "waits at its gate: {run}");
    let id = run["id"].as_str().expect("id").to_owned();
    rs.r[0].d.kill9();
    let msg = json!({"messageId": uniq("answer"), "role": "ROLE_USER", "taskId": id, "parts": [{"data": {"ok": true}}]});
    rs.r[1]
        .d
        .call("SendMessage", json!({"message": msg, "configuration": {"returnImmediately": true}}))
        .await;
    let (done, _) = wait_end(&rs.r[2].d, &id, Duration::from_secs(30)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(result_part(&done)["data"], json!(true), "{done}");
    // r2 runs the rest at once when r1's lease was released at the gate,
    // or whichever replica adopts it once that lease expired.
    let runs_here = |i: usize| rs.r[i].d.log().matches("lease claimed task").count();
    assert_eq!(runs_here(1) + runs_here(2), 1, "the rest of the run ran once");
}

/// A gate that times out after 4 s and fails its run.
const TIMING_OUT: &str = r#"
steps:
  ask:
    kind: human
    question: "Anyone?"
    to: "@human/approver"
    timeout: 4000ms
    fallback: fail
  done: {kind: finish, depends_on: ask}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_of_a_gate_whose_replica_was_killed_is_kept_by_another_replica() {
    let idle = || json!([]);
    let document = doc(&[("timing", TIMING_OUT)], "operator");
    let Some(mut rs) = Replicas::start_with([idle(), idle(), idle()], None, Some(&document)).await else {
        return;
    };
    let started = rs.r[0]
        .d
        .call("SendMessage", command("workflow.run", json!({"workflow": "timing", "inputs": {}})))
        .await;
    let run = task(&started);
    assert_eq!(run["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "waits at its gate: {run}");
    let id = run["id"].as_str().expect("id").to_owned();
    rs.r[0].d.kill9();
    let (failed, _) = wait_end(&rs.r[1].d, &id, Duration::from_secs(30)).await;
    assert_eq!(failed["status"]["state"], "TASK_STATE_FAILED", "{failed}");
    let why = failed["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(why, "step ask: nobody answered within 4s (timeout, fallback: fail)");
}
