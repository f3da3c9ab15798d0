//! How prose blocks degrade: keywords, alerts, forms and tool headers.

use super::subst::param_refs;
use super::{Out, Renderer};
use crate::lex;
use crate::model::Block;
use crate::refs;

impl Renderer<'_> {
    pub(super) fn keyword(&mut self, b: &Block, out: &mut Vec<Out>) {
        let word = match b.keyword {
            Some("MUST NOT") => "NEVER",
            Some("INFO") => "NOTE",
            Some(w) => w,
            None => "NOTE",
        };
        let first = b.line.saturating_sub(1);
        let text = self.src(first);
        let line = match lex::keyword(text) {
            Some((prefix, _, start)) => {
                format!("{}**{word}:** {}", &text[..prefix], refs::render(&text[start..]))
            }
            None => refs::render(text),
        };
        out.push(Out::Line(line));
        for i in first + 1..b.end {
            out.push(Out::Line(refs::render(self.src(i))));
        }
    }

    pub(super) fn alert(&mut self, b: &Block, out: &mut Vec<Out>) {
        let word = match b.keyword {
            Some("INFO") => "NOTE",
            Some(w) => w,
            None => "NOTE",
        };
        let lines: Vec<String> = (b.line..b.end).map(|i| refs::render(lex::unquote(self.src(i)))).collect();
        match lines.split_first() {
            Some((first, rest)) => {
                out.push(Out::Line(format!("**{word}:** {first}")));
                out.extend(rest.iter().cloned().map(Out::Line));
            }
            None => out.push(Out::Line(format!("**{word}:**"))),
        }
    }

    /// `**Inputs to collect — T**` and one item per parameter the body references.
    pub(super) fn form(&mut self, b: &Block, out: &mut Vec<Out>) {
        out.push(Out::Line(match b.attrs.str("title") {
            Some(t) => format!("**Inputs to collect — {t}**"),
            None => "**Inputs to collect**".to_string(),
        }));
        let mut seen: Vec<String> = Vec::new();
        for name in param_refs(b.body_text().unwrap_or("")) {
            if seen.contains(&name) {
                continue;
            }
            let mut parts = Vec::new();
            if let Some(p) = self.params.iter().find(|p| p.name == name) {
                if let Some(d) = &p.description {
                    parts.push(d.clone());
                }
                if p.required {
                    parts.push("required".to_string());
                }
                if p.kind == "enum" {
                    parts.push(format!("one of: {}", p.values.join(", ")));
                }
                if let Some(d) = &p.default {
                    parts.push(format!("default: {d}"));
                }
            }
            let item = if parts.is_empty() {
                format!("- **{name}**")
            } else {
                format!("- **{name}** — {}", parts.join("; "))
            };
            out.push(Out::Raw(item));
            seen.push(name);
        }
    }
}

/// `**Tool — Ci** (`server://ci`) — allowed: a, b; denied: c`.
pub(super) fn tool_header(b: &Block) -> String {
    let cap = b.attrs.str("cap").unwrap_or("");
    let host = cap.split_once("://").map(|(_, h)| h).unwrap_or(cap);
    let host = host.split('/').next().unwrap_or("");
    let mut chars = host.chars();
    let label: String = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    let mut head = format!("**Tool — {label}** (`{cap}`)");
    let (allow, deny) = (b.attrs.list("allow"), b.attrs.list("deny"));
    let mut parts = Vec::new();
    if !allow.is_empty() {
        parts.push(format!("allowed: {}", allow.join(", ")));
    }
    if !deny.is_empty() {
        parts.push(format!("denied: {}", deny.join(", ")));
    }
    if !parts.is_empty() {
        head.push_str(" — ");
        head.push_str(&parts.join("; "));
    }
    head
}
