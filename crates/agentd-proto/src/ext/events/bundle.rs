//! The events extension's schema bundle.

use super::{
    ConversationData, Frame, GateData, LifecycleData, ReminderData, RunData, SCHEMA_ID, StepData,
    SubagentData, SubscribeParams, ToolData,
};
use serde_json::{Value, json};

/// The schema bundle printed by `agentd --extension-schema events`: the
/// frame at its root, the params and each kind's `data` under `$defs`,
/// tied to `kind` by `if`/`then`.
pub fn schema_bundle() -> Value {
    use crate::ext::schema::generate;
    let mut root = generate::<Frame>(SCHEMA_ID);
    let defs: [(&str, Value); 9] = [
        ("SubscribeParams", generate::<SubscribeParams>("")),
        ("LifecycleData", generate::<LifecycleData>("")),
        ("ConversationData", generate::<ConversationData>("")),
        ("SubagentData", generate::<SubagentData>("")),
        ("ReminderData", generate::<ReminderData>("")),
        ("RunData", generate::<RunData>("")),
        ("StepData", generate::<StepData>("")),
        ("GateData", generate::<GateData>("")),
        ("ToolData", generate::<ToolData>("")),
    ];
    let Some(root_defs) = root.as_object_mut().map(|o| o.entry("$defs").or_insert_with(|| json!({}))) else {
        return root;
    };
    for (name, mut schema) in defs {
        if let Some(o) = schema.as_object_mut() {
            o.remove("$schema");
            o.remove("$id");
            // Nested definitions move up: `$ref`s point at `#/$defs/...`.
            if let Some(Value::Object(inner)) = o.remove("$defs") {
                for (k, v) in inner {
                    root_defs[k.as_str()] = v;
                }
            }
        }
        root_defs[name] = schema;
    }
    let task = json!({
        "type": "object",
        "description": "an A2A Task (history capped); with the task-annotations extension also activated, \
                        its metadata carries the annotations",
        "required": ["id", "status"]
    });
    root_defs["TaskData"] = task;
    let by_kind = |kind: &str, def: &str| {
        json!({"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
               "then": {"properties": {"data": {"$ref": format!("#/$defs/{def}")}}}})
    };
    if let Some(event) = root_defs.get_mut("Event").and_then(Value::as_object_mut) {
        event.insert(
            "allOf".into(),
            json!([
                by_kind("task", "TaskData"),
                by_kind("lifecycle", "LifecycleData"),
                by_kind("conversation", "ConversationData"),
                by_kind("subagent", "SubagentData"),
                by_kind("reminder", "ReminderData"),
                by_kind("run", "RunData"),
                by_kind("step", "StepData"),
                by_kind("gate", "GateData"),
                by_kind("tool", "ToolData"),
            ]),
        );
    }
    root
}
