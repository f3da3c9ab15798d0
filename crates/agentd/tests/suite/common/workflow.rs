//! Workflow runs end to end: a daemon with the `scripted` model and an
//! instruction document holding the workflows under test.

use crate::common::scripted::*;
use crate::common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub const B: Binding = Binding::JsonRpc;

/// A run that waits at one gate: `approver` is asked to ship
/// `inputs.what` with an answer `{ok: boolean}`, and the run finishes with
/// `ok`.
pub const REVIEW: &str = r#"
steps:
  ask:
    kind: human
    question: "Ship {{inputs.what}}?"
    schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
    to: "@human/approver"
  done: {kind: finish, depends_on: ask, output: "{{steps.ask.output.ok}}"}
"#;

/// A daemon whose document is `doc` (the built-in one when `None`) and
/// whose model replays `steps`. The tempdir holds the document.
pub fn daemon(doc: Option<&str>, steps: Value, tokens: bool) -> (Scripted, tempfile::TempDir) {
    daemon_with(doc, steps, tokens, "")
}

/// [`daemon`] as an `agentd serve` process (kill -9).
pub fn daemon_process(doc: Option<&str>, steps: Value, tokens: bool) -> (Scripted, tempfile::TempDir) {
    daemon_of(doc, steps, tokens, "", true)
}

/// [`daemon`] with `config` appended to its YAML config.
pub fn daemon_with(
    doc: Option<&str>,
    steps: Value,
    tokens: bool,
    config: &str,
) -> (Scripted, tempfile::TempDir) {
    daemon_of(doc, steps, tokens, config, false)
}

/// [`daemon_with`], in this process or as a process.
pub fn daemon_of(
    doc: Option<&str>,
    steps: Value,
    tokens: bool,
    config: &str,
    process: bool,
) -> (Scripted, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = instruction_yaml(&dir, doc);
    let yaml = format!("{yaml}{config}");
    match process {
        true => (scripted_process(steps, &yaml, tokens), dir),
        false => (scripted(steps, &yaml, tokens), dir),
    }
}

/// The config line naming `doc`, written into `dir` (none without one).
fn instruction_yaml(dir: &tempfile::TempDir, doc: Option<&str>) -> String {
    let Some(text) = doc else { return String::new() };
    let path = dir.path().join("agent.md");
    std::fs::write(&path, text).expect("write document");
    format!("instruction: {}\n", path.display())
}

/// `daemon_of` with a scripted model that goes on across restarts.
pub fn daemon_resuming(
    doc: Option<&str>,
    steps: Value,
    tokens: bool,
    config: &str,
    process: bool,
) -> (Scripted, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = instruction_yaml(&dir, doc);
    (scripted_resuming(steps, &format!("{yaml}{config}"), tokens, process), dir)
}

/// A document with the given workflow blocks and one person, `approver`,
/// bound to `principal`, on channel `ops`.
pub fn doc(workflows: &[(&str, &str)], principal: &str) -> String {
    let mut out = String::from("---\nspec: \"1\"\n---\n# test agent\n\nYou run workflows.\n\n");
    for (name, body) in workflows {
        out.push_str(&format!(":::!workflow{{name={name}}}\n{body}\n:::\n\n"));
    }
    out.push_str(&format!(
        "::!human{{name=approver role=approver channel=@channel/ops principal={principal}}}\n\n"
    ));
    out.push_str("::!channel{name=ops kind=webhook}\n");
    out
}

/// Starts a run and returns the task the op answered with (after it
/// settled: terminal or waiting at a gate).
pub async fn run(d: &Daemon, workflow: &str, inputs: Value) -> Value {
    task(
        &d.ok(B, "SendMessage", command("workflow.run", json!({"workflow": workflow, "inputs": inputs})))
            .await,
    )
}

pub async fn status(d: &Daemon, run: &str) -> Value {
    read_op(d, B, "workflow.status", json!({"run": run})).await
}

/// Answers the gate of task `task_id` with the part `part`.
pub async fn answer(d: &Daemon, task_id: &str, part: Value) -> Result<Value, WireError> {
    let msg = json!({"messageId": uid("answer"), "role": "ROLE_USER", "taskId": task_id, "parts": [part]});
    d.op(B, "SendMessage", json!({"message": msg})).await
}

pub fn id(task: &Value) -> String {
    task["id"].as_str().expect("task id").to_owned()
}

/// The result artifact's one part.
pub fn result_part(task: &Value) -> Value {
    let arts = task["artifacts"].as_array().unwrap_or_else(|| panic!("artifacts: {task}"));
    let r =
        arts.iter().find(|a| a["name"] == "result").unwrap_or_else(|| panic!("a result artifact: {task}"));
    r["parts"][0].clone()
}

/// Polls GetTask until `want` (panics after `secs`).
pub async fn wait_state(d: &Daemon, task_id: &str, want: &str, secs: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let t = d.ok(B, "GetTask", json!({"id": task_id})).await;
        if task_state(&t) == want {
            return t;
        }
        assert!(Instant::now() < deadline, "task {task_id} never reached {want}: {t}\nlog:\n{}", d.log());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
