//! A reminder given to a workflow run waiting at its gate: it survives a
//! `kill -9` of the daemon, and after the answer it reaches the first model
//! call of the run (the `agent` step, a subagent of the run, which gets a
//! copy because the reminder propagates to subagents). Without `propagate`
//! it reaches the step's model calls as the run's own turns, and not the
//! subagents the step's model spawns.

use super::*;
use crate::common::scripted::*;
use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn a_reminder_to_a_gated_run_survives_kill_9_and_reaches_the_first_model_call_after_the_answer() {
    let mut s = scripted_process(json!([{"text": "They approved."}]), "", false);
    let run = task(
        &s.d.ok(Binding::JsonRpc, "SendMessage", command("workflow.run", json!({"workflow": "demo"}))).await,
    );
    assert_eq!(task_state(&run), "TASK_STATE_INPUT_REQUIRED", "the demo waits at its gate: {run}");
    let id = run["id"].as_str().unwrap().to_owned();
    let reminder =
        json!({"id": "tone", "body": "Answer in French.", "ttlTurns": 1, "propagate": "subagents"});
    let first = inject(&s.d, &id, reminder.clone()).await;

    s.kill9_and_restart();
    assert_eq!(inject(&s.d, &id, reminder).await, first, "the reminder is still there, unchanged");
    assert!(s.recorded().is_empty(), "no model call before the answer");
    let answer = json!({"message": {"messageId": uid("a"), "role": "ROLE_USER", "taskId": id,
                                    "parts": [{"data": {"approve": true}}]}});
    s.d.ok(Binding::JsonRpc, "SendMessage", answer).await;
    let done = wait_for_state(&s.d, &id, "TASK_STATE_COMPLETED", std::time::Duration::from_secs(20)).await;
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "They approved.", "{done}");
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 1, "one model call: the agent step");
    let ids = reminder_ids(&reqs[0]);
    assert_eq!(ids.len(), 1, "the step's model call carries the reminder's copy: {ids:?}");
    let body =
        reqs[0]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(body.contains("Answer in French."), "{body}");
    assert!(!done.to_string().contains("Answer in French."), "never in the run task: {done}");
}

/// Starts the built-in `demo` run (it waits at its gate); its task id.
async fn demo_run(s: &Scripted) -> String {
    let run = task(
        &s.d.ok(Binding::JsonRpc, "SendMessage", command("workflow.run", json!({"workflow": "demo"}))).await,
    );
    assert_eq!(task_state(&run), "TASK_STATE_INPUT_REQUIRED", "the demo waits at its gate: {run}");
    run["id"].as_str().unwrap().to_owned()
}

async fn approve(s: &Scripted, id: &str) -> serde_json::Value {
    let answer = json!({"message": {"messageId": uid("a"), "role": "ROLE_USER", "taskId": id,
                                    "parts": [{"data": {"approve": true}}]}});
    s.d.ok(Binding::JsonRpc, "SendMessage", answer).await;
    wait_for_state(&s.d, id, "TASK_STATE_COMPLETED", std::time::Duration::from_secs(20)).await
}

#[tokio::test]
async fn a_reminder_to_a_run_reaches_its_agent_step_without_propagate_as_the_runs_turn() {
    // The agent step makes two model calls: a tool call, then its answer.
    let s = scripted(json!([tool_step("t1", 0), {"text": "They approved."}]), "", false);
    let id = demo_run(&s).await;
    let reminder = json!({"id": "tone", "body": "Answer in French.", "ttlTurns": 1});
    inject(&s.d, &id, reminder).await;
    approve(&s, &id).await;
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 2, "the agent step's two model calls");
    assert_eq!(reminder_ids(&reqs[0]), ["tone"], "the step's first call is the run's next turn");
    assert!(reminder_ids(&reqs[1]).is_empty(), "ttlTurns 1: one turn of the run, then expired");
    let body =
        reqs[0]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(body.contains("Answer in French."), "{body}");
}

#[tokio::test]
async fn a_reminder_to_a_run_without_propagate_stays_out_of_subagents_a_step_spawns() {
    let spawn = json!({"tool_calls": [{"id": "s1", "name": "spawn_subagent",
        "arguments": {"instruction": "You help.", "input": "Look it up.", "name": "helper"}}]});
    let steps = json!([
        spawn,                        // 1 the agent step spawns a helper
        {"text": "Found it."},        // 2 the helper
        {"text": "They approved."},   // 3 the agent step again
    ]);
    let s = scripted(steps, "", false);
    let id = demo_run(&s).await;
    inject(&s.d, &id, json!({"id": "tone", "body": "Answer in French.", "ttlTurns": 3})).await;
    approve(&s, &id).await;
    let ids: Vec<Vec<String>> = s.recorded().iter().map(reminder_ids).collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids[0], ["tone"], "the step's calls are the run's turns: {ids:?}");
    assert!(ids[1].is_empty(), "the helper the step's model spawned is not reached: {ids:?}");
    assert_eq!(ids[2], ["tone"], "{ids:?}");
}
