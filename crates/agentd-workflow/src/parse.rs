//! YAML body → [`Definition`], fail-closed: an unknown key, an unknown
//! kind, a missing or ill-typed field, a dangling `depends_on`, a cycle, a
//! bad guard or template, or no `finish` step refuses the whole workflow
//! with errors naming the step and the field.

use crate::dag;
use crate::def::*;
use crate::fields::*;
use crate::step::step;
use crate::template;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// One refusal: where (`steps.review.question`) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("workflow {workflow:?}: {field}: {message}")]
pub struct DefinitionError {
    pub workflow: String,
    /// A dotted path inside the body (`steps.ask.to`), or empty for the whole body.
    pub field: String,
    pub message: String,
}

const TOP_KEYS: &[&str] = &["name", "description", "inputs", "limits", "steps"];

/// Reads the body of workflow `name`. Every problem found is reported.
pub fn parse(name: &str, yaml: &str) -> Result<Definition, Vec<DefinitionError>> {
    read(Errors { workflow: name.to_owned(), list: Vec::new(), compile_schemas: true }, yaml)
}

/// [`parse`] of a body known to be valid (the built-in document's, which a
/// test parses): its JSON Schemas are not compiled to check them. The first
/// schema compiled builds the validator of JSON Schema's own meta-schema,
/// a third of the instructions of a start; a run compiles the schemas it
/// uses when it uses them.
pub fn parse_known_valid(name: &str, yaml: &str) -> Result<Definition, Vec<DefinitionError>> {
    read(Errors { workflow: name.to_owned(), list: Vec::new(), compile_schemas: false }, yaml)
}

fn read(mut errs: Errors, yaml: &str) -> Result<Definition, Vec<DefinitionError>> {
    let name = errs.workflow.clone();
    let name = name.as_str();
    let body: Value = match serde_yaml_ng::from_str(yaml) {
        Ok(v) => v,
        Err(e) => {
            errs.add("", format!("the body is not valid YAML: {e}"));
            return Err(errs.list);
        }
    };
    let Value::Object(top) = body else {
        errs.add("", "the body must be a mapping with `steps:`");
        return Err(errs.list);
    };
    unknown_keys(&mut errs, "", &top, TOP_KEYS);
    if let Some(n) = top.get("name")
        && n.as_str() != Some(name)
    {
        errs.add("name", format!("must be the block's name {name:?} when given"));
    }
    let description = opt_str(&mut errs, "description", top.get("description"));
    let inputs_schema = inputs_schema(&mut errs, top.get("inputs"));
    let limits = limits(&mut errs, top.get("limits"));
    let mut steps = BTreeMap::new();
    match top.get("steps") {
        Some(Value::Object(m)) if !m.is_empty() => {
            for (id, v) in m {
                if let Some(s) = step(&mut errs, id, v) {
                    steps.insert(id.clone(), s);
                }
            }
        }
        Some(_) => errs.add("steps", "must be a non-empty mapping of step id to step"),
        None => errs.add("steps", "is required"),
    }
    if errs.list.is_empty() {
        add_implied_dependencies(&mut steps);
        for (field, message) in dag::check(&steps) {
            errs.add(field, message);
        }
        check_references(&mut errs, &steps);
    }
    if !errs.list.is_empty() {
        return Err(errs.list);
    }
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([0]);
    h.update(yaml.as_bytes());
    Ok(Definition {
        name: name.to_owned(),
        description,
        inputs_schema,
        limits,
        steps,
        source: yaml.to_owned(),
        hash: hex::encode(h.finalize()),
    })
}

fn inputs_schema(errs: &mut Errors, v: Option<&Value>) -> Option<Value> {
    let m = match v? {
        Value::Object(m) => m,
        _ => {
            errs.add("inputs", "must be a mapping with `schema:`");
            return None;
        }
    };
    if m.contains_key("schema") {
        unknown_keys(errs, "inputs", m, &["schema"]);
        return json_schema(errs, "inputs.schema", m.get("schema"));
    }
    // The short form: input name → its schema. Inputs without a `default`
    // are required; no others are accepted.
    let mut required = Vec::new();
    for (name, schema) in m {
        json_schema(errs, &join("inputs", name), Some(schema));
        if schema.get("default").is_none() {
            required.push(Value::String(name.clone()));
        }
    }
    Some(serde_json::json!({
        "type": "object",
        "properties": m,
        "required": required,
        "additionalProperties": false,
    }))
}

fn limits(errs: &mut Errors, v: Option<&Value>) -> Limits {
    let Some(v) = v else { return Limits::default() };
    let Value::Object(m) = v else {
        errs.add("limits", "must be a mapping (steps, tokens, deadline)");
        return Limits::default();
    };
    unknown_keys(errs, "limits", m, &["steps", "tokens", "deadline"]);
    let mut count = |field: &str| match m.get(field) {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Some(n),
            _ => {
                errs.add(format!("limits.{field}"), "must be a positive integer");
                None
            }
        },
    };
    let steps = count("steps").map(|n| n.min(u64::from(u32::MAX)) as u32);
    let tokens = count("tokens");
    let deadline = duration(errs, "limits.deadline", m.get("deadline"));
    Limits { steps, tokens, deadline }
}

/// Arms of a switch depend on the switch; a parallel join on its branches.
fn add_implied_dependencies(steps: &mut BTreeMap<String, Step>) {
    let mut implied: Vec<(String, String)> = Vec::new();
    for s in steps.values() {
        match &s.kind {
            StepKind::Switch { cases, default } => {
                for arm in cases.iter().flat_map(|c| &c.steps).chain(default) {
                    implied.push((arm.clone(), s.id.clone()));
                }
            }
            StepKind::Parallel { branches } => {
                for b in branches {
                    implied.push((s.id.clone(), b.clone()));
                }
            }
            _ => {}
        }
    }
    for (step, dep) in implied {
        if let Some(s) = steps.get_mut(&step)
            && !s.depends_on.contains(&dep)
        {
            s.depends_on.push(dep);
        }
    }
}

/// Templates may name only `inputs`, `run` and declared steps.
fn check_references(errs: &mut Errors, steps: &BTreeMap<String, Step>) {
    for s in steps.values() {
        let at = format!("steps.{}", s.id);
        let mut templates: Vec<(&str, &Value)> = Vec::new();
        match &s.kind {
            StepKind::Agent { prompt, .. } => templates.push(("prompt", prompt)),
            StepKind::Subagent { instruction, input, .. } => {
                templates.extend([("instruction", instruction), ("input", input)])
            }
            StepKind::Human { question, .. } => templates.push(("question", question)),
            StepKind::Delegate { message, .. } => templates.push(("message", message)),
            StepKind::Assign { values } => templates.push(("values", values)),
            StepKind::Finish { output, reason, .. } => {
                templates.push(("output", output));
                if let Some(r) = reason {
                    templates.push(("reason", r));
                }
            }
            StepKind::Switch { .. } | StepKind::Parallel { .. } => {}
        }
        for (field, v) in templates {
            for path in template::paths(v) {
                if let Err(e) = template::check_path(&path, |id| steps.contains_key(id)) {
                    errs.add(join(&at, field), e);
                }
            }
        }
    }
}
