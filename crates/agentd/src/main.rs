//! `agentd`: the daemon (`agentd serve`) and A2A client verbs for a running
//! daemon (`agentd send`, `agentd tasks …`). Data goes to stdout,
//! diagnostics to stderr.

mod cli;
mod config;
mod data_lock;
mod instruction;
mod probe;
mod reminders;
mod serve;
mod workflows;

use clap::Parser;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentd: {e:#}");
            ExitCode::from(cli::exit::code_of(&e))
        }
    }
}
