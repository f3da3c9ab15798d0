//! The parsed document: blocks, attributes, bodies, and the layout delivery walks.

use crate::front_matter::FrontMatter;
use crate::registry::{BodyType, Disposition};
use std::fmt;

/// The form a block was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Form {
    Container,
    Leaf,
    Set,
    Member,
    Section,
    Keyword,
    Alert,
}

impl Form {
    /// The name used in the block tree (`form`).
    pub fn as_str(self) -> &'static str {
        match self {
            Form::Container => "container",
            Form::Leaf => "leaf",
            Form::Set => "set",
            Form::Member => "member",
            Form::Section => "section",
            Form::Keyword => "keyword",
            Form::Alert => "alert",
        }
    }
}

/// A normalised attribute value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrValue {
    Str(String),
    Bool(bool),
    List(Vec<String>),
}

/// Attributes in the order they were written; keys are lower case and unique.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attrs(pub(crate) Vec<(String, AttrValue)>);

impl Attrs {
    pub fn get(&self, key: &str) -> Option<&AttrValue> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// A string attribute (flags and lists are not strings).
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key)? {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A multi-valued attribute; a single string counts as a one-element list.
    pub fn list(&self, key: &str) -> Vec<String> {
        match self.get(key) {
            Some(AttrValue::List(v)) => v.clone(),
            Some(AttrValue::Str(s)) => vec![s.clone()],
            _ => Vec::new(),
        }
    }

    pub fn flag(&self, key: &str) -> Option<bool> {
        match self.get(key)? {
            AttrValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets `key`, replacing an earlier value in place.
    pub(crate) fn set(&mut self, key: &str, value: AttrValue) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key.to_string(), value)),
        }
    }
}

/// One definition-list entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub term: String,
    pub attrs: Attrs,
    /// Continuation lines have their indentation stripped and are joined by `\n`.
    pub definition: String,
    pub line: usize,
}

/// A block body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub kind: BodyType,
    /// The body text (markdown, yaml, code, text); empty for tables and definition lists.
    pub text: String,
    /// 1-based line of the first body line (for YAML and code: the first content line).
    pub line: usize,
    /// Code bodies: the fence's info string.
    pub lang: Option<String>,
    /// Table bodies: one row per entry, keyed by header, empty cells omitted.
    pub rows: Vec<Vec<(String, String)>>,
    /// Definition-list bodies.
    pub entries: Vec<Entry>,
}

impl Body {
    pub(crate) fn text(kind: BodyType, text: String, line: usize) -> Body {
        Body { kind, text, line, lang: None, rows: Vec::new(), entries: Vec::new() }
    }
}

/// A block of the document tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The kind, without sigil, lower case.
    pub kind: String,
    /// Written with the `!` machinery sigil.
    pub sigil: bool,
    pub disposition: Disposition,
    pub form: Form,
    /// The identity (`name` attribute, section name or set row name).
    pub name: Option<String>,
    pub attrs: Attrs,
    /// 1-based opening line (set members carry their set's line).
    pub line: usize,
    pub body: Option<Body>,
    /// Nested blocks: sub-blocks, nested prose blocks, keyword and alert children.
    pub children: Vec<Block>,
    /// Set form only: one block per row or entry.
    pub members: Vec<Block>,
    /// Layout of the body, for delivery (children referenced by index).
    pub(crate) nodes: Vec<Node>,
    /// 1-based last line of the block's extent.
    pub(crate) end: usize,
    /// Keyword and alert blocks: the label as written (`MUST NOT` delivers as `NEVER`).
    pub(crate) keyword: Option<&'static str>,
}

impl Block {
    pub(crate) fn new(kind: &str, sigil: bool, disposition: Disposition, form: Form, line: usize) -> Block {
        Block {
            kind: kind.to_string(),
            sigil,
            disposition,
            form,
            name: None,
            attrs: Attrs::default(),
            line,
            body: None,
            children: Vec::new(),
            members: Vec::new(),
            nodes: Vec::new(),
            end: line,
            keyword: None,
        }
    }

    /// The body's text, if the block has one.
    pub fn body_text(&self) -> Option<&str> {
        self.body.as_ref().map(|b| b.text.as_str())
    }

    /// This block and every block nested in it (children and members), depth first.
    pub fn walk(&self) -> Vec<&Block> {
        let mut out = vec![self];
        for c in self.children.iter().chain(self.members.iter()) {
            out.extend(c.walk());
        }
        out
    }
}

/// One element of a body's layout, in source order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    /// A source line (0-based index) that stays text.
    Line(usize),
    /// A fence line of an inert or unwrapped block: part of the text, dropped on delivery.
    Fence(usize),
    /// A nested block (index into the owner's `children` or the document's `blocks`).
    Block(usize),
}

/// A parsed, accepted instruction document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The declared format version, normalised (`"1"`).
    pub spec: String,
    pub front_matter: Option<FrontMatter>,
    /// Top-level blocks in document order (unknown bare blocks are prose and not listed).
    pub blocks: Vec<Block>,
    pub(crate) lines: Vec<String>,
    pub(crate) nodes: Vec<Node>,
}

/// Why a document was refused: the 1-based line (`None` for front matter) and a message that
/// names the problem and the fix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Refusal {
    pub line: Option<usize>,
    /// A stable kebab-case code, e.g. `unknown-column`.
    pub code: &'static str,
    pub message: String,
}

impl Refusal {
    pub(crate) fn at(line: usize, code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal { line: Some(line), code, message: message.into() }
    }

    pub(crate) fn front(code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal { line: None, code, message: message.into() }
    }
}

/// `line: message`, or the message alone for front-matter refusals.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{l}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Refusal {}
