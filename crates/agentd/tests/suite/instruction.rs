//! `agentd serve --instruction FILE`: the model receives exactly the
//! document's delivered text as its system prompt; a refused document
//! stops the daemon at start with the line and the reason.

use crate::common::*;
use serde_json::{Value, json};
use std::path::PathBuf;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../agentd-instruction").join(name)
}

#[tokio::test]
async fn the_model_receives_the_delivered_document_as_its_system_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"[{"text": "routed"}]"#).unwrap();
    let record = dir.path().join("requests.jsonl");
    let config = dir.path().join("agentd.yaml");
    let yaml = format!(
        "instruction: {}\nmodel:\n  kind: scripted\n  script: {}\n  record_to: {}\n",
        example("examples/agent.md").display(),
        script.display(),
        record.display()
    );
    std::fs::write(&config, yaml).unwrap();
    let d = Daemon::start_in(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);
    let r = d.call("SendMessage", send_params("m1", "ticket: login is down", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let req: Value =
        serde_json::from_str(std::fs::read_to_string(&record).unwrap().lines().next().unwrap()).unwrap();
    let golden = std::fs::read_to_string(example("tests/golden/agent.delivered.txt")).unwrap();
    assert_eq!(req["messages"][0], json!({"role": "system", "content": golden}));
}

/// Runs `agentd serve` on a document `name` holding `text`, expecting it to
/// refuse to start; returns its stderr and whether the data dir was touched.
fn serve_refuses(name: &str, text: &str) -> (String, bool) {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join(name);
    std::fs::write(&doc, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--instruction")
        .arg(&doc)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the daemon started");
    (String::from_utf8_lossy(&out.stderr).into_owned(), dir.path().join("data").exists())
}

#[test]
fn a_refused_document_stops_the_daemon_with_line_and_reason() {
    let (err, touched) = serve_refuses("bad.md", "# Agent\n\n:::!skill{name=x}\nnever closed\n");
    assert!(err.contains("bad.md:3:") && err.contains("never closed"), "{err}");
    assert!(!touched, "a refused document touches no data");
}

/// A daemon whose document says `doc_config` in a `!config` block and whose
/// config file says `file_yaml`; the model replays a tool call, then an answer.
fn with_document_config(doc_config: &str, file_yaml: &str) -> (tempfile::TempDir, Daemon) {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("agent.md");
    std::fs::write(&doc, format!("# Agent\n\nAnswer briefly.\n\n:::!config\n{doc_config}:::\n")).unwrap();
    let script = dir.path().join("script.json");
    let steps =
        r#"[{"tool_calls": [{"id": "c1", "name": "no_such_tool", "arguments": {}}]}, {"text": "done"}]"#;
    std::fs::write(&script, steps).unwrap();
    let config = dir.path().join("agentd.yaml");
    let yaml = format!("instruction: {}\nmodel:\n  script: {}\n{file_yaml}", doc.display(), script.display());
    std::fs::write(&config, yaml).unwrap();
    let d = Daemon::start_in(&dir.path().join("data"), &["--config", config.to_str().unwrap()]);
    (dir, d)
}

#[tokio::test]
async fn a_document_config_block_sets_what_the_config_file_does_not() {
    // The document picks the model kind and a one-call limit.
    let (_dir, d) = with_document_config("model: {kind: scripted}\nlimits: {max_steps: 1}\n", "");
    let r = d.call("SendMessage", send_params("m1", "go", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_FAILED", "{r}");
    let why = r["task"]["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.contains("limit of 1 model calls"), "the document's limit applied: {why}");
}

#[tokio::test]
async fn document_config_keys_agentd_does_not_use_are_skipped_with_a_warning() {
    let (_dir, d) =
        with_document_config("model: {kind: scripted}\nlimits: {max_runs: 4, max_steps: 1}\n", "");
    let r = d.call("SendMessage", send_params("m1", "go", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_FAILED", "max_steps still applied: {r}");
    let log = d.log();
    assert!(log.contains("limits.max_runs") && log.contains("ignored"), "{log}");
}

#[tokio::test]
async fn the_config_file_wins_over_the_document_leaf_by_leaf() {
    let (_dir, d) = with_document_config(
        "model: {kind: scripted}\nlimits: {max_steps: 1}\n",
        "limits:\n  max_steps: 4\n",
    );
    let r = d.call("SendMessage", send_params("m1", "go", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "the file's max_steps won: {r}");
    assert_eq!(r["task"]["artifacts"][0]["parts"][0]["text"], "done");
}

#[test]
fn a_document_config_with_a_bad_value_names_its_block() {
    let (err, _) = serve_refuses("agent.md", "# Agent\n\n:::!config\nlimits: {max_steps: many}\n:::\n");
    assert!(err.contains("agent.md:4") && err.contains("limits.max_steps"), "{err}");
}
