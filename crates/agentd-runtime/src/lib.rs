//! Agent runtimes: the model-driven agent loop (`agent_loop`) over the
//! model providers (`model`), subagents (`subagents`), the command
//! extension's ops (`commands`), and the
//! `tck` profile the A2A conformance kit drives by messageId prefix.
//! `EchoAgent` is the smallest possible agent, for other crates' tests.

pub mod agent_loop;
pub mod commands;
pub mod delegate;
mod echo;
pub mod model;
pub mod narrowing;
pub mod subagents;
mod tck;
pub mod workflows;

pub use echo::EchoAgent;
pub use tck::TckAgent;

use agent_loop::{Limits, LoopAgent, Tools};
use agentd_core::Agent;
use model::ModelProvider;
use std::sync::Arc;

/// The agent profiles `agentd serve --agent NAME` accepts.
pub const PROFILES: &[&str] = &["default", "tck"];

/// Builds the agent of a profile, `None` for an unknown name. The
/// `default` profile is the model-driven loop with `tools`; `tck` ignores
/// the model and the tools.
pub fn profile(
    name: &str,
    model: Arc<dyn ModelProvider>,
    system: &str,
    limits: Limits,
    tools: Tools,
) -> Option<Arc<dyn Agent>> {
    match name {
        "default" => Some(Arc::new(LoopAgent::new(model, system, limits, tools))),
        "tck" => Some(Arc::new(TckAgent)),
        _ => None,
    }
}
