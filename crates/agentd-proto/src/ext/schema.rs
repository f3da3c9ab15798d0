//! Schema bundles of agentd's extensions: JSON Schema draft 2020-12,
//! generated from the Rust types the daemon serializes, then closed
//! (`additionalProperties: false` on every object that names its members).
//! `agentd --extension-schema <name>` prints [`bundle`]; the repo publishes
//! the same text under `docs/ext/<name>/schema.json`.

use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings, json_schema};
use serde_json::Value;

/// Builds one schema bundle.
pub type BundleFn = fn() -> Value;

/// Every extension with a schema bundle: its short name (also its
/// directory under `docs/ext/`) and its bundle. A new extension adds one line.
pub const BUNDLES: &[(&str, BundleFn)] = &[
    ("task-annotations", super::task_annotations::schema_bundle),
    ("events", super::events::schema_bundle),
    ("reminders", super::reminders::schema_bundle),
    // (keep one extension per line)
];

/// The bundle of the extension called `name`, if there is one.
pub fn bundle(name: &str) -> Option<Value> {
    BUNDLES.iter().find(|(n, _)| *n == name).map(|(_, f)| f())
}

/// The names [`bundle`] knows, for messages.
pub fn names() -> Vec<&'static str> {
    BUNDLES.iter().map(|(n, _)| *n).collect()
}

/// The root schema of `T` with `$id`, closed at every object level.
pub fn generate<T: JsonSchema>(id: &str) -> Value {
    let schema = SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>();
    let mut v = schema.to_value();
    close_objects(&mut v);
    if let Value::Object(o) = &mut v {
        // `$schema` first, `$id` right after it: the order a reader expects.
        let mut out = serde_json::Map::new();
        if let Some(s) = o.remove("$schema") {
            out.insert("$schema".into(), s);
        }
        out.insert("$id".into(), Value::String(id.to_owned()));
        out.extend(std::mem::take(o));
        *o = out;
    }
    v
}

/// Adds `additionalProperties: false` to every schema that lists
/// `properties` and says nothing about other members.
pub fn close_objects(v: &mut Value) {
    match v {
        Value::Object(o) => {
            if o.contains_key("properties") && !o.contains_key("additionalProperties") {
                o.insert("additionalProperties".into(), Value::Bool(false));
            }
            for child in o.values_mut() {
                close_objects(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// A protobuf Timestamp on the wire: an RFC 3339 string.
pub fn timestamp(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "format": "date-time",
        "description": "RFC 3339, written as YYYY-MM-DDTHH:mm:ss.sssZ"
    })
}

/// An A2A `TaskState` by its wire name (a task is never UNSPECIFIED).
pub fn task_state(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = crate::TaskState::ALL
        .iter()
        .filter(|s| **s != crate::TaskState::Unspecified)
        .map(|s| s.as_str())
        .collect();
    json_schema!({ "type": "string", "enum": names })
}

/// A JSON Schema given by someone else: any object (or boolean schema).
pub fn any_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": ["object", "boolean"],
        "description": "a JSON Schema (draft 2020-12) given by the instruction document"
    })
}

/// Any JSON object (content governed elsewhere).
pub fn any_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "object" })
}
