//! A tool call waiting for approval, seen from the CLI: `send` prints the
//! turn's text and then the question (the tool and its arguments), and
//! `tasks get` shows that question over several lines, as it was written.

use super::{agentd, ok};
use crate::common::*;
use crate::mcp_servers::{python, server_script, skipped};

#[test]
fn send_prints_the_approval_question_after_the_turns_text() {
    if skipped() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("script.yaml");
    // The first step's text is streamed once its (allowed) call is made;
    // the second step's call waits for approval.
    let steps = "- deltas: [\"Reading.\"]\n  tool_calls: [{id: c1, name: py__echo, arguments: {text: hi}}]\n\
                 - tool_calls: [{id: c2, name: py__write_note, arguments: {text: hi}}]\n- text: done\n";
    std::fs::write(&script, steps).unwrap();
    let args = serde_json::to_string(&[server_script(), "stdio".into()]).unwrap();
    let config = write_config(
        tmp.path(),
        &format!(
            "mcp:\n  servers:\n    - name: py\n      stdio: {{command: '{}', args: {args}}}\n      policy: {{tools: {{echo: allow}}}}\n",
            python()
        ),
    );
    let d = Daemon::start(&[
        "--config",
        config.to_str().unwrap(),
        "--model",
        "scripted",
        "--model-script",
        script.to_str().unwrap(),
    ]);

    let out = ok(agentd(&d.url, &["send", "read it"]));
    assert!(out.stdout.starts_with("Reading.\n"), "{out:?}");
    let question = "Approve the call of the tool py__write_note (MCP server py) with these arguments?\n{\n  \"text\": \"hi\"\n}\n";
    assert!(out.stdout.contains(question), "the question follows the text: {out:?}");
    assert!(out.stderr.contains(": INPUT_REQUIRED"), "{out:?}");

    let id = out.stderr.split_whitespace().nth(1).unwrap().trim_end_matches(':');
    let out = ok(agentd(&d.url, &["tasks", "get", id]));
    assert!(
        out.stdout.contains(
            "status   Approve the call of the tool py__write_note (MCP server py) with these arguments?\n         {\n           \"text\": \"hi\"\n         }\n"
        ),
        "the question keeps its lines: {out:?}"
    );
    assert!(!out.stdout.contains("\\n"), "{out:?}");
}
