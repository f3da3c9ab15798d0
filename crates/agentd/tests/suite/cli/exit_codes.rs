//! Exit codes per terminal state: a task that ends FAILED, REJECTED or
//! CANCELED makes `send` (streamed, `--no-stream`, `--json`), `answer` and
//! `tasks watch` exit 4, 5 or 6 with the reason on stderr, never on stdout
//! as if it were the reply.

use super::{Out, WITHIN, agentd, agentd_cmd, json_of, wait_output};
use crate::common::*;
use serde_json::json;
use std::time::{Duration, Instant};

const FAILED: i32 = 4;
const REJECTED: i32 = 5;
const CANCELED: i32 = 6;

/// A daemon whose scripted model replays `script` (YAML steps).
pub fn scripted(script: &str) -> (Daemon, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("script.yaml");
    std::fs::write(&path, script).unwrap();
    let d = Daemon::start(&["--model", "scripted", "--model-script", path.to_str().unwrap()]);
    (d, dir)
}

fn assert_ended(out: &Out, code: i32, state: &str, reason: &str) {
    assert_eq!(out.code, code, "{out:?}");
    assert!(out.stderr.contains(&format!("ended {state}")) && out.stderr.contains(reason), "{out:?}");
}

#[test]
fn a_failed_task_exits_4_with_the_reason_on_stderr_only() {
    let step = "- error: {status: 400, message: the demo model refuses}\n";
    let (d, _script) = scripted(&step.repeat(4));
    for args in [&["send", "hi"][..], &["send", "--no-stream", "hi"]] {
        let out = agentd(&d.url, args);
        assert_ended(&out, FAILED, "FAILED", "the demo model refuses");
        assert_eq!(out.stdout, "", "the failure is not printed as the reply: {out:?}");
    }
    let out = agentd(&d.url, &["send", "--json", "hi"]);
    assert_ended(&out, FAILED, "FAILED", "the demo model refuses");
    assert_eq!(json_of(&out)["task"]["status"]["state"], "TASK_STATE_FAILED", "the JSON is still data");
    let out = agentd(&d.url, &["send", "--stream", "--json", "hi"]);
    assert_ended(&out, FAILED, "FAILED", "the demo model refuses");

    // Watching it afterwards says the same.
    let list = ok_json(&d.url, &["tasks", "list", "--json"]);
    let id = list["tasks"][0]["id"].as_str().unwrap().to_owned();
    let out = agentd(&d.url, &["tasks", "watch", &id]);
    assert_eq!(out.code, FAILED, "{out:?}");
    assert!(out.stdout.starts_with("FAILED: "), "{out:?}");
}

fn ok_json(url: &str, args: &[&str]) -> serde_json::Value {
    let out = agentd(url, args);
    assert_eq!(out.code, 0, "{out:?}");
    json_of(&out)
}

#[test]
fn a_rejected_task_exits_5() {
    let d = Daemon::start(&["--agent", "tck"]);
    for extra in [&[][..], &["--no-stream"], &["--json"]] {
        let id = uniq("tck-reject-task");
        let mut args = vec!["send", "--message-id", &id];
        args.extend_from_slice(extra);
        args.push("hello");
        let out = agentd(&d.url, &args);
        assert_ended(&out, REJECTED, "REJECTED", "rejected");
    }
}

/// Polls until the daemon has a WORKING task; returns its id.
async fn working_task(d: &Daemon) -> String {
    let deadline = Instant::now() + WITHIN;
    loop {
        let list = d.call("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
        if let Some(id) = list["tasks"][0]["id"].as_str() {
            return id.to_owned();
        }
        assert!(Instant::now() < deadline, "no task started working");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_canceled_task_exits_6_for_streamed_and_unary_sends() {
    // The model takes a minute: the tasks are canceled long before.
    let step = "- {text: late, delay_ms: 60000}\n";
    let (d, _script) = scripted(&step.repeat(2));
    for extra in [&[][..], &["--no-stream"]] {
        let mut args = vec!["send"];
        args.extend_from_slice(extra);
        args.push("hi");
        let child = agentd_cmd(&d.url, &args, &[]).spawn().expect("spawn send");
        let id = working_task(&d).await;
        let (url, task) = (d.url.clone(), id.clone());
        let cancel = tokio::task::spawn_blocking(move || agentd(&url, &["tasks", "cancel", &task]));
        assert_eq!(cancel.await.unwrap().stdout, "CANCELED\n");
        let out = tokio::task::spawn_blocking(move || wait_output(child, WITHIN)).await.unwrap();
        assert_eq!(out.code, CANCELED, "{extra:?}: {out:?}");
        assert!(out.stderr.contains(&format!("task {id} ended CANCELED")), "{out:?}");
    }
}

#[tokio::test]
async fn an_answer_that_ends_the_run_failed_exits_4() {
    // The demo's gate, then its model turn, which fails.
    let (d, _script) = scripted("- error: {status: 400, message: no summary today}\n");
    let url = d.url.clone();
    let out = tokio::task::spawn_blocking(move || agentd(&url, &["run", "demo"])).await.unwrap();
    assert_eq!(out.code, 0, "waiting for input is not a failure: {out:?}");
    let list = d.call("ListTasks", json!({})).await;
    let id = list["tasks"][0]["id"].as_str().unwrap().to_owned();
    let url = d.url.clone();
    let out = tokio::task::spawn_blocking(move || agentd(&url, &["answer", &id, r#"{"approve": true}"#]))
        .await
        .unwrap();
    assert_ended(&out, FAILED, "FAILED", "no summary today");
    assert_eq!(out.stdout, "FAILED\n", "{out:?}");
}
