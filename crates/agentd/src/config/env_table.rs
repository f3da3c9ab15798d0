//! Every `AGENTD_*` variable `docs/configuration.md` names is read: set on
//! its own (with what validation needs beside it), it shows up at its key
//! in the effective configuration; and every variable agentd reads is in
//! the document.

use super::{Config, ServeFlags, env, load_from};
use serde_yaml_ng::Value;
use std::collections::{BTreeMap, BTreeSet};

const DOC: &str = include_str!("../../../../docs/configuration.md");

/// Values for keys a number or boolean flip cannot give: enumerations,
/// strings, lists, mappings and optional keys; and the variables set beside
/// one so the configuration stays valid.
type Sample = (&'static str, &'static str, &'static [(&'static str, &'static str)]);

const SAMPLES: &[Sample] = &[
    ("AGENTD_LISTEN", "127.0.0.1:0", &[]),
    ("AGENTD_METRICS_LISTEN", "127.0.0.1:9464", &[]),
    ("AGENTD_DATA_DIR", "/var/lib/agentd", &[]),
    ("AGENTD_AGENT", "tck", &[]),
    (
        "AGENTD_INSTRUCTION",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../agentd-instruction/examples/agent.md"),
        &[],
    ),
    ("AGENTD_PUBLIC_URL", "https://agent.example.com", &[]),
    ("AGENTD_A2A_VERSION", "strict", &[]),
    ("AGENTD_STORE_SYNC", "normal", &[]),
    ("AGENTD_SERVER_MAX_BODY_BYTES_IN_FLIGHT_PER_PRINCIPAL", "16777216", &[]),
    ("AGENTD_SERVER_MAX_STREAMS_PER_PRINCIPAL", "64", &[]),
    ("AGENTD_STORE", "postgres://agentd@db.example.com:5432/agentd", &[]),
    ("AGENTD_STORE_URL", "postgres://agentd@db.example.com:5432/agentd", &[]),
    (
        "AGENTD_STORE_PASSWORD",
        "env:AGENTD_DB_PASSWORD",
        &[("AGENTD_STORE_URL", "postgres://agentd@db.example.com/agentd")],
    ),
    ("AGENTD_REPLICA_ID", "r1", &[]),
    ("AGENTD_REPLICAS_POLL_INTERVAL_MS", "500", &[]),
    ("AGENTD_MODEL", "scripted", &[]),
    ("AGENTD_MODEL_KIND", "scripted", &[]),
    ("AGENTD_MODEL_SCRIPT", "/etc/agentd/script.yaml", &[]),
    ("AGENTD_MODEL_RECORD_TO", "/tmp/requests.jsonl", &[]),
    ("AGENTD_DURABILITY_RETRY_TOOLS", "[files__read, 'files__list_*']", &[]),
    ("AGENTD_MODEL_URL", "http://127.0.0.1:8080/v1,http://127.0.0.1:8081/v1", &[]),
    ("AGENTD_MODEL_OPENAI_ENDPOINTS", "http://127.0.0.1:8080/v1", &[]),
    ("AGENTD_MODEL_NAME", "smollm2", &[]),
    ("AGENTD_MODEL_OPENAI_MODEL", "smollm2", &[]),
    ("AGENTD_MODEL_OPENAI_API_KEY", "env:OPENAI_API_KEY", &[]),
    ("AGENTD_MODEL_OPENAI_HEADERS", "{x-team: platform}", &[]),
    ("AGENTD_MODEL_ANTHROPIC_ENDPOINTS", "https://gateway.example.com,https://api.anthropic.com", &[]),
    ("AGENTD_MODEL_ANTHROPIC_MODEL", "claude-sonnet-4-5", &[]),
    ("AGENTD_MODEL_ANTHROPIC_FALLBACK_MODELS", "claude-haiku-4-5", &[]),
    ("AGENTD_MODEL_ANTHROPIC_API_KEY", "env:ANTHROPIC_API_KEY", &[]),
    ("AGENTD_MODEL_ANTHROPIC_HEADERS", "{anthropic-beta: example-2025}", &[]),
    ("AGENTD_LIMITS_MAX_OUTPUT_TOKENS", "512", &[]),
    ("AGENTD_AUTH_TOKENS", "[{id: 'user:alice', role: user, token: 'env:ALICE_TOKEN'}]", &[]),
    ("AGENTD_AUTH_RESOURCE", "https://agent.example.com", &[]),
    (
        "AGENTD_AUTH_ISSUERS",
        "[{issuer: 'https://idp.example.com', role_claim: groups}]",
        &[("AGENTD_AUTH_RESOURCE", "https://a.example.com")],
    ),
    ("AGENTD_TLS_CERT", "/etc/agentd/tls/server.pem", &[("AGENTD_TLS_KEY", "/etc/agentd/tls/server.key")]),
    ("AGENTD_TLS_KEY", "/etc/agentd/tls/server.key", &[("AGENTD_TLS_CERT", "/etc/agentd/tls/server.pem")]),
    (
        "AGENTD_TLS_CLIENT_CA",
        "/etc/agentd/tls/clients-ca.pem",
        &[
            ("AGENTD_TLS_CERT", "/etc/agentd/tls/server.pem"),
            ("AGENTD_TLS_KEY", "/etc/agentd/tls/server.key"),
        ],
    ),
    ("AGENTD_TLS_CLIENT_IDENTITY_FROM", "uri", &[]),
    ("AGENTD_TLS_CLIENT_IDENTITY_PREFIX", "spiffe:", &[]),
    ("AGENTD_TLS_CLIENT_IDENTITY_ROLE", "user", &[]),
    ("AGENTD_TLS_CLIENT_IDENTITY_ROLES", "{ops-console: operator}", &[]),
    ("AGENTD_COMMANDS_GRANTS_USER", "status,gate.list", &[]),
    ("AGENTD_COMMANDS_GRANTS_AGENT", "[status]", &[]),
    ("AGENTD_BRIDGES_SECRETS", "{ops: 'env:OPS_SECRET'}", &[]),
    (
        "AGENTD_MCP_SERVERS",
        "[{name: files, http: {url: 'http://127.0.0.1:8931/mcp'}, tools: {deny: ['*delete*']}}]",
        &[],
    ),
    ("AGENTD_MCP_APPROVALS_HUMAN", "@human/oncall", &[]),
    ("AGENTD_TELEMETRY_OTLP_ENDPOINT", "http://collector.example.com:4318", &[]),
    ("AGENTD_LOG", "debug", &[]),
    ("AGENTD_LOG_LEVEL", "agentd=debug,info", &[]),
    ("AGENTD_LOG_FORMAT", "json", &[]),
    ("AGENTD_CARD_NAME", "Reviewer", &[]),
    ("AGENTD_CARD_DESCRIPTION", "Reviews changes.", &[]),
    ("AGENTD_CARD_DOCUMENTATION_URL", "https://docs.example.com", &[]),
    ("AGENTD_CARD_PROVIDER", "{organization: Example, url: 'https://example.com'}", &[]),
    ("AGENTD_CARD_PROVIDER_ORGANIZATION", "Example", &[("AGENTD_CARD_PROVIDER_URL", "https://example.com")]),
    ("AGENTD_CARD_PROVIDER_URL", "https://example.com", &[("AGENTD_CARD_PROVIDER_ORGANIZATION", "Example")]),
];

fn documented() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = DOC;
    while let Some(at) = rest.find("AGENTD_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        // `AGENTD_*` in prose is the family, not a variable.
        if name.len() > "AGENTD_".len() {
            out.insert(name);
        }
    }
    out
}

fn effective(env: &BTreeMap<String, String>) -> Value {
    let cfg = load_from(&ServeFlags::default(), env).unwrap_or_else(|e| panic!("{env:?}: {e:#}"));
    serde_yaml_ng::to_value(cfg).expect("serializes")
}

fn at<'a>(v: &'a Value, path: &[String]) -> &'a Value {
    path.iter().fold(v, |v, k| v.get(k.as_str()).unwrap_or(&Value::Null))
}

#[test]
fn every_documented_variable_sets_its_key() {
    let defaults = serde_yaml_ng::to_value(Config::default()).expect("serializes");
    let variables = env::variables();
    let documented = documented();
    for name in &documented {
        if env::SPECIAL.contains(&name.as_str()) || env::CLIENT.contains(&name.as_str()) {
            continue; // Not key = value: checked below, or the client's.
        }
        let variable = variables
            .iter()
            .find(|v| &v.name == name)
            .unwrap_or_else(|| panic!("docs/configuration.md names {name}, which agentd does not read"));
        let default = at(&defaults, &variable.path);
        let (value, beside) = match SAMPLES.iter().find(|(n, _, _)| n == name) {
            Some((_, v, beside)) => ((*v).to_owned(), *beside),
            None => match default {
                Value::Bool(b) => ((!b).to_string(), &[][..]),
                Value::Number(n) => ((n.as_f64().expect("a number") as u64 + 1).to_string(), &[][..]),
                other => panic!("{name}: give a sample in SAMPLES for a key whose default is {other:?}"),
            },
        };
        let mut vars: BTreeMap<String, String> =
            beside.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        vars.insert(name.clone(), value.clone());
        let got = effective(&vars);
        let got = at(&got, &variable.path);
        assert_ne!(got, default, "{name}={value:?} left {} at its default", variable.path.join("."));
        let text = match got {
            Value::String(s) => s.clone(),
            other => serde_yaml_ng::to_string(other).expect("serializes"),
        };
        let first = value.split(',').next().unwrap_or_default().trim_matches(['[', ']', '{', '}']);
        let first = first.split(':').next().unwrap_or_default().trim().trim_matches('\'');
        assert!(text.contains(first), "{name}={value:?} gave {}: {text}", variable.path.join("."));
    }
    for variable in &variables {
        assert!(
            documented.contains(&variable.name),
            "{} ({}) is not in docs/configuration.md",
            variable.name,
            variable.path.join(".")
        );
    }
    for name in env::SPECIAL {
        assert!(documented.contains(*name), "{name} is not in docs/configuration.md");
    }
}

#[test]
fn the_config_file_and_peers_variables_are_read() {
    let dir = std::env::temp_dir().join(format!("agentd-env-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("agentd.yaml");
    std::fs::write(&file, "sse_keep_alive_secs: 99\n").expect("write");
    let env = BTreeMap::from([
        ("AGENTD_CONFIG".to_owned(), file.display().to_string()),
        ("AGENTD_A2A_PEERS".to_owned(), "reviewer=https://reviewer.example.com".to_owned()),
    ]);
    let cfg = load_from(&ServeFlags::default(), &env).expect("loads");
    assert_eq!(cfg.sse_keep_alive_secs, 99);
    assert_eq!(cfg.a2a.peers.len(), 1);
    assert_eq!(cfg.a2a.peers[0].name, "reviewer");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_value_names_its_variable_and_an_unknown_one_is_reported() {
    let env = BTreeMap::from([("AGENTD_SERVER_MAX_STREAMS".to_owned(), "many".to_owned())]);
    let e = load_from(&ServeFlags::default(), &env).unwrap_err().to_string();
    assert!(e.contains("AGENTD_SERVER_MAX_STREAMS") && e.contains("not a number"), "{e}");
    let env = BTreeMap::from([("AGENTD_STORE_SYNC".to_owned(), "sometimes".to_owned())]);
    let e = format!("{:#}", load_from(&ServeFlags::default(), &env).unwrap_err());
    assert!(e.contains("AGENTD_STORE_SYNC") && e.contains("sometimes"), "{e}");
    let env = BTreeMap::from([("AGENTD_LISTN".to_owned(), "0.0.0.0:1".to_owned())]);
    let cfg = load_from(&ServeFlags::default(), &env).expect("an unknown variable is not an error");
    assert_eq!(cfg.unknown_env, ["AGENTD_LISTN"]);
    assert_eq!(cfg.listen, Config::default().listen);
}

#[test]
fn mcp_servers_come_from_variables_and_flags_and_a_bad_one_is_refused_by_its_key() {
    let env = BTreeMap::from([(
        "AGENTD_MCP_SERVERS".to_owned(),
        "[{name: local, stdio: {command: mcp-files, args: [--root, /srv]}, timeout_secs: 5}]".to_owned(),
    )]);
    let flags =
        ServeFlags { mcp_servers: vec!["web=http://127.0.0.1:9/mcp".into()], ..ServeFlags::default() };
    let cfg = load_from(&flags, &env).expect("loads");
    let names: Vec<&str> = cfg.mcp.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["local", "web"]);
    assert_eq!(cfg.mcp.servers[0].stdio.as_ref().expect("stdio").args, ["--root", "/srv"]);
    assert_eq!(cfg.mcp.servers[1].http.as_ref().expect("http").url, "http://127.0.0.1:9/mcp");

    let both = "[{name: x, http: {url: 'http://a/'}, stdio: {command: y}}]";
    let env = BTreeMap::from([("AGENTD_MCP_SERVERS".to_owned(), both.to_owned())]);
    let e = load_from(&ServeFlags::default(), &env).unwrap_err().to_string();
    assert!(e.contains("mcp.servers[0]") && e.contains("exactly one of http"), "{e}");
    let env = BTreeMap::from([(
        "AGENTD_MCP_SERVERS".to_owned(),
        "[{name: x, http: {url: 'http://a/', headers: {Authorization: 'Bearer sk-123'}}}]".to_owned(),
    )]);
    let e = format!("{:#}", load_from(&ServeFlags::default(), &env).unwrap_err());
    assert!(e.contains("mcp.servers[0].http.headers.Authorization") && e.contains("by reference"), "{e}");
    assert!(!e.contains("sk-123"), "a secret written inline is not repeated: {e}");
}
