//! `agentd serve --instruction FILE`: the model receives exactly the
//! document's delivered text as its system prompt; a refused document
//! stops the daemon at start with the line and the reason.

mod common;
use common::*;
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

#[test]
fn a_refused_document_stops_the_daemon_with_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("bad.md");
    std::fs::write(&doc, "# Agent\n\n:::!skill{name=x}\nnever closed\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--instruction")
        .arg(&doc)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.md:3:") && err.contains("never closed"), "{err}");
    assert!(!dir.path().join("data").exists(), "a refused document touches no data");
}
