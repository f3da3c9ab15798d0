//! Every task-annotations object an end-to-end test receives, anywhere in
//! any answer or stream frame, is validated against the *published* schema
//! (`docs/ext/task-annotations/schema.json`): a member put on the wire
//! without the schema fails whichever test sees it.

use serde_json::Value;
use std::cell::Cell;
use std::sync::OnceLock;

pub const URI: &str = "https://agentd.dev/a2a/ext/task-annotations";

thread_local! {
    /// How many annotations objects were validated on this thread. Per
    /// thread, not per process: the tests of the suite run side by side in
    /// one process, each on its own thread.
    static VALIDATED: Cell<usize> = const { Cell::new(0) };
}

/// How many annotations objects [`check`] validated on the calling thread
/// (a test's own count when it runs on a current-thread runtime).
pub fn validated() -> usize {
    VALIDATED.with(Cell::get)
}

/// The published copy of an extension's file, e.g. `("task-annotations", "schema.json")`.
pub fn published(ext: &str, file: &str) -> String {
    let path = format!("{}/../../docs/ext/{ext}/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// A validator for a published schema bundle.
pub fn validator(ext: &str) -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(&published(ext, "schema.json")).expect("published schema is JSON");
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("the published {ext} schema compiles: {e}"))
}

fn annotations_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| validator("task-annotations"))
}

/// Validates every annotations object inside `v` (panics on the first
/// invalid one, naming what is wrong).
pub fn check(v: &Value) {
    match v {
        Value::Object(o) => {
            if let Some(a) = o.get(URI) {
                let errors: Vec<String> = annotations_validator()
                    .iter_errors(a)
                    .map(|e| format!("{e} at {}", e.instance_path()))
                    .collect();
                assert!(errors.is_empty(), "annotations violate the published schema: {errors:?}\n{a}");
                VALIDATED.with(|n| n.set(n.get() + 1));
            }
            o.values().for_each(check);
        }
        Value::Array(a) => a.iter().for_each(check),
        _ => {}
    }
}
