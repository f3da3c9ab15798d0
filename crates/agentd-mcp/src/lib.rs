//! The MCP client of agentd (`docs/tools.md`): the tools of MCP servers,
//! over streamable HTTP or a stdio child, offered to the agent loop as
//! `<server>__<tool>` and called through the official Rust SDK (`rmcp`).

pub mod config;
mod glob;
mod hub;
pub mod names;
mod policy;
mod render;
mod server;
mod sources;
mod stdio;
mod tool;

pub use config::{HttpConfig, McpConfig, ServerConfig, StdioConfig, ToolFilterConfig};
pub use glob::{ToolFilter, matches};
pub use hub::McpHub;
pub use policy::{Action, ApprovalsConfig, Ask, Human, OnInterrupt, Policies, PolicyConfig};
pub use policy::{AllowAll, Decision, ToolPolicy};
pub use render::MAX_RESULT_BYTES;
pub use server::{Header, HttpSpec, ServerSpec, StdioSpec, TransportSpec};
pub use sources::{Origin, from_config, from_document};
pub use tool::McpTool;
