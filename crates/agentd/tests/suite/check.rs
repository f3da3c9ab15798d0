//! `agentd check`: the binary on conformance fixtures and on broken documents — exit codes,
//! refusals on stderr, the block tree and the byte-exact delivered text on stdout.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentd-instruction/tests/conformance")
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../agentd-instruction/examples/agent.md")
}

fn check(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_agentd")).arg("check").args(args).output().expect("run agentd check")
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).expect("utf-8 output")
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn a_valid_document_prints_ok_and_a_summary() {
    let doc = example();
    let out = check(&[path(&doc), "--grant", "interface"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("ok: "), "{stdout}");
    assert!(stdout.contains("1 workflow (triage)"), "{stdout}");
    assert!(stdout.contains("2 human (oncall, lead)"), "{stdout}");
    assert_eq!(stdout.lines().count(), 1, "one summary line: {stdout}");
    // The specification's `limits.run` is no agentd setting: serve skips it, with this warning.
    assert_eq!(
        text(&out.stderr),
        "warning: the instruction document's !config sets a key agentd does not use; ignored: limits.run\n"
    );
}

#[test]
fn refusals_go_to_stderr_one_per_line_with_exit_1() {
    let doc = fixtures().join("refusals/id-class-shorthand/doc.md");
    let out = check(&[path(&doc)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing on stdout: {}", text(&out.stdout));
    assert_eq!(
        text(&out.stderr),
        concat!(
            "1: \"#oncall\" is not an attribute — identity is name=oncall\n",
            "1: attributes: expected key=value, found \"#\" — quote values with spaces\n",
            "1: attributes: expected key=value, found \"oncall\" — quote values with spaces\n",
            "1: attributes: expected key=value, found \".\" — quote values with spaces\n",
            "1: attributes: expected key=value, found \"human\" — quote values with spaces\n",
        )
    );
}

#[test]
fn an_ungranted_family_is_refused_until_granted() {
    let doc = example();
    let out = check(&[path(&doc)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("26: :::!human[] needs the \"interface\" capability grant"), "{stderr}");
    assert_eq!(check(&[path(&doc), "--all-grants"]).status.code(), Some(0));
}

#[test]
fn delivery_is_byte_exact_with_a_context() {
    let case = fixtures().join("corpus/param-flags");
    let (doc, ctx) = (case.join("doc.md"), case.join("context.json"));
    let out = check(&[path(&doc), "--delivery", "--context", path(&ctx)]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let want = std::fs::read(case.join("delivered.txt")).expect("delivered.txt");
    assert_eq!(text(&out.stdout), text(&want));
}

#[test]
fn tree_matches_the_fixture_tree() {
    let case = fixtures().join("corpus/coding-agent");
    let out = check(&[path(&case.join("doc.md")), "--tree", "--all-grants"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let want: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("tree.json")).expect("tree.json"))
            .expect("json");
    assert_eq!(got, want);
}

#[test]
fn a_front_matter_refusal_has_no_line() {
    let doc = fixtures().join("refusals/unimplemented-version/doc.md");
    let out = check(&[path(&doc)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "front matter: spec \"2\" is not implemented by this reader\n");
}

#[test]
fn a_missing_file_is_an_error() {
    let out = check(&["/nonexistent/agent.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot read /nonexistent/agent.md"));
}

#[test]
fn workflows_are_checked_and_their_problems_name_line_step_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("agent.md");
    let source = "---\nspec: \"1\"\n---\n# a\n\n:::!workflow{name=w}\nsteps:\n  a: {kind: agent, prompt: hi, depends_on: [zz]}\n  f: {kind: finish}\n:::\n";
    std::fs::write(&doc, source).unwrap();
    let out = check(&[path(&doc), "--all-grants"]);
    assert_eq!(out.status.code(), Some(1), "stdout: {}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("workflow \"w\": steps.a.depends_on[0]: \"zz\" is not a step"), "{err}");
    assert!(
        err.lines().all(|l| l.split(':').next().unwrap().parse::<usize>().is_ok()),
        "line: message: {err}"
    );
    std::fs::write(&doc, source.replace("depends_on: [zz]", "timeout: soon")).unwrap();
    let err = text(&check(&[path(&doc), "--all-grants"]).stderr);
    assert!(
        err.contains("8: workflow \"w\": steps.a.timeout: \"soon\" is not a duration"),
        "the step's line: {err}"
    );
}

/// `agentd check --all-grants` on a document with this text, written to a file.
fn check_text(doc_text: &str) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("agent.md");
    std::fs::write(&doc, doc_text).unwrap();
    let out = check(&[path(&doc), "--all-grants"]);
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn config_and_mcp_blocks_serve_would_refuse_are_refused() {
    let head = "# Agent\n\nAnswers.\n\n";
    let (code, stdout, stderr) = check_text(&format!("{head}:::!config\nlimits: {{max_steps: x}}\n:::\n"));
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("agent.md:6") && stderr.contains("limits.max_steps: invalid type"), "{stderr}");

    let mcp = ":::!mcp{name=t endpoint=http://127.0.0.1:9/mcp}\npolicy: {tools: {\"x\": maybe}}\n:::\n";
    let (code, stdout, stderr) = check_text(&format!("{head}{mcp}"));
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("the !mcp block t") && stderr.contains("maybe"), "{stderr}");
    assert!(stderr.contains("(document line 6, column 23)"), "the document's line: {stderr}");

    // A key agentd does not use: serve's warning, and the document is ok.
    let (code, stdout, stderr) = check_text(&format!("{head}:::!config\nlimits: {{max_stepz: 3}}\n:::\n"));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.starts_with("ok: "), "{stdout}");
    assert_eq!(
        stderr,
        "warning: the instruction document's !config sets a key agentd does not use; ignored: limits.max_stepz\n"
    );
}
