//! Reading the fields of a definition: each helper records a refusal
//! naming the field (a dotted path such as `steps.ask.to`) and returns a
//! placeholder, so that one pass reports every problem.

use crate::duration::parse_duration;
use crate::parse::DefinitionError;
use serde_json::{Map, Value};

pub(crate) struct Errors {
    pub(crate) workflow: String,
    pub(crate) list: Vec<DefinitionError>,
    /// Whether JSON Schemas are compiled to check them ([`crate::parse_known_valid`]).
    pub(crate) compile_schemas: bool,
}

impl Errors {
    pub(crate) fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.list.push(DefinitionError {
            workflow: self.workflow.clone(),
            field: field.into(),
            message: message.into(),
        });
    }
}

pub(crate) fn unknown_keys(errs: &mut Errors, at: &str, m: &Map<String, Value>, known: &[&str]) {
    for k in m.keys() {
        if !known.contains(&k.as_str()) {
            errs.add(join(at, k), format!("is not a known key here (known: {})", known.join(", ")));
        }
    }
}

pub(crate) fn join(at: &str, k: &str) -> String {
    if at.is_empty() { k.to_owned() } else { format!("{at}.{k}") }
}

pub(crate) fn opt_str(errs: &mut Errors, field: &str, v: Option<&Value>) -> Option<String> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            errs.add(field, "must be a string");
            None
        }
    }
}

/// An optional list of non-empty strings (a step's tool sets).
pub(crate) fn opt_strs(errs: &mut Errors, field: &str, v: Option<&Value>) -> Option<Vec<String>> {
    let list = v?.as_array().filter(|a| a.iter().all(|s| s.as_str().is_some_and(|s| !s.is_empty())));
    match list {
        Some(a) => Some(a.iter().filter_map(Value::as_str).map(str::to_owned).collect()),
        None => {
            errs.add(field, "must be a list of tool sets: tool names, globs or MCP server names");
            None
        }
    }
}

pub(crate) fn req_str(errs: &mut Errors, field: &str, v: Option<&Value>) -> String {
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

pub(crate) fn req_value(errs: &mut Errors, field: &str, v: Option<&Value>) -> Value {
    match v {
        Some(v) => v.clone(),
        None => {
            errs.add(field, "is required");
            Value::Null
        }
    }
}

pub(crate) fn duration(errs: &mut Errors, field: &str, v: Option<&Value>) -> Option<std::time::Duration> {
    let s = opt_str(errs, field, v)?;
    match parse_duration(&s) {
        Ok(d) => Some(d),
        Err(e) => {
            errs.add(field, e);
            None
        }
    }
}

pub(crate) fn ids(errs: &mut Errors, field: &str, v: Option<&Value>) -> Vec<String> {
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

pub(crate) fn json_schema(errs: &mut Errors, field: &str, v: Option<&Value>) -> Option<Value> {
    let v = v?;
    if !v.is_object() {
        errs.add(field, "must be a JSON Schema object");
        return None;
    }
    if errs.compile_schemas
        && let Err(e) = jsonschema_compiles(v)
    {
        errs.add(field, format!("is not a valid JSON Schema: {e}"));
        return None;
    }
    Some(v.clone())
}

/// Compiles the schema as runs will (no remote references are fetched).
fn jsonschema_compiles(v: &Value) -> Result<(), String> {
    jsonschema::validator_for(v).map(|_| ()).map_err(|e| e.to_string())
}
