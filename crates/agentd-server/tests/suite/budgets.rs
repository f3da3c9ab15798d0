//! The body budget against callers that announce big bodies and send
//! none: a caller without credentials takes nothing of it (refused before
//! its body is read), and an authenticated one holds at most its own part,
//! so the others' requests go through while its bodies stall.

use crate::support::serve_with;
use agentd_core::{Principal, PrincipalRole};
use agentd_server::{Authenticator, ExtensionRegistry, ServerConfig, TokenEntry};
use agentd_store::MemoryStore;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Only reached when a request waits for a budget it should not: far
/// under the body read timeout (60 s), which would free it at last.
const DEADLINE: Duration = Duration::from_secs(20);

async fn start() -> (SocketAddr, tokio_util::sync::CancellationToken) {
    let auth = Authenticator::new(vec![
        TokenEntry::from_secret("alice-token", Principal::new("user:alice", PrincipalRole::User)),
        TokenEntry::from_secret("bob-token", Principal::new("user:bob", PrincipalRole::User)),
    ]);
    // The defaults: 4 MiB bodies, 32 MiB in flight, 8 MiB a principal.
    serve_with(Arc::new(MemoryStore::default()), ExtensionRegistry::default(), auth, ServerConfig::default())
        .await
}

/// A gRPC GetTask over HTTP/1.1 whose frame header announces a 4 MiB
/// message that never comes.
async fn stalled_grpc(addr: SocketAddr, token: Option<&str>) -> TcpStream {
    let auth = token.map(|t| format!("authorization: Bearer {t}\r\n")).unwrap_or_default();
    let head = format!(
        "POST /lf.a2a.v1.A2AService/GetTask HTTP/1.1\r\nhost: x\r\ncontent-type: application/grpc\r\n\
         {auth}transfer-encoding: chunked\r\n\r\n5\r\n\x00\x00\x40\x00\x00\r\n"
    );
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(head.as_bytes()).await.expect("write");
    s
}

/// A JSON-RPC request of unknown length, one byte of it sent.
async fn stalled_jsonrpc(addr: SocketAddr, token: &str) -> TcpStream {
    let head = format!(
        "POST /a2a/jsonrpc HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         authorization: Bearer {token}\r\ntransfer-encoding: chunked\r\n\r\n1\r\n{{\r\n"
    );
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(head.as_bytes()).await.expect("write");
    s
}

/// The head of the one response on `s`.
async fn response_head(s: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).to_lowercase()
}

/// Nothing has been answered on `s` (yet).
fn unanswered(s: &TcpStream) -> bool {
    let mut buf = [0u8; 16];
    matches!(s.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[tokio::test]
async fn stalled_bodies_hold_no_budget_anonymously_and_only_their_callers_part_otherwise() {
    let (addr, stop) = start().await;

    // No token: UNAUTHENTICATED at once, while the body is still missing.
    let mut anon = stalled_grpc(addr, None).await;
    let head = tokio::time::timeout(DEADLINE, response_head(&mut anon))
        .await
        .expect("an anonymous call is answered before its body arrives");
    assert!(head.contains("grpc-status: 16"), "UNAUTHENTICATED: {head}");
    assert!(head.contains("www-authenticate: bearer"), "{head}");

    // Bob announces three big bodies (two gRPC messages of 4 MiB, charged
    // 8 times that decoded, and a JSON-RPC body of unknown length) and
    // sends none of them: together they may hold his part only.
    let bob = [
        stalled_grpc(addr, Some("bob-token")).await,
        stalled_grpc(addr, Some("bob-token")).await,
        stalled_jsonrpc(addr, "bob-token").await,
    ];

    // Alice's SendMessage of 8 KB takes a counted share of the budget.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x".repeat(8 * 1024)}]}}});
    let send = reqwest::Client::new()
        .post(format!("http://{addr}/a2a/jsonrpc"))
        .bearer_auth("alice-token")
        .header("a2a-version", "1.0")
        .json(&body)
        .send();
    let resp = tokio::time::timeout(DEADLINE, send)
        .await
        .expect("another principal's request is not held up by stalled bodies")
        .expect("send");
    let v: Value = resp.json().await.expect("json");
    assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    for (i, s) in bob.iter().enumerate() {
        assert!(unanswered(s), "bob's stalled request {i} is still open");
    }
    stop.cancel();
}
