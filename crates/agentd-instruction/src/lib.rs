//! Reader for instruction documents (Instruction Document Specification, version 1): parse a
//! Markdown document into blocks, refuse what the spec refuses (with line and fix), deliver the
//! exact text the model receives, and expose the machinery agentd acts on.
//!
//! ```
//! let doc = agentd_instruction::load("# Agent\n\nMUST: be brief.\n").unwrap();
//! let text = agentd_instruction::deliver(&doc, &Default::default());
//! assert_eq!(text, "# Agent\n\n**MUST:** be brief.\n");
//! ```

mod ack;
mod attrs;
mod body;
mod classify;
mod creds;
mod deliver;
mod front_matter;
mod lex;
mod machinery;
mod model;
mod params;
mod parse;
mod refs;
mod registry;
mod tree;
mod validate;
mod yaml;

pub use deliver::{
    Context, Delivery, Included, MAX_INCLUDE_DEPTH, MAX_PARAM_VALUE, deliver_report, include_id,
};
pub use front_matter::FrontMatter;
pub use machinery::{Channel, Human, McpServer, Override, Workflow, YamlBody};
pub use model::{AttrValue, Attrs, Block, Body, Document, Entry, Form, Refusal};
pub use params::Parameter;
pub use registry::{BodyType, Disposition, Family};
pub use tree::tree_json;
pub use validate::CONFIG_KEYS;

use std::collections::BTreeSet;

/// How a document is loaded: which capability families the operator granted
/// (`document_capabilities`) and whether it arrived over the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub grants: BTreeSet<Family>,
    /// `identity` and `compose` are never admissible over the wire, granted or not.
    pub over_the_wire: bool,
}

impl Options {
    /// Every family granted (what the conformance corpus assumes).
    pub fn all_grants() -> Options {
        Options { grants: Family::GRANTABLE.into_iter().collect(), over_the_wire: false }
    }

    /// Grants `families` (and nothing else).
    pub fn with_grants(families: impl IntoIterator<Item = Family>) -> Options {
        Options { grants: families.into_iter().collect(), over_the_wire: false }
    }
}

/// Loads a document with no capability grants (fail closed: only default-family machinery).
pub fn load(text: &str) -> Result<Document, Vec<Refusal>> {
    load_with(text, &Options::default())
}

/// Loads a document. On refusal, every problem found is returned in document order
/// (front-matter problems first).
pub fn load_with(text: &str, opts: &Options) -> Result<Document, Vec<Refusal>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines: Vec<String> =
        text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l).to_string()).collect();
    if text.ends_with('\n') || text.is_empty() {
        lines.pop();
    }
    let mut refusals = Vec::new();
    let (front_matter, fm_lines) = front_matter::read(&lines, &mut refusals);
    let start = fm_lines.min(lines.len());
    let mut p = parse::Parser::new(&lines, start, opts);
    let region = p.region(start, lines.len(), parse::Ctx::top());
    refusals.append(&mut p.refusals);
    let doc = Document {
        spec: front_matter::SPEC.to_string(),
        front_matter,
        blocks: region.blocks,
        lines,
        nodes: region.nodes,
    };
    if refusals.is_empty() {
        refusals = validate::check(&doc, fm_lines);
    } else {
        // A refused block is not in the tree, so references to it would only echo that refusal.
        refusals
            .extend(validate::check(&doc, fm_lines).into_iter().filter(|r| r.code != "dangling-reference"));
    }
    if refusals.is_empty() {
        return Ok(doc);
    }
    refusals.sort_by_key(|r| r.line.unwrap_or(0));
    refusals.dedup();
    Err(refusals)
}

/// The exact text the model receives for `doc` in `ctx` (ends with exactly one `\n`).
pub fn deliver(doc: &Document, ctx: &Context) -> String {
    deliver_report(doc, ctx).text
}
