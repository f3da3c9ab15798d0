//! The decision taken before each MCP tool call. Today every call the
//! filters admit is allowed; approval gates (`ask`) are the next step and
//! plug in here without touching the call path.

use serde_json::Value;

/// What happens to one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// The call waits for a human's approval.
    Ask,
    /// The call is not made; the reason goes to the model.
    Deny(String),
}

pub trait ToolPolicy: Send + Sync + 'static {
    fn decide(&self, server: &str, tool: &str, args: &Value) -> Decision;
}

/// Allows every call.
pub struct AllowAll;

impl ToolPolicy for AllowAll {
    fn decide(&self, _server: &str, _tool: &str, _args: &Value) -> Decision {
        Decision::Allow
    }
}
