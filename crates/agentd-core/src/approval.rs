//! Approval gates for tool calls (`docs/tools.md`): a call a tool policy
//! says to `ask` about waits on a human gate of the turn's task, typed
//! `{approve: boolean, note?: string}`, bound to a hash of the exact
//! arguments. What is recorded on the task while it waits is a
//! [`PendingApproval`] in its meta, committed with the INPUT_REQUIRED
//! change, so a restarted daemon finds it (and a resumed turn that asks
//! again for the same call waits on it instead of asking twice).
//!
//! The waiting itself is [`crate::TaskControl::await_approval`]
//! (`engine/approval.rs`); the answer arrives as any gate answer does
//! (`engine/send.rs`) and is checked here.

use crate::error::{Error, FieldPath, Invalid, Violation};
use crate::record::TaskRecord;
use agentd_proto::{Message, PartContent};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// The default time a call waits for its approval before it is denied.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

/// The schema of an approval's answer (the task annotations' `askSchema`).
pub fn ask_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approve": {"type": "boolean"},
            "note": {"type": "string"}
        },
        "required": ["approve"],
        "additionalProperties": false
    })
}

/// What a tool asks approval for.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRequest {
    /// The name the model called the tool by (`files__delete_file`).
    pub tool: String,
    /// The server that owns it, for MCP tools.
    pub server: Option<String>,
    /// The exact arguments the call would be made with.
    pub arguments: Value,
    /// Where the question is announced: the `channel` of the policy's
    /// `!human` entry (`@channel/<name>`).
    pub channel: Option<String>,
    /// Principal ids that may answer besides the task's owner and
    /// operators (the `principal` of that `!human` entry).
    pub answerers: Vec<String>,
    /// How long the call waits before it counts as denied.
    pub timeout: Duration,
    /// Whether the call may be made again when its outcome is unknown
    /// (approved, then interrupted before its result was recorded).
    pub idempotent: bool,
    /// The call already started once and a restart cut it before its
    /// result was recorded: the question is whether to run it again.
    pub interrupted: bool,
}

/// The durable record of an approval a call waits for (or has just got).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// SHA-256 (hex) of the arguments' JSON text: an answer approves this
    /// call and no other.
    pub args_hash: String,
    pub opened_ms: i64,
    /// When the call counts as denied if nobody answered.
    pub deadline_ms: i64,
    #[serde(default)]
    pub idempotent: bool,
    /// Asks whether to run again a call a restart cut (`ApprovalRequest::interrupted`):
    /// a resumed turn must not take it for a call that never ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The answer, once given; taken (and the record removed) by the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// A validated answer, or the deadline's denial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub approve: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The principal that answered; empty when the deadline denied.
    #[serde(default)]
    pub by: String,
}

/// How an approval ended, as the call sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalOutcome {
    Approved {
        by: String,
        note: Option<String>,
    },
    Denied {
        by: String,
        note: Option<String>,
    },
    /// Nobody answered within the timeout: denied.
    TimedOut {
        waited: Duration,
    },
}

impl ApprovalOutcome {
    /// What the model is told when the call is not made.
    pub fn refusal(&self, tool: &str) -> Option<String> {
        match self {
            ApprovalOutcome::Approved { .. } => None,
            ApprovalOutcome::Denied { by, note } => {
                Some(format!("denied by {by}: {}", note.as_deref().unwrap_or("no reason given")))
            }
            ApprovalOutcome::TimedOut { waited } => {
                Some(format!("denied: nobody approved the call of {tool} within {}s", waited.as_secs()))
            }
        }
    }
}

/// The hash an approval is bound to.
pub fn args_hash(arguments: &Value) -> String {
    let digest = Sha256::digest(arguments.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The question shown in the status message and the announcement.
pub fn question(req: &ApprovalRequest) -> String {
    let owner = req.server.as_deref().map(|s| format!(" (MCP server {s})")).unwrap_or_default();
    let args = serde_json::to_string_pretty(&req.arguments).unwrap_or_else(|_| req.arguments.to_string());
    if req.interrupted {
        return format!(
            "The call of the tool {}{owner} with these arguments was interrupted by a restart of agentd \
             before its result was recorded; its outcome is unknown (it may or may not have taken effect).\n{args}\n\
             Run it again? Answer {{\"approve\": true}} to run it again, or {{\"approve\": false, \"note\": \"why\"}} \
             to not run it; without an answer within {}s it is not run again.",
            req.tool,
            req.timeout.as_secs()
        );
    }
    format!(
        "Approve the call of the tool {}{owner} with these arguments?\n{args}\n\
         Answer {{\"approve\": true}}, or {{\"approve\": false, \"note\": \"why\"}}; \
         without an answer within {}s the call is denied.",
        req.tool,
        req.timeout.as_secs()
    )
}

/// The agent-role status message of the INPUT_REQUIRED change: the
/// question, and the call as data (`{tool, server, arguments}`).
pub fn status_message(req: &ApprovalRequest) -> Message {
    let mut m = Message::agent_text(question(req));
    m.parts.push(agentd_proto::Part::data(json!({
        "tool": req.tool,
        "server": req.server,
        "arguments": req.arguments,
    })));
    m
}

/// The value an answer carries: its DataPart, or its text parsed as JSON
/// unless `schema` asks for a string (with no schema, the text as it is).
/// Shared by every kind of gate.
pub fn answer_value(m: &Message, schema: Option<&Value>) -> Result<Value, Error> {
    if let Some(v) = m.parts.iter().find_map(|p| match &p.content {
        PartContent::Data(v) => Some(Value::clone(v)),
        _ => None,
    }) {
        return Ok(v);
    }
    let text = m.text();
    let wants_string = schema.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("string");
    if schema.is_none() || wants_string {
        return Ok(Value::String(text));
    }
    serde_json::from_str(text.trim()).map_err(|e| {
        Error::invalid(
            FieldPath::of("message.parts"),
            format!(
                "the gate expects an answer matching its schema: a DataPart, or text that parses as JSON ({e})"
            ),
        )
    })
}

/// Violations of an answer, reported under `answer` (`answer.approve`).
pub fn answer_invalid(violations: Vec<Violation>) -> Error {
    let mut out = Invalid::of(violations).under(&FieldPath::default().member("answer"));
    out.lead = Some("the answer does not satisfy the gate's schema".into());
    Error::Invalid(out)
}

/// Checks an answer to the approval waiting on `rec` and records it as the
/// decision of `by`, closing the gate. Called by the engine under the
/// task's lock, on the copy it commits: a refused answer changes nothing.
/// An answer after the deadline (nobody was waiting to enforce it: the
/// daemon was down) is recorded as the deadline's denial.
pub(crate) fn accept(rec: &mut TaskRecord, answer: &Message, by: &str, now_ms: i64) -> Result<(), Error> {
    let schema = ask_schema();
    let value = answer_value(answer, Some(&schema))?;
    let (approve, note) = check(&value)?;
    let Some(pending) = rec.meta.approval.as_mut() else {
        return Err(Error::Internal("no approval is waiting".into()));
    };
    pending.decision = Some(if now_ms > pending.deadline_ms {
        Decision { approve: false, note: None, by: String::new() }
    } else {
        Decision { approve, note, by: by.to_owned() }
    });
    rec.meta.gate = None;
    Ok(())
}

/// Whether `m` is a valid answer to an approval (what [`accept`] takes).
pub(crate) fn is_answer(m: &Message) -> bool {
    answer_value(m, Some(&ask_schema())).is_ok_and(|v| check(&v).is_ok())
}

/// `{approve: boolean, note?: string}` and nothing else, every violation
/// listed (as a JSON Schema validator would name them).
fn check(value: &Value) -> Result<(bool, Option<String>), Error> {
    let v = |field: FieldPath, d: &str| Violation { field, description: d.to_owned() };
    let Some(obj) = value.as_object() else {
        return Err(answer_invalid(vec![v(
            FieldPath::default(),
            "must be an object {approve: boolean, note?: string}",
        )]));
    };
    let mut violations = Vec::new();
    let approve = match obj.get("approve") {
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            violations.push(v(FieldPath::default().member("approve"), "must be a boolean"));
            None
        }
        None => {
            violations.push(v(FieldPath::default().member("approve"), "is required"));
            None
        }
    };
    let note = match obj.get("note") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            violations.push(v(FieldPath::default().member("note"), "must be a string"));
            None
        }
    };
    for k in obj.keys().filter(|k| *k != "approve" && *k != "note") {
        violations.push(v(FieldPath::default().member(k.clone()), "is not allowed (only approve and note)"));
    }
    match approve {
        Some(a) if violations.is_empty() => Ok((a, note)),
        _ => Err(answer_invalid(violations)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Naming;

    fn msg(v: Value) -> Message {
        Message { parts: vec![agentd_proto::Part::data(v)], ..Message::default() }
    }

    fn fields(e: &Error) -> Vec<String> {
        e.violations().iter().map(|v| v.field.render(Naming::Json)).collect()
    }

    #[test]
    fn an_answer_is_approve_and_an_optional_note_and_nothing_else() {
        assert_eq!(check(&json!({"approve": true})).unwrap(), (true, None));
        assert_eq!(check(&json!({"approve": false, "note": "no"})).unwrap(), (false, Some("no".into())));
        let e = check(&json!({"approve": "yes", "note": 3, "extra": 1})).unwrap_err();
        assert_eq!(fields(&e), ["answer.approve", "answer.note", "answer.extra"]);
        assert_eq!(fields(&check(&json!({})).unwrap_err()), ["answer.approve"]);
        assert_eq!(fields(&check(&json!(true)).unwrap_err()), ["answer"]);
    }

    #[test]
    fn text_answers_parse_as_json_and_data_parts_win() {
        let text =
            Message { parts: vec![agentd_proto::Part::text(r#"{"approve": true}"#)], ..Message::default() };
        assert_eq!(answer_value(&text, Some(&ask_schema())).unwrap(), json!({"approve": true}));
        assert_eq!(
            answer_value(&msg(json!({"approve": false})), Some(&ask_schema())).unwrap()["approve"],
            false
        );
        let prose = Message { parts: vec![agentd_proto::Part::text("sure")], ..Message::default() };
        assert_eq!(fields(&answer_value(&prose, Some(&ask_schema())).unwrap_err()), ["message.parts"]);
    }

    #[test]
    fn an_answer_is_recorded_as_its_principals_decision_unless_the_deadline_passed() {
        let rec = |deadline_ms| TaskRecord {
            task: agentd_proto::Task::default(),
            owner: "user:alice".into(),
            // Fixed: two records made a millisecond apart must still be equal.
            created_at: agentd_proto::Timestamp::from_millis(1_700_000_000_000).unwrap(),
            status_history: Vec::new(),
            meta: crate::record::TaskMeta {
                gate: Some(crate::record::OpenGate::default()),
                approval: Some(PendingApproval {
                    tool: "t".into(),
                    server: None,
                    args_hash: args_hash(&json!({})),
                    opened_ms: 0,
                    deadline_ms,
                    idempotent: false,
                    interrupted: false,
                    decision: None,
                }),
                ..Default::default()
            },
            version: 1,
        };
        let yes = msg(json!({"approve": true, "note": "ok"}));
        let mut r = rec(100);
        accept(&mut r, &yes, "user:carol", 50).unwrap();
        let d = r.meta.approval.as_ref().and_then(|a| a.decision.clone()).unwrap();
        assert_eq!(d, Decision { approve: true, note: Some("ok".into()), by: "user:carol".into() });
        assert!(r.meta.gate.is_none(), "the gate closed");
        let mut late = rec(100);
        accept(&mut late, &yes, "user:carol", 101).unwrap();
        let d = late.meta.approval.as_ref().and_then(|a| a.decision.clone()).unwrap();
        assert_eq!(d, Decision { approve: false, note: None, by: String::new() }, "the deadline denied it");
        let mut bad = rec(100);
        assert!(accept(&mut bad, &msg(json!({"approve": 1})), "user:carol", 50).is_err());
        assert_eq!(bad, rec(100), "a refused answer changes nothing");
    }

    #[test]
    fn the_hash_binds_the_exact_arguments() {
        assert_eq!(args_hash(&json!({"a": 1})), args_hash(&json!({"a": 1})));
        assert_ne!(args_hash(&json!({"a": 1})), args_hash(&json!({"a": 2})));
        assert_eq!(args_hash(&json!({})).len(), 64);
    }
}
