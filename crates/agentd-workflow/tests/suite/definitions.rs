//! Definitions: what loads, what is refused and how the refusal reads.

use agentd_workflow::{ErrorPolicy, StepKind, parse};

const GOOD: &str = r#"
description: review then publish
inputs:
  schema: {type: object, properties: {doc: {type: string}}, required: [doc]}
limits: {steps: 20, deadline: 1h}
steps:
  ask:
    kind: human
    question: "Publish {{inputs.doc}}?"
    schema: {type: object, properties: {approve: {type: boolean}}, required: [approve]}
    to: "@human/editor"
    timeout: 2h
    fallback: wait
  route:
    kind: switch
    depends_on: ask
    cases:
      - when: steps.ask.output.approve
        steps: [publish]
    default: [drop]
  publish: {kind: agent, prompt: "Publish {{inputs.doc}}", retry: {max: 2, backoff: 1s}}
  drop: {kind: assign, values: {dropped: true}, on_error: continue}
  done: {kind: finish, depends_on: [publish, drop], output: "{{steps.publish.output}}"}
"#;

fn errors(yaml: &str) -> Vec<String> {
    parse("wf", yaml).expect_err("refused").iter().map(|e| format!("{}: {}", e.field, e.message)).collect()
}

#[test]
fn a_full_definition_loads_with_implied_dependencies() {
    let d = parse("wf", GOOD).unwrap();
    assert_eq!(d.steps.len(), 5);
    assert_eq!(d.steps["publish"].depends_on, ["route"], "a switch arm depends on its switch");
    assert_eq!(d.steps["publish"].retry.max, 2);
    assert_eq!(d.steps["drop"].on_error, ErrorPolicy::Continue);
    assert!(matches!(&d.steps["ask"].kind, StepKind::Human { to, .. } if to == "editor"));
    assert_eq!(d.limits.steps, Some(20));
    assert_eq!(d.hash.len(), 64);
    assert_ne!(d.hash, parse("wf", &GOOD.replace("2h", "3h")).unwrap().hash, "the hash follows the content");
}

#[test]
fn refusals_name_the_step_and_the_field() {
    let e = errors("steps:\n  a: {kind: agent, prompt: hi, colour: red}\n  f: {kind: finish}\n");
    assert!(e.iter().any(|m| m.starts_with("steps.a.colour: is not a known key")), "{e:?}");
    let e = errors("steps:\n  a: {kind: agnet}\n  f: {kind: finish}\n");
    assert!(e.iter().any(|m| m.starts_with("steps.a.kind: \"agnet\" is not a step kind")), "{e:?}");
    let e = errors("steps:\n  a: {kind: agent, prompt: hi, depends_on: [zz]}\n  f: {kind: finish}\n");
    assert_eq!(e, ["steps.a.depends_on[0]: \"zz\" is not a step of this workflow"]);
    let e = errors("steps:\n  a: {kind: agent, prompt: hi}\n");
    assert_eq!(e, ["steps: a workflow needs a step of kind finish"]);
    let e = errors(
        "steps:\n  a: {kind: assign, values: 1, depends_on: b}\n  b: {kind: assign, values: 1, depends_on: a}\n  f: {kind: finish}\n",
    );
    assert!(e[0].contains("cycle") && e[0].contains("a → b → a"), "{e:?}");
    let e = errors("steps:\n  a: {kind: human, question: q}\n  f: {kind: finish}\n");
    assert_eq!(e, ["steps.a.to: is required"]);
    let e = errors("steps:\n  a: {kind: human, question: q, to: alice}\n  f: {kind: finish}\n");
    assert!(e[0].contains("@human/<name>"), "{e:?}");
    let e = errors("steps:\n  a: {kind: agent, prompt: \"{{steps.zz.output}}\"}\n  f: {kind: finish}\n");
    assert!(e[0].starts_with("steps.a.prompt:") && e[0].contains("\"zz\""), "{e:?}");
    let e = errors("steps:\n  a: {kind: agent, prompt: x, when: \"1 +\"}\n  f: {kind: finish}\n");
    assert!(e[0].starts_with("steps.a.when:"), "{e:?}");
    let e = errors("steps:\n  a: {kind: agent, prompt: x, timeout: soon}\n  f: {kind: finish}\n");
    assert!(e[0].starts_with("steps.a.timeout:"), "{e:?}");
    let e = errors(
        "steps:\n  a: {kind: human, question: q, to: \"@human/x\", schema: {type: thing}}\n  f: {kind: finish}\n",
    );
    assert!(e[0].starts_with("steps.a.schema: is not a valid JSON Schema"), "{e:?}");
    // A body known to be valid is read without compiling its schemas; every
    // other check still applies.
    let body = "steps:\n  a: {kind: human, question: q, to: \"@human/x\", schema: {type: thing}}\n  f: {kind: finish}\n";
    let read = agentd_workflow::parse_known_valid("w", body).expect("read without compiling its schemas");
    assert_eq!(read.steps.len(), 2);
    let e = agentd_workflow::parse_known_valid(
        "w",
        "steps:\n  a: {kind: human, question: q}\n  f: {kind: finish}\n",
    );
    assert!(e.is_err_and(|e| e[0].to_string().contains("steps.a.to: is required")));
    let e = errors("stepz: {}\n");
    assert!(
        e.iter().any(|m| m.starts_with("stepz:")) && e.iter().any(|m| m == "steps: is required"),
        "{e:?}"
    );
    assert!(!errors(": : :\n  - [").is_empty());
}

#[test]
fn inputs_may_be_written_as_a_map_of_schemas() {
    let d = parse(
        "wf",
        "inputs:\n  ticket: {type: string}\n  n: {type: integer, default: 1}\nsteps:\n  f: {kind: finish}\n",
    )
    .unwrap();
    let s = d.inputs_schema.unwrap();
    assert_eq!(s["required"], serde_json::json!(["ticket"]));
    assert_eq!(s["properties"]["n"]["type"], "integer");
    assert_eq!(s["additionalProperties"], false);
}
