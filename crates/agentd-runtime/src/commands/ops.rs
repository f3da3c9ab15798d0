//! The command ops: names, descriptions, argument schemas (JSON Schema
//! 2020-12, closed) and which of them a user or agent may run by default.
//! The card's extension params are built from this table, so what is
//! declared is what runs.

use agentd_core::{Error, FieldPath, Invalid, Violation};
use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::{Value, json};

/// One op as the card declares it.
pub struct OpSpec {
    pub op: &'static str,
    pub description: &'static str,
    /// Whether it starts (or continues) a task; otherwise it answers with
    /// a direct Message holding a DataPart.
    pub starts_work: bool,
    pub schema: Value,
}

/// The ops a `user` or `agent` may run without a `commands.grants` entry:
/// the daemon's status, the status and cancelation of their own work, and
/// the gates addressed to them.
pub const DEFAULT_GRANTS: &[&str] = &[
    "status",
    "subagent.status",
    "subagent.kill",
    "conversation.get",
    "conversation.close",
    "workflow.run",
    "workflow.status",
    "workflow.cancel",
    "gate.list",
];

/// A subagent name: the first part of its handle.
pub const NAME_PATTERN: &str = "^[a-z][a-z0-9_]{0,31}$";

fn closed(properties: Value, required: &[&str]) -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn text(description: &str) -> Value {
    json!({"type": "string", "minLength": 1, "description": description})
}

/// The arguments of `subagent.spawn`, also the `spawn_subagent` tool's
/// parameters.
pub fn spawn_schema() -> Value {
    closed(
        json!({
            "instruction": text("The subagent's instruction: its system prompt."),
            "input": text("The first message the subagent gets."),
            "name": {
                "type": "string",
                "pattern": NAME_PATTERN,
                "description": "Names the subagent; its handle is `<name>-<task id>` (default name `subagent`).",
            },
        }),
        &["instruction", "input"],
    )
}

/// Every op, in the order the card lists them, built once: the grants, the
/// card's params and skills and the compiled schemas all read them.
pub fn all() -> &'static [OpSpec] {
    static ALL: std::sync::LazyLock<Vec<OpSpec>> = std::sync::LazyLock::new(build);
    &ALL
}

fn build() -> Vec<OpSpec> {
    let id = || text("The subagent's handle (or its task id).");
    let context = || text("The conversation's contextId.");
    let run = || text("The run id (`<workflow>-<ULID>`) or its task id.");
    vec![
        OpSpec {
            op: "status",
            description: "The daemon's status: version, uptime, live tasks, model kind, subagents; for operators on a shared PostgreSQL store, the replicas and their leases.",
            starts_work: false,
            schema: closed(json!({}), &[]),
        },
        OpSpec {
            op: "subagent.spawn",
            description: "Starts a subagent: an agent loop with its own instruction and context, tracked by the task this answers with.",
            starts_work: true,
            schema: spawn_schema(),
        },
        OpSpec {
            op: "subagent.send",
            description: "Sends input to a subagent: steering while it works, the answer when it waits for input. Answers with its task.",
            starts_work: true,
            schema: closed(json!({"id": id(), "input": text("The message text.")}), &["id", "input"]),
        },
        OpSpec {
            op: "subagent.status",
            description: "A subagent's handle, task, state, parent, live children and last message.",
            starts_work: false,
            schema: closed(json!({"id": id()}), &["id"]),
        },
        OpSpec {
            op: "subagent.kill",
            description: "Cancels a subagent and every live subagent below it.",
            starts_work: false,
            schema: closed(json!({"id": id()}), &["id"]),
        },
        OpSpec {
            op: "workflow.run",
            description: "Starts a run of a workflow of the instruction document; answers with the run's task.",
            starts_work: true,
            schema: closed(
                json!({
                    "workflow": text("The workflow's name."),
                    "inputs": {"type": "object", "description": "The run's inputs, checked against the workflow's inputs.schema."},
                }),
                &["workflow"],
            ),
        },
        OpSpec {
            op: "workflow.status",
            description: "A run's state, steps with their outputs, and open gate.",
            starts_work: false,
            schema: closed(json!({"run": run()}), &["run"]),
        },
        OpSpec {
            op: "workflow.cancel",
            description: "Cancels a run, the subagents of its steps and its delegations.",
            starts_work: false,
            schema: closed(json!({"run": run()}), &["run"]),
        },
        OpSpec {
            op: "workflow.signal",
            description: "Sends a named signal (with optional data) to a run: its steps read it as run.signals.<name>.",
            starts_work: false,
            schema: closed(
                json!({"run": run(), "signal": {"type": "string", "pattern": NAME_PATTERN}, "data": {}}),
                &["run", "signal"],
            ),
        },
        OpSpec {
            op: "gate.list",
            description: "The open gates addressed to you on tasks you do not own (yours are in ListTasks): task, run, step, question, askSchema, askChannel, when it opened. Newest first, at most 100.",
            starts_work: false,
            schema: closed(json!({}), &[]),
        },
        OpSpec {
            op: "conversation.get",
            description: "The turns of a conversation you may see: task ids, states and messages.",
            starts_work: false,
            schema: closed(json!({"contextId": context()}), &["contextId"]),
        },
        OpSpec {
            op: "conversation.close",
            description: "Closes a conversation: cancels its live turns and refuses later ones.",
            starts_work: false,
            schema: closed(json!({"contextId": context()}), &["contextId"]),
        },
    ]
}

/// The op names, in card order.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|o| o.op).collect()
}

/// Compiled argument schemas.
pub struct Schemas {
    validators: Vec<(&'static str, Validator)>,
}

impl Schemas {
    /// Compiles every op's schema; a schema that does not compile is a bug
    /// caught by the tests.
    pub fn compile() -> Self {
        let validators = all()
            .iter()
            .map(|o| {
                let v = jsonschema::validator_for(&o.schema)
                    .unwrap_or_else(|e| panic!("the schema of command op {} does not compile: {e}", o.op));
                (o.op, v)
            })
            .collect();
        Self { validators }
    }

    pub fn knows(&self, op: &str) -> bool {
        self.validators.iter().any(|(name, _)| *name == op)
    }

    /// Checks `args` against `op`'s schema; every violation names its
    /// field relative to the command object (`instruction`, `name`).
    pub fn check(&self, op: &str, args: &Value) -> Result<(), Error> {
        let Some((_, v)) = self.validators.iter().find(|(name, _)| *name == op) else {
            return Ok(());
        };
        check_with(v, args).map_err(Error::Invalid)
    }
}

/// `args` against a compiled schema, listing every violated field.
pub fn check_with(v: &Validator, args: &Value) -> Result<(), Invalid> {
    let mut violations: Vec<Violation> = Vec::new();
    for e in v.iter_errors(args) {
        violations.extend(violations_of(&e));
    }
    if violations.is_empty() { Ok(()) } else { Err(Invalid::of(violations)) }
}

/// The path of an instance location: members and indices of the data the
/// client wrote (`a.b[2].c`).
fn path_of<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> FieldPath {
    segments.fold(FieldPath::default(), |path, s| match s {
        LocationSegment::Property(p) => path.member(p.to_string()),
        LocationSegment::Index(i) => path.index(i),
    })
}

fn violations_of(e: &ValidationError<'_>) -> Vec<Violation> {
    let at = path_of(e.instance_path().segments());
    let one = |field: FieldPath, description: String| vec![Violation { field, description }];
    match e.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
            one(at.member(name), "is required".into())
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .iter()
            .map(|name| Violation {
                field: at.clone().member(name.clone()),
                description: "is not an argument of this op".into(),
            })
            .collect(),
        ValidationErrorKind::Type { kind } => one(at, format!("must be of type {}", type_name(kind))),
        ValidationErrorKind::MinLength { .. } => one(at, "must not be empty".into()),
        ValidationErrorKind::Pattern { pattern } => one(at, format!("must match {pattern}")),
        _ => one(at, e.to_string()),
    }
}

fn type_name(kind: &jsonschema::error::TypeKind) -> String {
    match kind {
        jsonschema::error::TypeKind::Single(t) => t.to_string(),
        jsonschema::error::TypeKind::Multiple(ts) => {
            ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(e: &Error) -> Vec<String> {
        e.violations().iter().map(|v| v.field.to_string()).collect()
    }

    #[test]
    fn every_schema_compiles_and_is_closed() {
        let s = Schemas::compile();
        for o in all() {
            assert!(s.knows(o.op));
            assert_eq!(o.schema["additionalProperties"], false, "{} is closed", o.op);
        }
        assert!(DEFAULT_GRANTS.iter().all(|g| s.knows(g)), "default grants name real ops");
    }

    #[test]
    fn violations_name_each_field() {
        let s = Schemas::compile();
        let ok = json!({"instruction": "be brief", "input": "hi", "name": "helper"});
        assert!(s.check("subagent.spawn", &ok).is_ok());
        let e = s
            .check("subagent.spawn", &json!({"instruction": 5, "extra": 1, "name": "Bad Name"}))
            .unwrap_err();
        let mut got = fields(&e);
        got.sort_unstable();
        assert_eq!(got, ["extra", "input", "instruction", "name"], "{e:?}");
        let e = s.check("subagent.status", &json!({"id": ""})).unwrap_err();
        assert_eq!(fields(&e), ["id"]);
        assert!(e.violations()[0].description.contains("empty"), "{e:?}");
        let e = s.check("status", &json!({"verbose": true})).unwrap_err();
        assert_eq!(fields(&e), ["verbose"]);
    }
}
