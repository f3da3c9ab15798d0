//! A workflow run waiting at a human gate when the replica that ran it is
//! killed: the answer, sent to another replica, is committed there and the
//! run goes on from its checkpoint on one replica, once; the gate's
//! deadline is kept by another replica.

use super::*;
use crate::common::receiver::Receiver;
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

/// A gate announced on the `ops` webhook channel, escalated after 6 s
/// (three lease ttls: its watch has moved by then).
const ESCALATING: &str = r#"
steps:
  ask: {kind: human, question: "Anyone?", to: "@human/approver", escalate_after: 6000ms}
  done: {kind: finish, depends_on: ask}
"#;

async fn start_escalating(d: &Daemon) -> Value {
    d.call("SendMessage", command("workflow.run", json!({"workflow": "escalating", "inputs": {}}))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_whose_replica_was_killed_is_announced_once_and_escalated_once_in_all() {
    let mut rx = Receiver::start(0).await;
    let document = doc(&[("escalating", ESCALATING)], "operator").replace(
        "::!channel{name=ops kind=webhook}",
        &format!("::!channel{{name=ops kind=webhook target={}}}", rx.url()),
    );
    let idle = || json!([]);
    let Some(mut rs) = Replicas::start_with([idle(), idle(), idle()], None, Some(&document)).await else {
        return;
    };
    // The gate opens on a replica that does not deliver the outbox: killing
    // it cannot leave a delivered row unrecorded (pushes are at least once).
    let deadline = Instant::now() + Duration::from_secs(30);
    let outbox = loop {
        if let Some(i) =
            (0..3).find(|&i| rs.r[i].d.log().contains("outbox lease claimed: this replica delivers"))
        {
            break i;
        }
        assert!(Instant::now() < deadline, "no replica claimed the outbox lease");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let (runs, then) = ((outbox + 1) % 3, (outbox + 2) % 3);
    let first = task(&start_escalating(&rs.r[runs].d).await);
    assert_eq!(first["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "waits at its gate: {first}");
    let first = first["id"].as_str().expect("id").to_owned();
    let hit = rx.next("the gate's announcement", Duration::from_secs(30)).await;
    assert_eq!(
        (hit.body["taskId"].as_str(), hit.body["escalation"].as_bool()),
        (Some(first.as_str()), Some(false))
    );
    rs.r[runs].d.kill9();
    let mut hits = vec![hit.body];
    // Another replica takes the gate's watch over and escalates it. A
    // second gate, opened after that on another replica, is announced and escalated
    // three ttls later: every replica has looked for unwatched gates
    // several times meanwhile, and an announcement queued by any of those
    // looks goes out before the second escalation (the outbox holder is
    // woken by each commit that queues a row).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut second: Option<String> = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(hit) = rx.next_within(left).await else {
            panic!("not every announcement and escalation of both gates came; got {hits:#?}")
        };
        let (id, escalation) =
            (hit.body["taskId"].as_str().unwrap_or_default().to_owned(), hit.body["escalation"] == true);
        hits.push(hit.body);
        if id == first && escalation && second.is_none() {
            let run = task(&start_escalating(&rs.r[then].d).await);
            assert_eq!(run["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "waits at its gate: {run}");
            second = Some(run["id"].as_str().expect("id").to_owned());
        }
        if second.as_deref() == Some(id.as_str()) && escalation {
            break;
        }
    }
    let of_first: Vec<bool> =
        hits.iter().filter(|h| h["taskId"] == first.as_str()).map(|h| h["escalation"] == true).collect();
    assert_eq!(of_first, [false, true], "the first gate: one announcement, one escalation; all: {hits:#?}");
    let second = second.expect("the second gate");
    let of_second: Vec<bool> =
        hits.iter().filter(|h| h["taskId"] == second.as_str()).map(|h| h["escalation"] == true).collect();
    assert_eq!(of_second, [false, true], "the second gate: one announcement, one escalation; all: {hits:#?}");
}
