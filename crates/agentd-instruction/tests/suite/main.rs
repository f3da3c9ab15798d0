//! The integration tests of `agentd-instruction`: one test binary, one module per
//! area. Fixtures stay next to this directory (`tests/conformance`,
//! `tests/cases`, `tests/golden`), found from `CARGO_MANIFEST_DIR`.
//!
//! Tests share this process: none may change its environment, working
//! directory or other process-wide state.

mod api;
mod conformance;
mod golden;
mod no_panic;
