//! The `send_message` target's input: `arbitrary`-derived structures that
//! become a [`Script`] of SendMessage requests.
//!
//! The structures lean towards requests that get past decoding (known
//! roles, media types, command ops and extension URIs, references to the
//! tasks and contexts earlier steps were answered with) while leaving room
//! for anything (`Any` variants, numbers and strings where objects belong,
//! JSON nested past the parser's limit). Push URLs are IP literals or not
//! URLs at all: a host name would make the SSRF guard ask DNS.

use agentd_proto::{Part, PartContent};
use agentd_server::fuzzing::send::{Binding, Caller, Script, Step};
use arbitrary::Arbitrary;
use serde_json::{Map, Number, Value, json};

/// At most this many steps a script.
const MAX_STEPS: usize = 4;

#[derive(Arbitrary)]
pub struct Input {
    steps: Vec<StepIn>,
}

impl Input {
    pub fn script(&self) -> Script {
        Script { steps: self.steps.iter().take(MAX_STEPS).map(StepIn::step).collect() }
    }
}

#[derive(Arbitrary)]
struct StepIn {
    caller: CallerIn,
    rest: bool,
    streaming: bool,
    extensions: Vec<ExtIn>,
    id: IdIn,
    request: RequestIn,
}

impl StepIn {
    fn step(&self) -> Step {
        Step {
            caller: self.caller.caller(),
            binding: if self.rest { Binding::Rest } else { Binding::JsonRpc },
            streaming: self.streaming,
            extensions: self.extensions.iter().map(ExtIn::uri).collect(),
            id: self.id.value(),
            params: self.request.value(),
        }
    }
}

/// Authenticated callers are drawn more often than the two refused ones.
#[derive(Arbitrary)]
enum CallerIn {
    Alice,
    AliceAgain,
    Bob,
    Operator,
    Anonymous,
    WrongToken,
}

impl CallerIn {
    fn caller(&self) -> Caller {
        match self {
            CallerIn::Alice | CallerIn::AliceAgain => Caller::Alice,
            CallerIn::Bob => Caller::Bob,
            CallerIn::Operator => Caller::Operator,
            CallerIn::Anonymous => Caller::Anonymous,
            CallerIn::WrongToken => Caller::WrongToken,
        }
    }
}

#[derive(Arbitrary)]
enum ExtIn {
    Reminders,
    Annotations,
    Commands,
    Events,
    Any(String),
}

impl ExtIn {
    fn uri(&self) -> String {
        match self {
            ExtIn::Reminders => agentd_proto::ext::reminders::URI.into(),
            ExtIn::Annotations => agentd_proto::ext::task_annotations::URI.into(),
            ExtIn::Commands => agentd_runtime::commands::URI.into(),
            ExtIn::Events => agentd_proto::ext::events::URI.into(),
            ExtIn::Any(s) => s.clone(),
        }
    }
}

#[derive(Arbitrary)]
enum IdIn {
    Int(i64),
    Str(String),
    Null,
    Other(JsonIn),
}

impl IdIn {
    fn value(&self) -> Value {
        match self {
            IdIn::Int(n) => json!(n),
            IdIn::Str(s) => json!(s),
            IdIn::Null => Value::Null,
            IdIn::Other(j) => j.value(),
        }
    }
}

#[derive(Arbitrary)]
struct RequestIn {
    tenant: Option<String>,
    message: Option<MessageIn>,
    configuration: Option<ConfigIn>,
    metadata: Option<MetadataIn>,
    /// A member the request type does not have.
    unknown: Option<(String, JsonIn)>,
    /// The whole params replaced by a value of another type.
    not_an_object: Option<JsonIn>,
}

impl RequestIn {
    fn value(&self) -> Value {
        if let Some(j) = &self.not_an_object {
            return j.value();
        }
        let mut m = Map::new();
        put(&mut m, "tenant", self.tenant.as_ref().map(|t| json!(t)));
        put(&mut m, "message", self.message.as_ref().map(MessageIn::value));
        put(&mut m, "configuration", self.configuration.as_ref().map(ConfigIn::value));
        put(&mut m, "metadata", self.metadata.as_ref().map(MetadataIn::value));
        if let Some((k, v)) = &self.unknown {
            m.entry(k.clone()).or_insert_with(|| v.value());
        }
        Value::Object(m)
    }
}

#[derive(Arbitrary)]
struct MessageIn {
    message_id: MessageIdIn,
    role: RoleIn,
    context_id: RefIn,
    task_id: RefIn,
    parts: Vec<PartIn>,
    metadata: Option<MetadataIn>,
    extensions: Vec<ExtIn>,
    reference_task_ids: Vec<RefIn>,
    /// The proto field names (`message_id`, …), which ProtoJSON accepts too.
    snake_case: bool,
}

impl MessageIn {
    fn value(&self) -> Value {
        let name = |camel: &'static str, snake: &'static str| if self.snake_case { snake } else { camel };
        let mut m = Map::new();
        put(&mut m, name("messageId", "message_id"), self.message_id.value());
        put(&mut m, "role", self.role.value());
        put(&mut m, name("contextId", "context_id"), self.context_id.value());
        put(&mut m, name("taskId", "task_id"), self.task_id.value());
        m.insert("parts".into(), Value::Array(self.parts.iter().map(PartIn::value).collect()));
        put(&mut m, "metadata", self.metadata.as_ref().map(MetadataIn::value));
        if !self.extensions.is_empty() {
            m.insert("extensions".into(), self.extensions.iter().map(|e| json!(e.uri())).collect());
        }
        let refs: Vec<Value> = self.reference_task_ids.iter().filter_map(RefIn::value).collect();
        if !refs.is_empty() {
            m.insert(name("referenceTaskIds", "reference_task_ids").into(), Value::Array(refs));
        }
        Value::Object(m)
    }
}

#[derive(Arbitrary)]
enum MessageIdIn {
    Numbered(u8),
    Omitted,
    Empty,
    Any(String),
}

impl MessageIdIn {
    fn value(&self) -> Option<Value> {
        match self {
            MessageIdIn::Numbered(n) => Some(json!(format!("m-{n}"))),
            MessageIdIn::Omitted => None,
            MessageIdIn::Empty => Some(json!("")),
            MessageIdIn::Any(s) => Some(json!(s)),
        }
    }
}

#[derive(Arbitrary)]
enum RoleIn {
    User,
    Agent,
    Unspecified,
    Number(i64),
    Omitted,
    Any(String),
}

impl RoleIn {
    fn value(&self) -> Option<Value> {
        match self {
            RoleIn::User => Some(json!("ROLE_USER")),
            RoleIn::Agent => Some(json!("ROLE_AGENT")),
            RoleIn::Unspecified => Some(json!("ROLE_UNSPECIFIED")),
            RoleIn::Number(n) => Some(json!(n)),
            RoleIn::Omitted => None,
            RoleIn::Any(s) => Some(json!(s)),
        }
    }
}

/// An id: one an earlier step was answered with, or any string.
#[derive(Arbitrary)]
enum RefIn {
    Omitted,
    Task(u8),
    Context(u8),
    Empty,
    Any(String),
}

impl RefIn {
    fn value(&self) -> Option<Value> {
        match self {
            RefIn::Omitted => None,
            RefIn::Task(n) => Some(json!(format!("$task:{}", usize::from(*n) % MAX_STEPS))),
            RefIn::Context(n) => Some(json!(format!("$context:{}", usize::from(*n) % MAX_STEPS))),
            RefIn::Empty => Some(json!("")),
            RefIn::Any(s) => Some(json!(s)),
        }
    }
}

#[derive(Arbitrary)]
struct PartIn {
    content: ContentIn,
    metadata: Option<MetadataIn>,
    filename: Option<String>,
    media_type: MediaTypeIn,
}

impl PartIn {
    fn value(&self) -> Value {
        let mut m = Map::new();
        self.content.add(&mut m);
        put(&mut m, "metadata", self.metadata.as_ref().map(MetadataIn::value));
        put(&mut m, "filename", self.filename.as_ref().map(|f| json!(f)));
        put(&mut m, "mediaType", self.media_type.value());
        Value::Object(m)
    }
}

#[derive(Arbitrary)]
enum ContentIn {
    Text(String),
    Data(JsonIn),
    Raw(Vec<u8>),
    /// A `raw` that is not base64.
    BadRaw(String),
    Url(String),
    Command(CommandIn),
    /// Two members of the oneof at once.
    Two(Box<ContentIn>, Box<ContentIn>),
    None,
}

impl ContentIn {
    fn add(&self, m: &mut Map<String, Value>) {
        match self {
            ContentIn::Text(t) => put(m, "text", Some(json!(t))),
            ContentIn::Data(j) => put(m, "data", Some(j.value())),
            ContentIn::Raw(bytes) => {
                // The wire's own encoding of raw bytes.
                let part =
                    serde_json::to_value(Part::new(PartContent::Raw(bytes.clone()))).unwrap_or_default();
                put(m, "raw", part.get("raw").cloned());
            }
            ContentIn::BadRaw(s) => put(m, "raw", Some(json!(format!("{s}*")))),
            ContentIn::Url(u) => put(m, "url", Some(json!(u))),
            ContentIn::Command(c) => put(m, "data", Some(json!({ "agentd": c.value() }))),
            ContentIn::Two(a, b) => {
                a.add(m);
                b.add(m);
            }
            ContentIn::None => {}
        }
    }
}

#[derive(Arbitrary)]
enum MediaTypeIn {
    Omitted,
    TextPlain,
    Markdown,
    Json,
    Png,
    Wildcard,
    WithParams,
    Any(String),
}

impl MediaTypeIn {
    fn value(&self) -> Option<Value> {
        let s = match self {
            MediaTypeIn::Omitted => return None,
            MediaTypeIn::TextPlain => "text/plain",
            MediaTypeIn::Markdown => "text/markdown",
            MediaTypeIn::Json => "application/json",
            MediaTypeIn::Png => "image/png",
            MediaTypeIn::Wildcard => "*/*",
            MediaTypeIn::WithParams => "Text/Plain; charset=utf-8",
            MediaTypeIn::Any(s) => s,
        };
        Some(json!(s))
    }
}

/// A DataPart `{"agentd": {"op": …, …args}}` (docs/commands.md).
#[derive(Arbitrary)]
struct CommandIn {
    op: OpIn,
    args: Vec<(ArgIn, ArgValueIn)>,
    /// The command object replaced by a value of another type.
    not_an_object: Option<JsonIn>,
}

impl CommandIn {
    fn value(&self) -> Value {
        if let Some(j) = &self.not_an_object {
            return j.value();
        }
        let mut m = Map::new();
        put(&mut m, "op", self.op.value());
        for (k, v) in &self.args {
            m.insert(k.name(), v.value());
        }
        Value::Object(m)
    }
}

#[derive(Arbitrary)]
enum OpIn {
    Known(u8),
    Omitted,
    Any(String),
    NotAString(JsonIn),
}

impl OpIn {
    fn value(&self) -> Option<Value> {
        match self {
            OpIn::Known(n) => {
                let ops = agentd_runtime::commands::ops::names();
                Some(json!(ops[usize::from(*n) % ops.len()]))
            }
            OpIn::Omitted => None,
            OpIn::Any(s) => Some(json!(s)),
            OpIn::NotAString(j) => Some(j.value()),
        }
    }
}

#[derive(Arbitrary)]
enum ArgIn {
    Instruction,
    Input,
    Name,
    Id,
    Workflow,
    Inputs,
    ContextId,
    Run,
    Any(String),
}

impl ArgIn {
    fn name(&self) -> String {
        match self {
            ArgIn::Instruction => "instruction",
            ArgIn::Input => "input",
            ArgIn::Name => "name",
            ArgIn::Id => "id",
            ArgIn::Workflow => "workflow",
            ArgIn::Inputs => "inputs",
            ArgIn::ContextId => "contextId",
            ArgIn::Run => "run",
            ArgIn::Any(s) => s,
        }
        .to_owned()
    }
}

#[derive(Arbitrary)]
enum ArgValueIn {
    Text(String),
    Ref(RefIn),
    Json(JsonIn),
}

impl ArgValueIn {
    fn value(&self) -> Value {
        match self {
            ArgValueIn::Text(s) => json!(s),
            ArgValueIn::Ref(r) => r.value().unwrap_or(Value::Null),
            ArgValueIn::Json(j) => j.value(),
        }
    }
}

#[derive(Arbitrary)]
struct ConfigIn {
    history_length: Option<IntIn>,
    return_immediately: Option<BoolIn>,
    accepted_output_modes: Vec<MediaTypeIn>,
    push: Option<PushIn>,
}

impl ConfigIn {
    fn value(&self) -> Value {
        let mut m = Map::new();
        put(&mut m, "historyLength", self.history_length.as_ref().map(IntIn::value));
        put(&mut m, "returnImmediately", self.return_immediately.as_ref().map(BoolIn::value));
        let modes: Vec<Value> = self.accepted_output_modes.iter().filter_map(MediaTypeIn::value).collect();
        if !modes.is_empty() {
            m.insert("acceptedOutputModes".into(), Value::Array(modes));
        }
        put(&mut m, "taskPushNotificationConfig", self.push.as_ref().map(PushIn::value));
        Value::Object(m)
    }
}

/// An int32 member in the notations ProtoJSON may meet.
#[derive(Arbitrary)]
enum IntIn {
    Small(i8),
    Int(i32),
    Wide(i64),
    Float(f64),
    Quoted(i32),
    Any(String),
}

impl IntIn {
    fn value(&self) -> Value {
        match self {
            IntIn::Small(n) => json!(n),
            IntIn::Int(n) => json!(n),
            IntIn::Wide(n) => json!(n),
            IntIn::Float(f) => float(*f),
            IntIn::Quoted(n) => json!(n.to_string()),
            IntIn::Any(s) => json!(s),
        }
    }
}

#[derive(Arbitrary)]
enum BoolIn {
    Bool(bool),
    Quoted(bool),
    Other(JsonIn),
}

impl BoolIn {
    fn value(&self) -> Value {
        match self {
            BoolIn::Bool(b) => json!(b),
            BoolIn::Quoted(b) => json!(b.to_string()),
            BoolIn::Other(j) => j.value(),
        }
    }
}

#[derive(Arbitrary)]
struct PushIn {
    id: Option<String>,
    task_id: RefIn,
    url: UrlIn,
    token: Option<String>,
    authentication: Option<(String, String)>,
}

impl PushIn {
    fn value(&self) -> Value {
        let mut m = Map::new();
        put(&mut m, "id", self.id.as_ref().map(|s| json!(s)));
        put(&mut m, "taskId", self.task_id.value());
        put(&mut m, "url", self.url.value());
        put(&mut m, "token", self.token.as_ref().map(|s| json!(s)));
        if let Some((scheme, credentials)) = &self.authentication {
            m.insert("authentication".into(), json!({"scheme": scheme, "credentials": credentials}));
        }
        Value::Object(m)
    }
}

/// Webhook URLs: public, special-purpose and malformed, never a host name.
#[derive(Arbitrary)]
enum UrlIn {
    Public,
    PublicV6,
    Loopback,
    Private,
    LinkLocal,
    Cgnat,
    V6Loopback,
    V4Mapped,
    V4Translated,
    Nat64,
    Teredo,
    SixToFour,
    Relay6to4,
    Unspecified,
    Ftp,
    NoScheme,
    Omitted,
    Empty,
    /// Any text after a scheme that takes no host.
    Urn(String),
}

impl UrlIn {
    fn value(&self) -> Option<Value> {
        let s = match self {
            UrlIn::Public => "https://93.184.216.34/hook",
            UrlIn::PublicV6 => "https://[2606:2800:220:1:248:1893:25c8:1946]/hook",
            UrlIn::Loopback => "http://127.0.0.1:9/hook",
            UrlIn::Private => "http://10.1.2.3/hook",
            UrlIn::LinkLocal => "http://169.254.169.254/latest/meta-data",
            UrlIn::Cgnat => "http://100.64.0.1/",
            UrlIn::V6Loopback => "http://[::1]/",
            UrlIn::V4Mapped => "http://[::ffff:127.0.0.1]/",
            UrlIn::V4Translated => "http://[::ffff:0:7f00:1]/",
            UrlIn::Nat64 => "http://[64:ff9b::a00:1]/",
            UrlIn::Teredo => "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            UrlIn::SixToFour => "http://[2002:a00:1::]/",
            UrlIn::Relay6to4 => "http://192.88.99.1/",
            UrlIn::Unspecified => "http://0.0.0.0/",
            UrlIn::Ftp => "ftp://93.184.216.34/",
            UrlIn::NoScheme => "93.184.216.34/hook",
            UrlIn::Omitted => return None,
            UrlIn::Empty => "",
            UrlIn::Urn(s) => return Some(json!(format!("urn:{s}"))),
        };
        Some(json!(s))
    }
}

/// `metadata`: a JSON object, sometimes carrying a reminder for the
/// reminders extension's compatibility path.
#[derive(Arbitrary)]
struct MetadataIn {
    entries: Vec<(String, JsonIn)>,
    reminder: Option<ReminderIn>,
    /// The metadata replaced by a value of another type.
    not_an_object: Option<JsonIn>,
}

impl MetadataIn {
    fn value(&self) -> Value {
        if let Some(j) = &self.not_an_object {
            return j.value();
        }
        let mut m: Map<String, Value> = self.entries.iter().map(|(k, v)| (k.clone(), v.value())).collect();
        if let Some(r) = &self.reminder {
            m.insert(agentd_proto::ext::reminders::URI.into(), r.value());
        }
        Value::Object(m)
    }
}

/// The compatibility envelope `{"reminder": {...}, "metadata": {...}}`.
#[derive(Arbitrary)]
struct ReminderIn {
    body: Option<String>,
    id: Option<String>,
    dedupe_key: Option<String>,
    ttl_turns: Option<IntIn>,
    role_hint: Option<u8>,
    propagate: Option<u8>,
    source: Option<String>,
    extra: Option<(String, JsonIn)>,
    metadata: Option<JsonIn>,
}

impl ReminderIn {
    fn value(&self) -> Value {
        let pick = |n: &Option<u8>, names: &[&str]| n.map(|n| json!(names[usize::from(n) % names.len()]));
        let mut r = Map::new();
        put(&mut r, "body", self.body.as_ref().map(|s| json!(s)));
        put(&mut r, "id", self.id.as_ref().map(|s| json!(s)));
        put(&mut r, "dedupeKey", self.dedupe_key.as_ref().map(|s| json!(s)));
        put(&mut r, "ttlTurns", self.ttl_turns.as_ref().map(IntIn::value));
        put(&mut r, "roleHint", pick(&self.role_hint, &["system", "user", "developer", "bogus"]));
        put(&mut r, "propagate", pick(&self.propagate, &["none", "subagents", "all", "bogus"]));
        put(&mut r, "source", self.source.as_ref().map(|s| json!(s)));
        if let Some((k, v)) = &self.extra {
            r.entry(k.clone()).or_insert_with(|| v.value());
        }
        let mut m = Map::new();
        m.insert("reminder".into(), Value::Object(r));
        put(&mut m, "metadata", self.metadata.as_ref().map(JsonIn::value));
        Value::Object(m)
    }
}

/// Any JSON value; `Deep` nests one past the parser's depth limit.
#[derive(Arbitrary)]
enum JsonIn {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Array(Vec<JsonIn>),
    Object(Vec<(String, JsonIn)>),
    Deep(u8, Box<JsonIn>),
}

impl JsonIn {
    fn value(&self) -> Value {
        match self {
            JsonIn::Null => Value::Null,
            JsonIn::Bool(b) => json!(b),
            JsonIn::Int(n) => json!(n),
            JsonIn::UInt(n) => json!(n),
            JsonIn::Float(f) => float(*f),
            JsonIn::Str(s) => json!(s),
            JsonIn::Array(items) => Value::Array(items.iter().map(JsonIn::value).collect()),
            JsonIn::Object(entries) => {
                Value::Object(entries.iter().map(|(k, v)| (k.clone(), v.value())).collect())
            }
            JsonIn::Deep(levels, inner) => {
                let mut v = inner.value();
                for i in 0..*levels {
                    v = if i % 2 == 0 { json!([v]) } else { json!({ "d": v }) };
                }
                v
            }
        }
    }
}

/// JSON has no NaN or infinity: those become null.
fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

fn put(m: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        m.insert(key.to_owned(), v);
    }
}
