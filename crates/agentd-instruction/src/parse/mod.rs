//! The block parser: regions of lines become prose and blocks, recursing by fence length.

mod prose;
mod section;
mod set;

use crate::Options;
use crate::attrs;
use crate::body;
use crate::classify::{self, Class};
use crate::lex::{self, CodeState, Fence};
use crate::model::{Attrs, Block, Body, Form, Node, Refusal};
use crate::registry::{BodyType, KindSpec};

/// How deep blocks may nest before the reader refuses (the spec allows a published cap).
pub(crate) const MAX_DEPTH: usize = 32;

/// Where a region sits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx {
    /// The enclosing block's kind (sub-blocks are valid only under their parent).
    pub parent: Option<&'static str>,
    /// Whether keyword and alert blocks are recognised (Markdown bodies, not `example`).
    pub keywords: bool,
    /// Top level of the document (the only place sections stand).
    pub top: bool,
    pub depth: usize,
}

impl Ctx {
    pub(crate) fn top() -> Ctx {
        Ctx { parent: None, keywords: true, top: true, depth: 0 }
    }

    fn inner(self, parent: &'static str, keywords: bool) -> Ctx {
        Ctx { parent: Some(parent), keywords, top: false, depth: self.depth + 1 }
    }
}

pub(crate) struct Parser<'a> {
    pub lines: &'a [String],
    pub opts: &'a Options,
    pub refusals: Vec<Refusal>,
    /// Per line: the colon count if it could close a container (0 otherwise), and whether text
    /// trails the colons. Lines inside code fences are never closers.
    closers: Vec<(usize, bool)>,
    /// Closing-fence search cache: colon count → (searched from, first closer found).
    memo: std::collections::HashMap<usize, (usize, usize)>,
}

/// The nodes and blocks of one region.
#[derive(Default)]
pub(crate) struct Region {
    pub nodes: Vec<Node>,
    pub blocks: Vec<Block>,
}

impl Region {
    fn push_block(&mut self, b: Block) {
        self.nodes.push(Node::Block(self.blocks.len()));
        self.blocks.push(b);
    }

    /// Splices another region in (an inert unknown bare block's body).
    fn splice(&mut self, other: Region) {
        let offset = self.blocks.len();
        self.nodes.extend(other.nodes.into_iter().map(|n| match n {
            Node::Block(i) => Node::Block(i + offset),
            other => other,
        }));
        self.blocks.extend(other.blocks);
    }
}

impl<'a> Parser<'a> {
    /// A parser for `lines`, whose body starts at line `start` (after the front matter).
    pub(crate) fn new(lines: &'a [String], start: usize, opts: &'a Options) -> Parser<'a> {
        // One pass of code-fence suspension serves every search: an opening fence is never
        // inside code, so a fresh scan from the line after it sees the same fences.
        let mut code = CodeState::default();
        let closers = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if i < start || code.feed(l) {
                    return (0, false);
                }
                let colons = l.bytes().take_while(|&b| b == b':').count();
                match lex::close_fence(l) {
                    Some(m) => (m, false),
                    None if colons >= 3 && lex::close_with_text(l, colons) => (colons, true),
                    None => (0, false),
                }
            })
            .collect();
        Parser { lines, opts, refusals: Vec::new(), closers, memo: Default::default() }
    }

    fn refuse(&mut self, line: usize, code: &'static str, message: impl Into<String>) {
        self.refusals.push(Refusal::at(line, code, message));
    }

    fn line(&self, i: usize) -> &'a str {
        self.lines.get(i).map(String::as_str).unwrap_or("")
    }

    /// `(1-based line, text)` for lines `start..end`.
    fn numbered(&self, start: usize, end: usize) -> Vec<(usize, &'a str)> {
        (start..end).map(|i| (i + 1, self.line(i))).collect()
    }

    /// Parses lines `start..end` (0-based, exclusive end).
    pub(crate) fn region(&mut self, start: usize, end: usize, ctx: Ctx) -> Region {
        let mut r = Region::default();
        let mut code = CodeState::default();
        let mut i = start;
        while i < end {
            let line = self.line(i);
            if code.inside() || lex::code_open(line).is_some() {
                code.feed(line);
                r.nodes.push(Node::Line(i));
                i += 1;
                continue;
            }
            if let Some(sec) = lex::section(line) {
                i = self.section(i, end, sec, ctx, &mut r);
                continue;
            }
            if let Some(fence) = lex::open_fence(line) {
                i = self.container(i, end, fence, ctx, &mut r);
                continue;
            }
            if let Some(leaf) = lex::leaf(line) {
                self.leaf(i, leaf, ctx, &mut r);
                i += 1;
                continue;
            }
            if ctx.keywords {
                if let Some(word) = lex::alert(line) {
                    i = self.alert(i, end, word, &mut r);
                    continue;
                }
                if let Some((_, word, text)) = lex::keyword(line) {
                    i = self.keyword(i, end, word, text, &mut r);
                    continue;
                }
            }
            r.nodes.push(Node::Line(i));
            i += 1;
        }
        r
    }

    /// Parses an attribute list for `spec`, reporting problems at `line`.
    fn attrs(&mut self, text: Option<&str>, spec: &KindSpec, line: usize) -> Attrs {
        let Some(text) = text else { return Attrs::default() };
        let (attrs, errors) = attrs::normalise(attrs::tokenize(text), spec);
        for (code, msg) in errors {
            self.refuse(line, code, msg);
        }
        if let Some(name) = attrs.str("name")
            && spec.attrs.is_some()
            && !lex::is_name(name)
        {
            self.refuse(line, "invalid-name", invalid_name(name));
        }
        attrs
    }

    fn new_block(&mut self, spec: &KindSpec, sigil: bool, form: Form, i: usize, attrs: Attrs) -> Block {
        let mut b = Block::new(spec.name, sigil, spec.disposition, form, i + 1);
        b.name = attrs.str("name").map(str::to_string);
        b.attrs = attrs;
        if form != Form::Set {
            self.require(&b, spec);
        }
        b
    }

    /// Identity and required attributes.
    fn require(&mut self, b: &Block, spec: &KindSpec) {
        if spec.identity && b.name.is_none() && b.form != Form::Member {
            self.refuse(b.line, "identity-requires-name", format!("{} requires name", spec.name));
        }
        for key in spec.required {
            if b.attrs.get(key).is_none() {
                self.refuse(b.line, "missing-attribute", format!("{} requires {key}", spec.name));
            }
        }
        if spec.name == "include" && b.attrs.get("id").is_none() && b.attrs.get("uri").is_none() {
            self.refuse(
                b.line,
                "missing-attribute",
                "include requires id or uri, e.g. ::include{id=ins_house-style}",
            );
        }
        if spec.name == "when" && b.attrs.is_empty() {
            self.refuse(
                b.line,
                "missing-attribute",
                "when requires a condition, e.g. :::when{environment=production}",
            );
        }
    }

    /// Finds the closing fence of a container opened at `i` with `n` colons:
    /// (0-based closing line, whether text trails the colons).
    ///
    /// The parse is one left-to-right pass, so searches start at non-decreasing lines and the
    /// cached answer per colon count keeps the total work linear.
    fn find_close(&mut self, i: usize, end: usize, n: usize) -> Option<(usize, bool)> {
        let start = i + 1;
        let found = match self.memo.get(&n) {
            Some(&(from, at)) if from <= start && start <= at => at,
            _ => {
                let at = (start..self.closers.len())
                    .find(|&j| self.closers[j].0 >= n)
                    .unwrap_or(self.closers.len());
                self.memo.insert(n, (start, at));
                at
            }
        };
        (found < end).then(|| (found, self.closers[found].1))
    }

    fn container(
        &mut self,
        i: usize,
        end: usize,
        fence: Result<Fence<'a>, ()>,
        ctx: Ctx,
        r: &mut Region,
    ) -> usize {
        let line = self.line(i);
        let Ok(f) = fence else {
            if line.trim_start_matches(':').starts_with('!') {
                self.refuse(
                    i + 1,
                    "malformed-fence",
                    format!("malformed fence \"{}\" — write :::!kind{{attrs}}", line.trim()),
                );
            } else {
                r.nodes.push(Node::Line(i));
            }
            return i + 1;
        };
        let kind = f.kind.to_ascii_lowercase();
        let form = if f.set { Form::Set } else { Form::Container };
        let close = self.find_close(i, end, f.colons);
        let class = classify::classify(self, i + 1, &kind, f.sigil, form, ctx);
        let Some((close, trailing)) = close else {
            match class {
                Class::Unknown => r.nodes.push(Node::Line(i)),
                Class::Refused => return end,
                Class::Known(_) => {
                    let written = format!(
                        "{}{}{}{}",
                        ":".repeat(f.colons),
                        if f.sigil { "!" } else { "" },
                        kind,
                        if f.set { "[]" } else { "" }
                    );
                    self.refuse(
                        i + 1,
                        "unclosed-fence",
                        format!("{written} is never closed (expected a line of ≥{} colons)", f.colons),
                    );
                    return end;
                }
            }
            return i + 1;
        };
        if trailing {
            self.refuse(
                close + 1,
                "text-after-fence",
                "text after a closing fence — a closing ::: stands alone on its line",
            );
        }
        if ctx.depth >= MAX_DEPTH {
            self.refuse(
                i + 1,
                "too-deep",
                format!("blocks nested deeper than {MAX_DEPTH} levels are refused by this reader"),
            );
            return close + 1;
        }
        match class {
            Class::Refused => {}
            Class::Unknown => {
                r.nodes.push(Node::Fence(i));
                let inner = self.region(i + 1, close, Ctx { depth: ctx.depth + 1, ..ctx });
                r.splice(inner);
                r.nodes.push(Node::Fence(close));
            }
            Class::Known(spec) => {
                let attrs = self.attrs(f.attrs, spec, i + 1);
                let b = if f.set {
                    self.set(spec, f.sigil, i, close, attrs)
                } else {
                    self.container_body(spec, f.sigil, i, close, attrs, ctx)
                };
                if let Some(mut b) = b {
                    b.end = close + 1;
                    r.push_block(b);
                }
            }
        }
        close + 1
    }

    fn container_body(
        &mut self,
        spec: &'static KindSpec,
        sigil: bool,
        i: usize,
        close: usize,
        attrs: Attrs,
        ctx: Ctx,
    ) -> Option<Block> {
        let verbatim = attrs.flag("verbatim") == Some(true);
        let mut b = self.new_block(spec, sigil, Form::Container, i, attrs);
        let first = i + 2;
        let lines = self.numbered(i + 1, close);
        match spec.body {
            BodyType::Markdown | BodyType::Yaml | BodyType::Code if !verbatim => {
                let keywords = spec.body == BodyType::Markdown && spec.name != "example";
                let inner = self.region(i + 1, close, ctx.inner(spec.name, keywords));
                let text = self.text_of(&inner.nodes);
                b.body = Some(if spec.body == BodyType::Code {
                    self.code_body(spec, &inner.nodes, text, first)?
                } else {
                    Body::text(spec.body, text, first)
                });
                b.nodes = inner.nodes;
                b.children = inner.blocks;
            }
            BodyType::Table => match body::table(&lines) {
                Ok(t) => {
                    let mut bd = Body::text(BodyType::Table, String::new(), first);
                    bd.rows = t
                        .rows
                        .into_iter()
                        .map(|(_, cells)| {
                            t.headers.iter().cloned().zip(cells).filter(|(_, c)| !c.is_empty()).collect()
                        })
                        .collect();
                    b.body = Some(bd);
                }
                Err(e) => {
                    self.refuse(
                        i + 1,
                        "invalid-body",
                        format!("a {} body must be a pipe table ({e})", spec.name),
                    );
                    return None;
                }
            },
            BodyType::Deflist => match body::deflist(&lines, false) {
                Ok(entries) => {
                    let mut bd = Body::text(BodyType::Deflist, String::new(), first);
                    bd.entries = entries.into_iter().map(|(e, _)| e).collect();
                    b.body = Some(bd);
                }
                Err(e) => {
                    self.refuse(
                        i + 1,
                        "invalid-body",
                        format!(
                            "a {} body must be a definition list: a term, then \":   definition\" ({e})",
                            spec.name
                        ),
                    );
                    return None;
                }
            },
            ty => {
                let ty = if ty == BodyType::None { BodyType::Text } else { ty };
                b.nodes = (i + 1..close).map(Node::Line).collect();
                b.body = Some(Body::text(ty, self.text_of(&b.nodes), first));
            }
        }
        Some(b)
    }

    /// A code body: the single fenced block's content and info string, or the raw text.
    fn code_body(&mut self, spec: &KindSpec, nodes: &[Node], raw: String, first: usize) -> Option<Body> {
        let lines: Vec<(usize, &str)> = nodes
            .iter()
            .filter_map(|n| match n {
                Node::Line(i) | Node::Fence(i) => Some((i + 1, self.line(*i))),
                Node::Block(_) => None,
            })
            .collect();
        let blocks = body::code_blocks(&lines);
        match blocks.as_slice() {
            [] => Some(Body::text(BodyType::Code, raw, first)),
            [(line, info, content)] => {
                let mut bd = Body::text(BodyType::Code, content.join("\n"), *line);
                if !info.is_empty() {
                    bd.lang = Some(info.clone());
                }
                Some(bd)
            }
            _ => {
                self.refuse(
                    first - 1,
                    "invalid-body",
                    format!("a {} body holds exactly one fenced code block", spec.name),
                );
                None
            }
        }
    }

    fn leaf(&mut self, i: usize, leaf: Result<Fence<'a>, ()>, ctx: Ctx, r: &mut Region) {
        let line = self.line(i);
        let Ok(f) = leaf else {
            if line.starts_with("::!") {
                self.refuse(
                    i + 1,
                    "malformed-fence",
                    format!("malformed leaf \"{}\" — write ::!kind{{attrs}}", line.trim()),
                );
            } else {
                r.nodes.push(Node::Line(i));
            }
            return;
        };
        let kind = f.kind.to_ascii_lowercase();
        match classify::classify(self, i + 1, &kind, f.sigil, Form::Leaf, ctx) {
            Class::Unknown => r.nodes.push(Node::Line(i)),
            Class::Refused => {}
            Class::Known(spec) => {
                let attrs = self.attrs(f.attrs, spec, i + 1);
                let b = self.new_block(spec, f.sigil, Form::Leaf, i, attrs);
                r.push_block(b);
            }
        }
    }

    /// The text of a body: its line and fence nodes joined by `\n` (children cut out).
    pub(crate) fn text_of(&self, nodes: &[Node]) -> String {
        let parts: Vec<&str> = nodes
            .iter()
            .filter_map(|n| match n {
                Node::Line(i) | Node::Fence(i) => Some(self.line(*i)),
                Node::Block(_) => None,
            })
            .collect();
        parts.join("\n")
    }
}

fn invalid_name(name: &str) -> String {
    format!(
        "\"{name}\" is not a valid name — use letters, digits, \".\", \"_\" and \"-\", starting with a letter or digit"
    )
}
