//! `agentd completions SHELL`: the shell completion script, generated from
//! the same clap definitions the parser uses, so it never drifts.

use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    #[arg(value_name = "SHELL")]
    pub shell: Shell,
}

pub fn run(a: CompletionsArgs) -> anyhow::Result<()> {
    let mut cmd = super::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "agentd", &mut out);
    super::output::emit(&String::from_utf8_lossy(&out))
}
