//! The reminders extension's schema bundle: the published copy in
//! `docs/ext/reminders/schema.json` is what the types generate, and every
//! golden example validates against its definition and decodes into the
//! Rust type. Regenerate the published copy with
//! `AGENTD_BLESS=1 cargo test -p agentd-proto --test suite ext_reminders_schema`.

use agentd_proto::ext::reminders::{self as ext, schema_bundle};
use serde_json::Value;
use std::path::PathBuf;

const REGENERATE: &str = "AGENTD_BLESS=1 cargo test -p agentd-proto --test suite ext_reminders_schema";

fn docs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/ext/reminders")
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("schema serializes") + "\n"
}

#[test]
fn the_published_schema_is_the_generated_one() {
    let path = docs().join("schema.json");
    let generated = pretty(&schema_bundle());
    if std::env::var_os("AGENTD_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the published schema");
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == generated,
        "{} differs from the schema the types generate; regenerate it with `{REGENERATE}`",
        path.display()
    );
}

/// A validator for one definition of the bundle.
fn validator(def: &str) -> jsonschema::Validator {
    let mut schema = schema_bundle();
    schema["$ref"] = Value::String(format!("#/$defs/{def}"));
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("the bundle compiles for {def}: {e}"))
}

fn decodes(def: &str, v: &Value) -> Result<(), String> {
    let v = v.clone();
    let r = match def {
        "InjectTaskReminderRequest" => serde_json::from_value::<ext::InjectTaskReminderRequest>(v).map(drop),
        "InjectTaskReminderResponse" => {
            serde_json::from_value::<ext::InjectTaskReminderResponse>(v).map(drop)
        }
        "ReminderEvent" => serde_json::from_value::<ext::ReminderEvent>(v).map(drop),
        "RemindersCapabilities" => serde_json::from_value::<ext::RemindersCapabilities>(v).map(drop),
        "CompatibilityEnvelope" => serde_json::from_value::<ext::CompatibilityEnvelope>(v).map(drop),
        other => panic!("no type for {other}"),
    };
    r.map_err(|e| e.to_string())
}

#[test]
fn every_golden_example_validates_and_decodes() {
    let mut seen = std::collections::BTreeSet::new();
    let dir = docs().join("examples");
    for entry in std::fs::read_dir(&dir).expect("examples directory") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let def = name.split('.').next().unwrap().to_owned();
        assert!(ext::DEFS.contains(&def.as_str()), "{name}: named after no definition of the bundle");
        let example: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).expect("JSON");
        let v = validator(&def);
        let errors: Vec<String> = v.iter_errors(&example).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name} does not validate: {errors:?}");
        decodes(&def, &example).unwrap_or_else(|e| panic!("{name} does not decode: {e}"));
        seen.insert(def);
    }
    assert_eq!(seen.len(), ext::DEFS.len(), "an example for every definition: {seen:?}");
}

#[test]
fn the_schema_refuses_what_the_decoder_refuses() {
    let bad: &[(&str, &str)] = &[
        ("InjectTaskReminderRequest", r#"{"taskId": "t", "reminder": {"body": "b", "colour": "red"}}"#),
        ("InjectTaskReminderRequest", r#"{"taskId": "t", "reminder": {"body": "b", "roleHint": "boss"}}"#),
        ("InjectTaskReminderRequest", r#"{"taskId": "t", "reminder": {"body": "b", "propagate": "all"}}"#),
        ("InjectTaskReminderRequest", r#"{"taskId": "t"}"#),
        ("ReminderEvent", r#"{"event": "vanished", "reminderId": "r"}"#),
        ("CompatibilityEnvelope", r#"{"reminder": {"body": "b"}, "extra": 1}"#),
    ];
    for (def, text) in bad {
        let v: Value = serde_json::from_str(text).unwrap();
        assert!(!validator(def).is_valid(&v), "the schema accepts {text}");
        assert!(decodes(def, &v).is_err(), "the decoder accepts {text}");
    }
}
