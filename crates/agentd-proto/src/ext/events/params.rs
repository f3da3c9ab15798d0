//! The params of `agentd.events/SubscribeToEvents`, decoded strictly.

use super::EventKind;
use crate::{A2aError, FieldViolation};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The params of `agentd.events/SubscribeToEvents`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscribeParams {
    /// The last `seq` the client has seen: the feed resumes right after it.
    /// Absent: live events from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub from_seq: Option<u64>,
    /// Only these kinds; absent: every kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<EventKind>")]
    pub kinds: Option<Vec<EventKind>>,
}

impl SubscribeParams {
    /// Strict decoding: an unknown member, a wrong type or an unknown kind
    /// is InvalidParams naming the member.
    pub fn decode(params: &Value) -> Result<Self, A2aError> {
        let obj = match params {
            Value::Null => return Ok(Self::default()),
            Value::Object(o) => o,
            _ => return Err(A2aError::invalid_field("params", "must be an object {fromSeq?, kinds?}")),
        };
        let mut v = Vec::new();
        let mut out = Self::default();
        let bad =
            |field: String, description: &str| FieldViolation { field, description: description.into() };
        for (key, value) in obj {
            match (key.as_str(), value) {
                ("fromSeq" | "from_seq", Value::Null) | ("kinds", Value::Null) => {}
                ("fromSeq" | "from_seq", n) => match n.as_u64() {
                    Some(n) => out.from_seq = Some(n),
                    None => v.push(bad("fromSeq".into(), "must be a non-negative integer")),
                },
                ("kinds", Value::Array(items)) => {
                    let mut kinds = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        match item.as_str().and_then(EventKind::parse) {
                            Some(k) => kinds.push(k),
                            None => v.push(bad(
                                format!("kinds[{i}]"),
                                "is not an event kind (task, run, step, gate, subagent, conversation, \
                                 reminder, lifecycle)",
                            )),
                        }
                    }
                    out.kinds = Some(kinds);
                }
                ("kinds", _) => v.push(bad("kinds".into(), "must be an array of event kinds")),
                (other, _) => v.push(bad(other.to_owned(), "is not a member of SubscribeToEvents params")),
            }
        }
        crate::validate::finish(v)?;
        Ok(out)
    }
}
