//! The end-to-end suite of `agentd`: one test binary, one module per area.
//! Most tests start a real daemon in this process on `127.0.0.1:0` with its
//! own data directory (`common::Daemon`, built on `agentd::Daemon`) and
//! talk to it as a client would; where the process is the subject (kill -9,
//! signals, its environment) it is the `agentd` binary. The harness lives
//! in `common/`.
//!
//! Tests share this process: none may change its environment, working
//! directory or other process-wide state. What a daemon needs goes to its
//! arguments and config, or to its own process (`Daemon::start_with_env`).

#![allow(
    clippy::disallowed_methods,
    reason = "tests spawn their own clients and servers; the rule is for the daemon"
)]

mod common;
// The scripted model server (OpenAI and Anthropic) of `agentd-runtime`'s suite:
// one copy, shared across the two crates' test binaries.
#[path = "../../../agentd-runtime/tests/suite/anthropic_support.rs"]
mod anthropic_support;
#[path = "../../../agentd-runtime/tests/suite/model_support.rs"]
mod model_support;
// The MCP servers written by others that the MCP tests start, shared with
// `agentd-mcp`'s suite.
#[path = "../../../agentd-mcp/tests/suite/servers.rs"]
mod mcp_servers;

mod agent_loop;
mod annotations;
mod anthropic_model;
mod auth;
mod bridges;
mod check;
mod cli;
mod cli_workflow;
mod commands;
mod delegate;
mod durability;
mod durable_turns;
mod errors;
mod events;
mod ext_contract;
mod grpc;
mod grpc_annotations;
mod identity;
mod instruction;
mod link_order;
mod mcp;
mod mcp_approvals;
mod metrics;
mod mtls;
mod openai_model;
mod operations;
mod postgres;
mod push;
mod reminders;
mod replicas;
mod smoke;
mod streams;
mod subagents;
mod traces;
mod visibility;
mod workflow_annotations;
mod workflow_bridge;
mod workflow_checkpoint_private;
mod workflow_delegate;
mod workflow_events;
mod workflow_gates;
mod workflow_tool;
mod workflows;
mod workspace;
