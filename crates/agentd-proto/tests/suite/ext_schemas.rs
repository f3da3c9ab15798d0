//! The extension schema bundles are well-formed, closed and complete.

use agentd_proto::ext::{events, schema, task_annotations};
use serde_json::{Value, json};

/// Every schema object that lists `properties` refuses other members.
fn assert_closed(v: &Value, path: &str) {
    match v {
        Value::Object(o) => {
            let in_condition = path.ends_with("/if") || path.ends_with("/then");
            if o.contains_key("properties") && !in_condition {
                assert_eq!(o.get("additionalProperties"), Some(&json!(false)), "{path} is not closed");
            }
            for (k, c) in o {
                assert_closed(c, &format!("{path}/{k}"));
            }
        }
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| assert_closed(c, &format!("{path}/{i}"))),
        _ => {}
    }
}

#[test]
fn the_annotations_bundle_is_draft_2020_12_closed_and_names_all_seven_members() {
    let b = schema::bundle("task-annotations").expect("bundle");
    assert_eq!(b["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(b["$id"], task_annotations::SCHEMA_ID);
    assert_closed(&b, "#");
    let props: Vec<&str> = b["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        props,
        ["link", "created", "statusHistory", "principal", "askSchema", "askChannel", "command"]
    );
    let mut required: Vec<&str> =
        b["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    required.sort_unstable();
    assert_eq!(required, ["created", "link", "statusHistory"]);
    assert_eq!(b["properties"]["created"]["format"], "date-time");
    let text = b.to_string();
    for kind in ["\"run\"", "\"subagent\"", "\"turn\"", "TASK_STATE_INPUT_REQUIRED"] {
        assert!(text.contains(kind), "{kind} missing from {text}");
    }
    assert!(!text.contains("TASK_STATE_UNSPECIFIED"));
}

#[test]
fn the_events_bundle_is_closed_and_lists_every_kind() {
    let b = schema::bundle("events").expect("bundle");
    assert_eq!(b["$id"], events::SCHEMA_ID);
    assert_closed(&b, "#");
    let text = b.to_string();
    for k in events::EventKind::ALL {
        assert!(text.contains(&format!("\"{}\"", k.as_str())), "{k:?} missing");
    }
    for def in [
        "SubscribeParams",
        "LifecycleData",
        "ConversationData",
        "SubagentData",
        "RunData",
        "StepData",
        "GateData",
        "TaskData",
        "Hello",
    ] {
        assert!(b["$defs"].get(def).is_some(), "$defs/{def} missing: {text}");
    }
}

#[test]
fn an_unknown_bundle_name_is_none() {
    assert!(schema::bundle("nope").is_none());
    assert_eq!(schema::names(), ["task-annotations", "events", "reminders"]);
}

#[test]
fn subscribe_params_are_strict_and_name_the_member() {
    use events::{EventKind, SubscribeParams};
    let p = SubscribeParams::decode(&json!({"fromSeq": 5, "kinds": ["task", "lifecycle"]})).unwrap();
    assert_eq!(p.from_seq, Some(5));
    assert_eq!(p.kinds, Some(vec![EventKind::Task, EventKind::Lifecycle]));
    assert_eq!(SubscribeParams::decode(&Value::Null).unwrap(), SubscribeParams::default());
    let field = |v: Value| SubscribeParams::decode(&v).unwrap_err().violations[0].field.clone();
    assert_eq!(field(json!({"fromseq": 1})), "fromseq");
    assert_eq!(field(json!({"fromSeq": -1})), "fromSeq");
    assert_eq!(field(json!({"fromSeq": "1"})), "fromSeq");
    assert_eq!(field(json!({"kinds": "task"})), "kinds");
    assert_eq!(field(json!({"kinds": ["task", "nope"]})), "kinds[1]");
    assert_eq!(field(json!([1])), "params");
}
