//! What the engine and its runtime report when an operation fails, in
//! domain terms. The core names no wire error: each case has an
//! [`ErrorKind`] (the one table in `agentd-proto` maps that to every
//! binding's codes), and a binding writes the rest (`agentd-server`'s
//! `errors.rs`), rendering field paths in its own naming.

use crate::store::StoreError;
use agentd_proto::{ErrorKind, Message, TaskState};
use std::fmt;

/// ErrorInfo metadata of an error: key, value.
pub type Meta = Vec<(&'static str, String)>;

/// Every way an engine operation fails.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No task `id`, or none the caller may see (an invisible task does
    /// not exist).
    #[error("task {id:?} not found")]
    TaskNotFound { id: String },
    /// Something other than a task is not there for the caller: a push
    /// config, a run or subagent a command names.
    #[error("{message}")]
    NotFound { message: String, meta: Meta },
    /// The task is terminal and takes no change.
    #[error("the task is in terminal state {}; terminal tasks cannot change", .state.as_str())]
    Terminal { id: String, state: TaskState },
    /// A cancel of a task that already ended otherwise.
    #[error("task {id:?} is {} and can no longer be canceled", .state.as_str())]
    NotCancelable { id: String, state: TaskState },
    /// The request is malformed: which fields, and why.
    #[error("{0}")]
    Invalid(Invalid),
    #[error("{message}")]
    PermissionDenied { message: String, meta: Meta },
    /// A valid request this agent or this task does not do.
    #[error("{message}")]
    Unsupported { message: String, meta: Meta },
    /// A message part of a media type the agent does not accept.
    #[error("message.parts[{part}].mediaType {media_type:?} is not accepted; this agent accepts {accepted}")]
    ContentTypeNotSupported { part: usize, media_type: String, accepted: String },
    /// Push notifications are off; the message says where it was asked for
    /// (the table's message when `None`).
    #[error("{}", .0.as_deref().unwrap_or(ErrorKind::PushNotificationNotSupported.codes().message))]
    PushNotSupported(Option<String>),
    /// The daemon is stopping and takes no new work.
    #[error("{0}")]
    Unavailable(String),
    /// The store failed: an internal error the client sees without its cause.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A fault of the daemon, with what the client is told.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    pub fn task_not_found(id: &str) -> Self {
        Error::TaskNotFound { id: id.to_owned() }
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Error::NotFound { message: message.into(), meta: Meta::new() }
    }
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Error::PermissionDenied { message: message.into(), meta: Meta::new() }
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Error::Unsupported { message: message.into(), meta: Meta::new() }
    }
    /// An internal error with the table's message: the client learns nothing
    /// of the cause.
    pub fn internal() -> Self {
        Error::Internal(ErrorKind::Internal.codes().message.to_owned())
    }
    /// InvalidParams naming one field.
    pub fn invalid(field: FieldPath, description: impl Into<String>) -> Self {
        Error::Invalid(Invalid::of(vec![Violation { field, description: description.into() }]))
    }

    /// InvalidParams about the input as a whole, naming no field (a gate's
    /// channel the instruction document does not declare).
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::Invalid(Invalid { violations: Vec::new(), lead: Some(message.into()) })
    }

    /// Adds ErrorInfo metadata to the cases that carry free metadata; the
    /// others carry exactly what their fields say.
    pub fn with_meta(mut self, key: &'static str, value: impl Into<String>) -> Self {
        match &mut self {
            Error::NotFound { meta, .. }
            | Error::PermissionDenied { meta, .. }
            | Error::Unsupported { meta, .. } => meta.push((key, value.into())),
            _ => debug_assert!(false, "{self:?} takes no free metadata"),
        }
        self
    }

    /// The kind the wire table maps to codes on every binding.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::TaskNotFound { .. } | Error::NotFound { .. } => ErrorKind::TaskNotFound,
            Error::Terminal { .. } | Error::Unsupported { .. } => ErrorKind::UnsupportedOperation,
            Error::NotCancelable { .. } => ErrorKind::TaskNotCancelable,
            Error::Invalid(_) => ErrorKind::InvalidParams,
            Error::PermissionDenied { .. } => ErrorKind::PermissionDenied,
            Error::ContentTypeNotSupported { .. } => ErrorKind::ContentTypeNotSupported,
            Error::PushNotSupported(_) => ErrorKind::PushNotificationNotSupported,
            Error::Unavailable(_) => ErrorKind::Unavailable,
            Error::Store(_) | Error::Internal(_) => ErrorKind::Internal,
        }
    }

    /// ErrorInfo metadata, in the order it was given.
    pub fn metadata(&self) -> Meta {
        match self {
            Error::TaskNotFound { id } | Error::NotCancelable { id, .. } => vec![("taskId", id.clone())],
            Error::ContentTypeNotSupported { media_type, .. } => vec![("mediaType", media_type.clone())],
            Error::NotFound { meta, .. }
            | Error::PermissionDenied { meta, .. }
            | Error::Unsupported { meta, .. } => meta.clone(),
            Error::Terminal { .. }
            | Error::Invalid(_)
            | Error::PushNotSupported(_)
            | Error::Unavailable(_)
            | Error::Store(_)
            | Error::Internal(_) => Meta::new(),
        }
    }

    /// The violated fields of an InvalidParams error (none for others).
    pub fn violations(&self) -> &[Violation] {
        match self {
            Error::Invalid(invalid) => &invalid.violations,
            _ => &[],
        }
    }

    /// Whether the task is gone for whoever was changing it: not there any
    /// more, or ended (canceled, failed) by someone else, or taken over by
    /// another replica (this one's lease on it lapsed: it must not write
    /// anything, a failure included). Any other error is a failure of the
    /// change itself.
    pub fn task_gone(&self) -> bool {
        matches!(
            self,
            Error::TaskNotFound { .. } | Error::Terminal { .. } | Error::Store(StoreError::Fenced { .. })
        )
    }
}

/// An InvalidParams error: every violated field, and optionally what the
/// message says before listing them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub violations: Vec<Violation>,
    pub lead: Option<String>,
}

impl Invalid {
    pub fn of(violations: Vec<Violation>) -> Self {
        Self { violations, lead: None }
    }

    /// The message, with field paths in `naming`: `lead: f1: why; f2: why`.
    pub fn message(&self, naming: Naming) -> String {
        let list = self
            .violations
            .iter()
            .map(|v| format!("{}: {}", v.field.render(naming), v.description))
            .collect::<Vec<_>>()
            .join("; ");
        match &self.lead {
            Some(lead) if list.is_empty() => lead.clone(),
            Some(lead) => format!("{lead}: {list}"),
            None => list,
        }
    }

    /// Puts every field under `prefix` (where the checked value sat).
    pub fn under(mut self, prefix: &FieldPath) -> Self {
        for v in &mut self.violations {
            v.field = prefix.join(&v.field);
        }
        self
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message(Naming::Json))
    }
}

/// One violated field and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub field: FieldPath,
    pub description: String,
}

/// Collects violations; none is success.
#[derive(Debug, Default)]
pub struct Violations(Vec<Violation>);

impl Violations {
    pub fn add(&mut self, field: FieldPath, description: impl Into<String>) {
        self.0.push(Violation { field, description: description.into() });
    }

    /// The REQUIRED members of a client Message (A2A §4.1.4, §5.7) at `at`.
    /// The paths are made only for a problem found: a valid request
    /// allocates none.
    pub fn message(&mut self, at: &'static str, m: &Message) {
        for (name, why) in agentd_proto::validate::message_problems(m) {
            self.add(FieldPath::of(at).field(name), why);
        }
    }

    /// A `historyLength` (at the dotted path `at`) that must not be negative.
    pub fn history_length(&mut self, at: &'static str, n: Option<i32>) {
        if n.is_some_and(|n| n < 0) {
            self.add(FieldPath::of(at), "must not be negative");
        }
    }

    pub fn finish(self) -> Result<(), Error> {
        if self.0.is_empty() { Ok(()) } else { Err(Error::Invalid(Invalid::of(self.0))) }
    }
}

/// How a binding names message fields: ProtoJSON (JSON-RPC, REST) or the
/// proto's own names (gRPC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// `message.messageId`
    Json,
    /// `message.message_id`
    Proto,
}

/// One step of a path into a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// A field of an A2A message, by its ProtoJSON (lowerCamelCase) name,
    /// stored once: gRPC names it in snake_case.
    Field(&'static str),
    /// A member of JSON data the client wrote (a DataPart's object, a
    /// command's arguments): named as written on every binding.
    Member(String),
    /// A key of a map, rendered `["key"]`.
    Key(String),
    /// An element of a list, rendered `[i]`.
    Index(usize),
}

/// Where in a request a value sits: `message.parts[0].data.agentd.op`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<Segment>);

impl FieldPath {
    /// The path of dotted message fields: `configuration.historyLength`.
    pub fn of(dotted: &'static str) -> Self {
        Self(dotted.split('.').map(Segment::Field).collect())
    }
    pub fn field(mut self, name: &'static str) -> Self {
        self.0.push(Segment::Field(name));
        self
    }
    pub fn member(mut self, name: impl Into<String>) -> Self {
        self.0.push(Segment::Member(name.into()));
        self
    }
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.0.push(Segment::Key(key.into()));
        self
    }
    pub fn index(mut self, i: usize) -> Self {
        self.0.push(Segment::Index(i));
        self
    }
    /// `rest` under this path.
    pub fn join(&self, rest: &FieldPath) -> Self {
        Self(self.0.iter().chain(&rest.0).cloned().collect())
    }
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// The path as a binding names it.
    pub fn render(&self, naming: Naming) -> String {
        let mut out = String::new();
        for s in &self.0 {
            match s {
                Segment::Field(name) => {
                    dot(&mut out);
                    match naming {
                        Naming::Json => out.push_str(name),
                        Naming::Proto => snake(name, &mut out),
                    }
                }
                Segment::Member(name) => {
                    dot(&mut out);
                    out.push_str(name);
                }
                Segment::Key(key) => {
                    out.push_str("[\"");
                    out.push_str(key);
                    out.push_str("\"]");
                }
                Segment::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        out
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(Naming::Json))
    }
}

fn dot(out: &mut String) {
    if !out.is_empty() {
        out.push('.');
    }
}

/// `taskPushNotificationConfig` → `task_push_notification_config`.
fn snake(camel: &str, out: &mut String) {
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_camel_case_on_json_and_snake_case_on_grpc() {
        let p = FieldPath::of("configuration.taskPushNotificationConfig").field("url");
        assert_eq!(p.render(Naming::Json), "configuration.taskPushNotificationConfig.url");
        assert_eq!(p.render(Naming::Proto), "configuration.task_push_notification_config.url");
        // What the client wrote inside data keeps its spelling.
        let p = FieldPath::of("message.parts").index(2).field("data").member("agentd").member("dedupeKey");
        assert_eq!(p.render(Naming::Proto), "message.parts[2].data.agentd.dedupeKey");
        let p = FieldPath::of("message.metadata").key("https://x/ext").member("ttlTurns");
        assert_eq!(p.render(Naming::Json), "message.metadata[\"https://x/ext\"].ttlTurns");
    }

    #[test]
    fn invalid_lists_every_violation_after_its_lead() {
        let mut v = Violations::default();
        v.add(FieldPath::of("message.messageId"), "is required");
        v.add(FieldPath::of("pageSize"), "must not be negative");
        let Err(Error::Invalid(mut e)) = v.finish() else { panic!("violations are an error") };
        assert_eq!(e.to_string(), "message.messageId: is required; pageSize: must not be negative");
        e.lead = Some("bad".into());
        assert_eq!(
            e.message(Naming::Proto),
            "bad: message.message_id: is required; page_size: must not be negative"
        );
    }

    #[test]
    fn only_a_missing_or_ended_task_is_gone() {
        assert!(Error::task_not_found("t").task_gone());
        assert!(Error::Terminal { id: "t".into(), state: TaskState::Canceled }.task_gone());
        assert!(!Error::internal().task_gone());
    }
}
