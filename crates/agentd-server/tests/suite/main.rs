//! The integration tests of `agentd-server`: one test binary, one module per area,
//! each driving the library in process (engine, router, push worker) against
//! real sockets and real SQLite files.
//!
//! Tests share this process: none may change its environment, working
//! directory or other process-wide state.

#![allow(
    clippy::disallowed_methods,
    reason = "tests spawn their own clients and servers; the rule is for the daemon"
)]

mod bridges;
mod budgets;
mod client_roles;
mod duplicate_credentials;
mod events_feed;
mod field_names;
mod fuzz_regressions;
mod grpc_decode;
mod grpc_extensions;
mod grpc_limits;
mod push_delivery;
mod request_spans;
mod same_origin;
mod support;
mod wire;
