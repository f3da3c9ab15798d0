//! The body budget against callers that announce big bodies and send
//! none: a caller without credentials takes nothing of it (refused before
//! its body is read), and an authenticated one holds at most its own part,
//! so the others' requests go through while its bodies stall.

use crate::support::serve_with;
use agentd_core::{Principal, PrincipalRole};
use agentd_server::grpc::pb;
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

/// A JSON-RPC call as `token`, answered and read whole.
async fn call(addr: SocketAddr, token: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}/a2a/jsonrpc"))
        .bearer_auth(token)
        .header("a2a-version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("send");
    resp.json().await.expect("json")
}

/// A task whose answer is about 300 KB (a 100 KB message, echoed) owned by
/// `token`'s principal.
async fn big_task(addr: SocketAddr, token: &str) -> String {
    let params = json!({"message": {"messageId": token, "role": "ROLE_USER", "parts": [{"text": "x".repeat(100_000)}]}});
    let v = call(addr, token, "SendMessage", params).await;
    v["result"]["task"]["id"].as_str().expect("task id").to_owned()
}

fn refused(v: &Value) -> bool {
    v["error"]["code"] == -32603
}

/// A big answer its client does not read holds its caller's part of the
/// answer budget until written: that caller's next big answer is refused,
/// naming the limit, on JSON-RPC and REST alike, while another caller's
/// goes out; once the client goes away, the part is free again.
#[tokio::test]
async fn unread_big_answers_hold_only_their_callers_part_of_the_answer_budget() {
    let auth = Authenticator::new(vec![
        TokenEntry::from_secret("alice-token", Principal::new("user:alice", PrincipalRole::User)),
        TokenEntry::from_secret("bob-token", Principal::new("user:bob", PrincipalRole::User)),
    ]);
    let config = ServerConfig {
        max_body_bytes_in_flight: 2 << 20,
        max_body_bytes_in_flight_per_principal: 256 << 10,
        ..ServerConfig::default()
    };
    let (addr, stop) =
        serve_with(Arc::new(MemoryStore::default()), ExtensionRegistry::default(), auth, config).await;
    let alices = big_task(addr, "alice-token").await;
    let bobs = big_task(addr, "bob-token").await;

    // A gRPC GetTask from a client whose HTTP/2 flow-control window is 0:
    // the server can send it nothing of the answer, and holds it all.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("uri")
        .initial_stream_window_size(Some(0))
        .connect()
        .await
        .expect("connect");
    let mut client = pb::a2a_service_client::A2aServiceClient::new(channel);
    let mut request = tonic::Request::new(pb::GetTaskRequest { id: alices.clone(), ..Default::default() });
    request.metadata_mut().insert("authorization", "Bearer alice-token".parse().expect("header"));
    let stalled = tokio::spawn(async move { client.get_task(request).await });

    let get = json!({"id": alices});
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let v = loop {
        let v = call(addr, "alice-token", "GetTask", get.clone()).await;
        if refused(&v) || tokio::time::Instant::now() > deadline {
            break v;
        }
        tokio::task::yield_now().await;
    };
    assert!(refused(&v), "alice's big answer is refused while her first is unread: {}", &v["error"]);
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("server.max_body_bytes_in_flight_per_principal"), "{message}");
    let rest = reqwest::Client::new()
        .get(format!("http://{addr}/a2a/rest/tasks/{alices}"))
        .bearer_auth("alice-token")
        .header("a2a-version", "1.0")
        .send()
        .await
        .expect("rest");
    assert_eq!(rest.status(), 503, "REST refuses it the same way");
    let params = json!({"message": {"messageId": "small", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let small = call(addr, "alice-token", "SendMessage", params).await;
    assert_eq!(
        small["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "small answers are not counted"
    );
    let v = call(addr, "bob-token", "GetTask", json!({"id": bobs})).await;
    assert_eq!(v["result"]["id"], bobs.as_str(), "bob's answer goes out: {}", &v["error"]);

    // The stalled client goes away: its answer is dropped, the part freed.
    stalled.abort();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let v = loop {
        let v = call(addr, "alice-token", "GetTask", get.clone()).await;
        if !refused(&v) || tokio::time::Instant::now() > deadline {
            break v;
        }
        tokio::task::yield_now().await;
    };
    assert_eq!(v["result"]["id"], alices.as_str(), "{}", &v["error"]);
    stop.cancel();
}
