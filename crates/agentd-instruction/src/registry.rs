//! The version-1 kind registry: every kind's disposition, forms, body, identity, grant and attributes.
//!
//! Transcribed from the specification digest §4 and `registry/kinds.json`; the per-kind attribute
//! lists follow `instruction.schema.json` (plus agentd's `principal` extension on `human`).

use std::fmt;
use std::str::FromStr;

/// What happens to a block's content: degraded into the prompt, folded into runtime
/// configuration, or resolved away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Disposition {
    Prose,
    Machinery,
    Structural,
}

/// How a block body is interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BodyType {
    None,
    Markdown,
    Yaml,
    Code,
    Table,
    Deflist,
    Text,
}

impl BodyType {
    /// The name used in the block tree (`body.type`).
    pub fn as_str(self) -> &'static str {
        match self {
            BodyType::None => "none",
            BodyType::Markdown => "markdown",
            BodyType::Yaml => "yaml",
            BodyType::Code => "code",
            BodyType::Table => "table",
            BodyType::Deflist => "deflist",
            BodyType::Text => "text",
        }
    }
}

/// A capability family of the trust ladder. `Default` needs no grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Default,
    Material,
    Knowledge,
    Interface,
    Identity,
    Compute,
    Infra,
    Compose,
}

impl Family {
    /// Every family an operator can grant (all but `Default`).
    pub const GRANTABLE: [Family; 7] = [
        Family::Material,
        Family::Knowledge,
        Family::Interface,
        Family::Identity,
        Family::Compute,
        Family::Infra,
        Family::Compose,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Family::Default => "default",
            Family::Material => "material",
            Family::Knowledge => "knowledge",
            Family::Interface => "interface",
            Family::Identity => "identity",
            Family::Compute => "compute",
            Family::Infra => "infra",
            Family::Compose => "compose",
        }
    }

    /// Families never admissible in a document that arrived over the wire.
    pub fn is_wire_floor(self) -> bool {
        matches!(self, Family::Identity | Family::Compose)
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Family {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Family::GRANTABLE.into_iter().find(|f| f.as_str() == s).ok_or_else(|| {
            format!(
                "unknown capability family {s:?} (known: material, knowledge, interface, identity, compute, infra, compose)"
            )
        })
    }
}

/// Form bits (a kind lists the forms it may be written in).
pub(crate) const C: u8 = 1; // container
pub(crate) const L: u8 = 2; // leaf
pub(crate) const S: u8 = 4; // set
pub(crate) const SEC: u8 = 8; // section
pub(crate) const K: u8 = 16; // keyword
pub(crate) const A: u8 = 32; // alert

/// How an attribute value is normalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AttrType {
    Str,
    Flag,
    List,
}

use AttrType::{Flag as F, List as LI, Str as ST};

/// One registered kind.
#[derive(Debug)]
pub(crate) struct KindSpec {
    pub name: &'static str,
    pub disposition: Disposition,
    pub forms: u8,
    pub body: BodyType,
    pub identity: bool,
    pub family: Family,
    /// Sub-blocks: the only parent kind they may appear in.
    pub parent: Option<&'static str>,
    /// `None`: any attribute is accepted as a string (`when`).
    pub attrs: Option<&'static [(&'static str, AttrType)]>,
    pub required: &'static [&'static str],
    /// What the body holds, for "requires a body (…)" refusals.
    pub what: &'static str,
}

impl KindSpec {
    pub fn has(&self, form: u8) -> bool {
        self.forms & form != 0
    }

    pub fn attr_type(&self, key: &str) -> Option<AttrType> {
        match self.attrs {
            None => Some(AttrType::Str),
            Some(list) => list.iter().find(|(k, _)| *k == key).map(|(_, t)| *t),
        }
    }

    pub fn is_sub_block(&self) -> bool {
        self.parent.is_some()
    }
}

const PROSE_ATTRS: &[(&str, AttrType)] = &[("name", ST), ("title", ST), ("verbatim", F)];

const fn prose(name: &'static str, forms: u8) -> KindSpec {
    KindSpec {
        name,
        disposition: Disposition::Prose,
        forms,
        body: BodyType::Markdown,
        identity: false,
        family: Family::Default,
        parent: None,
        attrs: Some(PROSE_ATTRS),
        required: &[],
        what: "text",
    }
}

#[allow(clippy::too_many_arguments)]
const fn mach(
    name: &'static str,
    forms: u8,
    body: BodyType,
    family: Family,
    identity: bool,
    attrs: &'static [(&'static str, AttrType)],
    required: &'static [&'static str],
    what: &'static str,
) -> KindSpec {
    KindSpec {
        name,
        disposition: Disposition::Machinery,
        forms,
        body,
        identity,
        family,
        parent: None,
        attrs: Some(attrs),
        required,
        what,
    }
}

const fn sub(
    name: &'static str,
    parent: &'static str,
    forms: u8,
    body: BodyType,
    identity: bool,
    attrs: &'static [(&'static str, AttrType)],
    required: &'static [&'static str],
) -> KindSpec {
    KindSpec {
        name,
        disposition: Disposition::Machinery,
        forms,
        body,
        identity,
        family: Family::Default,
        parent: Some(parent),
        attrs: Some(attrs),
        required,
        what: "its definition",
    }
}

use BodyType as B;
use Family as Fa;

const V: (&str, AttrType) = ("verbatim", F);

pub(crate) static KINDS: &[KindSpec] = &[
    prose("must", C | K | A),
    prose("should", C | K | A),
    prose("never", C | K | A),
    prose("guardrail", C | K | A),
    prose("note", C | K | A),
    prose("info", C | K | A),
    prose("tip", C | K | A),
    prose("important", C | K | A),
    prose("warning", C | K | A),
    prose("caution", C | K | A),
    prose("example", C | K | A),
    prose("context", C),
    prose("form", C),
    KindSpec {
        attrs: Some(&[("cap", ST), ("allow", LI), ("deny", LI), ("name", ST), V]),
        required: &["cap"],
        ..prose("tool", C | L)
    },
    KindSpec { body: B::Deflist, what: "its entries", ..prose("glossary", C) },
    KindSpec { disposition: Disposition::Structural, attrs: None, ..prose("when", C) },
    KindSpec {
        disposition: Disposition::Structural,
        body: B::None,
        attrs: Some(&[("id", ST), ("uri", ST), V]),
        ..prose("include", L)
    },
    KindSpec {
        disposition: Disposition::Structural,
        body: B::None,
        identity: true,
        attrs: Some(&[
            ("name", ST),
            ("type", ST),
            ("values", LI),
            ("required", F),
            ("default", ST),
            ("source", ST),
            ("description", ST),
            V,
        ]),
        ..prose("param", L | S)
    },
    mach(
        "workflow",
        C | SEC,
        B::Yaml,
        Fa::Default,
        true,
        &[("name", ST), ("armed", F), ("description", ST), V],
        &[],
        "its steps",
    ),
    mach(
        "skill",
        C | S | SEC,
        B::Markdown,
        Fa::Default,
        true,
        &[("name", ST), ("description", ST), ("when", ST), V],
        &[],
        "its guidance",
    ),
    mach("config", C, B::Yaml, Fa::Default, false, &[V], &[], "its definition"),
    mach(
        "mcp",
        C | L,
        B::Yaml,
        Fa::Default,
        true,
        &[("name", ST), ("endpoint", ST), ("allow", LI), ("deny", LI), V],
        &[],
        "its definition",
    ),
    mach(
        "stream",
        C | L | S,
        B::Yaml,
        Fa::Default,
        true,
        &[("name", ST), ("retention", ST), V],
        &[],
        "its definition",
    ),
    mach("tools", C, B::Yaml, Fa::Default, false, &[V], &[], "its definition"),
    mach(
        "file",
        C,
        B::Text,
        Fa::Material,
        true,
        &[("name", ST), ("path", ST), ("mode", ST), V],
        &["path"],
        "a text body",
    ),
    mach("data", C, B::Table, Fa::Default, true, &[("name", ST), ("format", ST), V], &[], "its rows"),
    mach(
        "media",
        C | L,
        B::Markdown,
        Fa::Material,
        true,
        &[("name", ST), ("kind", ST), ("src", ST), ("sha256", ST), V],
        &[],
        "text",
    ),
    mach(
        "asset",
        L,
        B::None,
        Fa::Material,
        true,
        &[("name", ST), ("kind", ST), ("src", ST), ("sha256", ST), V],
        &[],
        "",
    ),
    mach(
        "knowledge",
        C | L,
        B::Yaml,
        Fa::Knowledge,
        true,
        &[("name", ST), ("server", ST), V],
        &[],
        "its definition",
    ),
    mach(
        "retrieval",
        C,
        B::Yaml,
        Fa::Knowledge,
        true,
        &[("name", ST), ("knowledge", ST), V],
        &[],
        "its definition",
    ),
    mach(
        "source",
        C | L | S,
        B::Yaml,
        Fa::Knowledge,
        true,
        &[("name", ST), ("kind", ST), ("server", ST), ("path", ST), ("tags", LI), V],
        &[],
        "its definition",
    ),
    mach(
        "endpoint",
        C,
        B::Yaml,
        Fa::Interface,
        true,
        &[("name", ST), ("kind", ST), ("path", ST), ("methods", LI), V],
        &[],
        "its definition",
    ),
    mach("ui", C, B::Markdown, Fa::Interface, true, &[("name", ST), ("kind", ST), V], &[], "text"),
    mach(
        "human",
        C | L | S,
        B::Yaml,
        Fa::Interface,
        true,
        &[
            ("name", ST),
            ("role", ST),
            ("channel", ST),
            ("escalate_after", ST),
            ("may", LI),
            ("principal", ST),
            V,
        ],
        &[],
        "its definition",
    ),
    mach(
        "channel",
        C | L | S,
        B::Yaml,
        Fa::Interface,
        true,
        &[("name", ST), ("kind", ST), ("server", ST), ("target", ST), ("tags", LI), V],
        &[],
        "its definition",
    ),
    mach(
        "peer",
        C | L | S,
        B::Yaml,
        Fa::Identity,
        true,
        &[("name", ST), ("endpoint", ST), V],
        &[],
        "its definition",
    ),
    mach("policy", C, B::Yaml, Fa::Identity, true, &[("name", ST), V], &[], "its definition"),
    mach(
        "secret-ref",
        L | S,
        B::None,
        Fa::Identity,
        true,
        &[("name", ST), ("kind", ST), ("path", ST), V],
        &[],
        "",
    ),
    mach(
        "runtime",
        C,
        B::Yaml,
        Fa::Compute,
        true,
        &[("name", ST), ("isolation", ST), ("image", ST), ("network", ST), V],
        &[],
        "its definition",
    ),
    mach(
        "function",
        C | SEC,
        B::Code,
        Fa::Compute,
        true,
        &[("name", ST), ("runtime", ST), ("lang", ST), ("description", ST), V],
        &["runtime"],
        "its code",
    ),
    mach(
        "test",
        C | SEC,
        B::Markdown,
        Fa::Compute,
        true,
        &[("name", ST), ("target", ST), ("description", ST), V],
        &["target"],
        "its cases",
    ),
    mach("fixture", C, B::Table, Fa::Compute, true, &[("name", ST), V], &[], "its rows"),
    mach(
        "git",
        C | L,
        B::Yaml,
        Fa::Infra,
        true,
        &[("name", ST), ("url", ST), ("ref", ST), ("readonly", F), V],
        &[],
        "its definition",
    ),
    mach("volume", L, B::None, Fa::Infra, true, &[("name", ST), ("kind", ST), ("size", ST), V], &[], ""),
    mach("image", L, B::None, Fa::Infra, true, &[("name", ST), ("digest", ST), ("registry", ST), V], &[], ""),
    mach(
        "agent",
        C | L | S,
        B::Yaml,
        Fa::Compose,
        true,
        &[("name", ST), ("template", ST), ("ttl", ST), V],
        &[],
        "its definition",
    ),
    sub("override", "mcp", C, B::Yaml, false, &[("target", ST), V], &["target"]),
    sub("case", "test", C | S, B::Yaml, true, &[("name", ST), ("given", ST), ("expect", ST), V], &[]),
    sub("signature", "function", C, B::Yaml, false, &[V], &[]),
    sub("schema", "ui", C, B::Yaml, false, &[V], &[]),
    sub("preview", "ui", C, B::Text, false, &[V], &[]),
];

/// Looks a kind up by its (lower-case) name.
pub(crate) fn kind(name: &str) -> Option<&'static KindSpec> {
    KINDS.iter().find(|k| k.name == name)
}

/// Keyword and alert words, longest first, with the kind each maps to.
pub(crate) const KEYWORDS: &[(&str, &str)] = &[
    ("MUST NOT", "never"),
    ("SHOULD NOT", "should"),
    ("MUST", "must"),
    ("SHOULD", "should"),
    ("NEVER", "never"),
    ("GUARDRAIL", "guardrail"),
    ("NOTE", "note"),
    ("INFO", "note"),
    ("TIP", "tip"),
    ("WARNING", "warning"),
    ("CAUTION", "caution"),
    ("IMPORTANT", "important"),
    ("EXAMPLE", "example"),
];

/// The bold label a normativity kind delivers with (`**MUST:**`).
pub(crate) fn label(kind: &str) -> String {
    match kind {
        "info" => "NOTE".to_string(),
        other => other.to_ascii_uppercase(),
    }
}

/// Kinds that may be the target of a reference or appear in `@kind/name`.
pub(crate) fn is_known_kind(name: &str) -> bool {
    kind(name).is_some()
}
