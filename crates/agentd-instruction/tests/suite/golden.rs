//! Golden test of agentd's own example document (`examples/agent.md`): its delivered text and
//! block tree are pinned under `tests/golden/`, and `docs/instruction-documents.md` quotes the
//! document and its delivery verbatim. `UPDATE_EXPECT=1` rewrites all three.

use agentd_instruction::{Context, Family, Options, deliver_report, load_with, tree_json};
use std::fs;
use std::path::{Path, PathBuf};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn docs_file() -> PathBuf {
    crate_dir().join("../../docs/instruction-documents.md")
}

fn update() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1")
}

/// Compares `got` with the golden file, or rewrites it under `UPDATE_EXPECT=1`.
fn expect_file(path: &Path, got: &str) {
    if update() {
        fs::write(path, got).expect("write golden");
        return;
    }
    let want = fs::read_to_string(path).unwrap_or_default();
    assert!(
        want == got,
        "{} is stale (run with UPDATE_EXPECT=1 to accept):\n--- want\n{want}\n--- got\n{got}",
        path.display()
    );
}

fn example() -> String {
    fs::read_to_string(crate_dir().join("examples/agent.md")).expect("examples/agent.md")
}

fn grants() -> Options {
    Options::with_grants([Family::Interface])
}

#[test]
fn example_delivery_and_tree_are_pinned() {
    let doc = load_with(&example(), &grants()).unwrap_or_else(|rs| panic!("example refused: {rs:?}"));
    let d = deliver_report(&doc, &Context::default());
    assert!(d.advisories.is_empty(), "advisories: {:?}", d.advisories);
    expect_file(&crate_dir().join("tests/golden/agent.delivered.txt"), &d.text);
    let tree = serde_json::to_string_pretty(&tree_json(&doc)).expect("json") + "\n";
    expect_file(&crate_dir().join("tests/golden/agent.tree.json"), &tree);
}

#[test]
fn example_exposes_the_machinery_agentd_acts_on() {
    let doc = load_with(&example(), &grants()).expect("example loads");
    let config = doc.config();
    assert_eq!(config.len(), 1);
    assert_eq!(config[0].yaml, "limits:\n  run: { deadline: 30m }");
    assert_eq!(config[0].line, 20);

    let workflows = doc.workflows();
    assert_eq!(workflows.len(), 1);
    assert_eq!(workflows[0].name, "triage");
    assert_eq!(workflows[0].line, 37);
    assert_eq!(workflows[0].body.line, 38);
    assert!(workflows[0].body.yaml.starts_with("inputs:\n  ticket: { type: string }\nsteps:\n"));

    let humans = doc.humans();
    let names: Vec<&str> = humans.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["oncall", "lead"]);
    assert_eq!(humans[0].role.as_deref(), Some("approver"));
    assert_eq!(humans[0].channel.as_deref(), Some("@channel/ops"));
    assert_eq!(humans[0].escalate_after.as_deref(), Some("15m"));
    assert_eq!(humans[0].may, ["@workflow/triage"]);
    assert_eq!(humans[0].principal, "operator");
    assert!(humans[1].may.is_empty());

    let channels = doc.channels();
    assert_eq!(channels.len(), 1);
    assert_eq!(channels[0].name, "ops");
    assert_eq!(channels[0].kind.as_deref(), Some("webhook"));
    assert_eq!(channels[0].target.as_deref(), Some("#platform-ops"));
    assert_eq!(channels[0].tags, ["egress"]);
    assert!(doc.mcp_servers().is_empty());
}

#[test]
fn example_needs_the_interface_grant() {
    let refused = load_with(&example(), &Options::default()).expect_err("no grant");
    let lines: Vec<String> = refused.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        lines,
        [
            "26: :::!human[] needs the \"interface\" capability grant — add it to document_capabilities",
            "33: ::!channel needs the \"interface\" capability grant — add it to document_capabilities",
        ]
    );
}

/// The text between `<!-- begin NAME -->` and `<!-- end NAME -->`, inside its code fence.
fn section(doc: &str, name: &str) -> Option<(usize, usize)> {
    let begin = format!("<!-- begin {name} -->\n");
    let start = doc.find(&begin)? + begin.len();
    let start = start + doc[start..].find('\n')? + 1; // past the opening fence line
    let end_marker = doc[start..].find(&format!("<!-- end {name} -->"))? + start;
    let end = doc[..end_marker].trim_end_matches('\n').rfind('\n')? + 1; // before the closing fence
    Some((start, end))
}

#[test]
fn docs_quote_the_example_and_its_delivery() {
    let path = docs_file();
    let mut docs = fs::read_to_string(&path).expect("docs/instruction-documents.md");
    let doc = load_with(&example(), &grants()).expect("example loads");
    let delivered = deliver_report(&doc, &Context::default()).text;
    for (name, want) in [("example", example()), ("delivered", delivered)] {
        let (start, end) = section(&docs, name).unwrap_or_else(|| panic!("docs lack the {name} markers"));
        if update() {
            docs.replace_range(start..end, &want);
        } else {
            assert!(docs[start..end] == want, "docs quote a stale {name} (run with UPDATE_EXPECT=1)");
        }
    }
    if update() {
        fs::write(&path, docs).expect("write docs");
    }
}
