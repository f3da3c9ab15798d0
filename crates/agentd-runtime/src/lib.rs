//! Agent runtimes. For now two built-in agents: `echo`, the offline default
//! that answers every turn with what it was given, and `tck`, the profile
//! the A2A conformance kit drives by messageId prefix.

mod echo;
mod tck;

pub use echo::EchoAgent;
pub use tck::TckAgent;

use agentd_core::Agent;
use std::sync::Arc;

/// The agent profiles `agentd serve --agent NAME` accepts.
pub const PROFILES: &[&str] = &["default", "tck"];

/// Builds the agent of a profile, `None` for an unknown name.
pub fn profile(name: &str) -> Option<Arc<dyn Agent>> {
    match name {
        "default" | "echo" => Some(Arc::new(EchoAgent)),
        "tck" => Some(Arc::new(TckAgent)),
        _ => None,
    }
}
