//! The reminders extension (`https://agentd.dev/a2a/ext/reminders`): the
//! InjectTaskReminder request and result, the card params, the lifecycle
//! event payload carried in stream metadata, and the compatibility
//! envelope for SendMessage metadata. Objects are closed (unknown members
//! are refused) and their JSON Schema is generated from these types
//! ([`schema_bundle`]), so the binary is the schema's source of truth.

use crate::serde_util::wire_name_enum;
use crate::types::{Metadata, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The extension URI: card entry, `A2A-Extensions` value and metadata key.
pub const URI: &str = "https://agentd.dev/a2a/ext/reminders";
/// The JSON-RPC method.
pub const METHOD: &str = "InjectTaskReminder";
/// `$id` of the schema bundle.
pub const SCHEMA_ID: &str = "https://agentd.dev/a2a/ext/reminders/schema.json";

/// How a provider may place a reminder (advisory).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RoleHint {
    System,
    Developer,
    User,
}

wire_name_enum!(RoleHint { System = "system", Developer = "developer", User = "user" });

/// Where a reminder applies besides its task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Propagate {
    /// The task only.
    #[default]
    None,
    /// Also the task's live subagent tasks and those it spawns while the
    /// reminder is active.
    Subagents,
}

wire_name_enum!(Propagate { None = "none", Subagents = "subagents" });

/// A reminder as a client sends it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReminderInput {
    /// Client-chosen id; sending the same id again for the same task
    /// returns the original result. Default: one the server makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The text the model sees; non-empty, at most `maxBodyBytes` bytes.
    pub body: String,
    /// A newer reminder with the same key displaces the active ones.
    #[serde(default, alias = "dedupe_key", skip_serializing_if = "Option::is_none")]
    pub dedupe_key: Option<String>,
    /// Model calls the reminder reaches before it expires, 1..=maxTtlTurns (default 1).
    #[serde(
        default,
        alias = "ttl_turns",
        deserialize_with = "crate::serde_util::opt_u32",
        skip_serializing_if = "Option::is_none"
    )]
    pub ttl_turns: Option<u32>,
    #[serde(default, alias = "role_hint", skip_serializing_if = "Option::is_none")]
    pub role_hint: Option<RoleHint>,
    /// Who the reminder is from; default the caller's principal id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagate: Option<Propagate>,
}

/// InjectTaskReminder params (REST: the body, with `taskId` from the path).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InjectTaskReminderRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(alias = "task_id")]
    pub task_id: String,
    pub reminder: ReminderInput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// InjectTaskReminder result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InjectTaskReminderResponse {
    pub reminder_id: String,
    /// Ids of the active reminders this one displaced (same `dedupeKey`).
    pub displaced: Vec<String>,
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub accepted_at: Timestamp,
}

/// What happened to a reminder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReminderEventKind {
    /// Delivered to a model call.
    Emitted,
    /// Displaced by a newer reminder with the same `dedupeKey`.
    Deduped,
    /// Delivered to `ttlTurns` model calls; no longer active.
    Expired,
}

/// A lifecycle event, carried as `metadata[URI]` of a TaskStatusUpdateEvent
/// whose state is unchanged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReminderEvent {
    pub event: ReminderEventKind,
    pub reminder_id: String,
    /// `emitted`: the task's model-call number the reminder reached (from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    /// `emitted`: model calls the reminder will still reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_turns: Option<u32>,
    /// `deduped`: the reminder that displaced this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub displaced_by: Option<String>,
}

/// The card params of the extension (the proposal's `capabilities.reminders`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RemindersCapabilities {
    pub inject: bool,
    pub emit: bool,
    pub propagate: Vec<Propagate>,
    pub role_hints: Vec<RoleHint>,
    pub max_ttl_turns: u32,
    pub max_body_bytes: u32,
    pub max_pending_per_task: u32,
}

/// The compatibility path: `message.metadata[URI]` (or the request's
/// `metadata[URI]`) of a SendMessage that names a task.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompatibilityEnvelope {
    pub reminder: ReminderInput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// The payload types of the bundle, by their `$defs` name.
pub const DEFS: &[&str] = &[
    "InjectTaskReminderRequest",
    "InjectTaskReminderResponse",
    "ReminderEvent",
    "RemindersCapabilities",
    "CompatibilityEnvelope",
];

/// The extension's schema bundle: JSON Schema 2020-12, every payload type
/// under `$defs` (see [`DEFS`]).
pub fn schema_bundle() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let roots = [
        generator.subschema_for::<InjectTaskReminderRequest>(),
        generator.subschema_for::<InjectTaskReminderResponse>(),
        generator.subschema_for::<ReminderEvent>(),
        generator.subschema_for::<RemindersCapabilities>(),
        generator.subschema_for::<CompatibilityEnvelope>(),
    ];
    debug_assert_eq!(roots.len(), DEFS.len());
    let defs: serde_json::Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "agentd reminders extension payloads",
        "description": "InjectTaskReminder params and result, the lifecycle event carried in stream metadata, the card params and the SendMessage compatibility envelope. Validate a payload against #/$defs/<name>.",
        "$defs": Value::Object(defs),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_def_is_in_the_bundle_and_closed() {
        let b = schema_bundle();
        for name in DEFS {
            let def = &b["$defs"][name];
            assert_eq!(def["additionalProperties"], json!(false), "{name}: {def}");
        }
    }

    /// The names a hint or a propagation is read from are those it is
    /// written as, and the schema's.
    #[test]
    fn enums_read_the_names_they_write() {
        use crate::serde_util::WireName;
        fn check<T: WireName + Serialize + std::fmt::Debug + PartialEq + for<'a> Deserialize<'a>>(def: &str) {
            let b = schema_bundle();
            let schema_names: Vec<String> = match b["$defs"][def]["enum"].as_array() {
                Some(names) => names.iter().filter_map(|n| n.as_str().map(str::to_owned)).collect(),
                None => b["$defs"][def]["oneOf"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v["const"].as_str().or(v["enum"][0].as_str()).map(str::to_owned))
                    .collect(),
            };
            assert_eq!(schema_names, T::NAMES, "{def}");
            for (v, name) in T::ALL.iter().zip(T::NAMES) {
                assert_eq!(serde_json::to_value(v).unwrap(), json!(name));
                assert_eq!(serde_json::from_value::<T>(json!(name)).unwrap(), *v);
            }
        }
        check::<RoleHint>("RoleHint");
        check::<Propagate>("Propagate");
    }

    /// The externally tagged form serde's derive would take is refused.
    #[test]
    fn a_tagged_hint_is_refused() {
        let body = |hint: &str| format!(r#"{{"taskId":"t","reminder":{{"body":"b","roleHint":{hint}}}}}"#);
        assert!(serde_json::from_str::<InjectTaskReminderRequest>(&body(r#""user""#)).is_ok());
        let err = serde_json::from_str::<InjectTaskReminderRequest>(&body(r#"{"user":null}"#)).unwrap_err();
        assert!(err.to_string().starts_with("invalid type: map"), "{err}");
        let err = serde_json::from_str::<ReminderInput>(r#"{"body":"b","propagate":{"subagents":null}}"#)
            .unwrap_err();
        assert!(err.to_string().starts_with("invalid type: map"), "{err}");
    }
}
