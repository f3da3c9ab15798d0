//! The integration tests of `agentd-workflow`: one test binary, one module per area.
//!
//! Tests share this process: none may change its environment, working
//! directory or other process-wide state.

mod definitions;
mod docs;
