//! `agentd init [DIR]`: writes a commented starter instruction document
//! (`agent.md`) and config (`agentd.yaml`) that `agentd check` accepts and
//! `agentd serve --config agentd.yaml` runs. Existing files are kept.

use super::output::{self, note};
use anyhow::{Context, bail};
use clap::Args;
use std::path::{Path, PathBuf};

const DOCUMENT: &str = include_str!("../assets/starter-agent.md");
const CONFIG: &str = include_str!("../assets/starter-config.yaml");

/// The config's file name.
pub const CONFIG_FILE: &str = "agentd.yaml";

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Where to write `agent.md` and `agentd.yaml`.
    #[arg(value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Overwrite files that exist.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: InitArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&a.dir).with_context(|| format!("cannot create {}", a.dir.display()))?;
    let document = a.dir.join("agent.md");
    let config = a.dir.join(CONFIG_FILE);
    for path in [&document, &config] {
        if !a.force && path.exists() {
            bail!("{} exists; keep it, or overwrite it with --force", path.display());
        }
    }
    // The config's paths are read from its own directory, so the same text
    // serves from anywhere: `instruction: agent.md` is the document beside it.
    write(&document, DOCUMENT)?;
    write(&config, CONFIG)?;
    output::line(&shown(&document))?;
    output::line(&shown(&config))?;
    note(&format!(
        "next: edit {doc}, then\n  agentd check {doc}\n  agentd serve --config {cfg}",
        doc = shown(&document),
        cfg = shown(&config)
    ));
    Ok(())
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// `agent.md` rather than `./agent.md`.
fn shown(p: &Path) -> String {
    p.strip_prefix(".").unwrap_or(p).display().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_starter_document_loads_as_the_daemon_loads_it() {
        let doc = agentd_instruction::load(super::DOCUMENT).expect("no grant needed");
        let title = doc.front_matter.as_ref().and_then(|f| f.title.clone());
        assert_eq!(title.as_deref(), Some("My agent"));
        let text = agentd_instruction::deliver(&doc, &Default::default());
        assert!(!text.contains("agentd check"), "front-matter comments never reach the model: {text}");
    }
}
