//! `AGENTD_*` environment variables: one for every key of the configuration,
//! named after its path (`server.max_streams` is `AGENTD_SERVER_MAX_STREAMS`),
//! and a few short aliases (`AGENTD_MODEL` for `model.kind`). The names are
//! derived from the configuration's own shape (its defaults, serialized), so
//! a key added to it has its variable without anyone writing one.
//!
//! A variable's text becomes a value of the key's kind: a number, a boolean
//! (`true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`), a string, a list
//! (comma-separated, or YAML flow syntax `[a, b]`), or a mapping in YAML
//! flow syntax (`{ops: env:OPS_SECRET}`).

use super::Config;
use anyhow::{Context, bail};
use serde_yaml_ng::{Mapping, Value};
use std::collections::BTreeMap;

/// Names kept from before every key had its derived name, and the keys they
/// set (`card.provider` is `null` by default, so its two members have no
/// derived names).
const ALIASES: &[(&str, &str)] = &[
    ("AGENTD_LOG", "log.level"),
    ("AGENTD_MODEL", "model.kind"),
    ("AGENTD_STORE", "store.url"),
    ("AGENTD_MODEL_URL", "model.openai.endpoints"),
    ("AGENTD_MODEL_NAME", "model.openai.model"),
    ("AGENTD_CARD_PROVIDER_ORGANIZATION", "card.provider.organization"),
    ("AGENTD_CARD_PROVIDER_URL", "card.provider.url"),
];

/// Variables read elsewhere: the config file's path (a flag's default) and
/// the peers, which take `NAME=URL` specs rather than YAML.
pub(super) const SPECIAL: &[&str] = &["AGENTD_CONFIG", "AGENTD_A2A_PEERS"];

/// The command-line client's variables (`--url`, `--token`, its TLS
/// files): no keys of the daemon's configuration, and no typo when the
/// daemon sees them.
pub(super) const CLIENT: &[&str] =
    &["AGENTD_URL", "AGENTD_TOKEN", "AGENTD_CA_CERT", "AGENTD_CLIENT_CERT", "AGENTD_CLIENT_KEY"];

/// The kind of value a key holds, judged by its default.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Bool,
    Number,
    String,
    /// `null` by default: a number if it reads as one, else YAML flow
    /// syntax or a string.
    Optional,
    List,
    Map,
}

/// One variable: its name, the key path it sets, the kind of value.
#[derive(Clone, Debug)]
pub struct Variable {
    pub name: String,
    pub path: Vec<String>,
    kind: Kind,
}

/// Every variable agentd reads for the configuration, derived names first.
pub fn variables() -> Vec<Variable> {
    let defaults = serde_yaml_ng::to_value(Config::default()).expect("the defaults serialize");
    let mut out = Vec::new();
    leaves(&defaults, &mut Vec::new(), &mut out);
    let kinds: BTreeMap<Vec<String>, Kind> = out.iter().map(|v| (v.path.clone(), v.kind)).collect();
    out.retain(|v| !SPECIAL.contains(&v.name.as_str()));
    for (name, path) in ALIASES {
        let path: Vec<String> = path.split('.').map(str::to_owned).collect();
        let kind = kinds.get(&path).copied().unwrap_or(Kind::String);
        out.push(Variable { name: (*name).to_owned(), path, kind });
    }
    out
}

fn leaves(v: &Value, at: &mut Vec<String>, out: &mut Vec<Variable>) {
    let kind = match v {
        Value::Mapping(m) if !m.is_empty() => {
            for (k, child) in m {
                at.push(k.as_str().expect("config keys are strings").to_owned());
                leaves(child, at, out);
                at.pop();
            }
            return;
        }
        Value::Mapping(_) => Kind::Map,
        Value::Bool(_) => Kind::Bool,
        Value::Number(_) => Kind::Number,
        Value::String(_) => Kind::String,
        Value::Null => Kind::Optional,
        Value::Sequence(_) => Kind::List,
        Value::Tagged(_) => Kind::String,
    };
    let name = format!("AGENTD_{}", at.join("_").to_ascii_uppercase());
    out.push(Variable { name, path: at.clone(), kind });
}

/// What the environment sets: each variable's path and value, and the
/// `AGENTD_*` names that are not variables of the configuration.
#[derive(Debug, Default)]
pub struct Overlay {
    pub set: Vec<(Variable, String, Value)>,
    pub unknown: Vec<String>,
}

/// Reads every `AGENTD_*` variable of `env` (empty values count as unset).
pub fn overlay(env: &BTreeMap<String, String>) -> anyhow::Result<Overlay> {
    // Listed at the first variable to look up: a tenth of a start's
    // instructions, for an environment that often sets none.
    let mut listed = None;
    let mut o = Overlay::default();
    for (name, text) in env {
        let elsewhere = SPECIAL.contains(&name.as_str()) || CLIENT.contains(&name.as_str());
        if !name.starts_with("AGENTD_") || text.is_empty() || elsewhere {
            continue;
        }
        let vars = listed.get_or_insert_with(variables);
        let Some(var) = vars.iter().find(|v| &v.name == name) else {
            o.unknown.push(name.clone());
            continue;
        };
        let value = parse(var, text)?;
        o.set.push((var.clone(), text.clone(), value));
    }
    Ok(o)
}

fn parse(var: &Variable, text: &str) -> anyhow::Result<Value> {
    let name = &var.name;
    let flow = |text: &str| -> anyhow::Result<Value> {
        serde_yaml_ng::from_str(text)
            .with_context(|| format!("{name}={text:?} is not valid YAML flow syntax"))
    };
    Ok(match var.kind {
        Kind::Bool => Value::Bool(match text {
            "1" | "true" | "yes" | "on" => true,
            "0" | "false" | "no" | "off" => false,
            _ => bail!("{name}={text:?} is not a boolean (true/false)"),
        }),
        Kind::Number => match serde_yaml_ng::from_str::<Value>(text) {
            Ok(v @ Value::Number(_)) => v,
            _ => bail!("{name}={text:?} is not a number"),
        },
        Kind::String => Value::String(text.to_owned()),
        Kind::Optional if text.starts_with(['{', '[']) => flow(text)?,
        Kind::Optional => match text.parse::<u64>() {
            Ok(n) => Value::Number(n.into()),
            Err(_) => Value::String(text.to_owned()),
        },
        Kind::List if text.starts_with('[') => flow(text)?,
        Kind::List => Value::Sequence(super::split_list(text).into_iter().map(Value::String).collect()),
        Kind::Map => match flow(text)? {
            v @ Value::Mapping(_) => v,
            _ => bail!("{name}={text:?} is not a mapping; write it as {{key: value, …}}"),
        },
    })
}

/// Sets `value` at `path` in `tree`, creating mappings on the way (over a
/// `null` too: `card.provider` has no members until one is set).
pub fn set_path(tree: &mut Value, path: &[String], value: Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut node = tree;
    for key in parents {
        if !node.is_mapping() {
            *node = Value::Mapping(Mapping::new());
        }
        let m = node.as_mapping_mut().expect("just made a mapping");
        node = m.entry(Value::String(key.clone())).or_insert(Value::Null);
    }
    if !node.is_mapping() {
        *node = Value::Mapping(Mapping::new());
    }
    node.as_mapping_mut().expect("just made a mapping").insert(Value::String(last.clone()), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_name_is_unique_and_sets_a_key_of_the_configuration() {
        let vars = variables();
        let mut names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        names.sort_unstable();
        for pair in names.windows(2) {
            assert_ne!(pair[0], pair[1], "two keys share a variable name");
        }
        assert!(vars.len() > 60, "only {} variables", vars.len());
        assert!(names.contains(&"AGENTD_SERVER_MAX_STREAMS"));
        assert!(names.contains(&"AGENTD_MODEL_OPENAI_MAX_RETRIES"));
    }
}
