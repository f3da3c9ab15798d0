//! A reminder given to a workflow run waiting at its gate: it survives a
//! `kill -9` of the daemon, and after the answer it reaches the first model
//! call of the run (the `agent` step, a subagent of the run, which gets a
//! copy because the reminder propagates to subagents).

use crate::common::*;
use crate::harness::*;
use crate::*;
use serde_json::json;

#[tokio::test]
async fn a_reminder_to_a_gated_run_survives_kill_9_and_reaches_the_first_model_call_after_the_answer() {
    let mut s = scripted(json!([{"text": "They approved."}]), "", false);
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
