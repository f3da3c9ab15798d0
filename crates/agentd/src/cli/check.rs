//! `agentd check FILE`: load an instruction document the way the daemon would and report its
//! refusals and those of its workflows, `!config` and `!mcp` blocks (on stderr, exit 1), its block tree
//! (`--tree`) or exactly the text the model receives (`--delivery [--context FILE]`).

use super::output::{self, note};
use agentd_instruction::{
    Context, Document, Family, Included, Options, deliver_report, load_with, tree_json,
};
use anyhow::Context as _;
use clap::Args;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The instruction document (Markdown).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the block tree as JSON.
    #[arg(long, conflicts_with = "delivery")]
    pub tree: bool,
    /// Print exactly the text the model receives.
    #[arg(long)]
    pub delivery: bool,
    /// Delivery context, `{"params": {…}, "facts": {…}}` (with --delivery).
    #[arg(long, value_name = "FILE", requires = "delivery")]
    pub context: Option<PathBuf>,
    /// Grant a capability family the document needs (repeatable or comma-separated:
    /// material, knowledge, interface, identity, compute, infra, compose).
    #[arg(long = "grant", value_name = "FAMILY", value_delimiter = ',')]
    pub grants: Vec<Family>,
    /// Grant every capability family.
    #[arg(long, conflicts_with = "grants")]
    pub all_grants: bool,
}

pub fn run(args: CheckArgs) -> anyhow::Result<()> {
    let text = read(&args.file)?;
    let opts =
        if args.all_grants { Options::all_grants() } else { Options::with_grants(args.grants.clone()) };
    let doc = match load_with(&text, &opts) {
        Ok(doc) => doc,
        Err(refusals) => {
            for r in &refusals {
                note(&with_grant_hint(r));
            }
            std::process::exit(1);
        }
    };
    if args.tree {
        return output::json_pretty(&tree_json(&doc));
    }
    if args.delivery {
        let mut ctx = match &args.context {
            Some(path) => {
                let json: serde_json::Value = serde_json::from_str(&read(path)?)
                    .with_context(|| format!("{} is not JSON", path.display()))?;
                Context::from_json(&json).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
            }
            None => Context::default(),
        };
        ctx.includes = includes(&doc, &args.file, &opts);
        ctx.options = opts;
        let d = deliver_report(&doc, &ctx);
        for a in &d.advisories {
            note(&format!("advisory: {a}"));
        }
        return output::emit(&d.text);
    }
    // What the daemon would refuse to run: its workflows (the tree and the
    // delivery are the reader's view and print for any readable document).
    if let Err(errors) = crate::workflows::catalog(&doc) {
        for e in &errors {
            note(e);
        }
        std::process::exit(1);
    }
    // Its `!config` and `!mcp` blocks, checked by serve's own code.
    match crate::daemon::check_document(&args.file) {
        Ok(ignored) => {
            for key in ignored {
                note(&format!("warning: {}: {key}", crate::daemon::IGNORED_KEY));
            }
        }
        Err(e) => {
            note(&format!("{e:#}"));
            std::process::exit(1);
        }
    }
    output::line(&format!("ok: {}", summary(&doc, &args.file)))
}

/// The reader says to add a family to `document_capabilities`, the
/// specification's name for the operator's grants; here they are flags.
fn with_grant_hint(r: &agentd_instruction::Refusal) -> String {
    let text = r.to_string();
    let family = r.message.split('"').nth(1).unwrap_or("FAMILY");
    match text.strip_suffix("add it to document_capabilities") {
        Some(head) if r.code == "ungranted-family" => format!(
            "{head}check it with `agentd check --grant {family}` (`agentd serve` grants its own \
             document every family)"
        ),
        _ => text,
    }
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Included documents resolve beside the file: `ins_NAME` is `NAME.md` or `NAME/doc.md`.
fn includes(doc: &Document, file: &Path, opts: &Options) -> BTreeMap<String, Included> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut map = BTreeMap::new();
    let mut queue = doc.includes();
    while let Some(id) = queue.pop() {
        if map.contains_key(&id) || map.len() >= 64 {
            continue;
        }
        let stem = id.strip_prefix("ins_").unwrap_or(&id);
        let found = [dir.join(format!("{stem}.md")), dir.join(stem).join("doc.md")]
            .into_iter()
            .find_map(|p| std::fs::read_to_string(p).ok());
        if let Some(src) = found {
            if let Ok(inner) = load_with(&src, opts) {
                queue.extend(inner.includes());
            }
            map.insert(id, Included::Source(src));
        }
    }
    map
}

/// `spec 1; 2 workflows (a, b), 1 human (x), …; delivers 812 bytes`.
fn summary(doc: &Document, file: &Path) -> String {
    let mut counts: BTreeMap<&str, (usize, Vec<&str>)> = BTreeMap::new();
    for b in doc.all_blocks() {
        if b.disposition == agentd_instruction::Disposition::Machinery
            && b.form != agentd_instruction::Form::Set
        {
            let entry = counts.entry(b.kind.as_str()).or_default();
            entry.0 += 1;
            entry.1.extend(b.name.as_deref());
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(kind, (n, names))| {
            if names.is_empty() {
                format!("{n} {kind}")
            } else {
                format!("{n} {kind} ({})", names.join(", "))
            }
        })
        .collect();
    let machinery = if parts.is_empty() { "no machinery".to_string() } else { parts.join(", ") };
    let bytes = deliver_report(doc, &Context::default()).text.len();
    format!("{}: spec {}; {machinery}; delivers {bytes} bytes", file.display(), doc.spec)
}
