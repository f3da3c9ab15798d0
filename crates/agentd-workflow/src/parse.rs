//! YAML body → [`Definition`], fail-closed: an unknown key, an unknown
//! kind, a missing or ill-typed field, a dangling `depends_on`, a cycle, a
//! bad guard or template, or no `finish` step refuses the whole workflow
//! with errors naming the step and the field.

use crate::dag;
use crate::def::*;
use crate::duration::parse_duration;
use crate::guard::Guard;
use crate::template;
use serde_json::{Map, Value};
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
const COMMON_KEYS: &[&str] = &["kind", "depends_on", "when", "timeout", "retry", "on_error", "description"];
const KINDS: &[&str] =
    &["agent", "subagent", "human", "a2a.delegate", "assign", "switch", "parallel", "finish"];

struct Errors {
    workflow: String,
    list: Vec<DefinitionError>,
}

impl Errors {
    fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.list.push(DefinitionError {
            workflow: self.workflow.clone(),
            field: field.into(),
            message: message.into(),
        });
    }
}

/// Reads the body of workflow `name`. Every problem found is reported.
pub fn parse(name: &str, yaml: &str) -> Result<Definition, Vec<DefinitionError>> {
    let mut errs = Errors { workflow: name.to_owned(), list: Vec::new() };
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

fn unknown_keys(errs: &mut Errors, at: &str, m: &Map<String, Value>, known: &[&str]) {
    for k in m.keys() {
        if !known.contains(&k.as_str()) {
            errs.add(join(at, k), format!("is not a known key here (known: {})", known.join(", ")));
        }
    }
}

fn join(at: &str, k: &str) -> String {
    if at.is_empty() { k.to_owned() } else { format!("{at}.{k}") }
}

fn opt_str(errs: &mut Errors, field: &str, v: Option<&Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errs.add(field, "must be a string");
            None
        }
    }
}

fn req_str(errs: &mut Errors, field: &str, v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(_) => {
            errs.add(field, "must be a non-empty string");
            String::new()
        }
        None => {
            errs.add(field, "is required");
            String::new()
        }
    }
}

fn req_value(errs: &mut Errors, field: &str, v: Option<&Value>) -> Value {
    match v {
        Some(v) => v.clone(),
        None => {
            errs.add(field, "is required");
            Value::Null
        }
    }
}

fn duration(errs: &mut Errors, field: &str, v: Option<&Value>) -> Option<std::time::Duration> {
    let s = opt_str(errs, field, v)?;
    match parse_duration(&s) {
        Ok(d) => Some(d),
        Err(e) => {
            errs.add(field, e);
            None
        }
    }
}

fn ids(errs: &mut Errors, field: &str, v: Option<&Value>) -> Vec<String> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => {
            a.iter().filter_map(Value::as_str).map(str::to_owned).collect()
        }
        Some(_) => {
            errs.add(field, "must be a step id or a list of step ids");
            Vec::new()
        }
    }
}

fn json_schema(errs: &mut Errors, field: &str, v: Option<&Value>) -> Option<Value> {
    let v = v?;
    if !v.is_object() {
        errs.add(field, "must be a JSON Schema object");
        return None;
    }
    if let Err(e) = jsonschema_compiles(v) {
        errs.add(field, format!("is not a valid JSON Schema: {e}"));
        return None;
    }
    Some(v.clone())
}

/// Compiles the schema as runs will (no remote references are fetched).
fn jsonschema_compiles(v: &Value) -> Result<(), String> {
    jsonschema::validator_for(v).map(|_| ()).map_err(|e| e.to_string())
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

fn retry(errs: &mut Errors, field: &str, v: Option<&Value>) -> Retry {
    match v {
        None => Retry::default(),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(max) if max <= 100 => Retry { max: max as u32, ..Retry::default() },
            _ => {
                errs.add(field, "must be an attempt count from 0 to 100");
                Retry::default()
            }
        },
        Some(Value::Object(m)) => {
            unknown_keys(errs, field, m, &["max", "backoff"]);
            let max = match m.get("max").and_then(Value::as_u64) {
                Some(n) if n <= 100 => n as u32,
                _ => {
                    errs.add(join(field, "max"), "must be an attempt count from 0 to 100");
                    0
                }
            };
            let backoff = duration(errs, &join(field, "backoff"), m.get("backoff")).unwrap_or_default();
            Retry { max, backoff }
        }
        Some(_) => {
            errs.add(field, "must be a count or {max, backoff}");
            Retry::default()
        }
    }
}

fn step(errs: &mut Errors, id: &str, v: &Value) -> Option<Step> {
    let at = format!("steps.{id}");
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        errs.add(&at, "a step id is letters, digits, `_` and `-`");
    }
    let Value::Object(m) = v else {
        errs.add(&at, "must be a mapping with `kind:`");
        return None;
    };
    let kind_name = req_str(errs, &join(&at, "kind"), m.get("kind"));
    if kind_name.is_empty() {
        return None;
    }
    if !KINDS.contains(&kind_name.as_str()) {
        errs.add(
            join(&at, "kind"),
            format!("{kind_name:?} is not a step kind (kinds: {})", KINDS.join(", ")),
        );
        return None;
    }
    let f = |k: &str| join(&at, k);
    let extra: &[&str] = match kind_name.as_str() {
        "agent" => &["prompt", "instruction"],
        "subagent" => &["instruction", "input", "name"],
        "human" => &["question", "schema", "to", "fallback", "escalate_after"],
        "a2a.delegate" => &["peer", "message"],
        "assign" => &["values"],
        "switch" => &["cases", "default"],
        "parallel" => &["branches"],
        _ => &["output", "status", "reason"],
    };
    let known: Vec<&str> = COMMON_KEYS.iter().chain(extra).copied().collect();
    unknown_keys(errs, &at, m, &known);
    let kind = match kind_name.as_str() {
        // `instruction` is the reference dialect's name for the prompt.
        "agent" => match (m.get("prompt"), m.get("instruction")) {
            (Some(_), Some(_)) => {
                errs.add(f("instruction"), "give `prompt` or `instruction`, not both");
                StepKind::Agent { prompt: Value::Null }
            }
            (p, i) => StepKind::Agent { prompt: req_value(errs, &f("prompt"), p.or(i)) },
        },
        "subagent" => StepKind::Subagent {
            instruction: req_value(errs, &f("instruction"), m.get("instruction")),
            input: req_value(errs, &f("input"), m.get("input")),
            name: opt_str(errs, &f("name"), m.get("name")),
        },
        "human" => {
            let to = req_str(errs, &f("to"), m.get("to"));
            let to = match to.strip_prefix("@human/") {
                Some(n) if !n.is_empty() => n.to_owned(),
                _ if to.is_empty() => String::new(),
                _ => {
                    errs.add(f("to"), format!("{to:?} must address a person as @human/<name>"));
                    String::new()
                }
            };
            let fallback = match opt_str(errs, &f("fallback"), m.get("fallback")).as_deref() {
                None | Some("fail") => Fallback::Fail,
                Some("wait") => Fallback::Wait,
                Some(other) => {
                    errs.add(f("fallback"), format!("{other:?} is not a fallback (fail, wait)"));
                    Fallback::Fail
                }
            };
            StepKind::Human {
                question: req_value(errs, &f("question"), m.get("question")),
                schema: json_schema(errs, &f("schema"), m.get("schema")),
                to,
                fallback,
                escalate_after: duration(errs, &f("escalate_after"), m.get("escalate_after")),
            }
        }
        "a2a.delegate" => StepKind::Delegate {
            peer: req_str(errs, &f("peer"), m.get("peer")),
            message: req_value(errs, &f("message"), m.get("message")),
        },
        "assign" => StepKind::Assign { values: req_value(errs, &f("values"), m.get("values")) },
        "switch" => switch(errs, &at, m),
        "parallel" => {
            let branches = ids(errs, &f("branches"), m.get("branches"));
            if branches.is_empty() {
                errs.add(f("branches"), "must list at least one step id");
            }
            StepKind::Parallel { branches }
        }
        _ => {
            let status = match opt_str(errs, &f("status"), m.get("status")).as_deref() {
                None | Some("completed") => FinishStatus::Completed,
                Some("failed") => FinishStatus::Failed,
                Some(other) => {
                    errs.add(f("status"), format!("{other:?} is not a finish status (completed, failed)"));
                    FinishStatus::Completed
                }
            };
            StepKind::Finish {
                status,
                output: m.get("output").cloned().unwrap_or(Value::Null),
                reason: m.get("reason").cloned(),
            }
        }
    };
    let when = opt_str(errs, &f("when"), m.get("when"));
    if let Some(w) = &when
        && let Err(e) = Guard::compile(w)
    {
        errs.add(f("when"), e);
    }
    let on_error = match opt_str(errs, &f("on_error"), m.get("on_error")).as_deref() {
        None | Some("fail") => ErrorPolicy::Fail,
        Some("continue") => ErrorPolicy::Continue,
        Some(other) => {
            errs.add(f("on_error"), format!("{other:?} is not an error policy (fail, continue)"));
            ErrorPolicy::Fail
        }
    };
    Some(Step {
        id: id.to_owned(),
        depends_on: ids(errs, &f("depends_on"), m.get("depends_on")),
        when,
        timeout: duration(errs, &f("timeout"), m.get("timeout")),
        retry: retry(errs, &f("retry"), m.get("retry")),
        on_error,
        kind,
    })
}

fn switch(errs: &mut Errors, at: &str, m: &Map<String, Value>) -> StepKind {
    let field = join(at, "cases");
    let mut cases = Vec::new();
    match m.get("cases") {
        Some(Value::Array(list)) if !list.is_empty() => {
            for (i, c) in list.iter().enumerate() {
                let cf = format!("{field}[{i}]");
                let Value::Object(cm) = c else {
                    errs.add(&cf, "must be a mapping {when, steps}");
                    continue;
                };
                unknown_keys(errs, &cf, cm, &["when", "steps"]);
                let when = req_str(errs, &join(&cf, "when"), cm.get("when"));
                if !when.is_empty()
                    && let Err(e) = Guard::compile(&when)
                {
                    errs.add(join(&cf, "when"), e);
                }
                cases.push(Case { when, steps: ids(errs, &join(&cf, "steps"), cm.get("steps")) });
            }
        }
        Some(_) => errs.add(&field, "must be a non-empty list of {when, steps}"),
        None => errs.add(&field, "is required"),
    }
    StepKind::Switch { cases, default: ids(errs, &join(at, "default"), m.get("default")) }
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
            StepKind::Agent { prompt } => templates.push(("prompt", prompt)),
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
