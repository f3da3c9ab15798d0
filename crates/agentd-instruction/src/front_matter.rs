//! Front matter: the optional YAML header, its `spec` version check and its parameters.

use crate::model::Refusal;
use crate::params::{self, Parameter};
use crate::yaml;
use serde_json::{Map, Value as Json};

/// The document's front matter. Never delivered; unknown keys are kept and ignored.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontMatter {
    /// The YAML map as parsed, with `spec` normalised to a string.
    pub map: Map<String, Json>,
    pub id: Option<String>,
    pub version: Option<String>,
    pub title: Option<String>,
    pub parameters: Vec<Parameter>,
}

/// The version this reader implements.
pub(crate) const SPEC: &str = "1";

/// Splits off the front matter: returns it (if any) and the number of lines it took,
/// including both `---` lines.
pub(crate) fn read(lines: &[String], out: &mut Vec<Refusal>) -> (Option<FrontMatter>, usize) {
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return (None, 0);
    }
    let Some(close) = lines.iter().skip(1).position(|l| l.trim_end() == "---").map(|i| i + 1) else {
        out.push(Refusal::front(
            "front-matter-unclosed",
            "front matter: never closed — end it with a line of ---",
        ));
        return (None, lines.len());
    };
    let text = lines[1..close].join("\n");
    let value = match yaml::parse(&text, 2) {
        Ok(v) => v,
        Err((_, msg)) => {
            out.push(Refusal::front("front-matter-yaml", format!("front matter: not valid YAML ({msg})")));
            return (None, close + 1);
        }
    };
    let json = yaml::to_json(&value);
    let mut map = match json {
        Json::Object(m) => m,
        Json::Null => Map::new(),
        _ => {
            out.push(Refusal::front(
                "front-matter-yaml",
                "front matter: expected a YAML mapping of keys such as spec and title",
            ));
            return (None, close + 1);
        }
    };
    if let Some(spec) = map.get("spec").cloned() {
        let text = match &spec {
            Json::String(s) => Some(s.clone()),
            Json::Number(_) => yaml::get(&value, "spec").map(yaml::scalar_text),
            _ => None,
        };
        match text {
            Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                if s.trim_start_matches('0') != SPEC {
                    out.push(Refusal::front(
                        "unimplemented-version",
                        format!("front matter: spec \"{s}\" is not implemented by this reader"),
                    ));
                }
                map.insert("spec".into(), Json::String(s));
            }
            Some(s) => out.push(Refusal::front(
                "non-integer-version",
                format!("front matter: spec \"{s}\" is not a version — versions are integers"),
            )),
            None => out.push(Refusal::front(
                "non-integer-version",
                "front matter: spec must be a version string such as \"1\"",
            )),
        }
    }
    let text_of = |k: &str| map.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let (id, version, title) = (text_of("id"), text_of("version"), text_of("title"));
    let mut parameters = Vec::new();
    match map.get("parameters") {
        None | Some(Json::Null) => {}
        Some(Json::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match params::from_json(item) {
                    Ok(p) => parameters.push(p),
                    Err(e) => out.push(Refusal::front(
                        "invalid-parameter",
                        format!("front matter: parameters[{i}]: {e}"),
                    )),
                }
            }
        }
        Some(_) => out.push(Refusal::front(
            "invalid-parameter",
            "front matter: parameters must be a list of {name, type, …} entries",
        )),
    }
    (Some(FrontMatter { map, id, version, title, parameters }), close + 1)
}
