//! The integration tests of `agentd-store`: one test binary. Every backend runs
//! the shared conformance suite (`agentd_store::conformance`); SQLite's own
//! durability and migration checks and PostgreSQL's multi-writer checks follow.
//!
//! Tests share this process: none may change its environment, working
//! directory or other process-wide state.

#![allow(
    clippy::disallowed_methods,
    reason = "tests spawn their own clients and servers; the rule is for the daemon"
)]

mod groups;
mod leases;
mod listing;
mod memory;
mod postgres;
mod sqlite;
