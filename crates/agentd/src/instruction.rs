//! Loads the agent's instruction document (or the built-in one) and turns
//! it into the system prompt the model receives. A refused document stops
//! the daemon at start with every refusal as `FILE:line: message`.

use anyhow::bail;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The document used when none is configured.
pub const DEFAULT_DOCUMENT: &str = include_str!("assets/default-agent.md");

/// A loaded document, as far as the daemon acts on it today.
pub struct Instruction {
    /// The text the model receives (delivery of the document).
    pub system_prompt: String,
    /// Its title: the front matter's `title`, else its first `# ` heading.
    pub title: Option<String>,
    /// The card's default description: the front matter's `description`,
    /// else the first paragraph of prose (which, in a prompt, may well be
    /// written to the model: "You are …").
    pub summary: Option<String>,
    /// The channels the document declares (`::!channel{…}`), for bridges.
    pub channels: Vec<agentd_instruction::Channel>,
    /// The MCP servers the document declares (`!mcp`): the operator's own.
    pub mcp_servers: Vec<agentd_instruction::McpServer>,
    /// The `!config` fragments, in document order, with their lines. The
    /// reader already refused keys outside its allow-list.
    pub config: Vec<ConfigFragment>,
    /// Its workflows and the people their gates address.
    pub workflows: agentd_runtime::workflows::Catalog,
}

/// A document loaded ahead (for its `!config`), handed to the daemon once.
/// Clones share it; the first [`Preloaded::take`] for its path gets it.
#[derive(Clone, Default)]
pub struct Preloaded(Arc<Mutex<Option<LoadedFrom>>>);

/// A document and the path it was loaded from (`None`: the built-in one).
type LoadedFrom = (Option<PathBuf>, Instruction);

impl Preloaded {
    pub fn new(path: Option<PathBuf>, instruction: Instruction) -> Self {
        Self(Arc::new(Mutex::new(Some((path, instruction)))))
    }

    /// The document loaded from `path`, if it was and nobody took it yet;
    /// else loaded now.
    pub fn take_or_load(&self, path: Option<&Path>) -> anyhow::Result<Instruction> {
        let taken = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        match taken {
            Some((loaded_from, instruction)) if loaded_from.as_deref() == path => Ok(instruction),
            _ => load(path),
        }
    }
}

impl std::fmt::Debug for Preloaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Preloaded")
    }
}

/// One `!config` block's YAML body.
pub struct ConfigFragment {
    /// Where the block starts, for error messages (`FILE:line`).
    pub origin: String,
    pub value: serde_yaml_ng::Value,
}

/// Loads `path`, or the built-in document when `None`. The daemon is the
/// runtime of every capability family, so all are granted.
pub fn load(path: Option<&Path>) -> anyhow::Result<Instruction> {
    let (name, text) = match path {
        Some(p) => (
            p.display().to_string(),
            std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?,
        ),
        None => ("<built-in default agent>".to_owned(), DEFAULT_DOCUMENT.to_owned()),
    };
    let opts = agentd_instruction::Options::all_grants();
    match agentd_instruction::load_with(&text, &opts) {
        Ok(document) => {
            let system_prompt =
                agentd_instruction::deliver(&document, &agentd_instruction::Context::default());
            let config = document
                .config()
                .into_iter()
                .map(|body| {
                    let origin = format!("{name}:{}", body.line);
                    let value = serde_yaml_ng::from_str(&body.yaml)
                        .map_err(|e| anyhow::anyhow!("{origin}: the !config body is not YAML: {e}"))?;
                    Ok(ConfigFragment { origin, value })
                })
                .collect::<anyhow::Result<_>>()?;
            let workflows = match path {
                Some(_) => crate::workflows::catalog(&document),
                None => crate::workflows::built_in_catalog(&document),
            };
            let workflows = workflows.map_err(|errors| {
                let lines: Vec<String> = errors.iter().map(|e| format!("{name}:{e}")).collect();
                anyhow::anyhow!(
                    "the instruction document's workflows were refused (check it with `agentd check`):\n{}",
                    lines.join("\n")
                )
            })?;
            let title = document
                .front_matter
                .as_ref()
                .and_then(|f| f.title.clone())
                .filter(|t| !t.trim().is_empty())
                .or_else(|| first_heading(&system_prompt));
            let summary = document
                .front_matter
                .as_ref()
                .and_then(|f| f.map.get("description"))
                .and_then(|d| d.as_str())
                .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|d| !d.is_empty())
                .or_else(|| first_paragraph(&system_prompt));
            Ok(Instruction {
                title,
                summary,
                system_prompt,
                config,
                channels: document.channels(),
                mcp_servers: document.mcp_servers(),
                workflows,
            })
        }
        Err(refusals) => {
            let lines: Vec<String> = refusals
                .iter()
                .map(|r| match r.line {
                    Some(l) => format!("{name}:{l}: {}", r.message),
                    None => format!("{name}: {}", r.message),
                })
                .collect();
            bail!(
                "the instruction document was refused (check it with `agentd check`):\n{}",
                lines.join("\n")
            )
        }
    }
}

fn first_heading(text: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix("# ")).map(|t| t.trim().to_owned()).filter(|t| !t.is_empty())
}

/// The first run of prose lines (not a heading, list, quote, table or
/// fence), joined into one line.
fn first_paragraph(text: &str) -> Option<String> {
    let is_prose = |l: &str| {
        let t = l.trim_start();
        !t.is_empty()
            && !["#", "- ", "* ", "+ ", ">", "|", "```", "~~~", ":::", "<!--"]
                .iter()
                .any(|p| t.starts_with(p))
            && !t.split_once(". ").is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
    };
    let para: Vec<&str> =
        text.lines().skip_while(|l| !is_prose(l)).take_while(|l| is_prose(l)).map(str::trim).collect();
    (!para.is_empty()).then(|| para.join(" "))
}

#[cfg(test)]
mod tests {
    /// The daemon acts on the reading the configuration came from: a
    /// document changed on disk after it is not read again.
    #[test]
    fn the_daemon_takes_the_document_as_the_configuration_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.md");
        std::fs::write(&path, "# First\n\nThe first text.\n").unwrap();
        let read = super::Preloaded::new(Some(path.clone()), super::load(Some(&path)).unwrap());
        std::fs::write(&path, "# Second\n\nThe second text.\n").unwrap();
        let shared = read.clone();
        assert_eq!(shared.take_or_load(Some(&path)).unwrap().title.as_deref(), Some("First"));
        // Taken once; after that (or for another path) the file is read.
        assert_eq!(read.take_or_load(Some(&path)).unwrap().title.as_deref(), Some("Second"));
        let other = super::Preloaded::new(Some(path.clone()), super::load(Some(&path)).unwrap());
        assert_eq!(other.take_or_load(None).unwrap().title.as_deref(), Some("agentd"));
    }

    /// The built-in document is read without compiling its schemas (see
    /// `workflows::built_in_catalog`): here they are checked whole.
    #[test]
    fn the_built_in_documents_workflows_pass_every_check() {
        let doc = agentd_instruction::load_with(
            super::DEFAULT_DOCUMENT,
            &agentd_instruction::Options::all_grants(),
        )
        .expect("the built-in document loads");
        let checked = crate::workflows::catalog(&doc).expect("its workflows pass every check");
        assert!(!checked.names().is_empty(), "it has a workflow to check");
        let read = crate::workflows::built_in_catalog(&doc).expect("as the daemon reads it");
        assert_eq!(read.names(), checked.names());
    }

    #[test]
    fn title_and_first_paragraph_name_the_agent() {
        let text = "# Triage bot\n\n- a list\n\nSorts incoming\ntickets by urgency.\n\nMore.\n";
        assert_eq!(super::first_heading(text).as_deref(), Some("Triage bot"));
        assert_eq!(super::first_paragraph(text).as_deref(), Some("Sorts incoming tickets by urgency."));
        assert_eq!(super::first_paragraph("# only a heading\n"), None);
        let i = super::load(None).unwrap();
        assert_eq!(i.title.as_deref(), Some("agentd"));
        let summary = i.summary.unwrap();
        assert!(
            summary.starts_with("A general-purpose assistant"),
            "the card's words, not the prompt's: {summary}"
        );
    }

    #[test]
    fn a_front_matter_description_describes_the_agent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.md");
        std::fs::write(
            &path,
            "---\ndescription: Sorts tickets  by urgency.\n---\n# Triage\n\nYou sort tickets.\n",
        )
        .unwrap();
        let i = super::load(Some(&path)).unwrap();
        assert_eq!(i.summary.as_deref(), Some("Sorts tickets by urgency."));
        assert!(!i.system_prompt.contains("Sorts tickets"), "front matter never reaches the model");
    }

    #[test]
    fn the_built_in_document_loads_and_delivers_its_prose() {
        let i = super::load(None).unwrap();
        assert!(i.system_prompt.contains("default agent of an agentd daemon"), "{}", i.system_prompt);
        assert!(!i.system_prompt.contains("spec:"), "front matter is never delivered");
    }
}
