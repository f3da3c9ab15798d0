//! The integration tests of `agentd-store`: one test binary. Both backends run
//! the shared conformance suite (`agentd_store::conformance`); SQLite's own
//! durability and migration checks follow.
//!
//! Tests share this process: none may change its environment, working
//! directory or other process-wide state.

mod memory;
mod sqlite;
