//! The durable event log behind the events feed (design §7): what an event
//! is as stored, and how one is made. Events are written in the same store
//! batch as the change that caused them; the store assigns `seq`.

use crate::record::TaskRecord;
use agentd_proto::Timestamp;
use agentd_proto::ext::events::EventKind;
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// The most recent messages a `task` event's Task carries (older ones are
/// dropped; GetTask has them all).
pub const TASK_EVENT_HISTORY: usize = 10;

/// At most this much of those messages, as JSON: an event is a
/// notification, and a message of megabytes would otherwise be copied into
/// every event of its task (and the log, and every feed).
pub const TASK_EVENT_HISTORY_BYTES: usize = 64 * 1024;

/// An event to append; the store gives it its `seq` at commit.
#[derive(Clone, Debug, PartialEq)]
pub struct NewEvent {
    pub ts: Timestamp,
    pub kind: EventKind,
    /// The task the event is about, if any.
    pub task_id: Option<String>,
    /// Who may see it besides operators: the task's owner. `None`: every
    /// principal (daemon lifecycle).
    pub owner: Option<String>,
    pub data: EventJson,
    /// The task-annotations object of a `task` event, attached only for
    /// subscribers that activated that extension.
    pub annotations: Option<EventJson>,
}

impl NewEvent {
    /// An event of any kind about `rec`, visible to its owner and operators.
    pub fn for_task(kind: EventKind, rec: &TaskRecord, ts: Timestamp, data: EventJson) -> Self {
        Self {
            ts,
            kind,
            task_id: Some(rec.task.id.clone()),
            owner: Some(rec.owner.clone()),
            data,
            annotations: None,
        }
    }
}

/// An event's JSON, serialized once when the event is made and shared from
/// then on: the store writes this text as is, the feed's channel and the
/// log's replay hand out clones of one allocation, and only a feed that
/// delivers the event parses it. (A `serde_json::Value` here was built,
/// cloned and serialized again per event: a fifth of a SendMessage's CPU.)
#[derive(Clone, PartialEq, Eq)]
pub struct EventJson(Arc<str>);

impl EventJson {
    /// `v` as compact JSON (`null` if it cannot be serialized, which the
    /// event types never fail), copied once into the shared text from the
    /// buffer it was written into (`agentd_proto::exact`).
    pub fn of<T: Serialize + ?Sized>(v: &T) -> Self {
        agentd_proto::exact::with_json(v, Self::from_json).unwrap_or_else(|_| Self("null".into()))
    }
    /// Serialized JSON text, copied into the shared text (`null` if it is
    /// not UTF-8, which serde_json never writes).
    pub fn from_json(json: &[u8]) -> Self {
        Self(std::str::from_utf8(json).map_or_else(|_| "null".into(), Arc::from))
    }
    /// Text the store wrote from an `EventJson`: taken as it is.
    pub fn from_stored(text: String) -> Self {
        Self(text.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// The JSON as a value (`Null` if the text is not JSON, which only a
    /// damaged store could give).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }
}

impl From<Value> for EventJson {
    fn from(v: Value) -> Self {
        Self::of(&v)
    }
}

impl fmt::Debug for EventJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A task's whole Task JSON (what `agentd_proto::exact::to_string` of it
/// writes, byte for byte), as a `task` event of the task holds it, and
/// where its status ends: a task that has no artifacts, whose view
/// nevertheless lists them (empty), has that member written there. The
/// task's row and a blocking SendMessage's answer are this text, not
/// serializations of their own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WholeTask {
    json: EventJson,
    status_end: usize,
}

impl WholeTask {
    /// `json` must be a task's whole Task, and its byte at `status_end` the
    /// one after the status's value.
    pub(crate) fn new(json: EventJson, status_end: usize) -> Self {
        debug_assert!(json.as_str().as_bytes()[..status_end].ends_with(b"}"), "the status is an object");
        Self { json, status_end }
    }
    pub fn as_str(&self) -> &str {
        self.json.as_str()
    }
    /// The view of the task that lists its artifacts (none), between the
    /// `prefix` parts and the `suffix` parts: what `exact::to_vec_framed`
    /// of that view writes between them.
    pub fn view_framed(&self, prefix: &[&[u8]], suffix: &[&[u8]]) -> Vec<u8> {
        let (status, rest) = self.json.as_str().as_bytes().split_at(self.status_end);
        let parts = prefix.iter().chain([&status, &ARTIFACTS_NONE, &rest]).chain(suffix);
        let mut out = Vec::with_capacity(parts.clone().map(|p| p.len()).sum());
        parts.for_each(|p| out.extend_from_slice(p));
        out
    }
}

/// The member a view of a task without artifacts has after its status.
const ARTIFACTS_NONE: &[u8] = b",\"artifacts\":[]";

/// An event as stored, with its `seq`.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    /// Strictly increasing, durable, never reused.
    pub seq: u64,
    pub event: NewEvent,
}

/// Where the log stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventLogBounds {
    /// The highest `seq` ever assigned (0: none yet).
    pub last: u64,
    /// Every event with `seq <= pruned_through` was removed by retention.
    pub pruned_through: u64,
}

/// Retention: keep at most `max_count` events, and none committed before
/// `min_ts_ms` (always a prefix of the log, so `pruned_through` is exact).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRetention {
    pub max_count: u64,
    pub min_ts_ms: i64,
    /// At most this many seqs past `pruned_through` are removed by one
    /// commit; the rest wait for the next. A large backlog (a restart after
    /// a burst, a lowered `retain_count`) then goes in steps that each hold
    /// the store's writer briefly, instead of one transaction that stalls
    /// every write for seconds and grows SQLite's WAL past its cap.
    pub max_removed: u64,
}

impl EventRetention {
    /// The highest seq this step may remove: `max_removed` past what is
    /// pruned already, never past the last seq.
    pub fn window_end(&self, b: EventLogBounds) -> u64 {
        b.pruned_through.saturating_add(self.max_removed).min(b.last)
    }

    /// Where this step cuts the log, given the highest seq within
    /// [`EventRetention::window_end`] that age expires (0: none): past the
    /// count or expired, within the window; `None` when that removes
    /// nothing.
    pub fn cutoff(&self, b: EventLogBounds, expired_through: u64) -> Option<u64> {
        let by_count = b.last.saturating_sub(self.max_count);
        let cutoff = by_count.max(expired_through).min(self.window_end(b));
        (cutoff > b.pruned_through).then_some(cutoff)
    }
}

/// The `max_removed` the engine's retention uses: about 10 ms of the
/// SQLite writer's time at the feed's usual event sizes.
pub const EVENT_PRUNE_STEP: u64 = 1_000;

#[cfg(test)]
mod tests {
    use super::EventJson;
    use serde::{Serialize, Serializer};
    use serde_json::json;

    /// Makes an event while it is being written.
    struct Nested;
    impl Serialize for Nested {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(EventJson::of(&json!({"inner": [1, 2]})).as_str())
        }
    }

    /// Never written.
    struct Fails;
    impl Serialize for Fails {
        fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no"))
        }
    }

    #[test]
    fn the_text_is_what_serde_json_writes() {
        let big = json!({"text": "é\"".repeat(20_000)});
        for v in [json!(null), json!({"a": [1, 2.5, "x"]}), big.clone(), json!("after a big one")] {
            assert_eq!(EventJson::of(&v).as_str(), serde_json::to_string(&v).unwrap());
        }
        assert_eq!(EventJson::of(&Nested).as_str(), serde_json::to_string(&Nested).unwrap());
        assert_eq!(EventJson::of(&Fails).as_str(), "null");
        assert_eq!(EventJson::of(&json!([1])).as_str(), "[1]", "a failed write leaves nothing behind");
    }
}
