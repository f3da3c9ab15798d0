//! The integration tests of `agentd-runtime`: one test binary, one module per area.
//!
//! Tests share this process: none may change its environment, working
//! directory or other process-wide state.

#![allow(
    clippy::disallowed_methods,
    reason = "tests spawn their own clients and servers; the rule is for the daemon"
)]

// A scripted model server, OpenAI and Anthropic paths (also used by `agentd`'s suite).
mod anthropic_support;
mod model_support;
// Engines built in process.
mod engine_support;

mod event_retention;
mod journal_commits;
mod model_anthropic;
mod model_echo;
mod model_openai;
mod model_openai_failures;
mod model_scripted;
mod reminders_waiting_task;
mod replica_conflicts;
mod replica_fenced_run;
mod replica_lease_release;
mod store_failures;
