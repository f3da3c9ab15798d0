//! agentd's own extensions as the card declares them, and their published
//! documents served under `/a2a/ext/<name>/`: the spec page (`README.md`),
//! `schema.json` (generated from the Rust types, the same text
//! `agentd --extension-schema <name>` prints) and `examples/<file>`.

use crate::extensions::DeclaredExtension;
use crate::state::AppState;
use agentd_proto::ext::{events, schema, task_annotations};
use agentd_proto::jsonrpc::methods as m;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

/// Where the documents are served.
pub const EXT_PATH: &str = "/a2a/ext";

/// One extension's published documents.
struct Published {
    name: &'static str,
    readme: &'static str,
    examples: &'static [(&'static str, &'static str)],
}

macro_rules! example {
    ($ext:literal, $file:literal) => {
        ($file, include_str!(concat!("../../../docs/ext/", $ext, "/examples/", $file)))
    };
}

/// The published documents; a new extension adds an entry (the contract
/// tests fail for a `docs/ext/` directory that is not served).
const PUBLISHED: &[Published] = &[
    Published {
        name: "task-annotations",
        readme: include_str!("../../../docs/ext/task-annotations/README.md"),
        examples: &[
            example!("task-annotations", "run.json"),
            example!("task-annotations", "turn.json"),
            example!("task-annotations", "subagent.json"),
            example!("task-annotations", "gate.json"),
        ],
    },
    Published {
        name: "events",
        readme: include_str!("../../../docs/ext/events/README.md"),
        examples: &[
            example!("events", "hello.json"),
            example!("events", "task-event.json"),
            example!("events", "conversation-event.json"),
            example!("events", "subagent-event.json"),
            example!("events", "lifecycle-event.json"),
            example!("events", "reminder-event.json"),
            example!("events", "run-event.json"),
            example!("events", "step-event.json"),
            example!("events", "gate-event.json"),
            example!("events", "tool-event.json"),
            example!("events", "goodbye.json"),
        ],
    },
    Published {
        name: "reminders",
        readme: include_str!("../../../docs/ext/reminders/README.md"),
        examples: &[
            example!("reminders", "CompatibilityEnvelope.json"),
            example!("reminders", "InjectTaskReminderRequest.full.json"),
            example!("reminders", "InjectTaskReminderRequest.minimal.json"),
            example!("reminders", "InjectTaskReminderResponse.json"),
            example!("reminders", "ReminderEvent.deduped.json"),
            example!("reminders", "ReminderEvent.emitted.json"),
            example!("reminders", "ReminderEvent.expired.json"),
            example!("reminders", "RemindersCapabilities.json"),
        ],
    },
];

/// The card entries of task-annotations and events (never required).
pub fn declared() -> Vec<DeclaredExtension> {
    let methods = |ms: &[&str]| ms.iter().map(|s| (*s).to_owned()).collect();
    vec![
        DeclaredExtension {
            uri: task_annotations::URI.into(),
            description: "Task annotations: link, creation time, status history with commit times, owner, \
                          open gate and starting command, in Task.metadata"
                .into(),
            required: false,
            params: Some(params(task_annotations::SCHEMA_ID)),
            methods: methods(&[
                m::SEND_MESSAGE,
                m::SEND_STREAMING_MESSAGE,
                m::GET_TASK,
                m::LIST_TASKS,
                m::CANCEL_TASK,
                m::SUBSCRIBE_TO_TASK,
                events::METHOD,
            ]),
        },
        DeclaredExtension {
            uri: events::URI.into(),
            description: "Events feed: agentd.events/SubscribeToEvents streams a durable, resumable log of \
                          task, conversation, subagent and lifecycle events"
                .into(),
            required: false,
            params: Some(params(events::SCHEMA_ID)),
            methods: methods(&[events::METHOD]),
        },
    ]
}

fn params(schema: &str) -> agentd_proto::Metadata {
    let mut p = agentd_proto::Metadata::new();
    p.insert("schema".into(), json!(schema));
    p
}

fn find(name: &str) -> Option<&'static Published> {
    PUBLISHED.iter().find(|p| p.name == name)
}

fn body(content_type: &'static str, text: String) -> Response {
    let mut r = (StatusCode::OK, text).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn not_found(what: &str) -> Response {
    let e = json!({"error": {"code": 404, "status": "NOT_FOUND", "message": format!("no {what}")}});
    let mut r = (StatusCode::NOT_FOUND, e.to_string()).into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(crate::errors::JSON));
    r
}

/// `GET /a2a/ext/{name}`: the spec page.
pub async fn readme(State(_): State<AppState>, Path(name): Path<String>) -> Response {
    match find(&name) {
        Some(p) => body("text/markdown; charset=utf-8", p.readme.to_owned()),
        None => not_found(&format!("extension {name:?}")),
    }
}

/// `GET /a2a/ext/{name}/schema.json`.
pub async fn schema_json(State(_): State<AppState>, Path(name): Path<String>) -> Response {
    match schema::bundle(&name) {
        Some(b) => body(crate::errors::JSON, pretty(&b)),
        None => not_found(&format!("schema bundle {name:?}")),
    }
}

/// `GET /a2a/ext/{name}/examples/{file}`.
pub async fn example(State(_): State<AppState>, Path((name, file)): Path<(String, String)>) -> Response {
    let found = find(&name).and_then(|p| p.examples.iter().find(|(f, _)| *f == file));
    match found {
        Some((_, text)) => body(crate::errors::JSON, (*text).to_owned()),
        None => not_found(&format!("example {file:?} of {name:?}")),
    }
}

/// The text of a schema bundle as printed and published: pretty JSON and a
/// final newline.
pub fn pretty(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}
