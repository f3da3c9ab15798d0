//! Where servers come from: the configuration's `mcp.servers` and the
//! instruction document's `!mcp` blocks. Both are the operator's word, so
//! both may name loopback and private endpoints (local tool servers are
//! the common case), and only they may run a stdio child. A document that
//! arrives over the wire may declare only HTTP servers, each checked
//! against the SSRF policy before every connection.

use crate::config::{DEFAULT_TIMEOUT_SECS, ServerConfig, StdioConfig, ToolFilterConfig};
use crate::glob::ToolFilter;
use crate::policy::{Action, OnInterrupt, PolicyConfig};
use crate::server::{Header, HttpSpec, ServerSpec, StdioSpec, TransportSpec};
use agentd_core::PushUrlPolicy;
use agentd_instruction::McpServer;
use agentd_runtime::model::SecretRef;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Who declared a document's servers.
#[derive(Clone)]
pub enum Origin {
    /// The operator's own instruction document.
    Operator,
    /// A document that arrived over the wire: HTTP only, under this policy.
    Wire(Arc<dyn PushUrlPolicy>),
}

/// Checks a server name: what its tools' names begin with.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.contains("__");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the MCP server name {name:?} must be 1 to 32 of [A-Za-z0-9_-] without \"__\" (it starts its tools' names)"
        ))
    }
}

fn check_url(name: &str, url: &str) -> Result<(), String> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(format!("the MCP server {name}'s URL {url:?} must be http:// or https://"))
    }
}

fn filter(f: &ToolFilterConfig) -> ToolFilter {
    ToolFilter { allow: f.allow.clone(), deny: f.deny.clone() }
}

/// A server of the configuration, checked.
pub fn from_config(s: &ServerConfig) -> Result<ServerSpec, String> {
    check_name(&s.name)?;
    let name = &s.name;
    let transport = match (&s.http, &s.stdio) {
        (Some(h), None) => {
            check_url(name, &h.url)?;
            TransportSpec::Http(HttpSpec {
                url: h.url.clone(),
                headers: h.headers.iter().map(|(k, v)| header(k, "", v)).collect(),
                url_policy: None,
            })
        }
        (None, Some(c)) => TransportSpec::Stdio(stdio(name, c)?),
        _ => {
            return Err(format!(
                "the MCP server {name} needs exactly one of http: {{url}} and stdio: {{command}}"
            ));
        }
    };
    if s.timeout_secs == 0 {
        return Err(format!("the MCP server {name}'s timeout_secs must be at least 1"));
    }
    Ok(ServerSpec {
        name: name.clone(),
        transport,
        filter: filter(&s.tools),
        timeout: Duration::from_secs(s.timeout_secs),
        policy: s.policy.clone(),
    })
}

fn stdio(name: &str, c: &StdioConfig) -> Result<StdioSpec, String> {
    if c.command.trim().is_empty() {
        return Err(format!("the MCP server {name}'s stdio.command is empty"));
    }
    Ok(StdioSpec {
        command: c.command.clone(),
        args: c.args.clone(),
        env: c.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    })
}

/// What a `!mcp` block's YAML body may say.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Body {
    auth: Option<Auth>,
    headers: BTreeMap<String, SecretRef>,
    /// Operator's document only.
    stdio: Option<StdioConfig>,
    timeout_secs: Option<u64>,
    /// Which calls are made, asked about or denied; from the wire, only
    /// stricter than the default (no `allow`, no `trusted`, no
    /// `on_interrupt: retry`, no `idempotent` tools: both re-run calls unasked).
    policy: PolicyConfig,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Auth {
    kind: String,
    token: SecretRef,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct OverrideBody {
    disabled: bool,
}

/// A `!mcp` block of a document, checked for its origin. An `override`
/// with `disabled: true` denies its tool.
/// A YAML error in a block body, its place given as the document's line
/// (`body_line` is where the body starts) rather than the body's.
fn in_document(e: &serde_yaml_ng::Error, body_line: usize) -> String {
    let text = e.to_string();
    let Some(at) = e.location() else { return text };
    let suffix = format!(" at line {} column {}", at.line(), at.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text);
    format!("{message} (document line {}, column {})", body_line + at.line() - 1, at.column())
}

pub fn from_document(m: &McpServer, origin: &Origin) -> Result<ServerSpec, String> {
    check_name(&m.name)?;
    let name = &m.name;
    let at = |e: String| format!("the !mcp block {name} (line {}): {e}", m.line);
    let body: Body = if m.body.yaml.trim().is_empty() {
        Body::default()
    } else {
        serde_yaml_ng::from_str(&m.body.yaml).map_err(|e| at(in_document(&e, m.body.line)))?
    };
    if matches!(origin, Origin::Wire(_)) {
        let allows = body.policy.default == Some(Action::Allow)
            || body.policy.tools.values().any(|a| *a == Action::Allow);
        let reruns =
            body.policy.on_interrupt == Some(OnInterrupt::Retry) || !body.policy.idempotent.is_empty();
        if body.policy.trusted || allows || reruns {
            return Err(at(
                "a document from the wire may not mark a server trusted, allow its calls unasked \
                 or retry its interrupted calls (on_interrupt: retry, idempotent)"
                    .into(),
            ));
        }
    }
    let mut deny = m.deny.clone();
    for o in &m.overrides {
        let b: OverrideBody = serde_yaml_ng::from_str(&o.body.yaml).unwrap_or_default();
        if b.disabled {
            deny.push(o.target.clone());
        }
    }
    let transport = match (&m.endpoint, &body.stdio, origin) {
        (None, Some(c), Origin::Operator) => TransportSpec::Stdio(stdio(name, c).map_err(at)?),
        (_, Some(_), Origin::Wire(_)) => {
            return Err(at("a document from the wire may not start a stdio server".into()));
        }
        (Some(url), None, _) => {
            check_url(name, url).map_err(at)?;
            let mut headers: Vec<Header> = body.headers.iter().map(|(k, v)| header(k, "", v)).collect();
            if let Some(auth) = body.auth {
                if auth.kind != "static" && auth.kind != "bearer" {
                    return Err(at(format!("auth kind {:?} is not supported (static or bearer)", auth.kind)));
                }
                headers.push(header("Authorization", "Bearer ", &auth.token));
            }
            let url_policy = match origin {
                Origin::Operator => None,
                Origin::Wire(p) => Some(p.clone()),
            };
            TransportSpec::Http(HttpSpec { url: url.clone(), headers, url_policy })
        }
        _ => return Err(at("needs exactly one of the endpoint attribute and a stdio: body".into())),
    };
    Ok(ServerSpec {
        name: name.clone(),
        transport,
        filter: ToolFilter { allow: m.allow.clone(), deny },
        timeout: Duration::from_secs(body.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1)),
        policy: body.policy,
    })
}

fn header(name: &str, prefix: &str, secret: &SecretRef) -> Header {
    Header { name: name.to_owned(), prefix: prefix.to_owned(), secret: secret.clone() }
}
