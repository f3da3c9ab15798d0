//! Browsers on the A2A endpoints of a daemon without credentials (where
//! everybody is the local operator): a page of another site sending a
//! simple request, and a page under a name rebound to 127.0.0.1, are
//! refused with 403 naming the rule and change nothing; the daemon's own
//! origin, and clients that are no browser, are served.

use crate::support::serve_in_process;
use agentd_server::{ExtensionRegistry, VersionPolicy};
use serde_json::Value;
use std::net::SocketAddr;

/// One request on its own connection: (status, head, body).
async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> (u16, String, String) {
    let mut req =
        format!("{method} {path} HTTP/1.1\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    crate::support::exchange(addr, req.as_bytes()).await
}

const SEND: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-evil","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#;

async fn tasks(addr: SocketAddr) -> usize {
    let (status, _, body) = send(
        addr,
        "POST",
        "/a2a/jsonrpc",
        &[("host", addr.to_string()), ("content-type", "application/json".into())],
        LIST,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    v["result"]["tasks"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn cross_site_and_rebound_requests_are_refused_and_the_own_origin_is_served() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let own = ("host", addr.to_string());
    let text = ("content-type", "text/plain;charset=UTF-8".to_owned());

    // A page of another site: a simple request, no preflight.
    let evil = ("origin", "https://evil.example".to_owned());
    let (status, _, body) =
        send(addr, "POST", "/a2a/jsonrpc", &[own.clone(), evil.clone(), text.clone()], SEND).await;
    assert_eq!(status, 403, "{body}");
    let v: Value = serde_json::from_str(&body).expect("a JSON-RPC error");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("https://evil.example") && message.contains("Origin"), "{message}");
    assert!(body.contains("ORIGIN_NOT_ALLOWED"), "{body}");
    let (status, _, body) =
        send(addr, "POST", "/a2a/rest/message:send", &[own.clone(), evil.clone(), text.clone()], "{}").await;
    assert_eq!(status, 403, "REST too: {body}");
    let (status, _, body) =
        send(addr, "POST", "/a2a/jsonrpc", &[own.clone(), ("origin", "null".into()), text.clone()], SEND)
            .await;
    assert_eq!(status, 403, "an opaque origin: {body}");
    assert_eq!(tasks(addr).await, 0, "the refused messages created no task");

    // A name of another site rebound to 127.0.0.1.
    let rebound = ("host", format!("rebind.evil.example:{}", addr.port()));
    let json = ("content-type", "application/json".to_owned());
    let (status, _, body) = send(addr, "POST", "/a2a/jsonrpc", &[rebound.clone(), json.clone()], LIST).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("HOST_NOT_ALLOWED") && body.contains("rebind.evil.example"), "{body}");
    assert!(body.contains("auth.tokens"), "says how to serve other names: {body}");
    let (status, _, body) = send(addr, "GET", "/a2a/rest/tasks", std::slice::from_ref(&rebound), "").await;
    assert_eq!(status, 403, "REST: {body}");
    let grpc = ("content-type", "application/grpc".to_owned());
    let (_, head, _) =
        send(addr, "POST", "/lf.a2a.v1.A2AService/ListTasks", &[rebound.clone(), grpc], "\0\0\0\0\0").await;
    assert!(head.contains("grpc-status: 7"), "gRPC: PERMISSION_DENIED: {head}");
    // What acts on nothing stays open.
    for path in ["/.well-known/agent-card.json", "/healthz", "/console/"] {
        let (status, _, _) = send(addr, "GET", path, std::slice::from_ref(&rebound), "").await;
        assert!(status == 200 || status == 308, "{path}: {status}");
    }

    // The daemon's own origin (the console's calls), and localhost.
    let (status, _, body) = send(
        addr,
        "POST",
        "/a2a/jsonrpc",
        &[own.clone(), ("origin", format!("http://{addr}")), json.clone()],
        SEND,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("TASK_STATE_COMPLETED"), "{body}");
    let local = ("host", format!("localhost:{}", addr.port()));
    let (status, _, body) = send(
        addr,
        "POST",
        "/a2a/jsonrpc",
        &[local, ("origin", format!("http://localhost:{}", addr.port())), json],
        LIST,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(tasks(addr).await, 1);
    stop.cancel();
}
