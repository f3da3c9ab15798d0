//! Command-line surface: `serve` and the client verbs, noun/verb style.

use crate::config::{self, ServeFlags};
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "agentd", version, about = "An AI agent daemon served over A2A 1.0")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the daemon (defaults: 127.0.0.1:7420, data in ./.agentd, the echo agent).
    Serve(ServeFlags),
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(flags) => {
            let cfg = config::load(&flags)?;
            crate::serve::run(cfg).await
        }
    }
}
