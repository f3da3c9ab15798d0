//! YAML helpers: parse a body with document line numbers, convert to JSON, walk string scalars.

use serde_json::Value as Json;
use serde_yaml_ng::Value as Yaml;

/// Parses `text` (whose first line is document line `first_line`). On error: the document
/// line of the problem (when known) and the parser's message.
pub(crate) fn parse(text: &str, first_line: usize) -> Result<Yaml, (usize, String)> {
    match serde_yaml_ng::from_str::<Yaml>(text) {
        Ok(v) => Ok(v),
        Err(e) => {
            let line = e.location().map(|l| first_line + l.line().saturating_sub(1)).unwrap_or(first_line);
            let msg = e.to_string();
            // The parser appends "at line N column M"; the refusal carries the line itself.
            let msg = match msg.find(" at line ") {
                Some(i) => msg[..i].to_string(),
                None => msg,
            };
            Err((line, msg))
        }
    }
}

/// Converts a YAML value to JSON: non-string keys are written as YAML scalars, tags are dropped.
pub(crate) fn to_json(v: &Yaml) -> Json {
    match v {
        Yaml::Null => Json::Null,
        Yaml::Bool(b) => Json::Bool(*b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                n.as_f64().and_then(serde_json::Number::from_f64).map(Json::Number).unwrap_or(Json::Null)
            }
        }
        Yaml::String(s) => Json::String(s.clone()),
        Yaml::Sequence(seq) => Json::Array(seq.iter().map(to_json).collect()),
        Yaml::Mapping(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                out.insert(scalar_text(k), to_json(v));
            }
            Json::Object(out)
        }
        Yaml::Tagged(t) => to_json(&t.value),
    }
}

/// A scalar as text (`1`, `true`, `x`); collections are written as JSON.
pub(crate) fn scalar_text(v: &Yaml) -> String {
    match v {
        Yaml::Null => "null".to_string(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Number(n) => n.to_string(),
        Yaml::String(s) => s.clone(),
        Yaml::Tagged(t) => scalar_text(&t.value),
        other => to_json(other).to_string(),
    }
}

/// Every string scalar in `v` (keys included), depth first.
pub(crate) fn strings(v: &Yaml, out: &mut Vec<String>) {
    match v {
        Yaml::String(s) => out.push(s.clone()),
        Yaml::Sequence(seq) => seq.iter().for_each(|x| strings(x, out)),
        Yaml::Mapping(map) => {
            for (k, v) in map {
                strings(k, out);
                strings(v, out);
            }
        }
        Yaml::Tagged(t) => strings(&t.value, out),
        _ => {}
    }
}

/// A top-level key of a mapping.
pub(crate) fn get<'a>(v: &'a Yaml, key: &str) -> Option<&'a Yaml> {
    match v {
        Yaml::Mapping(m) => m.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v),
        _ => None,
    }
}
