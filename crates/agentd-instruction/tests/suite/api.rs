//! The public API at the crate boundary: options and grants, the machinery accessors, contexts,
//! delivery advisories, and input normalisation (CRLF, BOM, missing front matter).

use agentd_instruction::{
    Context, Family, Form, Included, Options, deliver, deliver_report, load, load_with, tree_json,
};
use serde_json::json;

fn messages(text: &str, opts: &Options) -> Vec<String> {
    load_with(text, opts).expect_err("refused").iter().map(|r| r.to_string()).collect()
}

#[test]
fn load_grants_nothing_beyond_the_default_rung() {
    assert!(load(":::!workflow{name=w}\nsteps: {}\n:::\n").is_ok());
    assert_eq!(
        messages(":::!runtime{name=r}\nresources: {}\n:::\n", &Options::default()),
        ["1: :::!runtime needs the \"compute\" capability grant — add it to document_capabilities"]
    );
    let granted = Options::with_grants([Family::Compute]);
    assert!(load_with(":::!runtime{name=r}\nresources: {}\n:::\n", &granted).is_ok());
}

#[test]
fn identity_and_compose_never_arrive_over_the_wire() {
    let opts = Options { over_the_wire: true, ..Options::all_grants() };
    assert_eq!(
        messages("::!peer{name=p endpoint=https://p.example}\n", &opts),
        [
            "1: ::!peer needs the \"identity\" capability, which is never admissible in a document that arrived over the wire"
        ]
    );
    assert!(load_with("::!channel{name=c target=\"#c\"}\n", &opts).is_ok());
}

#[test]
fn families_parse_from_their_names() {
    assert_eq!("interface".parse::<Family>(), Ok(Family::Interface));
    assert!("default".parse::<Family>().unwrap_err().contains("unknown capability family"));
}

#[test]
fn humans_merge_attributes_over_the_yaml_body() {
    let doc = load_with(
        ":::!human{name=lead principal=ops-lead role=approver}\nrole: reviewer\nchannel: \"@channel/ops\"\nescalate_after: 1h\nmay: [\"@workflow/w\"]\n:::\n\
         ::!channel{name=ops kind=webhook target=\"#ops\"}\n:::!workflow{name=w}\nsteps: {}\n:::\n",
        &Options::with_grants([Family::Interface]),
    )
    .expect("loads");
    let h = &doc.humans()[0];
    assert_eq!(h.name, "lead");
    assert_eq!(h.role.as_deref(), Some("approver"), "the attribute wins");
    assert_eq!(h.channel.as_deref(), Some("@channel/ops"));
    assert_eq!(h.escalate_after.as_deref(), Some("1h"));
    assert_eq!(h.may, ["@workflow/w"]);
    assert_eq!(h.principal, "ops-lead");
    assert_eq!(h.line, 1);
}

#[test]
fn human_body_keys_are_checked_like_columns() {
    let opts = Options::with_grants([Family::Interface]);
    assert_eq!(
        messages(":::!human{name=a}\nchannel_id: x\n:::\n", &opts),
        ["1: \"channel_id\" is not an attribute of human"]
    );
}

#[test]
fn mcp_servers_carry_their_overrides() {
    let doc = load(
        "::::!mcp{name=t endpoint=https://t.example allow=\"read, write\"}\nauth: { kind: none }\n\n:::override{target=drop}\ndisabled: true\n:::\n::::\n::!mcp{name=u}\n",
    )
    .expect("loads");
    let servers = doc.mcp_servers();
    assert_eq!(servers.len(), 2);
    assert_eq!(servers[0].endpoint.as_deref(), Some("https://t.example"));
    assert_eq!(servers[0].allow, ["read", "write"]);
    assert_eq!(servers[0].body.yaml, "auth: { kind: none }\n");
    assert_eq!(servers[0].body.line, 2);
    assert_eq!(servers[0].overrides.len(), 1);
    assert_eq!(servers[0].overrides[0].target, "drop");
    assert_eq!(servers[0].overrides[0].body.yaml, "disabled: true");
    assert_eq!(servers[0].overrides[0].line, 4);
    assert_eq!(servers[1].name, "u");
    assert!(servers[1].body.yaml.is_empty());
}

#[test]
fn a_workflow_section_exposes_its_definition_and_description() {
    let doc = load("# Agent\n\n## !workflow nightly {armed}\n\nRuns every night.\n\n```yaml\nsteps:\n  f: { kind: finish }\n```\n\n## Next\n")
        .expect("loads");
    let w = &doc.workflows()[0];
    assert_eq!(w.name, "nightly");
    assert_eq!(w.line, 3);
    assert_eq!(w.body.yaml, "steps:\n  f: { kind: finish }");
    assert_eq!(w.body.line, 8);
    assert_eq!(w.description.as_deref(), Some("Runs every night."));
    assert_eq!(w.armed, Some(true));
    assert_eq!(doc.find("workflow", "nightly").map(|b| b.form), Some(Form::Section));
    assert_eq!(
        deliver(&doc, &Context::default()),
        "# Agent\n\n[workflow \"nightly\" is loaded and runs autonomously]\n\n## Next\n"
    );
}

#[test]
fn config_fragments_come_in_document_order() {
    let doc =
        load(":::!config\nlimits: { a: 1 }\n:::\n\n:::!config\nmodel: { name: m }\n:::\n").expect("loads");
    let lines: Vec<(String, usize)> = doc.config().into_iter().map(|c| (c.yaml, c.line)).collect();
    assert_eq!(lines, [("limits: { a: 1 }".to_string(), 2), ("model: { name: m }".to_string(), 6)]);
}

#[test]
fn a_fence_name_wins_over_a_yaml_name() {
    let doc = load(":::!workflow{name=renamed}\nname: original\nsteps: {}\n:::\n").expect("loads");
    assert_eq!(doc.workflows()[0].name, "renamed");
}

#[test]
fn context_values_are_text() {
    let ctx =
        Context::from_json(&json!({"params": {"n": 500, "flag": true, "s": "x"}, "facts": {}})).expect("ok");
    assert_eq!(ctx.params["n"], "500");
    assert_eq!(ctx.params["flag"], "true");
    assert!(Context::from_json(&json!({"params": {"n": [1]}})).is_err());
    assert!(Context::from_json(&json!([])).is_err());
}

#[test]
fn delivery_reports_what_it_could_not_resolve() {
    let doc = load(
        "---\nparameters:\n  - {name: repo, required: true}\n---\nRepo ${repo}.\n\n::include{id=ins_gone}\n",
    )
    .expect("loads");
    let d = deliver_report(&doc, &Context::default());
    assert_eq!(d.text, "Repo ${repo}.\n");
    assert_eq!(
        d.advisories,
        [
            "line 7: include \"ins_gone\" could not be resolved; skipped",
            "required parameter \"repo\" has no value; ${repo} is left as written",
        ]
    );
}

#[test]
fn includes_are_guarded_against_cycles() {
    let src = "---\nid: instruction://ins_a\n---\nA.\n\n::include{id=ins_a}\n";
    let doc = load(src).expect("loads");
    let mut ctx = Context::default();
    ctx.includes.insert("ins_a".into(), Included::Source(src.into()));
    let d = deliver_report(&doc, &ctx);
    assert!(d.text.starts_with("A.\n\nA.\n"), "{}", d.text);
    assert!(d.advisories.iter().any(|a| a.contains("circular")), "{:?}", d.advisories);
}

#[test]
fn parameter_values_are_capped_and_never_reparsed() {
    let doc = load("::param{name=p}\n::param{name=q default=Q}\nValue: ${p}\n").expect("loads");
    let mut ctx = Context::default();
    ctx.params.insert("p".into(), "${q} [[human/x]]".into());
    assert_eq!(deliver(&doc, &ctx), "Value: ${q} [[human/x]]\n");
    ctx.params.insert("p".into(), "é".repeat(5000));
    let text = deliver(&doc, &ctx);
    assert!(text.len() <= "Value: \n".len() + agentd_instruction::MAX_PARAM_VALUE);
}

#[test]
fn crlf_bom_and_missing_front_matter_are_normalised() {
    let doc = load("\u{feff}# Title\r\n\r\nMUST: be brief.\r\n").expect("loads");
    assert_eq!(deliver(&doc, &Context::default()), "# Title\n\n**MUST:** be brief.\n");
    let tree = tree_json(&doc);
    assert_eq!(tree["spec"], "1");
    assert!(tree.get("frontMatter").is_none());
    assert_eq!(deliver(&load("").expect("empty loads"), &Context::default()), "\n");
}

#[test]
fn an_integer_spec_is_normalised_and_unknown_keys_are_kept() {
    let doc = load("---\nspec: 1\nowner: team-a\n---\nHello.\n").expect("loads");
    let fm = doc.front_matter.as_ref().expect("front matter");
    assert_eq!(fm.map["spec"], "1");
    assert_eq!(fm.map["owner"], "team-a");
    assert_eq!(deliver(&doc, &Context::default()), "Hello.\n");
}

#[test]
fn front_matter_problems_have_no_line() {
    let r = load("---\nspec: \"1\"\ntitle: [unclosed\n---\n").expect_err("bad yaml");
    assert_eq!(r[0].line, None);
    assert!(r[0].message.starts_with("front matter: not valid YAML"), "{}", r[0].message);
    let r = load("---\nspec: 1\n").expect_err("unclosed");
    assert_eq!(r[0].to_string(), "front matter: never closed — end it with a line of ---");
}

#[test]
fn sigiled_headings_end_a_section_and_never_nest() {
    let doc =
        load("## !skill a\n\nGuidance.\n\n### !workflow b\n\n```yaml\nsteps: {}\n```\n").expect("loads");
    let kinds: Vec<(&str, Option<&str>)> =
        doc.blocks.iter().map(|b| (b.kind.as_str(), b.name.as_deref())).collect();
    assert_eq!(kinds, [("skill", Some("a")), ("workflow", Some("b"))]);
    assert_eq!(doc.blocks[0].body_text(), Some("\nGuidance.\n"));
}

#[test]
fn refusals_display_as_line_colon_message() {
    let r = load("::!workflow{name=w}\n").expect_err("leaf workflow");
    assert_eq!(r[0].to_string(), "1: workflow requires a body (its steps) — use :::!workflow");
    assert_eq!(r[0].code, "body-required");
}
