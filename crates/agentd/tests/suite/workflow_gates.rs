//! Human gates end to end (`docs/workflows.md#human-gates`): who may answer
//! (owner, operators, the principal bound to the addressed human; others
//! refused), deadlines (escalation, timeout with its fallback), and runs
//! that survive `kill -9` at a gate or in the middle of a step, keeping the
//! definition they started with.

use crate::common::feed::feed;
use crate::common::scripted::*;
use crate::common::workflow::*;
use crate::common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test]
async fn the_bound_principal_answers_and_strangers_are_refused() {
    let (s, _doc) = daemon(Some(&doc(&[("review", REVIEW)], "user:bob")), json!([]), true);
    let (alice, bob, bot) = (s.alice(), s.bob(), s.bot());
    let t = run(&alice, "review", json!({"what": "v2"})).await;
    assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{t}");
    let task_id = id(&t);
    // Bob, the approver, sees the gated task; the bot does not.
    let seen = bob.ok(B, "GetTask", json!({"id": task_id})).await;
    assert_eq!(seen["status"]["message"]["parts"][0]["text"], "Ship v2?");
    expect_error(bot.op(B, "GetTask", json!({"id": task_id})).await, -32001);
    expect_error(answer(&bot, &task_id, json!({"data": {"ok": true}})).await, -32001);
    // Seeing the task to answer it is not owning it.
    let cancel = command("workflow.cancel", json!({"run": task_id}));
    let read = command("workflow.status", json!({"run": task_id}));
    let push = json!({"taskId": task_id, "url": "https://example.com/hook"});
    for (method, params) in [
        ("CancelTask", json!({"id": task_id})),
        ("SendMessage", cancel),
        ("SendMessage", read),
        ("CreateTaskPushNotificationConfig", push),
    ] {
        let e = bob.op(B, method, params).await.expect_err(method);
        assert_eq!(e.error["code"], -31403, "{method}: {}", e.error);
        assert_eq!(e.reason().as_deref(), Some("PERMISSION_DENIED"), "{method}: {}", e.error);
        assert!(e.error["message"].as_str().unwrap().contains("may answer the gate"), "{}", e.error);
    }
    assert_eq!(
        task_state(&alice.ok(B, "GetTask", json!({"id": task_id})).await),
        "TASK_STATE_INPUT_REQUIRED"
    );
    let sub = bob.stream(B, "SubscribeToTask", json!({"id": task_id})).await.refused().await;
    assert_eq!(sub.error["code"], -31403, "{}", sub.error);
    // Bob answers; the run is still alice's, and bob's view ends with the gate.
    let seen = task(&answer(&bob, &task_id, json!({"data": {"ok": true}})).await.unwrap());
    assert_eq!(task_state(&seen), "TASK_STATE_WORKING", "bob sees the task as his answer left it: {seen}");
    assert_eq!(seen["artifacts"], json!([]), "and not its result: {seen}");
    let done = wait_state(&alice, &task_id, "TASK_STATE_COMPLETED", 20).await;
    assert_eq!(result_part(&done)["data"], json!(true));
    expect_error(bob.op(B, "GetTask", json!({"id": task_id})).await, -32001);
    let mine = alice.ok(B, "ListTasks", json!({})).await;
    assert_eq!(mine["tasks"].as_array().unwrap().len(), 1, "{mine}");
}

/// `gate.list`: the gates addressed to a principal on tasks it does not
/// own, which its ListTasks does not show.
#[tokio::test]
async fn gate_list_shows_the_addressed_principal_its_gate_until_answered() {
    let (s, _doc) = daemon(Some(&doc(&[("review", REVIEW)], "user:bob")), json!([]), true);
    let (alice, bob, carol) = (s.alice(), s.bob(), s.carol());
    let t = run(&alice, "review", json!({"what": "v2"})).await;
    let task_id = id(&t);
    let run_id = status(&alice, &task_id).await["runId"].clone();
    let none = json!({"gates": [], "truncated": false});
    for b in BINDINGS {
        let listed = read_op(&bob, b, "gate.list", json!({})).await;
        assert_eq!(
            listed,
            json!({"gates": [{
                "taskId": task_id,
                "contextId": t["contextId"],
                "runId": run_id,
                "step": "ask",
                "question": "Ship v2?",
                "askSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
                "askChannel": "@channel/ops",
                "openedAt": t["status"]["timestamp"],
            }], "truncated": false}),
            "{b:?}"
        );
        // Carol is not addressed; alice owns the task (it is in her ListTasks).
        assert_eq!(read_op(&carol, b, "gate.list", json!({})).await, none, "{b:?}: carol");
        assert_eq!(read_op(&alice, b, "gate.list", json!({})).await, none, "{b:?}: alice");
    }
    answer(&bob, &task_id, json!({"data": {"ok": true}})).await.unwrap();
    assert_eq!(read_op(&bob, B, "gate.list", json!({})).await, none, "an answered gate is gone");
    wait_state(&alice, &task_id, "TASK_STATE_COMPLETED", 20).await;
}

#[tokio::test]
async fn operators_and_the_owner_answer_gates_addressed_to_operators() {
    let (s, _doc) = daemon(Some(&doc(&[("review", REVIEW)], "operator")), json!([]), true);
    let (alice, bob, ops) = (s.alice(), s.bob(), s.ops());
    let t1 = id(&run(&alice, "review", json!({"what": "a"})).await);
    let t2 = id(&run(&alice, "review", json!({"what": "b"})).await);
    expect_error(answer(&bob, &t1, json!({"data": {"ok": true}})).await, -32001);
    answer(&ops, &t1, json!({"data": {"ok": false}})).await.unwrap();
    answer(&alice, &t2, json!({"data": {"ok": true}})).await.unwrap();
    let t1 = wait_state(&alice, &t1, "TASK_STATE_COMPLETED", 20).await;
    let t2 = wait_state(&alice, &t2, "TASK_STATE_COMPLETED", 20).await;
    assert_eq!(
        (result_part(&t1)["data"].clone(), result_part(&t2)["data"].clone()),
        (json!(false), json!(true))
    );
}

const DEADLINES: &str = r#"
steps:
  ask:
    kind: human
    question: "Anyone?"
    to: "@human/approver"
    escalate_after: 300ms
    timeout: 1500ms
    fallback: fail
  done: {kind: finish, depends_on: ask}
"#;

const WAITING: &str = r#"
steps:
  ask: {kind: human, question: "Still there?", to: "@human/approver", timeout: 200ms, fallback: wait}
  done: {kind: finish, depends_on: ask, output: "{{steps.ask.output}}"}
"#;

async fn wait_status(d: &Daemon, run: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let st = status(d, run).await;
        if done(&st) {
            return st;
        }
        assert!(Instant::now() < deadline, "run {run} never got there: {st}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_gate_escalates_then_times_out_by_its_fallback() {
    let doc = doc(&[("deadlines", DEADLINES), ("waiting", WAITING)], "operator");
    let (s, _doc) = daemon(Some(&doc), json!([]), false);
    let t = id(&run(&s.d, "deadlines", json!({})).await);
    let st = wait_status(&s.d, &t, 10, |st| st["gate"]["escalated"] == true).await;
    assert_eq!(st["state"], "TASK_STATE_INPUT_REQUIRED", "escalation keeps the gate open: {st}");
    let failed = wait_state(&s.d, &t, "TASK_STATE_FAILED", 10).await;
    let why = failed["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert_eq!(why, "step ask: nobody answered within 1500ms (timeout, fallback: fail)");
    assert!(s.d.log().contains("escalated"), "an escalation event");

    // fallback: wait keeps the gate open past its timeout.
    let mut gates = feed(&s.d, json!({"fromSeq": 0, "kinds": ["gate"]})).await;
    gates.hello().await;
    let w = id(&run(&s.d, "waiting", json!({})).await);
    gates.until(|e| e["data"]["taskId"] == w.as_str() && e["data"]["action"] == "timed_out").await;
    assert_eq!(task_state(&s.d.ok(B, "GetTask", json!({"id": w})).await), "TASK_STATE_INPUT_REQUIRED");
    answer(&s.d, &w, json!({"text": "yes"})).await.unwrap();
    let done = wait_state(&s.d, &w, "TASK_STATE_COMPLETED", 10).await;
    assert_eq!(result_part(&done)["text"], "yes", "no schema: the text as it is");
}

#[tokio::test]
async fn a_gate_deadline_survives_a_restart() {
    let (mut s, _doc) = daemon_process(Some(&doc(&[("deadlines", DEADLINES)], "operator")), json!([]), false);
    let t = id(&run(&s.d, "deadlines", json!({})).await);
    s.kill9_and_restart();
    let failed = wait_state(&s.d, &t, "TASK_STATE_FAILED", 10).await;
    assert!(failed["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("nobody answered"));
}

const WORK: &str = r#"
steps:
  prep: {kind: assign, values: {n: 1}}
  work: {kind: agent, depends_on: prep, prompt: "Do the work for {{inputs.what}}."}
  ask:
    kind: human
    depends_on: work
    question: "Accept {{steps.work.output}}?"
    schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
    to: "@human/approver"
  done: {kind: finish, depends_on: ask, output: {work: "{{steps.work.output}}", ok: "{{steps.ask.output.ok}}"}}
"#;

#[tokio::test]
async fn a_run_killed_in_a_step_and_at_a_gate_resumes_and_finishes() {
    let slow = json!([{"text": "work done", "delay_ms": 3000}]);
    let (mut s, _doc) = daemon_process(Some(&doc(&[("work", WORK)], "operator")), slow, false);
    let t = task(
        &s.d.ok(
            B,
            "SendMessage",
            command_now("workflow.run", json!({"workflow": "work", "inputs": {"what": "x"}})),
        )
        .await,
    );
    let task_id = id(&t);
    s.wait_calls(1).await;
    s.kill9_and_restart(); // in the middle of the agent step
    let waiting = wait_state(&s.d, &task_id, "TASK_STATE_INPUT_REQUIRED", 20).await;
    assert_eq!(waiting["status"]["message"]["parts"][0]["text"], "Accept work done?");
    let st = status(&s.d, &task_id).await;
    assert_eq!(st["steps"]["prep"]["attempts"], 1, "a finished step is not run again: {st}");
    assert_eq!(st["steps"]["work"]["attempts"], 2, "the interrupted step ran again: {st}");
    s.kill9_and_restart(); // at the gate
    let e = expect_error(answer(&s.d, &task_id, json!({"data": {"ok": "no"}})).await, -32602);
    e.assert_field("answer.ok");
    answer(&s.d, &task_id, json!({"data": {"ok": true}})).await.unwrap();
    let done = wait_state(&s.d, &task_id, "TASK_STATE_COMPLETED", 20).await;
    assert_eq!(result_part(&done)["data"], json!({"work": "work done", "ok": true}));
}

#[tokio::test]
async fn a_live_run_keeps_its_definition_when_the_document_changes() {
    let (mut s, dir) = daemon_process(Some(&doc(&[("review", REVIEW)], "operator")), json!([]), false);
    let t = id(&run(&s.d, "review", json!({"what": "v1"})).await);
    let before = status(&s.d, &t).await["definitionHash"].clone();
    let changed = REVIEW.replace("output: \"{{steps.ask.output.ok}}\"", "output: changed");
    std::fs::write(dir.path().join("agent.md"), doc(&[("review", &changed)], "operator")).unwrap();
    s.kill9_and_restart();
    answer(&s.d, &t, json!({"data": {"ok": true}})).await.unwrap();
    let done = wait_state(&s.d, &t, "TASK_STATE_COMPLETED", 20).await;
    assert_eq!(result_part(&done)["data"], json!(true), "the pinned definition's output");
    assert_eq!(status(&s.d, &t).await["definitionHash"], before);
    // A new run uses the new definition.
    let t2 = id(&run(&s.d, "review", json!({"what": "v2"})).await);
    assert_ne!(status(&s.d, &t2).await["definitionHash"], before);
    answer(&s.d, &t2, json!({"data": {"ok": true}})).await.unwrap();
    let done = wait_state(&s.d, &t2, "TASK_STATE_COMPLETED", 20).await;
    assert_eq!(result_part(&done)["text"], "changed");
}

#[tokio::test]
async fn canceling_a_run_cancels_the_subagent_of_its_step() {
    let slow = json!([{"text": "late", "delay_ms": 30000}]);
    let (s, _doc) = daemon(Some(&doc(&[("work", WORK)], "operator")), slow, false);
    let t = task(
        &s.d.ok(
            B,
            "SendMessage",
            command_now("workflow.run", json!({"workflow": "work", "inputs": {"what": "x"}})),
        )
        .await,
    );
    let task_id = id(&t);
    s.wait_calls(1).await;
    let st = read_op(&s.d, B, "workflow.cancel", json!({"run": task_id})).await;
    assert_eq!(st["state"], "TASK_STATE_CANCELED", "{st}");
    let page = s.d.ok(B, "ListTasks", json!({})).await;
    let states: Vec<&str> = page["tasks"].as_array().unwrap().iter().map(task_state).collect();
    assert_eq!(states.len(), 2, "the run and its step's subagent: {page}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let page = s.d.ok(B, "ListTasks", json!({})).await;
        if page["tasks"].as_array().unwrap().iter().all(|t| task_state(t) == "TASK_STATE_CANCELED") {
            break;
        }
        assert!(Instant::now() < deadline, "the step's subagent was not canceled: {page}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn of_two_answers_at_once_exactly_one_is_taken() {
    let (s, _doc) = daemon(Some(&doc(&[("review", REVIEW)], "operator")), json!([]), false);
    for _ in 0..5 {
        let t = id(&run(&s.d, "review", json!({"what": "race"})).await);
        let (a, b) = tokio::join!(
            answer(&s.d, &t, json!({"data": {"ok": true}})),
            answer(&s.d, &t, json!({"data": {"ok": false}})),
        );
        let taken: Vec<bool> = [&a, &b].iter().map(|r| r.is_ok()).collect();
        assert_eq!(taken.iter().filter(|x| **x).count(), 1, "{a:?} {b:?}");
        let refused = match (a, b) {
            (Err(e), _) | (_, Err(e)) => e,
            _ => unreachable!("one was refused"),
        };
        assert_eq!(refused.error["code"], -32004, "{}", refused.error);
        let done = wait_state(&s.d, &t, "TASK_STATE_COMPLETED", 10).await;
        assert_eq!(result_part(&done)["data"], json!(taken[0]), "the answer taken is the one that counts");
    }
}
