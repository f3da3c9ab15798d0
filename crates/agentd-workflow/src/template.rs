//! Templates: a string that is exactly `{{path}}` becomes the value at
//! `path` with its type; any other string has each `{{path}}` replaced by
//! the value's text (strings as they are, other values as JSON). Mappings
//! and lists are rendered member by member. A path names a namespace
//! (`inputs`, `run`, `steps`) then members and `[n]` indexes; a member
//! that is absent renders as `null` (optional answers stay optional).

use crate::guard::Scope;
use serde_json::Value;

/// Renders `v` in `scope`.
pub fn render(v: &Value, scope: &Scope) -> Result<Value, String> {
    Ok(match v {
        Value::String(s) => render_str(s, scope)?,
        Value::Array(a) => Value::Array(a.iter().map(|x| render(x, scope)).collect::<Result<_, _>>()?),
        Value::Object(m) => Value::Object(
            m.iter().map(|(k, x)| Ok((k.clone(), render(x, scope)?))).collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

fn render_str(s: &str, scope: &Scope) -> Result<Value, String> {
    let t = s.trim();
    if let Some(inner) = t.strip_prefix("{{").and_then(|r| r.strip_suffix("}}"))
        && !inner.contains("{{")
        && !inner.contains("}}")
    {
        return lookup(inner.trim(), scope);
    }
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err(format!("{s:?}: `{{{{` without `}}}}`"));
        };
        match lookup(after[..close].trim(), scope)? {
            Value::String(x) => out.push_str(&x),
            Value::Null => {}
            other => out.push_str(&other.to_string()),
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(Value::String(out))
}

enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

fn segments(path: &str) -> Result<Vec<Seg<'_>>, String> {
    let bad =
        || format!("{{{{{path}}}}} is not a path (write e.g. inputs.name or steps.ask.output.items[0])");
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut idx) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(bad());
        }
        out.push(Seg::Key(key));
        while !idx.is_empty() {
            let close = idx.find(']').ok_or_else(bad)?;
            let n: usize = idx[1..close].parse().map_err(|_| bad())?;
            out.push(Seg::Index(n));
            idx = &idx[close + 1..];
            if !idx.is_empty() && !idx.starts_with('[') {
                return Err(bad());
            }
        }
    }
    Ok(out)
}

fn lookup(path: &str, scope: &Scope) -> Result<Value, String> {
    let segs = segments(path)?;
    let Some(Seg::Key(root)) = segs.first() else { return Err(format!("{{{{{path}}}}} is empty")) };
    let mut cur = scope.root(root).ok_or_else(|| unknown_root(path))?;
    for s in &segs[1..] {
        let next = match s {
            Seg::Key(k) => cur.get(*k),
            Seg::Index(i) => cur.get(*i),
        };
        match next {
            Some(v) => cur = v,
            None => return Ok(Value::Null),
        }
    }
    Ok(cur.clone())
}

fn unknown_root(path: &str) -> String {
    format!("{{{{{path}}}}} names no namespace of a run (inputs, run, steps)")
}

/// The paths a value's templates name.
pub(crate) fn paths(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect(v, &mut out);
    out
}

fn collect(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            let mut rest = s.as_str();
            while let Some(open) = rest.find("{{") {
                let after = &rest[open + 2..];
                match after.find("}}") {
                    Some(close) => {
                        out.push(after[..close].trim().to_owned());
                        rest = &after[close + 2..];
                    }
                    None => {
                        out.push(after.to_owned());
                        break;
                    }
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect(x, out)),
        Value::Object(m) => m.values().for_each(|x| collect(x, out)),
        _ => {}
    }
}

/// Checks a path at load: a known namespace, and `steps.<id>.output` or
/// `.status` of a declared step.
pub(crate) fn check_path(path: &str, is_step: impl Fn(&str) -> bool) -> Result<(), String> {
    let segs = segments(path)?;
    match segs.as_slice() {
        [Seg::Key("inputs" | "run"), ..] => Ok(()),
        [Seg::Key("steps"), Seg::Key(id), rest @ ..] => {
            if !is_step(id) {
                return Err(format!("{{{{{path}}}}}: {id:?} is not a step of this workflow"));
            }
            match rest.first() {
                Some(Seg::Key("output" | "status")) => Ok(()),
                _ => Err(format!("{{{{{path}}}}}: a step is read as steps.{id}.output or steps.{id}.status")),
            }
        }
        _ => Err(unknown_root(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scope() -> Scope {
        Scope {
            inputs: json!({"name": "x", "n": 2, "list": [1, {"a": true}]}),
            run: json!({"id": "demo-1"}),
            steps: json!({"ask": {"output": {"approve": true}}}),
        }
    }

    #[test]
    fn a_lone_path_keeps_its_type_and_others_interpolate() {
        let s = scope();
        assert_eq!(render(&json!("{{ inputs.n }}"), &s).unwrap(), json!(2));
        assert_eq!(render(&json!("{{steps.ask.output}}"), &s).unwrap(), json!({"approve": true}));
        assert_eq!(render(&json!("{{inputs.list[1].a}}"), &s).unwrap(), json!(true));
        assert_eq!(
            render(&json!("run {{run.id}}: {{steps.ask.output}} n={{inputs.n}}"), &s).unwrap(),
            json!("run demo-1: {\"approve\":true} n=2")
        );
        assert_eq!(render(&json!({"k": ["{{inputs.name}}"]}), &s).unwrap(), json!({"k": ["x"]}));
        assert_eq!(render(&json!("{{steps.ask.output.note}}"), &s).unwrap(), Value::Null);
        assert!(render(&json!("{{nope.x}}"), &s).is_err());
        assert!(render(&json!("{{inputs.x"), &s).is_err());
    }
}
