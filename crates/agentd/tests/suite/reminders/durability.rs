//! An acknowledged reminder survives `kill -9` of the daemon while its task
//! waits for input: after the restart its id answers the same result and
//! it is still active (a newer one with its key displaces it). That it then
//! reaches the first model call after the answer is shown with the real
//! agent loop in `agentd-runtime/tests/suite/reminders_waiting_task.rs` (the
//! default agent cannot wait for input yet; the `tck` agent here can).

use super::*;
use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn a_reminder_to_a_waiting_task_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Daemon::process_in(dir.path(), &["--agent", "tck"]);
    let sent = d.call("SendMessage", tck("tck-input-required")).await;
    assert_eq!(task_state(&sent["task"]), "TASK_STATE_INPUT_REQUIRED", "{sent}");
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let first = inject(
        &d,
        &id,
        json!({"id": "durable", "body": "Prefer main.", "dedupeKey": "branch", "ttlTurns": 2}),
    )
    .await;
    d.kill9();

    let d = Daemon::start_in(dir.path(), &["--agent", "tck"]);
    let again =
        inject(&d, &id, json!({"id": "durable", "body": "Prefer main.", "dedupeKey": "branch"})).await;
    assert_eq!(again, first, "the acknowledged reminder is there after kill -9");
    let newer =
        inject(&d, &id, json!({"id": "newer", "body": "Prefer release.", "dedupeKey": "branch"})).await;
    assert_eq!(newer["displaced"], json!(["durable"]), "and still active, waiting for the next model call");
    let task = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(task_state(&task), "TASK_STATE_INPUT_REQUIRED");
    assert!(!task.to_string().contains("Prefer"), "never in the task: {task}");
}
