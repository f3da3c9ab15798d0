//! Authentication at the HTTP layer: missing or wrong credentials are
//! refused with 401 before any dispatch, the public card needs none and
//! declares the scheme, and a public listener without credentials does not
//! start.

use super::start;
use crate::common::*;
use reqwest::Method;
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[tokio::test]
async fn missing_or_wrong_tokens_are_refused_before_dispatch() {
    let p = start();
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#.to_vec();
    let anonymous = p.d.as_token(None);
    let cases = [(None, false), (Some("Bearer not-a-token"), true), (Some("Basic YWxpY2U6c2VjcmV0"), true)];
    for (authorization, invalid) in cases {
        let who = &anonymous;
        let mut headers = vec![("A2A-Version", "1.0")];
        if let Some(a) = authorization {
            headers.push(("Authorization", a));
        }
        let requests = [
            (Method::POST, who.jsonrpc_url(), Some(list.clone())),
            (Method::POST, who.jsonrpc_url(), Some(b"{ not json".to_vec())),
            (Method::GET, who.rest_url("/tasks"), None),
            (
                Method::POST,
                who.rest_url("/message:send"),
                Some(tck("tck-complete-task").to_string().into_bytes()),
            ),
            (Method::GET, who.rest_url("/extendedAgentCard"), None),
        ];
        for (method, url, body) in requests {
            let r = who.raw(method.clone(), &url, body, &headers).await;
            assert_eq!(r.status, 401, "{authorization:?} {method} {url}: {}", r.text);
            let challenge = r.header("www-authenticate");
            assert!(challenge.starts_with("Bearer"), "{authorization:?} {url}: {challenge:?}");
            assert_eq!(
                challenge.contains("error=\"invalid_token\""),
                invalid,
                "{authorization:?} {url}: {challenge:?}"
            );
            assert!(r.header("content-type").starts_with("application/json"), "{url}");
            assert_eq!(r.json()["error"]["code"], 401, "{url}: {}", r.text);
        }
    }
    let l = p.ops.ok(Binding::JsonRpc, "ListTasks", json!({})).await;
    assert_eq!(l["totalSize"], 0, "nothing refused reached the engine: {l}");

    // The public card needs no token and declares the bearer scheme.
    let card = p.d.raw(Method::GET, &format!("{}/.well-known/agent-card.json", p.d.url), None, &[]).await;
    assert_eq!(card.status, 200);
    let card = card.json();
    let schemes = card["securitySchemes"].as_object().expect("securitySchemes");
    let (name, scheme) = schemes.iter().next().expect("one scheme");
    assert!(
        scheme["httpAuthSecurityScheme"]["scheme"].as_str().is_some_and(|s| s.eq_ignore_ascii_case("bearer")),
        "{card}"
    );
    let required = &card["securityRequirements"][0]["schemes"];
    assert!(required.get(name).is_some(), "the requirement names the scheme {name}: {card}");
}

#[tokio::test]
async fn a_public_listener_without_credentials_refuses_to_start() {
    let data = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["serve", "--listen", "0.0.0.0:0", "--data-dir"])
        .arg(data.path())
        .env_remove("AGENTD_CONFIG")
        .env_remove("AGENTD_LISTEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agentd");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("agentd started on 0.0.0.0 without credentials");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert!(!status.success(), "exit status {status}; stderr:\n{stderr}");
    assert!(stderr.contains("refusing to listen on 0.0.0.0"), "a clear message: {stderr}");
    assert!(stderr.contains("auth.tokens"), "it says how to fix it: {stderr}");
}
