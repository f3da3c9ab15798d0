//! The workflows and people of a loaded instruction document, as the
//! workflow runtime takes them. Problems read `line: message`, the line
//! being the workflow's block (or the human entry) in the document.

use agentd_instruction::Document;
use agentd_runtime::workflows::{Catalog, Person};
use agentd_workflow::parse_duration;

/// Reads every `!workflow` and `!human` of `doc`; fail-closed.
pub fn catalog(doc: &Document) -> Result<Catalog, Vec<String>> {
    catalog_with(doc, agentd_workflow::parse)
}

/// [`catalog`] of the built-in document, whose workflows a test checks
/// whole (see [`agentd_workflow::parse_known_valid`]).
pub fn built_in_catalog(doc: &Document) -> Result<Catalog, Vec<String>> {
    catalog_with(doc, agentd_workflow::parse_known_valid)
}

type Parse = fn(&str, &str) -> Result<agentd_workflow::Definition, Vec<agentd_workflow::DefinitionError>>;

fn catalog_with(doc: &Document, parse: Parse) -> Result<Catalog, Vec<String>> {
    let mut errors = Vec::new();
    let mut definitions = Vec::new();
    let mut lines = std::collections::BTreeMap::new();
    for w in doc.workflows() {
        lines.insert(w.name.clone(), w.line);
        match parse(&w.name, &w.body.yaml) {
            Ok(d) => definitions.push(d),
            Err(es) => {
                let start = w.body.line.max(w.line);
                errors
                    .extend(es.iter().map(|e| format!("{}: {e}", start + offset_of(&w.body.yaml, &e.field))))
            }
        }
    }
    let mut people = Vec::new();
    for h in doc.humans() {
        let escalate_after = match h.escalate_after.as_deref().map(parse_duration) {
            Some(Ok(d)) => Some(d),
            Some(Err(e)) => {
                errors.push(format!("{}: human {:?}: escalate_after: {e}", h.line, h.name));
                None
            }
            None => None,
        };
        // As the document writes it (`@channel/<name>`): the gate's
        // askChannel, its feed event and the bridge body all say this.
        let channel = h.channel.clone();
        people.push(Person { name: h.name.clone(), channel, principal: h.principal.clone(), escalate_after });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Catalog::new(definitions, people).map_err(|es| {
        es.into_iter()
            .map(|e| {
                let line =
                    lines.iter().find(|(name, _)| e.contains(&format!("workflow {name:?}"))).map(|(_, l)| *l);
                match line {
                    Some(l) => format!("{l}: {e}"),
                    None => e,
                }
            })
            .collect()
    })
}

/// The line (from 0) of the body where the step a field names is written
/// (`steps.ask.to` → the line `  ask:`), else 0.
fn offset_of(yaml: &str, field: &str) -> usize {
    let Some(id) = field.strip_prefix("steps.").map(|r| r.split(['.', '[']).next().unwrap_or(r)) else {
        return 0;
    };
    let key = format!("{id}:");
    yaml.lines().position(|l| l.starts_with(' ') && l.trim_start().starts_with(&key)).unwrap_or(0)
}
