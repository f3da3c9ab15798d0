//! `agentd --extension-schema NAME`: prints an extension's schema bundle,
//! the JSON Schema generated from the payload types (the published copies
//! under `docs/ext/` must equal it).

use serde_json::Value;

/// The extensions with a schema bundle, by the name the flag takes.
pub const NAMES: &[&str] = &["reminders"];

fn bundle(name: &str) -> Option<Value> {
    match name {
        "reminders" => Some(agentd_proto::ext::reminders::schema_bundle()),
        _ => None,
    }
}

pub fn run(name: &str) -> anyhow::Result<()> {
    let Some(schema) = bundle(name) else {
        anyhow::bail!("no extension schema named {name:?}; one of: {}", NAMES.join(", "));
    };
    super::output::json_pretty(&schema)
}
