//! Document-wide rules: identity, references and cycles, YAML bodies, pins, credentials,
//! override narrowing, the `!config` allow-list and the `human`/`channel` fields agentd uses.

use crate::creds;
use crate::lex::{self, CodeState};
use crate::model::{AttrValue, Block, Document, Form, Node, Refusal};
use crate::refs;
use crate::registry::{self, BodyType};
use crate::yaml;
use serde_yaml_ng::Value as Yaml;
use std::collections::{BTreeMap, BTreeSet};

/// Keys a document's `!config` may set (it is merged under the operator's configuration).
pub const CONFIG_KEYS: &[&str] = &["limits", "model", "models"];
/// Channel tags (the trifecta).
const CHANNEL_TAGS: &[&str] = &["egress", "untrusted_input", "sensitive"];

/// A reference found in the document.
struct Ref {
    line: usize,
    kind: String,
    name: String,
    written: String,
    /// The identity holding it (for cycle detection), and whether it is a dependency edge.
    owner: Option<(String, String)>,
    edge: bool,
    prose: bool,
}

struct Checker<'a> {
    doc: &'a Document,
    out: Vec<Refusal>,
    refs: Vec<Ref>,
    /// Named blocks: (kind, name) → first line.
    names: BTreeMap<(String, String), usize>,
}

/// Runs every document-wide rule.
pub(crate) fn check(doc: &Document, fm_lines: usize) -> Vec<Refusal> {
    let mut c = Checker { doc, out: Vec::new(), refs: Vec::new(), names: BTreeMap::new() };
    for b in &doc.blocks {
        c.identities(b);
    }
    for b in &doc.blocks {
        c.block(b, None);
    }
    c.prose();
    c.resolve();
    c.cycles();
    for (i, line) in doc.lines.iter().enumerate() {
        if let Some(what) = creds::find(line) {
            let at = i + 1;
            let msg = format!("a literal credential is never allowed ({what}) — use a secret-ref");
            if at <= fm_lines {
                c.out.push(Refusal::front("literal-credential", format!("front matter: {msg}")));
            } else {
                c.out.push(Refusal::at(at, "literal-credential", msg));
            }
        }
    }
    c.out
}

fn identity(b: &Block) -> Option<(String, String)> {
    let spec = registry::kind(&b.kind)?;
    (!spec.is_sub_block()).then_some(())?;
    Some((b.kind.clone(), b.name.clone()?))
}

impl Checker<'_> {
    fn refuse(&mut self, line: usize, code: &'static str, msg: impl Into<String>) {
        self.out.push(Refusal::at(line, code, msg));
    }

    /// Registers names; refuses duplicates of identity kinds.
    fn identities(&mut self, b: &Block) {
        if b.form != Form::Set
            && let Some(key) = identity(b)
        {
            let is_identity = registry::kind(&b.kind).is_some_and(|k| k.identity);
            match self.names.get(&key) {
                Some(first) if is_identity => {
                    let msg = format!("duplicate {}/{} (first declared at line {first})", key.0, key.1);
                    self.refuse(b.line, "duplicate-identity", msg);
                }
                Some(_) => {}
                None => {
                    self.names.insert(key, b.line);
                }
            }
        }
        let sub = registry::kind(&b.kind).is_some_and(|k| k.is_sub_block());
        if !sub {
            for c in b.children.iter().chain(b.members.iter()) {
                self.identities(c);
            }
        }
    }

    /// Per-block rules and reference collection; `owner` is the nearest identity above.
    fn block(&mut self, b: &Block, owner: Option<(String, String)>) {
        let owner = identity(b).or(owner);
        for (key, value) in b.attrs.iter() {
            let items: Vec<&str> = match value {
                AttrValue::Str(s) => vec![s.as_str()],
                AttrValue::List(v) => v.iter().map(String::as_str).collect(),
                AttrValue::Bool(_) => Vec::new(),
            };
            for item in items {
                if let Some((kind, name)) = refs::at_ref(item) {
                    self.refs.push(Ref {
                        line: b.line,
                        kind: kind.into(),
                        name: name.into(),
                        written: item.into(),
                        owner: owner.clone(),
                        edge: key != "may",
                        prose: false,
                    });
                }
            }
        }
        let parsed = self.yaml_body(b, owner.clone());
        self.kind_rules(b, parsed.as_ref());
        for c in b.children.iter().chain(b.members.iter()) {
            self.block(c, owner.clone());
        }
    }

    /// Parses a YAML body (refusing invalid YAML) and collects its quoted references.
    fn yaml_body(&mut self, b: &Block, owner: Option<(String, String)>) -> Option<Yaml> {
        let body = b.body.as_ref().filter(|bd| bd.kind == BodyType::Yaml)?;
        let value = match yaml::parse(&body.text, body.line) {
            Ok(v) => v,
            Err((line, msg)) => {
                let last = body.line + body.text.lines().count().saturating_sub(1);
                let line = line.clamp(body.line, last.max(body.line));
                let who = b.name.as_deref().map(|n| format!(" \"{n}\"")).unwrap_or_default();
                match unquoted_ref(&body.text) {
                    Some((k, r)) => self.refuse(
                        body.line + k,
                        "unquoted-reference",
                        format!("{}{who}: a reference in YAML must be quoted — write \"{r}\"", b.kind),
                    ),
                    None => self.refuse(
                        line,
                        "invalid-yaml",
                        format!("{}{who}: the body is not valid YAML ({msg})", b.kind),
                    ),
                }
                return None;
            }
        };
        let mut strings = Vec::new();
        yaml::strings(&value, &mut strings);
        for s in strings {
            if let Some((kind, name)) = refs::at_ref(&s) {
                let line = body
                    .text
                    .lines()
                    .position(|l| l.contains(s.as_str()))
                    .map(|p| body.line + p)
                    .unwrap_or(b.line);
                self.refs.push(Ref {
                    line,
                    kind: kind.into(),
                    name: name.into(),
                    written: s.clone(),
                    owner: owner.clone(),
                    edge: true,
                    prose: false,
                });
            }
        }
        Some(value)
    }

    fn kind_rules(&mut self, b: &Block, body: Option<&Yaml>) {
        let name = b.name.as_deref().unwrap_or("");
        match b.kind.as_str() {
            "image" => {
                let pinned = b.attrs.str("digest").is_some_and(|d| {
                    d.split_once(':').is_some_and(|(alg, hex)| {
                        lex::is_kind(alg) && !hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit())
                    })
                });
                if !pinned {
                    self.refuse(
                        b.line,
                        "mutable-image-tag",
                        format!("image \"{name}\" is not digest-pinned"),
                    );
                }
            }
            "asset" | "media" => {
                let remote =
                    b.attrs.str("src").is_some_and(|s| s.starts_with("http://") || s.starts_with("https://"));
                if remote && b.attrs.get("sha256").is_none() {
                    self.refuse(b.line, "unpinned-remote-asset", "remote src requires sha256");
                }
            }
            "runtime" => {
                let in_body =
                    body.and_then(|v| yaml::get(v, "network")).and_then(|v| v.as_str()) == Some("any");
                if b.attrs.str("network") == Some("any") || in_body {
                    let msg = format!(
                        "runtime \"{name}\": network: any is refused — the sandbox boundary is the security boundary"
                    );
                    self.refuse(b.line, "network-any", msg);
                }
            }
            "override" => {
                let get = |k| body.and_then(|v| yaml::get(v, k)).and_then(|v| v.as_bool());
                if get("disabled") == Some(false) || get("enabled") == Some(true) {
                    self.refuse(
                        b.line,
                        "widening-override",
                        "override may not re-enable a tool — overrides only narrow",
                    );
                }
            }
            "config" => self.config(b, body),
            "human" => self.human(b, body),
            "channel" => {
                for tag in b.attrs.list("tags") {
                    if !CHANNEL_TAGS.contains(&tag.as_str()) {
                        let msg = format!(
                            "channel \"{name}\": unknown tag \"{tag}\" — tags are egress, untrusted_input, sensitive"
                        );
                        self.refuse(b.line, "unknown-tag", msg);
                    }
                }
            }
            "param" if b.form != Form::Set => {
                if let Err(e) = crate::params::from_attrs(&b.attrs)
                    && b.name.is_some()
                {
                    self.refuse(b.line, "invalid-parameter", e);
                }
            }
            _ => {}
        }
    }

    fn config(&mut self, b: &Block, body: Option<&Yaml>) {
        match body {
            Some(Yaml::Mapping(m)) => {
                for k in m.keys() {
                    let key = yaml::scalar_text(k);
                    if !CONFIG_KEYS.contains(&key.as_str()) {
                        let msg = format!(
                            "config may not set \"{key}\" — a document's !config may set only {}",
                            CONFIG_KEYS.join(", ")
                        );
                        self.refuse(b.line, "config-key-refused", msg);
                    }
                }
            }
            Some(Yaml::Null) | None => {}
            Some(_) => self.refuse(b.line, "invalid-body", "a config body must be a YAML mapping"),
        }
    }

    fn human(&mut self, b: &Block, body: Option<&Yaml>) {
        let name = b.name.as_deref().unwrap_or("");
        let spec = registry::kind("human");
        if let (Some(Yaml::Mapping(m)), Some(spec)) = (body, spec) {
            for k in m.keys() {
                let key = yaml::scalar_text(k);
                if spec.attr_type(&key).is_none() {
                    self.refuse(b.line, "unknown-column", crate::attrs::unknown(&key, spec));
                }
            }
        }
        let field = |k: &str| -> Option<String> {
            b.attrs
                .str(k)
                .map(str::to_string)
                .or_else(|| body.and_then(|v| yaml::get(v, k)).map(yaml::scalar_text))
        };
        if let Some(ch) = field("channel")
            && !ch.starts_with("@channel/")
        {
            let msg = format!("human \"{name}\": channel \"{ch}\" must be a reference such as @channel/ops");
            self.refuse(b.line, "invalid-attribute", msg);
        }
        if let Some(d) = field("escalate_after")
            && !is_duration(&d)
        {
            let msg = format!("human \"{name}\": escalate_after \"{d}\" is not a duration such as 15m");
            self.refuse(b.line, "invalid-attribute", msg);
        }
        for m in b.attrs.list("may") {
            if refs::at_ref(&m).is_none() {
                let msg =
                    format!("human \"{name}\": may lists \"{m}\" — use references such as @workflow/deploy");
                self.refuse(b.line, "invalid-attribute", msg);
            }
        }
    }

    /// Collects prose references from every line delivered as Markdown.
    fn prose(&mut self) {
        let mut lines = Vec::new();
        prose_lines(&self.doc.nodes, &self.doc.blocks, &mut lines);
        let mut code = CodeState::default();
        let mut last = None;
        for i in lines {
            if last.is_some_and(|l: usize| l + 1 != i) {
                code = CodeState::default();
            }
            last = Some(i);
            let text = &self.doc.lines[i];
            if code.feed(text) {
                continue;
            }
            for r in refs::prose_refs(text) {
                self.refs.push(Ref {
                    line: i + 1,
                    kind: r.kind,
                    name: r.name,
                    written: r.written,
                    owner: None,
                    edge: false,
                    prose: true,
                });
            }
        }
    }

    fn resolve(&mut self) {
        let refs = std::mem::take(&mut self.refs);
        for r in &refs {
            let sub = registry::kind(&r.kind).is_some_and(|k| k.is_sub_block());
            if sub {
                self.refuse(
                    r.line,
                    "sub-block-reference",
                    format!("{}/{}: sub-blocks cannot be referenced", r.kind, r.name),
                );
            } else if !self.names.contains_key(&(r.kind.clone(), r.name.clone())) {
                let shown = if r.prose { r.written.clone() } else { format!("@{}/{}", r.kind, r.name) };
                let msg = format!("{shown} does not resolve — no {} named \"{}\"", r.kind, r.name);
                self.refuse(r.line, "dangling-reference", msg);
            }
        }
        self.refs = refs;
    }

    /// Refuses local reference cycles (dependency edges only: `may` grants are not edges).
    fn cycles(&mut self) {
        let mut graph: BTreeMap<(String, String), Vec<(String, String)>> = BTreeMap::new();
        for r in &self.refs {
            let target = (r.kind.clone(), r.name.clone());
            if let Some(owner) = &r.owner
                && r.edge
                && self.names.contains_key(&target)
            {
                graph.entry(owner.clone()).or_default().push(target);
            }
        }
        let mut done: BTreeSet<(String, String)> = BTreeSet::new();
        let mut nodes: Vec<_> = graph.keys().cloned().collect();
        nodes.sort_by_key(|k| self.names.get(k).copied().unwrap_or(usize::MAX));
        for start in nodes {
            let mut path = Vec::new();
            if let Some(cycle) = dfs(&start, &graph, &mut path, &mut done) {
                let text: Vec<String> = cycle.iter().map(|(k, n)| format!("{k}/{n}")).collect();
                let line = self.names.get(&cycle[0]).copied().unwrap_or(1);
                self.refuse(line, "reference-cycle", format!("reference cycle: {}", text.join(" → ")));
            }
        }
    }
}

type Key = (String, String);

fn dfs(
    node: &Key,
    graph: &BTreeMap<Key, Vec<Key>>,
    path: &mut Vec<Key>,
    done: &mut BTreeSet<Key>,
) -> Option<Vec<Key>> {
    if let Some(pos) = path.iter().position(|k| k == node) {
        let mut cycle = path[pos..].to_vec();
        cycle.push(node.clone());
        return Some(cycle);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.clone());
    for next in graph.get(node).map(Vec::as_slice).unwrap_or(&[]) {
        if let Some(c) = dfs(next, graph, path, done) {
            for k in path.iter() {
                done.insert(k.clone());
            }
            return Some(c);
        }
    }
    path.pop();
    done.insert(node.clone());
    None
}

/// The first unquoted `@kind/name` value in a YAML text (YAML cannot start a plain scalar with
/// `@`): (0-based line offset, the reference).
fn unquoted_ref(text: &str) -> Option<(usize, String)> {
    for (k, line) in text.lines().enumerate() {
        let b = line.as_bytes();
        for (i, _) in line.match_indices('@') {
            let before = line[..i].trim_end();
            let opens = before.is_empty() || before.ends_with([':', '-', '[', ',', '{']);
            let token: String = line[i..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}'))
                .collect();
            let quoted = i > 0 && matches!(b[i - 1], b'"' | b'\'');
            if opens && !quoted && refs::at_ref(&token).is_some() {
                return Some((k, token));
            }
        }
    }
    None
}

/// `15m`, `1h`, `30s`, `2d`, `500ms`.
fn is_duration(s: &str) -> bool {
    let digits = s.bytes().take_while(|b| b.is_ascii_digit()).count();
    digits > 0 && matches!(&s[digits..], "ms" | "s" | "m" | "h" | "d")
}

/// Lines delivered (or read) as Markdown prose: top-level text, Markdown bodies, keyword and
/// alert bodies, glossary entries.
pub(crate) fn prose_lines(nodes: &[Node], blocks: &[Block], out: &mut Vec<usize>) {
    for n in nodes {
        match n {
            Node::Line(i) => out.push(*i),
            Node::Fence(_) => {}
            Node::Block(k) => {
                let Some(b) = blocks.get(*k) else { continue };
                match b.body.as_ref().map(|bd| bd.kind) {
                    Some(BodyType::Markdown) => prose_lines(&b.nodes, &b.children, out),
                    Some(BodyType::Deflist) => out.extend(b.line..b.end.saturating_sub(1)),
                    _ => {}
                }
            }
        }
    }
}
