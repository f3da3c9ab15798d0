//! The A2A data model (proto `lf.a2a.v1`): tasks, messages, parts, artifacts,
//! stream events and push configs, in ProtoJSON.

use crate::serde_util::{b64_decode, b64_serialize, bool_default, is_false, null_default};
use chrono::{DateTime, Datelike as _, SecondsFormat, Timelike as _, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::sync::Arc;

/// `google.protobuf.Struct`: a JSON object.
pub type Metadata = Map<String, Value>;

/// `google.protobuf.Timestamp`: `YYYY-MM-DDTHH:mm:ss.sssZ` out, any RFC 3339 in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub DateTime<Utc>);

impl Timestamp {
    /// The current time at the wire's precision (milliseconds), so that a
    /// value kept in memory equals the same value read back from a store.
    pub fn now() -> Self {
        let ms = Utc::now().timestamp_millis();
        Self::from_millis(ms).unwrap_or(Self(Utc::now()))
    }
    /// Milliseconds since the Unix epoch; the precision the wire carries.
    pub fn millis(&self) -> i64 {
        self.0.timestamp_millis()
    }
    pub fn from_millis(ms: i64) -> Option<Self> {
        DateTime::from_timestamp_millis(ms).map(Self)
    }
    /// Any RFC 3339 time within ProtoJSON's range (years 0001 to 9999 in
    /// UTC), truncated to the wire's precision (milliseconds), so that what
    /// is decoded is exactly what [`Self::to_wire`] writes back.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = DateTime::parse_from_rfc3339(text.trim())
            .map_err(|e| format!("not an RFC 3339 timestamp: {e}"))?
            .with_timezone(&Utc);
        // An offset can carry 0000-01-01 or 9999-12-31 out of range in UTC,
        // where RFC 3339 (and so `to_wire`) has no four-digit year.
        Self::within_range(t)
    }
    /// A `google.protobuf.Timestamp` (seconds and nanos since the Unix
    /// epoch, as gRPC carries it), held to what [`Self::parse`] accepts:
    /// the proto's own range (nanos in 0..=999,999,999, years 0001 to
    /// 9999), which is also all RFC 3339 can write, truncated alike.
    pub fn from_unix(seconds: i64, nanos: i32) -> Result<Self, String> {
        let nanos = u32::try_from(nanos)
            .ok()
            .filter(|n| *n < 1_000_000_000)
            .ok_or_else(|| format!("out of range: nanos must lie in 0..=999999999, not {nanos}"))?;
        match DateTime::from_timestamp(seconds, nanos) {
            Some(t) => Self::within_range(t),
            None => Err(Self::OUT_OF_RANGE.into()),
        }
    }
    const OUT_OF_RANGE: &str =
        "out of range: a timestamp lies in 0001-01-01T00:00:00Z..=9999-12-31T23:59:59.999Z";
    fn within_range(t: DateTime<Utc>) -> Result<Self, String> {
        if !(1..=9999).contains(&t.year()) {
            return Err(Self::OUT_OF_RANGE.into());
        }
        // Below a millisecond; a leap second keeps its extra second.
        let nanos = t.nanosecond();
        Ok(Self(t.with_nanosecond(nanos - nanos % 1_000_000).unwrap_or(t)))
    }
    pub fn to_wire(&self) -> String {
        match self.wire_bytes() {
            Some(b) => String::from_utf8_lossy(&b).into_owned(),
            None => self.0.to_rfc3339_opts(SecondsFormat::Millis, true),
        }
    }
    /// [`Self::to_wire`]'s text on the stack, for the years 0000 to 9999
    /// outside a leap second (every time the daemon makes or parses);
    /// `None` otherwise. Serializing a task writes several timestamps, and
    /// chrono's formatter allocated a string for each.
    fn wire_bytes(&self) -> Option<[u8; 24]> {
        // The naive UTC time, taken once: each accessor of a `DateTime`
        // applies its offset again, even UTC's.
        let t = self.0.naive_utc();
        let (year, ms) = (t.year(), t.nanosecond() / 1_000_000);
        if !(0..=9999).contains(&year) || ms > 999 {
            return None;
        }
        let mut b = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut n: u32| {
            for i in (at..at + width).rev() {
                b[i] = b'0' + (n % 10) as u8;
                n /= 10;
            }
        };
        put(0, 4, year.unsigned_abs());
        put(5, 2, t.month());
        put(8, 2, t.day());
        put(11, 2, t.hour());
        put(14, 2, t.minute());
        put(17, 2, t.second());
        put(20, 3, ms);
        Some(b)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.wire_bytes() {
            // ASCII digits and punctuation only: always UTF-8.
            Some(b) => s.serialize_str(std::str::from_utf8(&b).map_err(serde::ser::Error::custom)?),
            None => s.serialize_str(&self.to_wire()),
        }
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Parsed from the input's text as it is lent: no copy into a String.
        struct Wire;
        impl serde::de::Visitor<'_> for Wire {
            type Value = Timestamp;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Timestamp, E> {
                Timestamp::parse(v).map_err(E::custom)
            }
        }
        d.deserialize_str(Wire)
    }
}

/// Declares a proto enum: names out, names or numbers in.
macro_rules! proto_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $num:literal => $wire:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            #[default]
            $($variant),+
        }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }
            pub fn number(self) -> i32 {
                match self { $($name::$variant => $num),+ }
            }
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($wire => Some($name::$variant),)+ _ => None }
            }
            pub fn from_number(n: i64) -> Option<Self> {
                match n { $($num => Some($name::$variant),)+ _ => None }
            }
        }
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(crate::serde_util::ProtoEnum::new(
                    stringify!($name),
                    |v| match v {
                        crate::serde_util::EnumWire::Name(s) => $name::from_name(s),
                        crate::serde_util::EnumWire::Number(n) => $name::from_number(n),
                    },
                ))
            }
        }
    };
}

proto_enum!(
    /// `TaskState` (§4.1.3). Note the numbering: INPUT_REQUIRED 6, REJECTED 7.
    TaskState {
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        Working = 2 => "TASK_STATE_WORKING",
        Completed = 3 => "TASK_STATE_COMPLETED",
        Failed = 4 => "TASK_STATE_FAILED",
        Canceled = 5 => "TASK_STATE_CANCELED",
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        Rejected = 7 => "TASK_STATE_REJECTED",
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
);

impl TaskState {
    /// COMPLETED, FAILED, CANCELED, REJECTED: nothing changes such a task.
    pub fn is_terminal(self) -> bool {
        matches!(self, TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected)
    }
    /// INPUT_REQUIRED, AUTH_REQUIRED: the task waits for someone else.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

proto_enum!(
    /// `Role` (§4.1.5).
    Role {
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        User = 1 => "ROLE_USER",
        Agent = 2 => "ROLE_AGENT",
    }
);

/// The `content` oneof of a Part. The contents a client can make big are
/// shared, not copied, when a message is cloned: a message lives in the
/// task's history, its stream events, its store batch and its answer at
/// once, and each of those is a clone.
#[derive(Clone, Debug, PartialEq)]
pub enum PartContent {
    Text(Arc<String>),
    Raw(Arc<Vec<u8>>),
    Url(String),
    Data(Arc<Value>),
}

/// `Part` (§4.1.6): exactly one of `text`, `raw`, `url`, `data`.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub content: PartContent,
    pub metadata: Option<Metadata>,
    pub filename: String,
    pub media_type: String,
}

impl Part {
    pub fn text(t: impl Into<String>) -> Self {
        Self::new(PartContent::Text(Arc::new(t.into())))
    }
    pub fn data(v: Value) -> Self {
        Self::new(PartContent::Data(Arc::new(v)))
    }
    pub fn raw(bytes: Vec<u8>) -> Self {
        Self::new(PartContent::Raw(Arc::new(bytes)))
    }
    pub fn new(content: PartContent) -> Self {
        Self { content, metadata: None, filename: String::new(), media_type: String::new() }
    }
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t.as_str()),
            _ => None,
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        match &self.content {
            PartContent::Text(t) => m.serialize_entry("text", t.as_str())?,
            PartContent::Raw(b) => {
                struct B64<'a>(&'a [u8]);
                impl Serialize for B64<'_> {
                    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                        b64_serialize(self.0, s)
                    }
                }
                m.serialize_entry("raw", &B64(b.as_slice()))?
            }
            PartContent::Url(u) => m.serialize_entry("url", u)?,
            PartContent::Data(v) => m.serialize_entry("data", &**v)?,
        }
        if let Some(md) = &self.metadata {
            m.serialize_entry("metadata", md)?;
        }
        if !self.filename.is_empty() {
            m.serialize_entry("filename", &self.filename)?;
        }
        if !self.media_type.is_empty() {
            m.serialize_entry("mediaType", &self.media_type)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            text: Option<String>,
            #[serde(default)]
            raw: Option<String>,
            #[serde(default)]
            url: Option<String>,
            // `data: null` is a present member (google.protobuf.Value null).
            #[serde(default, deserialize_with = "present")]
            data: Option<Value>,
            #[serde(default)]
            metadata: Option<Metadata>,
            #[serde(default, deserialize_with = "null_default")]
            filename: String,
            #[serde(default, rename = "mediaType", alias = "media_type", deserialize_with = "null_default")]
            media_type: String,
        }
        fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
            Value::deserialize(d).map(Some)
        }
        let r = Raw::deserialize(d)?;
        let mut found = Vec::new();
        if let Some(t) = r.text {
            found.push(PartContent::Text(Arc::new(t)));
        }
        if let Some(b) = r.raw {
            found.push(PartContent::Raw(Arc::new(b64_decode(&b).map_err(D::Error::custom)?)));
        }
        if let Some(u) = r.url {
            found.push(PartContent::Url(u));
        }
        if let Some(v) = r.data {
            found.push(PartContent::Data(Arc::new(v)));
        }
        if found.len() != 1 {
            return Err(D::Error::custom("a part must have exactly one of `text`, `raw`, `url`, `data`"));
        }
        let content = found.pop().unwrap_or_else(|| PartContent::Text(Arc::default()));
        Ok(Part { content, metadata: r.metadata, filename: r.filename, media_type: r.media_type })
    }
}

/// `Message` (§4.1.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default, alias = "message_id", deserialize_with = "null_default")]
    pub message_id: String,
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    #[serde(
        default,
        alias = "task_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    #[serde(default)]
    pub role: Role,
    #[serde(default, deserialize_with = "null_default")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(
        default,
        alias = "reference_task_ids",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// An agent-role message with text parts.
    pub fn agent_text(text: impl Into<String>) -> Self {
        Self { message_id: new_id(), role: Role::Agent, parts: vec![Part::text(text)], ..Default::default() }
    }
    /// All text parts joined with newlines.
    pub fn text(&self) -> String {
        self.parts.iter().filter_map(Part::as_text).collect::<Vec<_>>().join("\n")
    }
}

/// A fresh opaque id: a UUID v7, time-ordered so store indexes stay compact.
pub fn new_id() -> String {
    // Written into a buffer and copied once: `to_string` grew its String
    // from empty, four allocations for 36 bytes.
    uuid::Uuid::now_v7().hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()).to_owned()
}

/// `Artifact` (§4.1.7).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default, alias = "artifact_id", deserialize_with = "null_default")]
    pub artifact_id: String,
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, deserialize_with = "null_default")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// `TaskStatus` (§4.1.2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    #[serde(default)]
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Timestamp>,
}

/// `Task` (§4.1.1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    #[serde(default, deserialize_with = "null_default")]
    pub id: String,
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    #[serde(default)]
    pub status: TaskStatus,
    /// `None` means "omitted" (ListTasks without `includeArtifacts`);
    /// `Some(vec![])` is written as `[]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `TaskStatusUpdateEvent` (§4.2.1). There is no `final` in 1.0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(default, alias = "task_id", deserialize_with = "null_default")]
    pub task_id: String,
    #[serde(default, alias = "context_id", deserialize_with = "null_default")]
    pub context_id: String,
    #[serde(default)]
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `TaskArtifactUpdateEvent` (§4.2.2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(default, alias = "task_id", deserialize_with = "null_default")]
    pub task_id: String,
    #[serde(default, alias = "context_id", deserialize_with = "null_default")]
    pub context_id: String,
    #[serde(default)]
    pub artifact: Artifact,
    #[serde(default, deserialize_with = "bool_default", skip_serializing_if = "is_false")]
    pub append: bool,
    #[serde(
        default,
        alias = "last_chunk",
        deserialize_with = "bool_default",
        skip_serializing_if = "is_false"
    )]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `StreamResponse` (§3.2.3): a oneof by member name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    #[serde(alias = "status_update")]
    StatusUpdate(TaskStatusUpdateEvent),
    #[serde(alias = "artifact_update")]
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// `SendMessageResponse`: `{"task": …}` or `{"message": …}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

/// `AuthenticationInfo` (§4.3.2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    #[serde(default, deserialize_with = "null_default")]
    pub scheme: String,
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub credentials: String,
}

/// `TaskPushNotificationConfig` (§4.3.1 as flattened in 1.0).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(
        default,
        alias = "task_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    #[serde(default, deserialize_with = "null_default")]
    pub url: String,
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn new_ids_are_lowercase_time_ordered_uuids_of_their_exact_size() {
        let (a, b) = (super::new_id(), super::new_id());
        for id in [&a, &b] {
            let u = uuid::Uuid::parse_str(id).unwrap();
            assert_eq!(u.get_version_num(), 7, "{id}");
            assert_eq!(*id, u.hyphenated().to_string(), "lowercase, hyphenated");
            assert_eq!(id.capacity(), id.len(), "{id}");
        }
        assert!(a < b, "{a} then {b}");
    }
}
