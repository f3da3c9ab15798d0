//! Authentication end to end: bearer tokens from a YAML config (secrets by
//! reference), 401 with a challenge before any dispatch on every endpoint,
//! the public card declaring the scheme, clear config errors, and secrets
//! kept out of the log.

use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const ALICE: &str = "alice-s3cret-7f9e2b";
const CONFIG: &str = r#"
auth:
  tokens:
    - id: "user:alice"
      role: user
      token: "env:ALICE_TOKEN"
push:
  max_attempts: 2
"#;

fn protected(dir: &Path) -> Daemon {
    let cfg = write_config(dir, CONFIG);
    let cfg = cfg.to_str().expect("utf-8 path").to_owned();
    Daemon::start_with_env(
        dir,
        &["--agent", "tck", "--config", &cfg, "--push-allow-private"],
        &[("ALICE_TOKEN", ALICE), ("AGENTD_PUSH_BACKOFF_MS", "10")],
    )
    .with_token(ALICE)
}

/// Every kind of endpoint, as (name, method, url, body); the bodies are
/// valid requests except the one that is not even JSON.
fn endpoints(d: &Daemon) -> Vec<(&'static str, Method, String, Option<String>)> {
    let rpc = |method: &str, params: Value| {
        Some(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
    };
    let send = json!({"message": user_msg("m-1", "hi")});
    vec![
        ("JSON-RPC SendMessage", Method::POST, d.jsonrpc_url(), rpc("SendMessage", send.clone())),
        ("JSON-RPC malformed body", Method::POST, d.jsonrpc_url(), Some("{this is not json".into())),
        ("JSON-RPC GetTask", Method::POST, d.jsonrpc_url(), rpc("GetTask", json!({"id": "t1"}))),
        (
            "JSON-RPC SendStreamingMessage",
            Method::POST,
            d.jsonrpc_url(),
            rpc("SendStreamingMessage", send.clone()),
        ),
        (
            "JSON-RPC SubscribeToTask",
            Method::POST,
            d.jsonrpc_url(),
            rpc("SubscribeToTask", json!({"id": "t1"})),
        ),
        ("REST message:send", Method::POST, d.rest_url("/message:send"), Some(send.to_string())),
        ("REST malformed body", Method::POST, d.rest_url("/message:send"), Some("{nope".into())),
        ("REST message:stream", Method::POST, d.rest_url("/message:stream"), Some(send.to_string())),
        ("REST GetTask", Method::GET, d.rest_url("/tasks/t1"), None),
        ("REST ListTasks", Method::GET, d.rest_url("/tasks"), None),
        ("REST subscribe (POST)", Method::POST, d.rest_url("/tasks/t1:subscribe"), None),
        ("REST subscribe (GET)", Method::GET, d.rest_url("/tasks/t1:subscribe"), None),
        ("REST extended card", Method::GET, d.rest_url("/extendedAgentCard"), None),
    ]
}

/// Sends every endpoint with `authorization` and checks the 401 answer.
async fn assert_all_401(d: &Daemon, authorization: Option<&str>, challenge_has: &str) {
    for (name, method, url, body) in endpoints(d) {
        let mut rb = d
            .http
            .request(method, &url)
            .header("A2A-Version", "1.0")
            .header("content-type", "application/json");
        if let Some(a) = authorization {
            rb = rb.header("authorization", a);
        }
        if let Some(b) = body {
            rb = rb.body(b);
        }
        let r = rb.send().await.expect("request");
        assert_eq!(r.status(), 401, "{name} with {authorization:?}");
        let challenge =
            r.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        assert!(challenge.starts_with("Bearer realm="), "{name}: challenge {challenge:?}");
        assert!(challenge.contains(challenge_has), "{name}: challenge {challenge:?} lacks {challenge_has:?}");
        let ct = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        assert!(!ct.starts_with("text/event-stream"), "{name}: no stream opens before authentication");
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(body["error"]["code"], 401, "{name}: {body}");
    }
}

#[tokio::test]
async fn no_token_is_401_with_a_challenge_before_any_dispatch() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = protected(tmp.path());
    assert_all_401(&d, None, "realm=").await;
    // Nothing was dispatched: no task exists.
    let l = d.call("ListTasks", json!({})).await;
    assert_eq!(l["totalSize"], 0, "{l}");
}

#[tokio::test]
async fn a_wrong_token_is_401_invalid_token() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = protected(tmp.path());
    assert_all_401(&d, Some("Bearer not-the-token"), "error=\"invalid_token\"").await;
    assert_all_401(&d, Some(&format!("Basic {ALICE}")), "error=\"invalid_token\"").await;
    assert_all_401(&d, Some(&format!("Bearer {ALICE}x")), "error=\"invalid_token\"").await;
    let l = d.call("ListTasks", json!({})).await;
    assert_eq!(l["totalSize"], 0, "{l}");
}

#[tokio::test]
async fn the_right_token_works_on_both_bindings_and_streams() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = protected(tmp.path());
    let r = d.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let (status, t) = d.rest(Method::GET, &format!("/tasks/{id}"), None).await;
    assert_eq!(status, 200, "{t}");
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let mut s = d.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    assert!(s.is_sse(), "{}", s.content_type);
    assert_eq!(kind(&payload(&s.next().await.expect("snapshot"), true)), "task");
    let mut s = d
        .rest_stream(
            Method::POST,
            "/message:stream",
            Some(json!({"message": user_msg(&uniq("tck-stream-001"), "x")})),
        )
        .await;
    assert!(s.is_sse(), "{}", s.content_type);
    let evs = s.collect().await;
    assert_eq!(evs.last().and_then(state), Some("TASK_STATE_COMPLETED"), "{evs:?}");
    let (status, card) = d.rest(Method::GET, "/extendedAgentCard", None).await;
    assert_eq!(status, 200, "{card}");
    // The header scheme is case-insensitive.
    let r = d
        .http
        .post(d.jsonrpc_url())
        .header("authorization", format!("bearer {ALICE}"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}}))
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn the_card_is_public_and_declares_the_bearer_scheme() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = protected(tmp.path());
    let r = reqwest::get(format!("{}/.well-known/agent-card.json", d.url)).await.expect("card");
    assert_eq!(r.status(), 200, "the card needs no token");
    let card: Value = r.json().await.expect("json");
    let schemes = card["securitySchemes"].as_object().expect("securitySchemes");
    let (name, scheme) = schemes
        .iter()
        .find(|(_, s)| {
            s["httpAuthSecurityScheme"]["scheme"].as_str().is_some_and(|s| s.eq_ignore_ascii_case("bearer"))
        })
        .unwrap_or_else(|| panic!("a bearer scheme: {card}"));
    assert!(scheme.get("httpAuthSecurityScheme").is_some());
    let reqs = card["securityRequirements"].as_array().expect("securityRequirements");
    assert!(reqs.iter().any(|r| r["schemes"].get(name).is_some()), "the requirement names {name}: {card}");
    let text = card.to_string();
    assert!(!text.contains(ALICE), "the card carries no secret");
}

/// Runs `agentd serve` with a config file; returns (exit success, stderr).
fn run_with_config(yaml: &str, env: &[(&str, &str)]) -> (bool, String) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = write_config(tmp.path(), yaml);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentd"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&cfg)
        .arg("--data-dir")
        .arg(tmp.path().join("data"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child =
        cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().expect("spawn");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("agentd started with an invalid config:\n{yaml}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        // Refused before anything touched the data (no store, no recovery).
        assert!(!tmp.path().join("data").exists(), "a config error created the data directory:\n{stderr}");
    }
    (out.status.success(), stderr)
}

#[test]
fn invalid_auth_configs_are_refused_with_clear_messages() {
    let hex = "a".repeat(64);
    let both = format!(
        "auth:\n  tokens:\n    - id: \"user:alice\"\n      role: user\n      sha256: \"{hex}\"\n      token: \"env:ALICE_TOKEN\"\n"
    );
    let (ok, err) = run_with_config(&both, &[("ALICE_TOKEN", ALICE)]);
    assert!(!ok, "sha256 and token together are refused");
    assert!(err.contains("user:alice") && err.contains("sha256") && err.contains("token"), "{err}");
    assert!(err.contains("exactly one"), "{err}");

    let role = "auth:\n  tokens:\n    - id: \"user:alice\"\n      role: superuser\n      token: \"env:ALICE_TOKEN\"\n";
    let (ok, err) = run_with_config(role, &[("ALICE_TOKEN", ALICE)]);
    assert!(!ok, "a bad role is refused");
    assert!(err.contains("superuser") && err.contains("role"), "{err}");
    assert!(
        err.contains("operator") && err.contains("user") && err.contains("agent"),
        "names the valid roles: {err}"
    );

    let inline =
        "auth:\n  tokens:\n    - id: \"user:alice\"\n      role: user\n      token: \"inline-secret-42\"\n";
    let (ok, err) = run_with_config(inline, &[]);
    assert!(!ok, "an inline secret is refused");
    assert!(err.contains("env:") && err.contains("file:"), "says how to give it by reference: {err}");
    assert!(err.contains("user:alice"), "names the entry: {err}");
    assert!(!err.contains("inline-secret-42"), "never echoes the secret: {err}");
    assert!(!err.contains("listening on"), "refused before listening: {err}");

    let unset = "auth:\n  tokens:\n    - id: \"user:alice\"\n      role: user\n      token: \"env:AGENTD_TEST_SURELY_UNSET\"\n";
    let (ok, err) = run_with_config(unset, &[]);
    assert!(!ok, "a reference to a missing variable is refused");
    assert!(err.contains("AGENTD_TEST_SURELY_UNSET"), "{err}");

    let neither = "auth:\n  tokens:\n    - id: \"user:alice\"\n      role: user\n";
    let (ok, err) = run_with_config(neither, &[]);
    assert!(!ok, "a token entry without a secret is refused");
    assert!(err.contains("sha256") && err.contains("token"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_the_log() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = protected(tmp.path());
    let wrong = "wrong-token-d41d8c";
    // Failed and successful authentication.
    let _ = d.http.post(d.jsonrpc_url()).bearer_auth(wrong).body("{}").send().await;
    let r = d.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    // A webhook with credentials whose deliveries fail until given up.
    let port =
        tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind").local_addr().expect("addr").port();
    let cfg = json!({
        "taskId": id,
        "url": format!("http://127.0.0.1:{port}/hook?sig=url-secret-5150"),
        "token": "notify-secret-8080",
        "authentication": {"scheme": "Bearer", "credentials": "hook-secret-9090"},
    });
    d.call("CreateTaskPushNotificationConfig", cfg).await;
    let mut m = user_msg(&uniq("tck-complete-task"), "x");
    m["taskId"] = json!(id);
    d.call("SendMessage", json!({"message": m})).await;
    // Wait until the worker gave the deliveries up (max_attempts: 2).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !d.log().contains("given up") {
        assert!(std::time::Instant::now() < deadline, "deliveries were never given up; log:\n{}", d.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = d.log();
    for secret in [ALICE, wrong, "notify-secret-8080", "hook-secret-9090", "url-secret-5150"] {
        assert!(!log.contains(secret), "{secret:?} leaked into the log:\n{log}");
    }
}
