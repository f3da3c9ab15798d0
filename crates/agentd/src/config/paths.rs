//! Relative paths in a file are read from that file's directory: a config
//! file (or an instruction document's `!config`) means the files beside it,
//! wherever agentd is started from. Paths from flags and `AGENTD_*`
//! variables are left alone, relative to the current directory as a shell
//! user expects; so the file's tree is rewritten before they are merged in.

use serde_yaml_ng::Value;
use std::path::{Component, Path};

/// What a key holds, and so how a relative value is made relative to the file.
#[derive(Clone, Copy)]
enum Kind {
    /// A file or directory.
    Path,
    /// A program: made relative only when it names a path (`./server.py`,
    /// `bin/tool`); a bare name is looked up on `PATH` as written.
    Command,
    /// A secret reference: `file:PATH` is a path, `env:NAME` is not.
    Secret,
}

/// Every key of the configuration that holds a path. `*` is every element
/// of a list or every value of a mapping.
const KEYS: &[(&[&str], Kind)] = &[
    (&["data_dir"], Kind::Path),
    (&["instruction"], Kind::Path),
    (&["tls", "cert"], Kind::Path),
    (&["tls", "key"], Kind::Path),
    (&["tls", "client_ca"], Kind::Path),
    (&["model", "script"], Kind::Path),
    (&["model", "record_to"], Kind::Path),
    (&["model", "openai", "api_key"], Kind::Secret),
    (&["model", "anthropic", "api_key"], Kind::Secret),
    (&["store", "password"], Kind::Secret),
    (&["auth", "tokens", "*", "token"], Kind::Secret),
    (&["bridges", "secrets", "*"], Kind::Secret),
    (&["a2a", "peers", "*", "credentials"], Kind::Secret),
    (&["mcp", "servers", "*", "http", "headers", "*"], Kind::Secret),
    (&["mcp", "servers", "*", "stdio", "command"], Kind::Command),
];

/// Rewrites the relative paths of `tree` (read from a file in `dir`) to
/// paths relative to `dir`. Values of the wrong type are left for the
/// deserializer to refuse with its usual message.
pub fn relative_to(tree: &mut Value, dir: &Path) {
    if dir.as_os_str().is_empty() {
        return;
    }
    for (path, kind) in KEYS {
        each(tree, path, &mut |v| rewrite(v, *kind, dir));
    }
}

fn each(node: &mut Value, path: &[&str], f: &mut dyn FnMut(&mut Value)) {
    let Some((first, rest)) = path.split_first() else {
        f(node);
        return;
    };
    match (node, *first) {
        (Value::Sequence(items), "*") => items.iter_mut().for_each(|v| each(v, rest, f)),
        (Value::Mapping(m), "*") => m.values_mut().for_each(|v| each(v, rest, f)),
        (Value::Mapping(m), key) => {
            if let Some(v) = m.get_mut(key) {
                each(v, rest, f);
            }
        }
        _ => {}
    }
}

fn rewrite(value: &mut Value, kind: Kind, dir: &Path) {
    let Value::String(s) = value else { return };
    if let Some(j) = relative(s, kind, dir) {
        *s = j;
    }
}

/// `value` made relative to `dir` as a `kind`, if it changes.
fn relative(value: &str, kind: Kind, dir: &Path) -> Option<String> {
    match kind {
        Kind::Path => join(dir, value),
        Kind::Command if value.contains('/') => join(dir, value),
        Kind::Command => None,
        Kind::Secret => value.strip_prefix("file:").and_then(|p| join(dir, p)).map(|p| format!("file:{p}")),
    }
}

/// The relative paths of an MCP server an instruction document in `dir`
/// declares (`!mcp`) made the document's, by the rules of a config file's
/// `mcp.servers`: a stdio command that names a path, and the `file:`
/// secrets of its headers (`auth` included).
pub fn document_server(spec: &mut agentd_mcp::ServerSpec, dir: &Path) {
    if dir.as_os_str().is_empty() {
        return;
    }
    match &mut spec.transport {
        agentd_mcp::TransportSpec::Stdio(stdio) => {
            if let Some(c) = relative(&stdio.command, Kind::Command, dir) {
                stdio.command = c;
            }
        }
        agentd_mcp::TransportSpec::Http(http) => {
            for h in &mut http.headers {
                let moved = relative(h.secret.reference(), Kind::Secret, dir);
                if let Some(secret) = moved.and_then(|r| agentd_runtime::model::SecretRef::parse(&r).ok()) {
                    h.secret = secret;
                }
            }
        }
    }
}

/// `dir/path` when `path` is relative (and not empty: an empty value is
/// refused later with the key's own message).
fn join(dir: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    if path.trim().is_empty() || p.is_absolute() {
        return None;
    }
    // `./x` is `dir/x`, not `dir/./x`, so that logs show a plain path.
    let rest: std::path::PathBuf = p.components().filter(|c| *c != Component::CurDir).collect();
    let joined = if rest.as_os_str().is_empty() { dir.to_path_buf() } else { dir.join(rest) };
    Some(joined.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::relative_to;
    use serde_yaml_ng::Value;
    use std::path::Path;

    #[test]
    fn relative_paths_become_the_files_own_and_nothing_else_changes() {
        let mut tree: Value = serde_yaml_ng::from_str(
            r#"
data_dir: .agentd
instruction: /abs/agent.md
tls: {cert: certs/server.pem, key: certs/server.key}
model:
  script: script.yaml
  openai: {api_key: "file:secrets/key", endpoints: [http://x/v1]}
  anthropic: {api_key: "env:KEY"}
auth:
  tokens: [{id: user:a, role: user, token: "file:a.token"}, {id: user:b, role: user, sha256: ab}]
bridges: {secrets: {ops: "file:/abs/ops", dev: "file:dev"}}
mcp:
  servers:
    - {name: a, stdio: {command: ./server.py, args: [data.txt]}}
    - {name: b, stdio: {command: python3}}
    - {name: c, http: {url: "http://x", headers: {Authorization: "file:h"}}}
card: {description: "file:not-a-path"}
"#,
        )
        .unwrap();
        relative_to(&mut tree, Path::new("conf"));
        let at = |p: &str| {
            let mut v = &tree;
            for k in p.split('.') {
                v = match k.parse::<usize>() {
                    Ok(i) => &v[i],
                    Err(_) => &v[k],
                };
            }
            v.as_str().unwrap_or_default().to_owned()
        };
        assert_eq!(at("data_dir"), "conf/.agentd");
        assert_eq!(at("instruction"), "/abs/agent.md", "absolute: as written");
        assert_eq!(at("tls.cert"), "conf/certs/server.pem");
        assert_eq!(at("tls.key"), "conf/certs/server.key");
        assert_eq!(at("model.script"), "conf/script.yaml");
        assert_eq!(at("model.openai.api_key"), "file:conf/secrets/key");
        assert_eq!(at("model.openai.endpoints.0"), "http://x/v1");
        assert_eq!(at("model.anthropic.api_key"), "env:KEY");
        assert_eq!(at("auth.tokens.0.token"), "file:conf/a.token");
        assert_eq!(at("bridges.secrets.ops"), "file:/abs/ops");
        assert_eq!(at("bridges.secrets.dev"), "file:conf/dev");
        assert_eq!(at("mcp.servers.0.stdio.command"), "conf/server.py");
        assert_eq!(at("mcp.servers.0.stdio.args.0"), "data.txt", "arguments are the program's own");
        assert_eq!(at("mcp.servers.1.stdio.command"), "python3", "a bare name is found on PATH");
        assert_eq!(at("mcp.servers.2.http.headers.Authorization"), "file:conf/h");
        assert_eq!(at("card.description"), "file:not-a-path", "only keys that hold paths");
    }
}
