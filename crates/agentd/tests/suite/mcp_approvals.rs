//! Approvals of MCP tool calls, end to end (`docs/tools.md`, "Policy and
//! approvals"): the official MCP Python SDK's test server counts the calls
//! of its `write_note` tool (`GET /calls`), which is not read-only, so the
//! default policy asks. The turn's task goes INPUT_REQUIRED with the typed
//! gate (annotations validated against the published schema by the
//! harness), the `!human` entry's channel announces it to a real webhook
//! receiver, and the answer decides: approve runs the call once, deny and
//! the deadline tell the model why not (the `scripted` model's recorded
//! requests show what it got), an invalid answer changes nothing.

use crate::common::annotations::URI as ANNOTATIONS;
use crate::common::receiver::Receiver;
use crate::common::scripted::*;
use crate::common::workflow::{B, answer, daemon_of, daemon_resuming, doc};
use crate::common::*;
use crate::mcp_servers::{HttpServer, skipped};
use serde_json::{Value, json};
use std::time::Duration;

const WRITE: &str = "py__write_note";

/// A daemon whose model calls `write_note` once per turn (then answers
/// "done"), for `turns` turns, the approval addressed to `approver` (bound
/// to carol, channel `ops` posting to `rx`), waiting `timeout_secs`.
fn approving(
    server: &HttpServer,
    rx: &Receiver,
    turns: usize,
    timeout_secs: u64,
) -> (Scripted, tempfile::TempDir) {
    approving_in(server, rx, turns, timeout_secs, false, "", false)
}

/// `approving`, as an `agentd serve` process when `process` (kill -9),
/// with `extra` appended to the config.
fn approving_in(
    server: &HttpServer,
    rx: &Receiver,
    turns: usize,
    timeout_secs: u64,
    process: bool,
    extra: &str,
    resume: bool,
) -> (Scripted, tempfile::TempDir) {
    let document = doc(&[], "user:carol").replace(
        "::!channel{name=ops kind=webhook}",
        &format!("::!channel{{name=ops kind=webhook target={}}}", rx.url()),
    );
    let mut steps = Vec::new();
    for i in 0..turns {
        steps.push(json!({"tool_calls": [{"id": format!("c{i}"), "name": WRITE, "arguments": {"text": format!("note {i}")}}]}));
        steps.push(json!({"text": "done"}));
    }
    let config = format!(
        "push:\n  allow_private: true\nmcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n      policy: {{human: '@human/approver'}}\n  approvals: {{timeout_secs: {timeout_secs}}}\n{extra}",
        server.url()
    );
    match resume {
        true => daemon_resuming(Some(&document), json!(steps), true, &config, process),
        false => daemon_of(Some(&document), json!(steps), true, &config, process),
    }
}

/// How often the server's `write_note` ran.
async fn calls(server: &HttpServer) -> u64 {
    let url = format!("http://127.0.0.1:{}/calls", server.port);
    let counts: Value = reqwest::get(&url).await.expect("GET /calls").json().await.expect("JSON counts");
    counts["write_note"].as_u64().unwrap_or(0)
}

/// Starts a turn as alice; returns its task, waiting for the approval.
async fn ask(s: &Scripted) -> Value {
    let r = s.alice().call("SendMessage", send_params(&uid("m"), "write a note", None)).await;
    let t = r["task"].clone();
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the call waits for its approval: {r}");
    t
}

fn approve(yes: bool, note: Option<&str>) -> Value {
    let mut v = json!({"approve": yes});
    if let Some(n) = note {
        v["note"] = json!(n);
    }
    json!({"data": v})
}

#[tokio::test]
async fn an_asked_call_waits_on_a_typed_announced_gate_refuses_bad_answers_and_runs_once_approved() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let mut rx = Receiver::start(0).await;
    let (s, _doc) = approving(&server, &rx, 1, 3600);
    let t = ask(&s).await;
    let task_id = t["id"].as_str().expect("id").to_owned();

    // The status message names the tool and shows the exact arguments.
    let question = &t["status"]["message"];
    assert_eq!(question["role"], "ROLE_AGENT", "{question}");
    let text = question["parts"][0]["text"].as_str().expect("a question");
    assert!(text.contains(WRITE) && text.contains("note 0"), "{text}");
    assert_eq!(question["parts"][1]["data"]["arguments"], json!({"text": "note 0"}), "{question}");

    // The annotations (validated against the published schema on read).
    let (_, r) =
        s.alice().op_with(B, "GetTask", json!({"id": task_id}), &[("A2A-Extensions", ANNOTATIONS)]).await;
    let a = r.expect("GetTask")["metadata"][ANNOTATIONS].clone();
    assert_eq!(a["askSchema"]["required"], json!(["approve"]), "{a}");
    assert_eq!(a["askSchema"]["properties"]["approve"]["type"], "boolean", "{a}");
    assert_eq!(a["askChannel"], "@channel/ops", "{a}");

    // The bridge announced it on the approver's channel.
    let hit = rx.next("the approval's announcement", Duration::from_secs(20)).await;
    assert_eq!(hit.body["taskId"], task_id, "{:?}", hit.body);
    assert_eq!(hit.body["channel"], "@channel/ops", "{:?}", hit.body);
    assert!(hit.body["question"].as_str().unwrap_or_default().contains(WRITE), "{:?}", hit.body);
    assert_eq!(hit.body["askSchema"]["required"], json!(["approve"]), "{:?}", hit.body);

    // An invalid answer is refused, naming the field, and changes nothing.
    let e = answer(&s.alice(), &task_id, json!({"data": {"approve": "yes"}}))
        .await
        .expect_err("approve must be a boolean");
    assert_eq!(e.error["code"], -32602, "{}", e.error);
    let msg = e.error["message"].as_str().unwrap_or_default();
    assert!(msg.contains("answer.approve") && msg.contains("boolean"), "{msg}");
    let now = s.alice().call("GetTask", json!({"id": task_id})).await;
    assert_eq!(now["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{now}");
    // Bob is neither the owner, an operator nor the approver.
    let e = answer(&s.bob(), &task_id, approve(true, None)).await.expect_err("bob may not answer");
    assert_eq!(e.reason().as_deref(), Some("TASK_NOT_FOUND"), "{}", e.error);
    assert_eq!(calls(&server).await, 0, "nothing ran before the approval");

    // Carol's inbox lists it (`gate.list`): no run, the typed schema.
    let listed = read_op(&s.carol(), B, "gate.list", json!({})).await;
    let gate = &listed["gates"][0];
    assert_eq!((&gate["taskId"], &gate["runId"]), (&json!(task_id), &Value::Null), "{listed}");
    assert_eq!(gate["askSchema"]["required"], json!(["approve"]), "{listed}");

    // Carol, bound to the approver, approves: the call runs, once.
    answer(&s.carol(), &task_id, approve(true, Some("fine"))).await.expect("carol approves");
    wait_for_state(&s.alice(), &task_id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    assert_eq!(calls(&server).await, 1, "the approved call ran once");
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert_eq!(tool_results(&reqs[1]), ["written: note 0"], "the model got the result");
    // The answer is in the task's history; the model did not get it as input.
    let last_user =
        reqs[1]["messages"].as_array().expect("messages").iter().rev().find(|m| m["role"] == "user").cloned();
    assert!(!last_user.unwrap_or_default().to_string().contains("approve"), "{}", reqs[1]);
    // A second answer finds no gate open.
    let late = answer(&s.carol(), &task_id, approve(false, None)).await;
    assert!(late.is_err(), "the gate closed: {late:?}");
}

#[tokio::test]
async fn a_denial_reaches_the_model_as_the_tool_result_and_the_turn_goes_on() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let rx = Receiver::start(0).await;
    let (s, _doc) = approving(&server, &rx, 1, 3600);
    let task_id = ask(&s).await["id"].as_str().expect("id").to_owned();
    // The owner may answer too.
    answer(&s.alice(), &task_id, approve(false, Some("not on a Friday"))).await.expect("alice denies");
    wait_for_state(&s.alice(), &task_id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    assert_eq!(calls(&server).await, 0, "a denied call is not made");
    let reqs = s.recorded();
    assert_eq!(tool_results(&reqs[1]), ["error: denied by user:alice: not on a Friday"], "{:?}", reqs[1]);
}

#[tokio::test]
async fn nobody_answering_before_the_deadline_denies_the_call() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let rx = Receiver::start(0).await;
    // Time is the subject: a one-second deadline, really waited for.
    let (s, _doc) = approving(&server, &rx, 1, 1);
    let task_id = ask(&s).await["id"].as_str().expect("id").to_owned();
    let done = wait_for_state(&s.alice(), &task_id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    assert_eq!(calls(&server).await, 0, "{done}");
    let results = tool_results(&s.recorded()[1]);
    assert!(
        results[0].contains("denied: nobody approved the call of py__write_note within 1s"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_pending_approval_survives_kill_9_and_its_answer_applies_to_that_call_once() {
    if skipped() {
        return;
    }
    survives(true, "", Scripted::kill9_and_restart).await;
}

#[tokio::test]
async fn a_graceful_stop_keeps_a_pending_approval_for_the_next_start() {
    if skipped() {
        return;
    }
    survives(false, "shutdown:\n  grace_secs: 1\n", Scripted::restart).await;
}

/// A run that waits in its turn for an approval (an agent that does not
/// resume turns) is not waited for by a stop: nobody answering, it would
/// fill any grace. Its question is still open after the restart.
#[tokio::test]
async fn a_stop_does_not_wait_out_the_grace_for_a_run_waiting_on_an_approval() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let rx = Receiver::start(0).await;
    // A process (in-process daemons have no grace), given 45 s to stop by
    // the harness, with 120 s of grace.
    let grace = "shutdown:\n  grace_secs: 120\n";
    let (mut s, _doc) = approving_in(&server, &rx, 1, 3600, true, grace, false);
    let task_id = ask(&s).await["id"].as_str().expect("id").to_owned();
    s.restart();
    let t = s.alice().ok(B, "GetTask", json!({"id": task_id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the question is still open: {t}");
    assert_eq!(calls(&server).await, 0, "the call waiting for its approval never ran");
}

/// Asks, stops the daemon with `stop` and starts it again, then checks
/// the approval is still there and applies to the same call once.
async fn survives(process: bool, extra: &str, stop: fn(&mut Scripted)) {
    let server = HttpServer::start();
    let rx = Receiver::start(0).await;
    let (mut s, _doc) = approving_in(&server, &rx, 1, 3600, process, extra, true);
    let task_id = ask(&s).await["id"].as_str().expect("id").to_owned();
    stop(&mut s);

    // The restarted daemon has the approval: the same typed gate, the
    // same check of an answer.
    let (_, r) =
        s.alice().op_with(B, "GetTask", json!({"id": task_id}), &[("A2A-Extensions", ANNOTATIONS)]).await;
    let t = r.expect("GetTask");
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{t}");
    assert_eq!(t["metadata"][ANNOTATIONS]["askChannel"], "@channel/ops", "{t}");
    let e = answer(&s.carol(), &task_id, json!({"data": {"approve": true, "by": "me"}}))
        .await
        .expect_err("closed schema");
    assert!(e.error["message"].as_str().unwrap_or_default().contains("answer.by"), "{}", e.error);

    // Carol approves. The turn resumes from its journal: its call of the
    // tool (never made: it waited for the approval) is made again with the
    // same arguments, takes the recorded approval instead of asking again,
    // and runs once.
    answer(&s.carol(), &task_id, approve(true, None)).await.expect("carol approves");
    wait_for_state(&s.alice(), &task_id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert_eq!(calls(&server).await, 1, "the approved call ran once");
    let results = tool_results(s.recorded().last().expect("a request"));
    assert_eq!(results, ["written: note 0"]);
}

#[tokio::test]
async fn a_subagents_call_waits_for_its_approval_and_its_parent_waits_on_with_it() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let steps = json!([
        {"tool_calls": [{"id": "s1", "name": "spawn_subagent",
            "arguments": {"instruction": "You write.", "input": "write it", "tools": [WRITE]}}]},
        {"tool_calls": [{"id": "c1", "name": WRITE, "arguments": {"text": "child note"}}]},
        {"text": "child done"},
        {"text": "parent done"}
    ]);
    let yaml = format!("mcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n", server.url());
    let s = scripted(steps, &yaml, true);
    let mut params = send_params(&uid("m"), "delegate the note", None);
    params["configuration"] = json!({"returnImmediately": true});
    let parent = s.alice().call("SendMessage", params).await["task"]["id"].as_str().expect("id").to_owned();

    // The child's call waits on the child's task; the parent works on.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let child = loop {
        let list = s.alice().call("ListTasks", json!({})).await;
        let waiting = list["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|t| t["id"] != parent.as_str() && t["status"]["state"] == "TASK_STATE_INPUT_REQUIRED");
        if let Some(t) = waiting {
            break t["id"].as_str().expect("id").to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no child waits for an approval: {list}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    let p = s.alice().call("GetTask", json!({"id": parent})).await;
    assert_eq!(p["status"]["state"], "TASK_STATE_WORKING", "the parent still waits for its child: {p}");

    answer(&s.alice(), &child, approve(true, None)).await.expect("alice approves her subagent's call");
    wait_for_state(&s.alice(), &parent, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    assert_eq!(calls(&server).await, 1);
    let reqs = s.recorded();
    assert_eq!(tool_results(&reqs[2]), ["written: child note"], "the child got its result");
    assert_eq!(tool_results(&reqs[3]), ["child done"], "the parent got the child's answer");
}
