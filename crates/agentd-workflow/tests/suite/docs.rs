//! The examples of `docs/workflows.md`: each `<!-- workflow: NAME -->`
//! block loads, and each `<!-- refused: FIELD -->` block is refused naming
//! that field. (The example document is run end to end by the daemon's
//! tests.)

const DOC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/workflows.md"));

/// (marker, fenced body) for every fenced block right after a marker.
fn marked_blocks() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = DOC.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(marker) = line.strip_prefix("<!-- ").and_then(|l| l.strip_suffix(" -->")) else { continue };
        let Some(fence) = lines.next().filter(|l| l.starts_with("```")) else { continue };
        let close = if fence.starts_with("````") { "````" } else { "```" };
        let mut body = String::new();
        for l in lines.by_ref() {
            if l == close {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        out.push((marker.to_owned(), body));
    }
    out
}

#[test]
fn the_examples_load_or_are_refused_as_documented() {
    let blocks = marked_blocks();
    let mut loaded = 0;
    let mut refused = 0;
    for (marker, body) in &blocks {
        if let Some(name) = marker.strip_prefix("workflow: ") {
            agentd_workflow::parse(name, body).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            loaded += 1;
        } else if let Some(field) = marker.strip_prefix("refused: ") {
            let errors = agentd_workflow::parse("example", body).expect_err("documented as refused");
            assert!(errors.iter().any(|e| e.field == field), "{field}: {errors:?}");
            refused += 1;
        }
    }
    assert!(loaded >= 1 && refused >= 2, "the markers were found: {blocks:?}");
}

#[test]
fn the_example_document_holds_a_valid_workflow() {
    let (_, doc) =
        marked_blocks().into_iter().find(|(m, _)| m == "example document").expect("example document");
    let start = doc.find(":::!workflow{name=release}\n").expect("the release workflow")
        + ":::!workflow{name=release}\n".len();
    let end = start + doc[start..].find("\n:::\n").expect("its end");
    let d = agentd_workflow::parse("release", &doc[start..end]).unwrap();
    assert_eq!(d.steps.len(), 6);
}

#[test]
fn the_narrowing_example_of_the_tools_page_names_its_tool_sets() {
    let page = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/tools.md"));
    let start = page.find("<!-- workflow: triage -->\n```yaml\n").expect("the example") + 34;
    let body = &page[start..start + page[start..].find("```").expect("its end")];
    let def = agentd_workflow::parse("triage", body).unwrap_or_else(|e| panic!("{e:?}"));
    let agentd_workflow::StepKind::Agent { tools, .. } = &def.steps["triage"].kind else {
        panic!("an agent step")
    };
    assert_eq!(tools.as_deref(), Some(&["files".to_owned(), "tickets__read_*".to_owned()][..]));
    let bad = "steps:\n  a: {kind: agent, prompt: x, tools: files}\n  done: {kind: finish, depends_on: a}\n";
    let errors = agentd_workflow::parse("bad", bad).expect_err("a list is required");
    assert!(errors.iter().any(|e| e.field == "steps.a.tools"), "{errors:?}");
}
