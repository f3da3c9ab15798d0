//! A request carrying two `Authorization` headers is refused with 401 /
//! `UNAUTHENTICATED` on every binding, and runs as neither caller: a
//! proxy in front may have judged it by the other header.

use crate::support::grpc_text_message;
use crate::wire::send;
use agentd_server::grpc::pb;
use agentd_server::{ExtensionRegistry, VersionPolicy};
use serde_json::{Value, json};
use std::net::SocketAddr;

const ALICE: &[u8] = b"Bearer alicetok";
const BOB: &[u8] = b"Bearer bobtok";
const BOTH: &[(&str, &[u8])] = &[("authorization", ALICE), ("authorization", BOB)];
const WHY: &str = "more than one Authorization header";

/// alice and bob, users, each with a bearer token.
async fn serve_alice_and_bob() -> (SocketAddr, tokio_util::sync::CancellationToken) {
    use agentd_core::{Principal, PrincipalRole};
    use agentd_server::{Authenticator, ServerConfig, TokenEntry};
    let token = |secret, id| TokenEntry::from_secret(secret, Principal::new(id, PrincipalRole::User));
    let auth = Authenticator::new(vec![token("alicetok", "user:alice"), token("bobtok", "user:bob")]);
    let store = std::sync::Arc::new(agentd_store::MemoryStore::default());
    let config = ServerConfig { version_policy: VersionPolicy::Lenient, ..ServerConfig::default() };
    crate::support::serve_with(store, ExtensionRegistry::default(), auth, config).await
}

fn rpc(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

fn message() -> Value {
    json!({"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
}

/// How many tasks `token`'s caller sees.
async fn tasks_of(addr: SocketAddr, token: &[u8]) -> usize {
    let list = rpc("ListTasks", json!({}));
    let (status, _, body) = send(addr, "POST", "/a2a/jsonrpc", &[("authorization", token)], &list).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    v["result"]["tasks"].as_array().map(Vec::len).unwrap_or_else(|| panic!("no tasks: {body}"))
}

#[tokio::test]
async fn two_authorization_headers_are_refused_on_every_binding() {
    let (addr, stop) = serve_alice_and_bob().await;
    let send_rpc = rpc("SendMessage", message());
    let stream_rpc = rpc("SendStreamingMessage", message());
    let rest = message().to_string();
    for (method, path, body) in [
        ("POST", "/a2a/jsonrpc", send_rpc.as_str()),
        ("POST", "/a2a/jsonrpc", stream_rpc.as_str()),
        ("POST", "/a2a/rest/message:send", rest.as_str()),
        ("POST", "/a2a/rest/message:stream", rest.as_str()),
        ("GET", "/a2a/rest/tasks", ""),
        ("GET", "/metrics", ""),
    ] {
        let (status, head, body) = send(addr, method, path, BOTH, body).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert!(head.contains("www-authenticate: bearer"), "{path}: {head}");
        assert!(body.contains(WHY), "{path}: {body}");
    }

    let ch = tonic::transport::Channel::from_shared(format!("http://{addr}")).expect("uri");
    let mut c = pb::a2a_service_client::A2aServiceClient::with_interceptor(
        ch.connect().await.expect("connect"),
        |mut req: tonic::Request<()>| {
            for token in [ALICE, BOB] {
                req.metadata_mut()
                    .append("authorization", tonic::metadata::MetadataValue::try_from(token).expect("ascii"));
            }
            Ok(req)
        },
    );
    let e = c.send_message(grpc_text_message(pb::Role::User)).await.expect_err("refused");
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
    assert!(e.message().contains(WHY), "{e:?}");
    let e = c.send_streaming_message(grpc_text_message(pb::Role::User)).await.expect_err("refused");
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");

    // Neither ran it; each alone is served.
    assert_eq!(tasks_of(addr, ALICE).await, 0);
    assert_eq!(tasks_of(addr, BOB).await, 0);
    stop.cancel();
}
