//! The properties the fuzz targets check (`fuzz/`), shared with the stable
//! regression tests (`tests/suite/fuzz_regressions.rs`) so that a saved input is
//! replayed through exactly the code the fuzzer ran.
//!
//! Every function takes arbitrary input and panics when a property fails:
//! a decoder must never panic, a decode error must be a well-formed
//! InvalidParams (or ParseError) naming a field, and whatever decodes must
//! round-trip: encode it, decode that, and get an equal value back whose
//! encoding is byte-identical.

use crate::bounded::JsonLimits;
use crate::error::{A2aError, ErrorKind};
use crate::jsonrpc::{self, methods as m};
use crate::validate::{self, Params, decode, decode_bytes};
use crate::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;

/// Replaying saved inputs in the test suites; test support, hence hidden.
#[doc(hidden)]
pub mod replay;

/// Every JSON-RPC method name the server dispatches (the core ones and
/// the extensions' methods).
pub const METHODS: &[&str] = &[
    m::SEND_MESSAGE,
    m::SEND_STREAMING_MESSAGE,
    m::GET_TASK,
    m::LIST_TASKS,
    m::CANCEL_TASK,
    m::SUBSCRIBE_TO_TASK,
    m::CREATE_PUSH_CONFIG,
    m::GET_PUSH_CONFIG,
    m::LIST_PUSH_CONFIGS,
    m::LIST_PUSH_CONFIGS_RC,
    m::DELETE_PUSH_CONFIG,
    m::GET_EXTENDED_CARD,
    crate::ext::reminders::METHOD,
];

/// `jsonrpc_request`: the envelope, then the params decoded as the request
/// of *every* core method (not only the one named), each round-tripped;
/// and the lent reader must answer as the `Value` reader does
/// ([`check_lent_agrees`]).
pub fn check_jsonrpc_roundtrip(bytes: &[u8]) {
    check_envelope(bytes);
    // The server's limits, and tight ones: a fuzzed body is too small to
    // reach the default value count.
    check_lent_agrees(bytes, JsonLimits::default());
    check_lent_agrees(bytes, JsonLimits { max_depth: 8, max_values: 64 });
}

fn check_envelope(bytes: &[u8]) {
    match jsonrpc::parse_request(bytes) {
        Ok(req) => {
            assert!(!req.method.is_empty(), "an accepted envelope has a method");
            let req_id = req.id.clone().unwrap_or_else(jsonrpc::Id::null);
            let id: Value = serde_json::from_str(req_id.get()).expect("an id is JSON");
            assert!(
                matches!(id, Value::String(_) | Value::Number(_) | Value::Null),
                "an accepted id is a string, number or null: {req_id}",
            );
            assert!(req_id.get().len() <= jsonrpc::MAX_ID_BYTES, "an accepted id is within the bound");
            let params = req.params.unwrap_or_else(|| Value::Object(Default::default()));
            assert!(params.is_object(), "accepted params are an object");
            let _ = jsonrpc::success(&req_id, &params);
            for method in METHODS {
                check_params_roundtrip(method, params.clone());
            }
        }
        Err(e) => {
            assert!(
                matches!(e.error.kind, ErrorKind::ParseError | ErrorKind::InvalidRequest),
                "an envelope error is -32700 or -32600: {:?}",
                e.error
            );
            let id: Value = serde_json::from_str(e.id.get()).expect("an id is JSON");
            assert!(matches!(id, Value::String(_) | Value::Number(_) | Value::Null));
            let _ = jsonrpc::failure(&e.id, &e.error);
        }
    }
}

/// [`jsonrpc::parse_request_lent`] (the server's reader) against
/// [`jsonrpc::parse_request_within`] with the same limits, the reference:
/// the same envelope error, or the same id, method and params presence,
/// and the params decoded by [`Params::decode`] (what dispatch calls) as
/// every method's request with the same outcome from either form.
pub fn check_lent_agrees(bytes: &[u8], limits: JsonLimits) {
    let body = || String::from_utf8_lossy(bytes);
    match (jsonrpc::parse_request_lent(bytes, limits), jsonrpc::parse_request_within(bytes, limits)) {
        (Err(l), Err(v)) => {
            assert_eq!(
                (&l.id, &l.error),
                (&v.id, &v.error),
                "lent and Value envelope errors differ: {}",
                body()
            );
        }
        (Ok(l), Ok(v)) => {
            assert_eq!(
                (&l.id, &*l.method),
                (&v.id, v.method.as_str()),
                "lent and Value read another id or method: {}",
                body()
            );
            assert_eq!(
                l.params.is_some(),
                v.params.is_some(),
                "params present in one reading only: {}",
                body()
            );
            // Absent params are an empty object to dispatch, on both paths.
            let lent = l.params.unwrap_or_else(|| Params::Value(Value::Object(Default::default())));
            let value = v.params.unwrap_or_else(|| Value::Object(Default::default()));
            for method in METHODS {
                same_params(method, &lent, &value, bytes);
            }
            // The events feed reads its params as a `Value`.
            let as_value = lent.into_value();
            assert_eq!(as_value.as_ref(), Ok(&value), "lent params read as a Value differ: {}", body());
        }
        (l, v) => panic!("lent reader: {l:?}, Value reader: {v:?}: {}", body()),
    }
}

/// Decodes both forms as `method`'s request (the type dispatch decodes).
fn same_params(method: &str, lent: &Params, value: &Value, body: &[u8]) {
    match method {
        m::SEND_MESSAGE | m::SEND_STREAMING_MESSAGE => same::<SendMessageRequest>(method, lent, value, body),
        m::GET_TASK => same::<GetTaskRequest>(method, lent, value, body),
        m::LIST_TASKS => same::<ListTasksRequest>(method, lent, value, body),
        m::CANCEL_TASK => same::<CancelTaskRequest>(method, lent, value, body),
        m::SUBSCRIBE_TO_TASK => same::<SubscribeToTaskRequest>(method, lent, value, body),
        m::CREATE_PUSH_CONFIG => same::<TaskPushNotificationConfig>(method, lent, value, body),
        m::GET_PUSH_CONFIG | m::DELETE_PUSH_CONFIG => same::<TaskPushConfigRef>(method, lent, value, body),
        m::LIST_PUSH_CONFIGS | m::LIST_PUSH_CONFIGS_RC => {
            same::<ListTaskPushNotificationConfigsRequest>(method, lent, value, body)
        }
        m::GET_EXTENDED_CARD => same::<GetExtendedAgentCardRequest>(method, lent, value, body),
        crate::ext::reminders::METHOD => {
            same::<crate::ext::reminders::InjectTaskReminderRequest>(method, lent, value, body)
        }
        other => panic!("{other} is in METHODS but has no request type here"),
    }
}

fn same<T: DeserializeOwned + PartialEq + Debug>(method: &str, lent: &Params, value: &Value, body: &[u8]) {
    let from_lent: Result<T, A2aError> = lent.clone().decode();
    let from_value: Result<T, A2aError> = Params::Value(value.clone()).decode();
    assert_eq!(
        from_lent,
        from_value,
        "{method}: params decode otherwise from the lent text than from the Value: {}",
        String::from_utf8_lossy(body)
    );
}

/// Decodes `params` as the request of `method` (as dispatch does) and
/// checks the round trip; an unknown method is ignored.
pub fn check_params_roundtrip(method: &str, params: Value) {
    match method {
        m::SEND_MESSAGE | m::SEND_STREAMING_MESSAGE => {
            if let Some(req) = roundtrip::<SendMessageRequest>(method, params) {
                // The §5.7 checks the engine runs next must not panic either.
                let mut violations = Vec::new();
                if let Some(msg) = &req.message {
                    validate::message("message", msg, &mut violations);
                }
                if let Some(c) = &req.configuration {
                    validate::history_length(
                        "configuration.historyLength",
                        c.history_length,
                        &mut violations,
                    );
                }
                if let Err(e) = validate::finish(violations) {
                    check_error(method, &e);
                }
            }
        }
        m::GET_TASK => {
            if let Some(req) = roundtrip::<GetTaskRequest>(method, params) {
                let mut violations = Vec::new();
                validate::history_length("historyLength", req.history_length, &mut violations);
                let _ = validate::finish(violations);
            }
        }
        m::LIST_TASKS => {
            roundtrip::<ListTasksRequest>(method, params);
        }
        m::CANCEL_TASK => {
            roundtrip::<CancelTaskRequest>(method, params);
        }
        m::SUBSCRIBE_TO_TASK => {
            roundtrip::<SubscribeToTaskRequest>(method, params);
        }
        m::CREATE_PUSH_CONFIG => {
            roundtrip::<TaskPushNotificationConfig>(method, params);
        }
        m::GET_PUSH_CONFIG | m::DELETE_PUSH_CONFIG => {
            roundtrip::<TaskPushConfigRef>(method, params);
        }
        m::LIST_PUSH_CONFIGS | m::LIST_PUSH_CONFIGS_RC => {
            roundtrip::<ListTaskPushNotificationConfigsRequest>(method, params);
        }
        m::GET_EXTENDED_CARD => {
            roundtrip::<GetExtendedAgentCardRequest>(method, params);
        }
        crate::ext::reminders::METHOD => {
            roundtrip::<crate::ext::reminders::InjectTaskReminderRequest>(method, params);
        }
        _ => {}
    }
}

/// `wire_types`: the bytes as each wire type, both through
/// [`decode_bytes`] (the server's path) and through plain
/// `serde_json::from_slice` (the path stores and clients take).
pub fn check_wire_roundtrip(bytes: &[u8]) {
    wire::<Task>("Task", bytes);
    wire::<Message>("Message", bytes);
    wire::<Part>("Part", bytes);
    wire::<Artifact>("Artifact", bytes);
    wire::<TaskStatus>("TaskStatus", bytes);
    wire::<StreamResponse>("StreamResponse", bytes);
    wire::<SendMessageResponse>("SendMessageResponse", bytes);
    wire::<AgentCard>("AgentCard", bytes);
    wire::<TaskPushNotificationConfig>("TaskPushNotificationConfig", bytes);
    wire::<ListTasksResponse>("ListTasksResponse", bytes);
    wire::<ListTaskPushNotificationConfigsResponse>("ListTaskPushNotificationConfigsResponse", bytes);
}

fn wire<T: Serialize + DeserializeOwned + PartialEq + Debug>(label: &str, bytes: &[u8]) {
    match decode_bytes::<T>(bytes) {
        Ok(first) => assert_roundtrip(label, &first),
        Err(e) => check_error(label, &e),
    }
    if let Ok(first) = serde_json::from_slice::<T>(bytes) {
        let encoded = encode(label, &first);
        let second: T = serde_json::from_slice(&encoded).unwrap_or_else(|e| {
            panic!("{label}: own encoding {} does not decode: {e}", String::from_utf8_lossy(&encoded))
        });
        assert_eq!(
            first,
            second,
            "{label}: does not round-trip through {}",
            String::from_utf8_lossy(&encoded)
        );
    }
}

/// Decodes as [`validate::decode`] does; `Some` when it decoded (and then
/// round-tripped), `None` when it was refused (with a well-formed error).
fn roundtrip<T: Serialize + DeserializeOwned + PartialEq + Debug>(label: &str, params: Value) -> Option<T> {
    match decode::<T>(params) {
        Ok(first) => {
            assert_roundtrip(label, &first);
            Some(first)
        }
        Err(e) => {
            check_error(label, &e);
            None
        }
    }
}

/// Encode, decode, compare; and the second encoding must equal the first.
fn assert_roundtrip<T: Serialize + DeserializeOwned + PartialEq + Debug>(label: &str, first: &T) {
    let encoded = encode(label, first);
    let value: Value =
        serde_json::from_slice(&encoded).unwrap_or_else(|e| panic!("{label}: own encoding is not JSON: {e}"));
    let second: T = decode(value).unwrap_or_else(|e| {
        panic!("{label}: own encoding {} does not decode: {e}", String::from_utf8_lossy(&encoded))
    });
    assert_eq!(first, &second, "{label}: does not round-trip through {}", String::from_utf8_lossy(&encoded));
    let again = encode(label, &second);
    assert!(
        encoded == again,
        "{label}: encoding is not stable: {} then {}",
        String::from_utf8_lossy(&encoded),
        String::from_utf8_lossy(&again)
    );
}

fn encode<T: Serialize>(label: &str, value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_else(|e| panic!("{label}: a decoded value does not encode: {e}"))
}

/// A refusal must be one the bindings can send: InvalidParams naming at
/// least one field, or a ParseError for bytes that are not JSON.
pub fn check_error(label: &str, e: &A2aError) {
    match e.kind {
        ErrorKind::InvalidParams => {
            assert!(!e.violations.is_empty(), "{label}: InvalidParams names no field: {e:?}");
            assert!(e.violations.iter().all(|v| !v.field.is_empty()), "{label}: an empty field name: {e:?}");
        }
        ErrorKind::ParseError => {}
        other => panic!("{label}: a decode error is InvalidParams or ParseError, not {other:?}"),
    }
    let _ = e.to_jsonrpc();
    let _ = e.to_rest();
}
