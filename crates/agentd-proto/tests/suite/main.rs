//! The integration tests of `agentd-proto`: one test binary, one module per area.
//!
//! Tests share this process: none may change its environment, working
//! directory or other process-wide state.

mod ext_reminders_schema;
mod ext_schemas;
mod fuzz_regressions;
mod protojson;
