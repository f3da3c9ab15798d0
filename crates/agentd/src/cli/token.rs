//! `agentd token new`: a fresh bearer token and the `auth.tokens` entry
//! that admits it. The daemon's config keeps only the token's SHA-256, so
//! the token itself is shown once, here.

use super::output;
use crate::config::Role;
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;
use sha2::{Digest, Sha256};

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Make a token: prints it (once) and the config entry with its digest.
    New(NewArgs),
}

#[derive(Args, Debug)]
pub struct NewArgs {
    /// Who the token stands for: `user:alice`, `operator:ops`, `agent:ci`…
    #[arg(long, value_name = "ID", default_value = "user:me")]
    pub id: String,
    /// The principal's role.
    #[arg(long, value_name = "ROLE", value_enum, default_value_t = Role::User)]
    pub role: Role,
    /// Print `{token, id, role, sha256}` as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: TokenCommand) -> anyhow::Result<()> {
    let TokenCommand::New(a) = cmd;
    if a.id.trim().is_empty() || a.id.contains(['"', '\n']) {
        bail!("--id {:?} must be a non-empty name without quotes or newlines", a.id);
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("{e}")).context("no system randomness")?;
    let token = format!("agentd_{}", hex::encode(bytes));
    let sha256 = hex::encode(Sha256::digest(token.as_bytes()));
    if a.json {
        return output::json_pretty(
            &json!({"token": token, "id": a.id, "role": a.role.as_str(), "sha256": sha256}),
        );
    }
    // Valid YAML as a whole: the token is in a comment, so this output
    // can be the config file (or merged into it).
    output::emit(&format!(
        "# The token; clients pass it with --token or AGENTD_TOKEN. It is shown only now:\n\
         #   {token}\n\
         # The daemon's config admits it by its SHA-256 (put this under auth.tokens):\n\
         auth:\n  tokens:\n    - id: \"{id}\"\n      role: {role}\n      sha256: {sha256}\n",
        id = a.id,
        role = a.role.as_str(),
    ))
}
