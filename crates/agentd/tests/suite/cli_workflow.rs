//! `agentd run` and `agentd answer` against a real daemon: what reaches the
//! daemon, what they print, and their exit codes.

use crate::common::*;
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs the CLI to completion (the verbs here never wait on the agent long).
fn agentd(url: &str, args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(args)
        .arg("--url")
        .arg(url)
        .env_remove("AGENTD_URL")
        .env_remove("AGENTD_TOKEN")
        .output()
        .expect("run agentd");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A tck task waiting in INPUT_REQUIRED.
async fn waiting_task(d: &Daemon) -> String {
    let r = d.call("SendMessage", send_params(&uniq("tck-input-required"), "start", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    r["task"]["id"].as_str().unwrap().to_owned()
}

/// The parts of the last user message of a task's history.
fn last_user_parts(task: &Value) -> Value {
    let history = task["history"].as_array().expect("history");
    let m = history.iter().rev().find(|m| m["role"] == "ROLE_USER").expect("a user message");
    m["parts"].clone()
}

#[tokio::test]
async fn answer_sends_json_as_data_and_prints_the_new_state() {
    let d = Daemon::start(&["--agent", "tck"]);
    let id = waiting_task(&d).await;
    let url = d.url.clone();
    let task = id.clone();
    let out = tokio::task::spawn_blocking(move || agentd(&url, &["answer", &task, r#"{"approve": true}"#]))
        .await
        .unwrap();
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "COMPLETED", "stderr: {}", out.stderr);
    assert!(out.stderr.contains(&id), "{}", out.stderr);
    let t = wait_for_state(&d, &id, "TASK_STATE_COMPLETED", Duration::from_secs(10)).await;
    assert_eq!(last_user_parts(&t), json!([{"data": {"approve": true}}]), "{t}");
}

#[tokio::test]
async fn answer_sends_other_text_as_a_text_part() {
    let d = Daemon::start(&["--agent", "tck"]);
    let id = waiting_task(&d).await;
    let (url, task) = (d.url.clone(), id.clone());
    let out = tokio::task::spawn_blocking(move || agentd(&url, &["answer", &task, "ship it"])).await.unwrap();
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    let t = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(last_user_parts(&t), json!([{"text": "ship it"}]), "{t}");
}

#[tokio::test]
async fn answer_reports_the_daemons_refusal_with_a_non_zero_exit() {
    let d = Daemon::start(&["--agent", "tck"]);
    let url = d.url.clone();
    let out =
        tokio::task::spawn_blocking(move || agentd(&url, &["answer", "no-such-task", "yes"])).await.unwrap();
    assert_ne!(out.code, 0);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(out.stderr.contains("no-such-task") && out.stderr.contains("TASK_NOT_FOUND"), "{}", out.stderr);

    // A finished task takes no answer.
    let done = d.call("SendMessage", send_params(&uniq("tck-complete-task"), "hi", None)).await;
    let id = done["task"]["id"].as_str().unwrap().to_owned();
    let url = d.url.clone();
    let out = tokio::task::spawn_blocking(move || agentd(&url, &["answer", &id, "late"])).await.unwrap();
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("UNSUPPORTED_OPERATION"), "{}", out.stderr);
}

/// The README's round trip on the built-in document: `agentd run demo`
/// stops at its gate, a wrong answer is refused, a right one finishes the
/// run with the model's summary of it as the result.
#[tokio::test]
async fn run_then_answer_is_the_readme_round_trip() {
    let d = Daemon::start(&[]);
    let url = d.url.clone();
    let out = tokio::task::spawn_blocking(move || agentd(&url, &["run", "demo"])).await.unwrap();
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(out.stdout.contains("Approve the demo run?"), "the gate's question is printed: {}", out.stdout);
    assert!(out.stderr.contains("INPUT_REQUIRED") && out.stderr.contains("agentd answer"), "{}", out.stderr);
    let list = d.call("ListTasks", json!({})).await;
    let id = list["tasks"][0]["id"].as_str().expect("the run task").to_owned();
    // The demo's channel is a `log` channel: the question reaches the
    // daemon's log with how to answer it, and nothing warns.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !d.log().contains("gate: a question needs an answer") {
        assert!(std::time::Instant::now() < deadline, "the gate was never announced:\n{}", d.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log = d.log();
    assert!(log.contains(&format!("agentd answer {id}")), "{log}");
    assert!(!log.contains("WARN"), "a fresh daemon running the demo warns about nothing:\n{log}");

    let (url, task) = (d.url.clone(), id.clone());
    let out = tokio::task::spawn_blocking(move || agentd(&url, &["answer", &task, r#"{"approve": "yes"}"#]))
        .await
        .unwrap();
    assert_ne!(out.code, 0, "a wrong answer is refused");
    assert!(out.stderr.contains("answer.approve") && out.stderr.contains("-32602"), "{}", out.stderr);
    let t = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "the gate stays open: {t}");

    let (url, task) = (d.url.clone(), id.clone());
    let answer = r#"{"approve": true, "note": "ship it"}"#;
    let out = tokio::task::spawn_blocking(move || agentd(&url, &["answer", &task, answer])).await.unwrap();
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    // The steps the answer set going, as they start and end.
    let steps: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with("step ")).collect();
    assert_eq!(
        steps,
        [
            "step approve (human): done",
            "step summarize (agent): running",
            "step summarize (agent): done",
            "step done (finish): done"
        ],
        "{}",
        out.stderr
    );
    let t = wait_for_state(&d, &id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    let result = t["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(result.contains(r#"{"approve":true,"note":"ship it"}"#), "the model saw the typed answer: {t}");
}

#[tokio::test]
async fn run_refuses_bad_inputs_before_sending() {
    let out = agentd("http://127.0.0.1:9", &["run", "demo", "--inputs", "[1, 2]"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("--inputs must be a JSON object"), "{}", out.stderr);
    let out = agentd("http://127.0.0.1:9", &["run", "demo", "--input", "novalue"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("KEY=VALUE"), "{}", out.stderr);
}

/// `--input` values are strings as written (`version=1.2` is "1.2", not a
/// number a string schema refuses); `--input-json` gives typed ones.
#[tokio::test]
async fn run_inputs_are_strings_unless_given_as_json() {
    let tmp = tempfile::tempdir().unwrap();
    let doc = tmp.path().join("agent.md");
    std::fs::write(
        &doc,
        "# Releaser\n\nPrepares releases.\n\n:::!workflow{name=release}\ninputs:\n  schema:\n    type: object\n    \
         properties:\n      version: {type: string}\n      urgent: {type: boolean}\n    required: [version]\n    \
         additionalProperties: false\nsteps:\n  done:\n    kind: finish\n    output: \"{{inputs.version}} {{inputs.urgent}}\"\n:::\n",
    )
    .unwrap();
    let d = Daemon::start(&["--instruction", doc.to_str().unwrap()]);
    let url = d.url.clone();
    let args = ["run", "release", "--no-stream", "--input", "version=1.2", "--input-json", "urgent=true"];
    let out = tokio::task::spawn_blocking(move || agentd(&url, &args)).await.unwrap();
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "1.2 true", "stderr: {}", out.stderr);

    // JSON where a string is asked for is the schema's to refuse, by name.
    let url = d.url.clone();
    let args = ["run", "release", "--no-stream", "--input-json", "version=1.2"];
    let out = tokio::task::spawn_blocking(move || agentd(&url, &args)).await.unwrap();
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("inputs.version"), "{}", out.stderr);
    let out = agentd(&d.url, &["run", "release", "--input-json", "version=v1.2.3"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("is not JSON") && out.stderr.contains("--input version="), "{}", out.stderr);
}
