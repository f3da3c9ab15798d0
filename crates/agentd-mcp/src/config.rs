//! The `mcp:` section of the configuration (`docs/tools.md`): the servers
//! an operator declares, how each is reached, which of its tools the agent
//! gets, and the cap on the tools of one model call.

pub use crate::policy::{ApprovalsConfig, PolicyConfig};
use agentd_runtime::agent_loop::DEFAULT_MAX_TOOLS;
use agentd_runtime::model::SecretRef;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The default timeout of one tool call (and of a server's handshake).
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    pub servers: Vec<ServerConfig>,
    /// The most tools one model call is offered (built-in ones included).
    pub max_tools: usize,
    /// What every approval (`ask`) shares: its timeout, whom it asks.
    pub approvals: ApprovalsConfig,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self { servers: Vec::new(), max_tools: DEFAULT_MAX_TOOLS, approvals: ApprovalsConfig::default() }
    }
}

/// One MCP server: exactly one of `http` and `stdio`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The first half of its tools' names (`<name>__<tool>`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdio: Option<StdioConfig>,
    #[serde(default)]
    pub tools: ToolFilterConfig,
    /// Which calls are made, asked about or denied (`docs/tools.md`).
    #[serde(default)]
    pub policy: PolicyConfig,
    /// Seconds one tool call (or the handshake) may take.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

/// A server over streamable HTTP.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    pub url: String,
    /// Headers sent with every request, values by reference (`env:NAME`,
    /// `file:/path`): `Authorization: env:TOOLS_TOKEN`.
    #[serde(default)]
    pub headers: BTreeMap<String, SecretRef>,
}

/// A server the daemon runs as a child process, spoken to on its stdin and
/// stdout. Only the operator declares these: it is local code execution.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StdioConfig {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to the daemon's environment for the child.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// Which tools of a server the agent gets: those matching an `allow` glob
/// (all when empty) and no `deny` glob. `*` is any run of characters, `?`
/// one character; globs match the server's own tool names.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolFilterConfig {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}
