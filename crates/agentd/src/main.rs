//! `agentd`: the daemon (`agentd serve`) and A2A client verbs for a running
//! daemon (`agentd send`, `agentd tasks …`). Data goes to stdout,
//! diagnostics to stderr.

use clap::Parser;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args = agentd::cli::Cli::parse();
    match agentd::cli::run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentd: {e:#}");
            ExitCode::from(agentd::cli::exit::code_of(&e))
        }
    }
}
