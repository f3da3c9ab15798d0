//! The JSON-RPC 2.0 envelope (§9). Parsing is done on a `serde_json::Value`
//! so that malformed JSON (-32700) and a malformed envelope (-32600) are told
//! apart and the request `id` is echoed whenever it could be read, as the
//! text the request wrote ([`Id`]).

use crate::bounded::{self, JsonLimits};
use crate::error::{A2aError, ErrorKind};
use serde::Serialize;
use serde_json::Value;

mod id;
mod lent;
pub use id::{Id, MAX_ID_BYTES};
pub use lent::{LentRequest, parse_request_lent};

/// A request whose envelope is valid.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// String, number or null; echoed as received. `None`: the member is
    /// absent, the request is a notification (JSON-RPC 2.0 §4.1).
    pub id: Option<Id>,
    pub method: String,
    /// `None` when the member is absent or null.
    pub params: Option<Value>,
}

/// Why an envelope could not be accepted, with the id to answer with.
#[derive(Debug)]
pub struct EnvelopeError {
    pub id: Id,
    pub error: A2aError,
}

/// Parses one JSON-RPC request from raw bytes as the server reads one (a
/// member named twice is an invalid request), with no bound of its own on
/// depth or value count: serde_json's recursion limit is the only one.
pub fn parse_request(body: &[u8]) -> Result<Request, EnvelopeError> {
    parse_request_within(body, JsonLimits { max_depth: usize::MAX, max_values: usize::MAX })
}

/// [`parse_request`] within bounds on depth and value count, counted while
/// parsing (a request over them is refused with the id unknown: null).
///
/// A member named twice anywhere is an invalid request; it is answered
/// with the request's id when the body gives one id, of a valid type.
pub fn parse_request_within(body: &[u8], limits: JsonLimits) -> Result<Request, EnvelopeError> {
    let value = bounded::parse(body, limits).map_err(|e| {
        let id = match e {
            bounded::BoundedError::Duplicate(_) => {
                id::top_level_id(body).and_then(|raw| Id::from_raw(raw).ok()).unwrap_or_else(Id::null)
            }
            _ => Id::null(),
        };
        EnvelopeError { id, error: e.to_a2a() }
    })?;
    envelope(value, body)
}

/// The envelope of `value`, read from `body`.
fn envelope(value: Value, body: &[u8]) -> Result<Request, EnvelopeError> {
    let invalid = |id: Id, msg: &str| EnvelopeError {
        id,
        error: A2aError::new(ErrorKind::InvalidRequest, msg.to_owned()),
    };
    let mut obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => return Err(invalid(Id::null(), "batch requests are not supported")),
        _ => return Err(invalid(Id::null(), "a JSON-RPC request must be an object")),
    };
    let id = match obj.get("id") {
        None => None,
        // The `Value` holds the id read, not its text: the body does.
        Some(_) => match id::top_level_id(body).map(Id::from_raw) {
            Some(Ok(id)) => Some(id),
            Some(Err(why)) => return Err(invalid(Id::null(), why)),
            // Not reached: a body read without a repeated member gives its one id.
            None => return Err(invalid(Id::null(), "`id` must be a string, number or null")),
        },
    };
    // A request that is not valid is no notification: answered, with id
    // null when it has none (JSON-RPC 2.0 §5).
    let or_null = |id: Option<Id>| id.unwrap_or_else(Id::null);
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(invalid(or_null(id), "`jsonrpc` must be \"2.0\""));
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        _ => return Err(invalid(or_null(id), "`method` must be a non-empty string")),
    };
    // Taken, not cloned: the params are most of the request.
    let params = match obj.swap_remove("params") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v),
        Some(_) => return Err(invalid(or_null(id), "`params` must be an object")),
    };
    Ok(Request { id, method, params })
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` as JSON text (a `Value` would
/// not keep the id's text).
pub fn success<T: Serialize + ?Sized>(id: &Id, result: &T) -> String {
    serde_json::to_string(&Success::new(id, result)).unwrap_or_default()
}

/// The envelope of [`success`], serialized straight from `result`
/// (no intermediate `Value`, no copy of the result).
#[derive(Serialize)]
pub struct Success<'a, T: Serialize + ?Sized> {
    jsonrpc: &'static str,
    id: &'a Id,
    result: &'a T,
}

impl<'a, T: Serialize + ?Sized> Success<'a, T> {
    pub fn new(id: &'a Id, result: &'a T) -> Self {
        Self { jsonrpc: "2.0", id, result }
    }
}

/// `{"jsonrpc":"2.0","id":…,"error":{…}}` as JSON text.
pub fn failure(id: &Id, error: &A2aError) -> String {
    #[derive(Serialize)]
    struct Failure<'a> {
        jsonrpc: &'static str,
        id: &'a Id,
        error: Value,
    }
    serde_json::to_string(&Failure { jsonrpc: "2.0", id, error: error.to_jsonrpc() }).unwrap_or_default()
}

/// The method names of the eleven core operations.
pub mod methods {
    pub const SEND_MESSAGE: &str = "SendMessage";
    pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
    pub const GET_TASK: &str = "GetTask";
    pub const LIST_TASKS: &str = "ListTasks";
    pub const CANCEL_TASK: &str = "CancelTask";
    pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
    pub const CREATE_PUSH_CONFIG: &str = "CreateTaskPushNotificationConfig";
    pub const GET_PUSH_CONFIG: &str = "GetTaskPushNotificationConfig";
    pub const LIST_PUSH_CONFIGS: &str = "ListTaskPushNotificationConfigs";
    /// The singular name of release-candidate builds, still accepted.
    pub const LIST_PUSH_CONFIGS_RC: &str = "ListTaskPushNotificationConfig";
    pub const DELETE_PUSH_CONFIG: &str = "DeleteTaskPushNotificationConfig";
    pub const GET_EXTENDED_CARD: &str = "GetExtendedAgentCard";

    /// Every core method name (the authorization table test covers each).
    pub const ALL: &[&str] = &[
        SEND_MESSAGE,
        SEND_STREAMING_MESSAGE,
        GET_TASK,
        LIST_TASKS,
        CANCEL_TASK,
        SUBSCRIBE_TO_TASK,
        CREATE_PUSH_CONFIG,
        GET_PUSH_CONFIG,
        LIST_PUSH_CONFIGS,
        LIST_PUSH_CONFIGS_RC,
        DELETE_PUSH_CONFIG,
        GET_EXTENDED_CARD,
    ];
}
