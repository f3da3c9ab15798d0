//! Accessors for the machinery agentd acts on: `!config`, `!mcp`, `!workflow`, `!human`,
//! `!channel` (bodies are exposed as YAML text with their line; semantics live elsewhere).

use crate::model::{Block, Document, Form};
use crate::params::{self, Parameter};
use crate::registry::BodyType;
use crate::yaml;
use serde_yaml_ng::Value as Yaml;

/// A YAML body and the 1-based document line of its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlBody {
    pub yaml: String,
    pub line: usize,
}

/// A `!workflow` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    pub name: String,
    /// The dialect-3 definition (`steps:` …), unparsed.
    pub body: YamlBody,
    /// The block's opening line (fence or section heading).
    pub line: usize,
    pub description: Option<String>,
    pub armed: Option<bool>,
}

/// A `!mcp` server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    pub name: String,
    pub endpoint: Option<String>,
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    /// The YAML body (`auth`, …); empty for the leaf form.
    pub body: YamlBody,
    pub overrides: Vec<Override>,
    pub line: usize,
}

/// An `override` sub-block of an `!mcp` server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    pub target: String,
    pub body: YamlBody,
    pub line: usize,
}

/// A human role (`::!human{…}`, `:::!human{…}` with a YAML body, or a `:::!human[]` row).
/// Attributes win over body keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Human {
    pub name: String,
    pub role: Option<String>,
    /// `@channel/x`.
    pub channel: Option<String>,
    /// A duration such as `15m`.
    pub escalate_after: Option<String>,
    /// References such as `@workflow/deploy`.
    pub may: Vec<String>,
    /// agentd extension: who answers for this role (default `operator`).
    pub principal: String,
    pub line: usize,
}

/// A `!channel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    pub name: String,
    pub kind: Option<String>,
    pub server: Option<String>,
    pub target: Option<String>,
    pub tags: Vec<String>,
    pub line: usize,
}

fn yaml_body(b: &Block) -> YamlBody {
    match &b.body {
        Some(bd) if bd.kind == BodyType::Yaml => YamlBody { yaml: bd.text.clone(), line: bd.line },
        _ => YamlBody { yaml: String::new(), line: b.line },
    }
}

/// A field from attributes, else from the YAML body.
fn field(b: &Block, body: Option<&Yaml>, key: &str) -> Option<String> {
    b.attrs
        .str(key)
        .map(str::to_string)
        .or_else(|| body.and_then(|v| yaml::get(v, key)).map(yaml::scalar_text))
}

fn list_field(b: &Block, body: Option<&Yaml>, key: &str) -> Vec<String> {
    if b.attrs.get(key).is_some() {
        return b.attrs.list(key);
    }
    match body.and_then(|v| yaml::get(v, key)) {
        Some(Yaml::Sequence(s)) => s.iter().map(yaml::scalar_text).collect(),
        Some(Yaml::String(s)) => params::split_list(s),
        _ => Vec::new(),
    }
}

fn parsed(b: &Block) -> Option<Yaml> {
    let bd = b.body.as_ref().filter(|bd| bd.kind == BodyType::Yaml)?;
    yaml::parse(&bd.text, bd.line).ok()
}

impl Document {
    /// Every block in document order, depth first (children and set members included).
    pub fn all_blocks(&self) -> Vec<&Block> {
        self.blocks.iter().flat_map(Block::walk).collect()
    }

    /// Blocks (or set members) of `kind` that carry their own identity or content.
    fn of_kind(&self, kind: &str) -> Vec<&Block> {
        self.all_blocks().into_iter().filter(|b| b.kind == kind && b.form != Form::Set).collect()
    }

    /// The block of `kind` named `name`.
    pub fn find(&self, kind: &str, name: &str) -> Option<&Block> {
        self.of_kind(kind).into_iter().find(|b| b.name.as_deref() == Some(name))
    }

    /// `!config` fragments, in document order.
    pub fn config(&self) -> Vec<YamlBody> {
        self.of_kind("config").into_iter().map(yaml_body).collect()
    }

    /// `!workflow` blocks, in document order.
    pub fn workflows(&self) -> Vec<Workflow> {
        self.of_kind("workflow")
            .into_iter()
            .map(|b| Workflow {
                name: b.name.clone().unwrap_or_default(),
                body: yaml_body(b),
                line: b.line,
                description: b.attrs.str("description").map(str::to_string),
                armed: b.attrs.flag("armed"),
            })
            .collect()
    }

    /// `!mcp` servers, in document order.
    pub fn mcp_servers(&self) -> Vec<McpServer> {
        self.of_kind("mcp")
            .into_iter()
            .map(|b| McpServer {
                name: b.name.clone().unwrap_or_default(),
                endpoint: b.attrs.str("endpoint").map(str::to_string),
                allow: b.attrs.list("allow"),
                deny: b.attrs.list("deny"),
                body: yaml_body(b),
                overrides: b
                    .children
                    .iter()
                    .filter(|c| c.kind == "override")
                    .map(|c| Override {
                        target: c.attrs.str("target").unwrap_or_default().to_string(),
                        body: yaml_body(c),
                        line: c.line,
                    })
                    .collect(),
                line: b.line,
            })
            .collect()
    }

    /// Human roles from every form, in document order.
    pub fn humans(&self) -> Vec<Human> {
        self.of_kind("human")
            .into_iter()
            .map(|b| {
                let body = parsed(b);
                let body = body.as_ref();
                Human {
                    name: b.name.clone().unwrap_or_default(),
                    role: field(b, body, "role"),
                    channel: field(b, body, "channel"),
                    escalate_after: field(b, body, "escalate_after"),
                    may: list_field(b, body, "may"),
                    principal: field(b, body, "principal").unwrap_or_else(|| "operator".into()),
                    line: b.line,
                }
            })
            .collect()
    }

    /// Channels from every form, in document order.
    pub fn channels(&self) -> Vec<Channel> {
        self.of_kind("channel")
            .into_iter()
            .map(|b| {
                let body = parsed(b);
                let body = body.as_ref();
                Channel {
                    name: b.name.clone().unwrap_or_default(),
                    kind: field(b, body, "kind"),
                    server: field(b, body, "server"),
                    target: field(b, body, "target"),
                    tags: list_field(b, body, "tags"),
                    line: b.line,
                }
            })
            .collect()
    }

    /// Declared parameters: front matter first, then `param` blocks and rows.
    pub fn parameters(&self) -> Vec<Parameter> {
        let mut out: Vec<Parameter> = self.front_matter.iter().flat_map(|fm| fm.parameters.clone()).collect();
        for b in self.of_kind("param") {
            if let Ok(p) = params::from_attrs(&b.attrs)
                && !out.iter().any(|q| q.name == p.name)
            {
                out.push(p);
            }
        }
        out
    }

    /// Ids of the documents this one includes.
    pub fn includes(&self) -> Vec<String> {
        self.of_kind("include").into_iter().filter_map(crate::deliver::include_id).collect()
    }
}
