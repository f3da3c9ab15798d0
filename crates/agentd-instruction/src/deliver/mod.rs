//! Delivery: the exact text the model receives. Front matter is stripped, includes are spliced,
//! `when` variants selected, prose degraded, machinery replaced by acknowledgements, and
//! `${param}` substituted last, as plain text.

mod prose;
mod subst;

use prose::tool_header;

use crate::ack;
use crate::lex::{self, CodeState};
use crate::model::{Block, Document, Form, Node};
use crate::params::{Parameter, split_list};
use crate::refs;
use crate::registry::{Disposition, label};
use crate::{Options, load_with};
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// Longest parameter value inserted (bytes); longer values are cut at a character boundary.
pub const MAX_PARAM_VALUE: usize = 4096;
/// How deep includes may nest.
pub const MAX_INCLUDE_DEPTH: usize = 8;

/// A document another one includes, by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Included {
    /// Its source: it is loaded and delivered with the including document's context.
    Source(String),
    /// Text already delivered (e.g. cached by a control plane), spliced as is.
    Delivered(String),
}

/// What delivery may depend on: parameter values, facts about the reader, included documents.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub params: BTreeMap<String, String>,
    pub facts: BTreeMap<String, String>,
    /// By id (`ins_house-style`; an `instruction://` prefix is ignored).
    pub includes: BTreeMap<String, Included>,
    /// How included sources are loaded.
    pub options: Options,
}

impl Context {
    /// Reads `{ "params": {…}, "facts": {…} }`; scalar values are taken as text.
    pub fn from_json(v: &Json) -> Result<Context, String> {
        let obj = v.as_object().ok_or("a context is a JSON object with params and facts")?;
        let map = |key: &str| -> Result<BTreeMap<String, String>, String> {
            match obj.get(key) {
                None | Some(Json::Null) => Ok(BTreeMap::new()),
                Some(Json::Object(m)) => m
                    .iter()
                    .map(|(k, v)| match v {
                        Json::String(s) => Ok((k.clone(), s.clone())),
                        Json::Number(_) | Json::Bool(_) => Ok((k.clone(), v.to_string())),
                        _ => Err(format!("{key}.{k}: expected a string, number or boolean")),
                    })
                    .collect(),
                Some(_) => Err(format!("{key}: expected an object")),
            }
        };
        Ok(Context { params: map("params")?, facts: map("facts")?, ..Context::default() })
    }
}

/// Delivered text plus advisories (unresolved includes, required parameters without a value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub text: String,
    pub advisories: Vec<String>,
}

/// The id an include names: `ins_x` for `id=ins_x` or `uri=instruction://ins_x`.
pub fn include_id(b: &Block) -> Option<String> {
    let raw = b.attrs.str("id").or_else(|| b.attrs.str("uri"))?;
    Some(raw.strip_prefix("instruction://").unwrap_or(raw).to_string())
}

enum Out {
    /// A line of this document (substituted at the end).
    Line(String),
    /// A line of an included document (already final).
    Raw(String),
    /// Where a block delivered nothing: blank lines around it collapse to one.
    Hole,
}

struct Renderer<'a> {
    doc: &'a Document,
    ctx: &'a Context,
    params: Vec<Parameter>,
    advisories: Vec<String>,
    stack: Vec<String>,
}

/// Delivers `doc` for `ctx`, with advisories.
pub fn deliver_report(doc: &Document, ctx: &Context) -> Delivery {
    deliver_nested(doc, ctx, Vec::new())
}

fn deliver_nested(doc: &Document, ctx: &Context, stack: Vec<String>) -> Delivery {
    let mut r = Renderer { doc, ctx, params: doc.parameters(), advisories: Vec::new(), stack };
    let mut out = Vec::new();
    r.nodes(&doc.nodes, &doc.blocks, &mut out);
    let lines = collapse(out);
    let mut text = String::new();
    for line in lines {
        match line {
            Out::Line(l) => text.push_str(&r.substitute(&l)),
            Out::Raw(l) => text.push_str(&l),
            Out::Hole => {}
        }
        text.push('\n');
    }
    if text.is_empty() {
        text.push('\n');
    }
    Delivery { text, advisories: r.advisories }
}

/// Drops holes: a run of holes and blank lines becomes one blank line if it held a blank line,
/// nothing otherwise; leading and trailing blank lines go.
fn collapse(out: Vec<Out>) -> Vec<Out> {
    let blank = |o: &Out| match o {
        Out::Line(l) | Out::Raw(l) => lex::is_blank(l),
        Out::Hole => true,
    };
    let mut res: Vec<Out> = Vec::new();
    let mut run: Vec<Out> = Vec::new();
    let flush = |run: &mut Vec<Out>, res: &mut Vec<Out>| {
        if run.iter().any(|o| matches!(o, Out::Hole)) {
            if run.iter().any(|o| !matches!(o, Out::Hole)) {
                res.push(Out::Line(String::new()));
            }
            run.clear();
        } else {
            res.append(run);
        }
    };
    for o in out {
        if blank(&o) {
            run.push(o);
        } else {
            flush(&mut run, &mut res);
            res.push(o);
        }
    }
    flush(&mut run, &mut res);
    let first = res.iter().position(|o| !blank(o)).unwrap_or(res.len());
    let last = res.iter().rposition(|o| !blank(o)).map(|p| p + 1).unwrap_or(first);
    res.into_iter().take(last).skip(first).collect()
}

impl Renderer<'_> {
    fn src(&self, i: usize) -> &str {
        self.doc.lines.get(i).map(String::as_str).unwrap_or("")
    }

    fn nodes(&mut self, nodes: &[Node], blocks: &[Block], out: &mut Vec<Out>) {
        let mut code = CodeState::default();
        for n in nodes {
            match n {
                Node::Line(i) => {
                    let text = self.src(*i);
                    let line = if code.feed(text) { text.to_string() } else { refs::render(text) };
                    out.push(Out::Line(line));
                }
                Node::Fence(_) => out.push(Out::Hole),
                Node::Block(k) => {
                    if let Some(b) = blocks.get(*k) {
                        self.block(b, out);
                    }
                }
            }
        }
    }

    fn body(&mut self, b: &Block) -> Vec<Out> {
        let mut out = Vec::new();
        self.nodes(&b.nodes, &b.children, &mut out);
        out
    }

    fn block(&mut self, b: &Block, out: &mut Vec<Out>) {
        match b.form {
            Form::Keyword => return self.keyword(b, out),
            Form::Alert => return self.alert(b, out),
            _ => {}
        }
        if b.disposition == Disposition::Machinery {
            out.push(ack::line(b).map(Out::Line).unwrap_or(Out::Hole));
            if b.form == Form::Section {
                // The blank lines that end a section stay where they are.
                let trailing = (b.line..b.end).rev().take_while(|&i| lex::is_blank(self.src(i))).count();
                out.extend((0..trailing).map(|_| Out::Line(String::new())));
            }
            return;
        }
        let title = b.attrs.str("title");
        match b.kind.as_str() {
            "when" => {
                if self.keep(b) {
                    out.push(Out::Hole);
                    let body = self.body(b);
                    out.extend(body);
                }
                out.push(Out::Hole);
            }
            "include" => self.include(b, out),
            "param" => out.push(Out::Hole),
            "example" => {
                let head = match title {
                    Some(t) => format!("**EXAMPLE — {t}:**"),
                    None => "**EXAMPLE:**".to_string(),
                };
                out.push(Out::Line(head));
                let body = self.body(b);
                out.extend(body);
            }
            "context" => {
                let head = match title {
                    Some(t) => format!("<reference title=\"{}\">", t.replace('"', "&quot;")),
                    None => "<reference>".to_string(),
                };
                out.push(Out::Line(head));
                let body = self.body(b);
                out.extend(body);
                out.push(Out::Line("</reference>".into()));
            }
            "glossary" => {
                for e in b.body.iter().flat_map(|bd| bd.entries.iter()) {
                    let def = e.definition.split('\n').collect::<Vec<_>>().join(" ");
                    out.push(Out::Line(refs::render(&format!("**{}** — {def}", e.term))));
                }
            }
            "form" => self.form(b, out),
            "tool" => {
                out.push(Out::Line(tool_header(b)));
                let body = self.body(b);
                out.extend(body);
            }
            kind => {
                let head = match title {
                    Some(t) => format!("**{} — {t}:** ", label(kind)),
                    None => format!("**{}:** ", label(kind)),
                };
                let mut body = self.body(b);
                match body.iter_mut().find(|o| matches!(o, Out::Line(l) if !lex::is_blank(l))) {
                    Some(Out::Line(l)) => *l = format!("{head}{l}"),
                    _ => body.insert(0, Out::Line(head.trim_end().to_string())),
                }
                out.extend(body);
            }
        }
    }

    /// Whether a `when` variant is kept: every known key must match one of its listed values.
    fn keep(&self, b: &Block) -> bool {
        b.attrs.iter().all(|(key, value)| {
            let allowed = match value {
                crate::model::AttrValue::Str(s) => split_list(s),
                crate::model::AttrValue::List(v) => v.clone(),
                crate::model::AttrValue::Bool(x) => vec![x.to_string()],
            };
            let actual = self
                .ctx
                .params
                .get(key)
                .or_else(|| self.ctx.facts.get(key))
                .cloned()
                .or_else(|| self.params.iter().find(|p| p.name == key).and_then(|p| p.default.clone()));
            actual.is_none_or(|v| allowed.contains(&v))
        })
    }

    fn include(&mut self, b: &Block, out: &mut Vec<Out>) {
        let Some(id) = include_id(b) else {
            out.push(Out::Hole);
            return;
        };
        if self.stack.contains(&id) || self.stack.len() >= MAX_INCLUDE_DEPTH {
            self.advisories
                .push(format!("line {}: include \"{id}\" is circular or nested too deeply; skipped", b.line));
            out.push(Out::Hole);
            return;
        }
        let text = match self.ctx.includes.get(&id) {
            Some(Included::Delivered(t)) => t.clone(),
            Some(Included::Source(src)) => match load_with(src, &self.ctx.options) {
                Ok(inner) => {
                    let mut stack = self.stack.clone();
                    stack.push(id.clone());
                    let d = deliver_nested(&inner, self.ctx, stack);
                    self.advisories.extend(d.advisories.into_iter().map(|a| format!("{id}: {a}")));
                    d.text
                }
                Err(refusals) => {
                    let first = refusals.first().map(|r| r.to_string()).unwrap_or_default();
                    self.advisories
                        .push(format!("line {}: include \"{id}\" is refused ({first}); skipped", b.line));
                    String::new()
                }
            },
            None => {
                self.advisories
                    .push(format!("line {}: include \"{id}\" could not be resolved; skipped", b.line));
                String::new()
            }
        };
        let text = text.trim_end_matches('\n');
        if text.is_empty() {
            out.push(Out::Hole);
        } else {
            out.extend(text.split('\n').map(|l| Out::Raw(l.to_string())));
        }
    }
}
