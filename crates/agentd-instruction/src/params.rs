//! Parameters: declared in front matter or by `param` blocks; validated; looked up for delivery.

use crate::model::{AttrValue, Attrs};
use serde_json::Value as Json;

/// A declared parameter (front-matter `parameters`, `::param` or a `:::param[]` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    pub name: String,
    /// `string`, `number`, `boolean` or `enum` (`string` when not given).
    pub kind: String,
    pub values: Vec<String>,
    pub required: bool,
    pub default: Option<String>,
    /// `static`, `workspace`, `agent_attribute` or `prompt`.
    pub source: Option<String>,
    pub description: Option<String>,
}

const TYPES: &[&str] = &["string", "number", "boolean", "enum"];
const SOURCES: &[&str] = &["static", "workspace", "agent_attribute", "prompt"];

/// Builds a parameter from normalised attributes (a `param` leaf or set member).
pub(crate) fn from_attrs(attrs: &Attrs) -> Result<Parameter, String> {
    let name = attrs.str("name").ok_or("a parameter needs a name")?.to_string();
    let p = Parameter {
        kind: attrs.str("type").unwrap_or("string").to_string(),
        values: attrs.list("values"),
        required: attrs.flag("required").unwrap_or(false),
        default: attrs.str("default").map(str::to_string),
        source: attrs.str("source").map(str::to_string),
        description: attrs.str("description").map(str::to_string),
        name,
    };
    check(&p)?;
    Ok(p)
}

/// Builds a parameter from a front-matter `parameters` entry.
pub(crate) fn from_json(v: &Json) -> Result<Parameter, String> {
    let obj = v.as_object().ok_or("expected a mapping with name and type")?;
    let text = |k: &str| -> Option<String> {
        match obj.get(k)? {
            Json::String(s) => Some(s.clone()),
            Json::Null => None,
            other => Some(other.to_string()),
        }
    };
    let values = match obj.get("values") {
        Some(Json::Array(a)) => {
            a.iter().map(|x| x.as_str().map(str::to_string).unwrap_or_else(|| x.to_string())).collect()
        }
        Some(Json::String(s)) => split_list(s),
        _ => Vec::new(),
    };
    let required = match obj.get("required") {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => return Err("required must be true or false".into()),
    };
    let p = Parameter {
        name: text("name").ok_or("a parameter needs a name")?,
        kind: text("type").unwrap_or_else(|| "string".into()),
        values,
        required,
        default: text("default"),
        source: text("source"),
        description: text("description"),
    };
    check(&p)?;
    Ok(p)
}

fn check(p: &Parameter) -> Result<(), String> {
    if !TYPES.contains(&p.kind.as_str()) {
        return Err(format!(
            "parameter \"{}\": type \"{}\" is not one of string, number, boolean, enum",
            p.name, p.kind
        ));
    }
    if p.kind == "enum" && p.values.is_empty() {
        return Err(format!("parameter \"{}\": an enum needs values, e.g. values=\"a, b\"", p.name));
    }
    if let Some(s) = &p.source
        && !SOURCES.contains(&s.as_str())
    {
        return Err(format!(
            "parameter \"{}\": source \"{s}\" is not one of static, workspace, agent_attribute, prompt",
            p.name
        ));
    }
    Ok(())
}

/// Splits a multi-valued attribute: comma-separated, trimmed, empty items dropped.
pub(crate) fn split_list(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|x| !x.is_empty()).map(str::to_string).collect()
}

/// A `true`/`false` cell or attribute value.
pub(crate) fn parse_bool(s: &str) -> Option<bool> {
    match s.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Normalises one raw attribute value for its type.
pub(crate) fn typed(ty: crate::registry::AttrType, raw: Option<&str>) -> Result<AttrValue, ()> {
    use crate::registry::AttrType;
    match (ty, raw) {
        (AttrType::Flag, None) => Ok(AttrValue::Bool(true)),
        (AttrType::Flag, Some(s)) => parse_bool(s).map(AttrValue::Bool).ok_or(()),
        (AttrType::List, Some(s)) => Ok(AttrValue::List(split_list(s))),
        (AttrType::Str, Some(s)) => Ok(AttrValue::Str(s.to_string())),
        (_, None) => Err(()),
    }
}
