//! The MCP client against real MCP servers written by others (`servers.rs`).

#![allow(clippy::disallowed_methods, reason = "tests spawn their own helpers; the rule is for the daemon")]

mod client;
mod docs;
mod servers;
