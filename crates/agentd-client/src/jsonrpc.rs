//! The JSON-RPC 2.0 envelope as a client writes and reads it.

use crate::error::{ClientError, RpcError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A request object: `{"jsonrpc": "2.0", "id", "method", "params"}`.
pub fn request(id: impl Into<Value>, method: &str, params: &impl Serialize) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// The `result` of a response object decoded as `T`, or its `error`.
pub fn result_of<T: DeserializeOwned>(mut v: Value, http_status: u16) -> Result<T, ClientError> {
    if let Some(e) = v.get("error") {
        return Err(match RpcError::from_wire(e, http_status) {
            Some(e) => ClientError::Refused(e),
            None => ClientError::NoResult,
        });
    }
    match v.get_mut("result") {
        Some(r) => serde_json::from_value(r.take()).map_err(ClientError::UnexpectedResult),
        None => Err(ClientError::NoResult),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_results() {
        let r = request(7, "GetTask", &json!({"id": "t"}));
        assert_eq!(r, json!({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "t"}}));
        let ok: Value = result_of(json!({"jsonrpc": "2.0", "id": 7, "result": {"a": 1}}), 200).unwrap();
        assert_eq!(ok, json!({"a": 1}));
        let refused = result_of::<Value>(json!({"error": {"code": -32001, "message": "gone"}}), 200);
        assert!(matches!(refused, Err(ClientError::Refused(e)) if e.code == Some(-32001)));
        assert!(matches!(result_of::<Value>(json!({"id": 1}), 200), Err(ClientError::NoResult)));
        assert!(matches!(
            result_of::<u32>(json!({"result": "x"}), 200),
            Err(ClientError::UnexpectedResult(_))
        ));
    }
}
