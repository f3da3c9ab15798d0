//! `agentd`: the daemon ([`Daemon`]: build from a [`config::Config`], serve
//! a listener until a shutdown token fires) and the command line around it
//! ([`cli`]: `agentd serve` and the A2A client verbs).

pub mod cli;
pub mod config;
mod daemon;
mod data_lock;
mod identity;
mod instruction;
mod probe;
mod reminders;
mod serve;
mod store_probe;
mod telemetry;
mod workflows;

pub use daemon::{Daemon, Listeners};
