//! The published extension documents are the daemon's own: the schema
//! bundles in `docs/ext/<name>/schema.json` equal what
//! `agentd --extension-schema <name>` prints (generated from the Rust
//! types), every golden example validates, the schemas are closed, and the
//! daemon serves the same documents and declares both extensions.

use crate::common::annotations::{published, validator};
use crate::common::*;
use serde_json::{Value, json};
use std::process::Command;

/// Every extension: each schema bundle the binary knows, and each
/// published directory under `docs/ext/` (one without the other fails).
fn extensions() -> Vec<String> {
    let mut names: Vec<String> = agentd_proto::ext::schema::names().into_iter().map(str::to_owned).collect();
    let dir = format!("{}/../../docs/ext", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    assert!(
        names.iter().any(|n| n == "task-annotations") && names.iter().any(|n| n == "events"),
        "{names:?}"
    );
    names
}

fn printed(name: &str) -> String {
    let out =
        Command::new(env!("CARGO_BIN_EXE_agentd")).args(["--extension-schema", name]).output().expect("run");
    assert!(
        out.status.success(),
        "agentd --extension-schema {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn examples(name: &str) -> Vec<(String, Value)> {
    let dir = format!("{}/../../docs/ext/{name}/examples", env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".json"))
        .map(|f| {
            let v =
                serde_json::from_str(&published(name, &format!("examples/{f}"))).expect("example is JSON");
            (f, v)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn the_published_schemas_are_what_the_binary_prints() {
    for name in &extensions() {
        assert!(
            published(name, "schema.json") == printed(name),
            "docs/ext/{name}/schema.json differs from the daemon's schema; regenerate it with\n  \
             cargo run -q -p agentd -- --extension-schema {name} > docs/ext/{name}/schema.json"
        );
    }
}

#[test]
fn an_unknown_schema_name_fails_and_lists_the_known_ones() {
    let out = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["--extension-schema", "nope"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("task-annotations") && err.contains("events"), "{err}");
}

#[test]
fn every_golden_annotations_example_validates() {
    let v = validator("task-annotations");
    let found = examples("task-annotations");
    let names: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["gate.json", "run.json", "subagent.json", "turn.json"]);
    for (f, ex) in &found {
        let errors: Vec<String> = v.iter_errors(ex).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{f}: {errors:?}");
    }
    let gate = &found[0].1;
    assert!(gate["askSchema"].is_object() && gate["askChannel"].is_string(), "the gate example shows both");
    assert_eq!(gate["askChannel"], "@channel/deploys", "a !human entry's channel as a document writes it");
    let kinds: Vec<&str> = found.iter().map(|(_, e)| e["link"]["kind"].as_str().unwrap_or("")).collect();
    for k in ["run", "subagent", "turn"] {
        assert!(kinds.contains(&k), "an example with link.kind {k}");
    }
}

#[test]
fn every_golden_events_example_validates() {
    let v = validator("events");
    let found = examples("events");
    assert!(found.len() >= 5, "{found:?}");
    for (f, ex) in &found {
        let errors: Vec<String> = v.iter_errors(ex).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{f}: {errors:?}");
        // The annotations inside a task event are checked by their own schema.
        crate::common::annotations::check(ex);
    }
    let gate = &found.iter().find(|(f, _)| f == "gate-event.json").expect("a gate event example").1;
    assert_eq!(gate["event"]["data"]["channel"], "@channel/deploys", "the same string as askChannel");
}

#[test]
fn the_schemas_refuse_members_they_do_not_name() {
    let annotations = validator("task-annotations");
    let mut extra =
        serde_json::from_str::<Value>(&published("task-annotations", "examples/run.json")).expect("json");
    assert!(annotations.is_valid(&extra));
    extra["reviewer"] = json!("user:bob");
    assert!(!annotations.is_valid(&extra), "an extra top-level member is refused");
    let mut nested =
        serde_json::from_str::<Value>(&published("task-annotations", "examples/run.json")).expect("json");
    nested["statusHistory"][0]["by"] = json!("x");
    assert!(!annotations.is_valid(&nested), "an extra member in a statusHistory entry is refused");
    nested = serde_json::from_str(&published("task-annotations", "examples/run.json")).expect("json");
    nested["link"]["kind"] = json!("job");
    assert!(!annotations.is_valid(&nested), "link.kind is run, subagent or turn");
    nested = serde_json::from_str(&published("task-annotations", "examples/run.json")).expect("json");
    nested["statusHistory"][0]["state"] = json!("WORKING");
    assert!(!annotations.is_valid(&nested), "states are A2A TaskState names");
    nested = serde_json::from_str(&published("task-annotations", "examples/run.json")).expect("json");
    nested.as_object_mut().expect("object").remove("statusHistory");
    assert!(!annotations.is_valid(&nested), "statusHistory is required");

    let events = validator("events");
    assert!(
        !events
            .is_valid(&json!({"hello": {"seq": 1, "resume": false, "resync": false, "version": 1, "x": 1}}))
    );
    assert!(
        !events.is_valid(&json!({"event": {"seq": 1, "ts": "2026-01-01T00:00:00.000Z", "kind": "lifecycle",
        "data": {"event": "started", "version": "1", "extra": true}}}))
    );
    assert!(!events.is_valid(
        &json!({"event": {"seq": 1, "ts": "2026-01-01T00:00:00.000Z", "kind": "nope", "data": {}}})
    ));
}

#[tokio::test]
async fn the_daemon_serves_the_published_documents_and_declares_both() {
    let d = Daemon::start(&[]);
    for name in &extensions() {
        let name = name.as_str();
        let r = d.http.get(format!("{}/a2a/ext/{name}/schema.json", d.url)).send().await.expect("get");
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.expect("text"), published(name, "schema.json"), "{name} schema");
        for (f, ex) in examples(name) {
            let r = d.http.get(format!("{}/a2a/ext/{name}/examples/{f}", d.url)).send().await.expect("get");
            assert_eq!(r.status(), 200, "{name}/examples/{f}");
            assert_eq!(r.json::<Value>().await.expect("json"), ex, "{name}/examples/{f}");
        }
        let r = d.http.get(format!("{}/a2a/ext/{name}", d.url)).send().await.expect("get");
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.expect("text"), published(name, "README.md"));
    }
    let r = d.http.get(format!("{}/a2a/ext/nope/schema.json", d.url)).send().await.expect("get");
    assert_eq!(r.status(), 404);
    let r =
        d.http.get(format!("{}/a2a/ext/events/examples/..%2Fschema.json", d.url)).send().await.expect("get");
    assert_eq!(r.status(), 404, "only the published examples are served");

    let card: Value = d
        .http
        .get(format!("{}/.well-known/agent-card.json", d.url))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    let exts = card["capabilities"]["extensions"].as_array().expect("extensions");
    for (uri, id) in [
        (
            "https://agentd.dev/a2a/ext/task-annotations",
            "https://agentd.dev/a2a/ext/task-annotations/schema.json",
        ),
        ("https://agentd.dev/a2a/ext/events", "https://agentd.dev/a2a/ext/events/schema.json"),
    ] {
        let e = exts.iter().find(|e| e["uri"] == uri).unwrap_or_else(|| panic!("{uri} not declared: {card}"));
        assert_ne!(e["required"], json!(true), "{uri} is never required");
        assert_eq!(e["params"]["schema"], id, "{uri} params.schema");
    }
}
