//! What a client sees of the wire itself, on bytes as sent: a request
//! that names a JSON member twice is refused naming it (JSON-RPC and
//! REST alike); a JSON-RPC id comes back as the very text sent, in
//! answers, errors and every frame of a stream, and an overlong one is
//! refused; a notification (no id) is not run and gets no answer. A
//! timestamp outside RFC 3339's years is refused on gRPC as on JSON. An
//! `A2A-Version`, `A2A-Extensions` or `Authorization` value that is not ASCII text is
//! refused on every binding, not taken for an absent header. A gRPC call
//! whose upload stalls past the body read timeout is DEADLINE_EXCEEDED.

use crate::support::serve_in_process;
use agentd_server::{ExtensionRegistry, VersionPolicy};
use serde_json::{Value, json};
use std::net::SocketAddr;

/// One request on its own connection: (status, head, body).
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &[u8])],
    body: &str,
) -> (u16, String, String) {
    let mut req = format!("{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n").into_bytes();
    if !body.is_empty() || method == "POST" {
        req.extend_from_slice(
            format!("content-type: application/json\r\ncontent-length: {}\r\n", body.len()).as_bytes(),
        );
    }
    for (k, v) in headers {
        req.extend_from_slice(k.as_bytes());
        req.extend_from_slice(b": ");
        req.extend_from_slice(v);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"\r\n");
    req.extend_from_slice(body.as_bytes());
    crate::support::exchange(addr, &req).await
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

async fn task_count(addr: SocketAddr) -> usize {
    let (status, _, body) = send(
        addr,
        "POST",
        "/a2a/jsonrpc",
        &[],
        r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    json_of(&body)["result"]["tasks"].as_array().map_or(0, Vec::len)
}

#[tokio::test]
async fn a_member_named_twice_is_refused_naming_it_on_both_json_bindings() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    // The two readings of this message differ: a reader keeping the first
    // `text` sees "deploy", one keeping the last sees "hello".
    let message = r#"{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"deploy","text":"hello"}]}"#;
    let rpc =
        format!(r#"{{"jsonrpc":"2.0","id":"r-9","method":"SendMessage","params":{{"message":{message}}}}}"#);
    let (status, _, body) = send(addr, "POST", "/a2a/jsonrpc", &[], &rpc).await;
    assert_eq!(status, 200, "{body}");
    let v = json_of(&body);
    assert_eq!(v["id"], json!("r-9"), "the id is still echoed: {body}");
    assert_eq!(v["error"]["code"], json!(-32600), "{body}");
    let msg = v["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("`params.message.parts[0].text`"), "{msg}");

    let rest = format!(r#"{{"message":{message}}}"#);
    let (status, _, body) = send(addr, "POST", "/a2a/rest/message:send", &[], &rest).await;
    assert_eq!(status, 400, "{body}");
    let e = &json_of(&body)["error"];
    assert_eq!(e["status"], json!("INVALID_ARGUMENT"), "{body}");
    assert!(e["message"].as_str().unwrap_or_default().contains("`message.parts[0].text`"), "{body}");
    let details = e["details"].as_array().cloned().unwrap_or_default();
    assert!(details.iter().any(|d| d["reason"] == json!("INVALID_REQUEST")), "{body}");

    assert_eq!(task_count(addr).await, 0, "neither request ran");
    stop.cancel();
}

#[tokio::test]
async fn a_jsonrpc_id_is_echoed_as_its_text_and_an_overlong_one_is_refused() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let rpc = |id: &str, method: &str, params: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#)
    };
    // A result, an error, and one of a body read as a `Value` (an escaped key).
    for (id, method, params) in [
        ("1E2", "ListTasks", "{}"),
        ("-0.50", "GetTask", r#"{"id":"no-such-task"}"#),
        (r#""\u00e9""#, "GetTask", r#"{"\u0069d":"no-such-task"}"#),
    ] {
        let (status, _, body) = send(addr, "POST", "/a2a/jsonrpc", &[], &rpc(id, method, params)).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"#)), "{body}");
    }
    // Every frame of a stream.
    let message = r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    let (status, head, body) =
        send(addr, "POST", "/a2a/jsonrpc", &[], &rpc("1.0e0", "SendStreamingMessage", message)).await;
    assert_eq!(status, 200, "{body}");
    assert!(head.contains("text/event-stream"), "{head}");
    let frames: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    assert!(!frames.is_empty(), "{body}");
    for f in frames {
        assert!(f.starts_with(r#"{"jsonrpc":"2.0","id":1.0e0,"result":"#), "{f}");
    }

    let long = format!(r#""{}""#, "x".repeat(300));
    let (status, _, body) = send(addr, "POST", "/a2a/jsonrpc", &[], &rpc(&long, "ListTasks", "{}")).await;
    assert_eq!(status, 200, "{body}");
    let v = json_of(&body);
    assert_eq!((&v["id"], &v["error"]["code"]), (&Value::Null, &json!(-32600)), "{body}");
    assert!(v["error"]["message"].as_str().unwrap_or_default().contains("256 bytes"), "{body}");
    stop.cancel();
}

#[tokio::test]
async fn a_notification_is_not_run_and_not_answered() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let message = r#"{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    for body in [
        format!(r#"{{"jsonrpc":"2.0","method":"SendMessage","params":{message}}}"#),
        // Read as a `Value` (an escaped key), and with params it would refuse.
        r#"{"jsonrpc":"2.0","method":"SendMessage","params":{"\u006dessage":5}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"NoSuchMethod"}"#.to_owned(),
    ] {
        let (status, head, answer) = send(addr, "POST", "/a2a/jsonrpc", &[], &body).await;
        assert_eq!((status, answer.as_str()), (204, ""), "{body}: {head}");
    }
    // Not a notification: a request with a null id, or an invalid one.
    let (status, _, answer) = send(
        addr,
        "POST",
        "/a2a/jsonrpc",
        &[],
        &format!(r#"{{"jsonrpc":"2.0","id":null,"method":"SendMessage","params":{message}}}"#),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.starts_with(r#"{"jsonrpc":"2.0","id":null,"result":"#), "{answer}");
    let (status, _, answer) =
        send(addr, "POST", "/a2a/jsonrpc", &[], r#"{"jsonrpc":"2.0","method":5}"#).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(json_of(&answer)["error"]["code"], json!(-32600), "{answer}");
    assert_eq!(task_count(addr).await, 1, "only the request with an id ran");
    stop.cancel();
}

#[tokio::test]
async fn a_grpc_timestamp_outside_rfc_3339_years_is_refused_naming_the_field() {
    use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient};
    use tonic_types::StatusExt;
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let ch = tonic::transport::Channel::from_shared(format!("http://{addr}")).expect("uri");
    let mut c = A2aServiceClient::new(ch.connect().await.expect("connect"));
    // 10000-01-01T00:00:00Z, 0000-12-31T23:59:59Z, and nanos past a second.
    for (seconds, nanos) in [(253_402_300_800, 0), (-62_135_596_801, 0), (0, 1_000_000_000)] {
        let req = pb::ListTasksRequest {
            status_timestamp_after: Some(prost_types::Timestamp { seconds, nanos }),
            ..Default::default()
        };
        let e = c.list_tasks(req).await.expect_err("out of range");
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert!(
            e.message().contains("status_timestamp_after") && e.message().contains("out of range"),
            "{e:?}"
        );
        let field = e.get_error_details().bad_request().map(|b| b.field_violations[0].field.clone());
        assert_eq!(field.as_deref(), Some("status_timestamp_after"));
    }
    // The last instant the proto allows is taken.
    let req = pb::ListTasksRequest {
        status_timestamp_after: Some(prost_types::Timestamp { seconds: 253_402_300_799, nanos: 999_999_999 }),
        ..Default::default()
    };
    c.list_tasks(req).await.expect("9999-12-31T23:59:59.999999999Z");
    // The JSON bindings refuse the same instant the same way.
    let (status, _, body) =
        send(addr, "GET", "/a2a/rest/tasks?statusTimestampAfter=%2B10000-01-01T00:00:00Z", &[], "").await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("statusTimestampAfter"), "{body}");
    stop.cancel();
}

/// A gRPC client whose every call carries `key: value` (raw bytes).
async fn grpc_with(
    addr: SocketAddr,
    key: &'static str,
    value: &'static [u8],
) -> agentd_server::grpc::pb::a2a_service_client::A2aServiceClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        impl tonic::service::Interceptor,
    >,
> {
    let ch = tonic::transport::Channel::from_shared(format!("http://{addr}")).expect("uri");
    let ch = ch.connect().await.expect("connect");
    let value = tonic::metadata::MetadataValue::try_from(value).expect("obs-text is a valid metadata value");
    agentd_server::grpc::pb::a2a_service_client::A2aServiceClient::with_interceptor(
        ch,
        move |mut req: tonic::Request<()>| {
            req.metadata_mut().insert(key, value.clone());
            Ok(req)
        },
    )
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#;

#[tokio::test]
async fn a_version_that_is_not_ascii_is_refused_on_every_binding() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let version: &[(&str, &[u8])] = &[("a2a-version", b"1.0\xe9")];
    let (status, _, body) = send(addr, "POST", "/a2a/jsonrpc", version, LIST).await;
    assert_eq!(status, 200, "{body}");
    let e = &json_of(&body)["error"];
    assert_eq!(e["code"], json!(-32009), "{body}");
    assert!(e["message"].as_str().unwrap_or_default().contains("not ASCII"), "{body}");

    let (status, _, body) = send(addr, "GET", "/a2a/rest/tasks", version, "").await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("VERSION_NOT_SUPPORTED") && body.contains("not ASCII"), "{body}");

    let mut c = grpc_with(addr, "a2a-version", b"1.0\xe9").await;
    let e = c.list_tasks(agentd_server::grpc::pb::ListTasksRequest::default()).await.expect_err("refused");
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
    assert!(e.message().contains("not ASCII"), "{e:?}");
    stop.cancel();
}

#[tokio::test]
async fn extensions_that_are_not_ascii_are_refused_on_every_binding() {
    let (addr, stop) = serve_in_process(ExtensionRegistry::default(), VersionPolicy::Lenient).await;
    let ext: &[(&str, &[u8])] = &[("a2a-extensions", b"https://example.com/ext\xe9")];
    let (status, _, body) = send(addr, "POST", "/a2a/jsonrpc", ext, LIST).await;
    assert_eq!(status, 200, "{body}");
    let e = &json_of(&body)["error"];
    assert_eq!(e["code"], json!(-32600), "{body}");
    assert!(e["message"].as_str().unwrap_or_default().contains("not ASCII"), "{body}");

    let (status, _, body) = send(addr, "GET", "/a2a/rest/tasks", ext, "").await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("not ASCII"), "{body}");

    let mut c = grpc_with(addr, "a2a-extensions", b"https://example.com/ext\xe9").await;
    let e = c.list_tasks(agentd_server::grpc::pb::ListTasksRequest::default()).await.expect_err("refused");
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("not ASCII"), "{e:?}");
    stop.cancel();
}

/// A server whose one bearer token, `s3cret`, is alice's.
async fn serve_with_alices_token() -> (SocketAddr, tokio_util::sync::CancellationToken) {
    use agentd_core::{Principal, PrincipalRole};
    use agentd_server::{Authenticator, ServerConfig, TokenEntry};
    let auth = Authenticator::new(vec![TokenEntry::from_secret(
        "s3cret",
        Principal::new("user:alice", PrincipalRole::User),
    )]);
    let store = std::sync::Arc::new(agentd_store::MemoryStore::default());
    let config = ServerConfig { version_policy: VersionPolicy::Lenient, ..ServerConfig::default() };
    crate::support::serve_with(store, ExtensionRegistry::default(), auth, config).await
}

#[tokio::test]
async fn credentials_that_are_not_ascii_are_refused_on_every_binding() {
    let (addr, stop) = serve_with_alices_token().await;
    let token: &[(&str, &[u8])] = &[("authorization", b"Bearer s3cr\xe9t")];
    for (method, path, body) in [("POST", "/a2a/jsonrpc", LIST), ("GET", "/a2a/rest/tasks", "")] {
        let (status, head, body) = send(addr, method, path, token, body).await;
        assert_eq!(status, 401, "{path}: {body}");
        assert!(head.contains("www-authenticate: bearer"), "{path}: {head}");
        assert!(body.contains("not ASCII"), "{path}: {body}");
    }
    let mut c = grpc_with(addr, "authorization", b"Bearer s3cr\xe9t").await;
    let e = c.list_tasks(agentd_server::grpc::pb::ListTasksRequest::default()).await.expect_err("refused");
    assert_eq!(e.code(), tonic::Code::Unauthenticated, "{e:?}");
    assert!(e.message().contains("not ASCII"), "{e:?}");
    // The token itself is served.
    let (status, _, body) =
        send(addr, "POST", "/a2a/jsonrpc", &[("authorization", b"Bearer s3cret")], LIST).await;
    assert_eq!(status, 200, "{body}");
    stop.cancel();
}

/// Writes `head` (and `body`) on a keep-alive connection and reads the
/// answer's head, lowercase.
async fn answer_head(addr: SocketAddr, head: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(format!("{head}\r\n{body}").as_bytes()).await.expect("write");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf).await.expect("read");
        assert!(n > 0, "closed before an answer: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).to_ascii_lowercase()
}

#[tokio::test]
async fn an_answer_given_before_the_body_was_read_closes_the_connection_and_says_so() {
    let (addr, stop) = serve_with_alices_token().await;
    let head = |token: &str| {
        format!(
            "POST /a2a/jsonrpc HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nauthorization: Bearer {token}\r\n",
            LIST.len()
        )
    };
    // Refused on its head, its body not sent yet: a client must not send
    // its next request on this connection, and is told.
    let refused = answer_head(addr, &head("wrong"), "").await;
    assert!(refused.starts_with("http/1.1 401"), "{refused}");
    assert!(refused.contains("connection: close"), "{refused}");
    // Read to its end and answered: the connection stays open.
    let served = answer_head(addr, &head("s3cret"), LIST).await;
    assert!(served.starts_with("http/1.1 200"), "{served}");
    assert!(!served.contains("connection: close"), "{served}");
    stop.cancel();
}

#[tokio::test]
async fn a_grpc_upload_that_stalls_is_deadline_exceeded_naming_the_setting() {
    use agentd_server::{ConnectionLimits, ServerConfig};
    use http_body_util::BodyExt as _;
    use hyper::body::Frame;
    use tonic_types::StatusExt;
    use tower::ServiceExt as _;
    let limits =
        ConnectionLimits { body_read_timeout: std::time::Duration::from_millis(300), ..Default::default() };
    let config = ServerConfig { connections: limits, ..ServerConfig::default() };
    let store = std::sync::Arc::new(agentd_store::MemoryStore::default());
    let (addr, stop) = crate::support::serve_with(
        store,
        ExtensionRegistry::default(),
        agentd_server::Authenticator::default(),
        config,
    )
    .await;
    let ch = tonic::transport::Channel::from_shared(format!("http://{addr}")).expect("uri");
    let ch = ch.connect().await.expect("connect");
    // Stalled before the message's frame header, and inside the message
    // (its header declares 64 bytes; 2 arrive).
    for sent in [&b""[..], &[0, 0, 0, 0, 64, 8, 1][..]] {
        let first = futures::stream::iter(
            (!sent.is_empty())
                .then(|| Ok::<_, std::convert::Infallible>(Frame::data(bytes::Bytes::from(sent)))),
        );
        let body =
            http_body_util::StreamBody::new(futures::StreamExt::chain(first, futures::stream::pending()));
        let req = http::Request::post(format!("http://{addr}/lf.a2a.v1.A2AService/ListTasks"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(tonic::body::Body::new(body))
            .expect("request");
        let resp = ch.clone().oneshot(req).await.expect("an answer");
        let head = resp.headers().clone();
        let trailers =
            resp.into_body().collect().await.expect("body").trailers().cloned().unwrap_or_default();
        let status = tonic::Status::from_header_map(&head)
            .or_else(|| tonic::Status::from_header_map(&trailers))
            .expect("a grpc-status");
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{sent:?}: {status:?}");
        assert!(status.message().contains("300 ms"), "{status:?}");
        let info = status.get_error_details().error_info().cloned().expect("ErrorInfo");
        assert_eq!(info.reason, "REQUEST_TIMEOUT");
        assert_eq!(info.metadata.get("limit").map(String::as_str), Some("server.body_read_timeout_ms"));
    }
    stop.cancel();
}
