//! A2A delegation against a second real agentd started by the test: the
//! streaming and the polling path, a direct Message reply, failures, an
//! unknown peer, cancel propagation, bearer credentials, and the model's
//! `delegate` tool. A transparent proxy in front of the peer records which
//! methods and headers reached it and can hide its streaming capability.

mod common;
use agentd_proto::{Message, Part, Role, Task, TaskState};
use agentd_runtime::delegate::{
    A2aDelegator, DelegateError, DelegateOptions, DelegateRequest, Delegator, PeerConfig,
};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use common::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What one JSON-RPC request to the proxy carried.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    version: Option<String>,
    authorization: Option<String>,
}

#[derive(Clone)]
struct ProxyState {
    upstream: String,
    me: String,
    streaming: bool,
    /// Whether the card's interface URLs are rewritten to the proxy.
    rewrite: bool,
    /// Whether a stream is ended after its first event.
    cut_streams: bool,
    seen: Arc<Mutex<Vec<Seen>>>,
    http: reqwest::Client,
}

struct Proxy {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Proxy {
    fn methods(&self) -> Vec<String> {
        self.seen.lock().unwrap().iter().map(|s| s.method.clone()).collect()
    }
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// The peer's card with this proxy's URL and the chosen streaming flag.
async fn card(State(s): State<ProxyState>) -> Response {
    let card: Value = s
        .http
        .get(format!("{}/.well-known/agent-card.json", s.upstream))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut text = card.to_string();
    if s.rewrite {
        text = text.replace(&s.upstream, &s.me);
    }
    let mut card: Value = serde_json::from_str(&text).unwrap();
    card["capabilities"]["streaming"] = json!(s.streaming);
    text = card.to_string();
    Response::builder().header("content-type", "application/json").body(Body::from(text)).unwrap()
}

async fn rpc(State(s): State<ProxyState>, headers: HeaderMap, body: Bytes) -> Response {
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_owned);
    s.seen.lock().unwrap().push(Seen {
        method: v["method"].as_str().unwrap_or("").to_owned(),
        version: header("a2a-version"),
        authorization: header("authorization"),
    });
    let mut rb = s.http.post(format!("{}/a2a/jsonrpc", s.upstream)).body(body);
    for k in ["a2a-version", "authorization", "accept", "content-type"] {
        if let Some(v) = header(k) {
            rb = rb.header(k, v);
        }
    }
    let mut resp = rb.send().await.unwrap();
    if s.cut_streams && v["method"] == "SendStreamingMessage" {
        let mut first = Vec::new();
        while !String::from_utf8_lossy(&first).contains("\n\n") {
            match resp.chunk().await.unwrap() {
                Some(c) => first.extend_from_slice(&c),
                None => break,
            }
        }
        return Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from(first))
            .unwrap();
    }
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
    let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    Response::builder()
        .status(status)
        .header("content-type", ct)
        .body(Body::from_stream(resp.bytes_stream()))
        .unwrap()
}

async fn proxy(peer: &Daemon, streaming: bool) -> Proxy {
    proxy_with(peer, streaming, true, false).await
}

async fn proxy_with(peer: &Daemon, streaming: bool, rewrite: bool, cut_streams: bool) -> Proxy {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let state = ProxyState {
        upstream: peer.url.clone(),
        me: url.clone(),
        streaming,
        rewrite,
        cut_streams,
        seen: seen.clone(),
        http: reqwest::Client::new(),
    };
    let app = axum::Router::new()
        .route("/.well-known/agent-card.json", axum::routing::get(card))
        .route("/a2a/jsonrpc", axum::routing::post(rpc))
        .with_state(state);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Proxy { url, seen }
}

fn fast() -> DelegateOptions {
    DelegateOptions { poll_interval: Duration::from_millis(50), request_timeout: Duration::from_secs(10) }
}

fn delegator(name: &str, url: &str, credentials: Option<&str>) -> A2aDelegator {
    let mut spec = format!("{name}={url}");
    if let Some(c) = credentials {
        spec.push_str(&format!(";credentials={c}"));
    }
    A2aDelegator::new(&[PeerConfig::parse_spec(&spec).unwrap()], fast()).unwrap()
}

/// A request to peer `p` whose messageId picks the tck scenario.
fn request(p: &str, message_id: &str, text: &str) -> DelegateRequest {
    let message = Message {
        message_id: message_id.to_owned(),
        role: Role::User,
        parts: vec![Part::text(text)],
        ..Default::default()
    };
    DelegateRequest { peer: p.to_owned(), message }
}

fn artifact_text(t: &Task) -> String {
    agentd_runtime::delegate::answer_text(t)
}

#[tokio::test]
async fn streaming_peers_are_followed_over_send_streaming_message() {
    let peer = Daemon::start(&["--agent", "tck"]);
    let px = proxy(&peer, true).await;
    let d = delegator("b", &px.url, None);
    let task =
        d.delegate(request("b", &uniq("tck-stream-001"), "go"), CancellationToken::new()).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert_eq!(artifact_text(&task), "Stream hello from TCK");
    // The task is the peer's own, read whole.
    let there = peer.call("GetTask", json!({"id": task.id})).await;
    assert_eq!(there["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(there["artifacts"].as_array().unwrap().len(), task.artifacts.as_ref().unwrap().len());
    let methods = px.methods();
    assert_eq!(methods.first().map(String::as_str), Some("SendStreamingMessage"), "{methods:?}");
    assert!(!methods.iter().any(|m| m == "SendMessage"), "{methods:?}");
    assert!(px.seen().iter().all(|s| s.version.as_deref() == Some("1.0")), "{:?}", px.seen());
}

#[tokio::test]
async fn a_stream_that_ends_early_is_followed_by_polling() {
    let peer = Daemon::start(&["--agent", "tck"]);
    let px = proxy_with(&peer, true, true, true).await;
    let d = delegator("b", &px.url, None);
    let task = d
        .delegate(request("b", &uniq("test-resubscribe-message-id"), "x"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    let methods = px.methods();
    assert_eq!(methods[0], "SendStreamingMessage");
    assert!(methods.iter().filter(|m| *m == "GetTask").count() >= 2, "{methods:?}");
}

#[tokio::test]
async fn peers_without_streaming_are_polled_with_get_task() {
    let peer = Daemon::start(&["--agent", "tck"]);
    let px = proxy(&peer, false).await;
    let d = delegator("b", &px.url, None);
    // Works for about four seconds: several polls see it WORKING first.
    let id = uniq("test-resubscribe-message-id");
    let started = Instant::now();
    let task = d.delegate(request("b", &id, "slow"), CancellationToken::new()).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert!(started.elapsed() >= Duration::from_secs(3), "returned before the peer finished");
    let methods = px.methods();
    assert_eq!(methods.first().map(String::as_str), Some("SendMessage"), "{methods:?}");
    assert!(methods.iter().filter(|m| *m == "GetTask").count() >= 2, "{methods:?}");
    assert!(!methods.iter().any(|m| m == "SendStreamingMessage"), "{methods:?}");
    assert!(px.seen().iter().all(|s| s.version.as_deref() == Some("1.0")), "{:?}", px.seen());
}

#[tokio::test]
async fn a_direct_message_reply_comes_back_as_a_completed_task() {
    let peer = Daemon::start(&["--agent", "tck"]);
    for streaming in [true, false] {
        let px = proxy(&peer, streaming).await;
        let d = delegator("b", &px.url, None);
        let task = d
            .delegate(request("b", &uniq("tck-message-response"), "hi"), CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(task.status.state, TaskState::Completed, "streaming={streaming}");
        assert_eq!(artifact_text(&task), "Direct message response");
        assert!(!task.id.is_empty());
    }
}

#[tokio::test]
async fn peer_failures_are_errors_that_name_the_peer() {
    // Nobody listens there.
    let d = delegator("gone", "http://127.0.0.1:9", None);
    let e = d.delegate(request("gone", "m1", "x"), CancellationToken::new()).await.unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, DelegateError::Peer { .. }), "{e:?}");
    assert!(text.contains("\"gone\"") && text.contains("agent card"), "{text}");

    // The peer dies in the middle of the task.
    let mut peer = Daemon::start(&["--agent", "tck"]);
    let d = Arc::new(delegator("b", &peer.url, None));
    let d2 = d.clone();
    let call = tokio::spawn(async move {
        d2.delegate(request("b", &uniq("test-resubscribe-message-id"), "x"), CancellationToken::new()).await
    });
    wait_working(&peer).await;
    peer.kill9();
    let e = tokio::time::timeout(Duration::from_secs(30), call).await.unwrap().unwrap().unwrap_err();
    assert!(matches!(e, DelegateError::Peer { .. }), "{e:?}");

    // A task the peer ends badly is returned in that state.
    let peer = Daemon::start(&["--agent", "tck"]);
    let d = delegator("b", &peer.url, None);
    let task =
        d.delegate(request("b", &uniq("tck-reject-task"), "x"), CancellationToken::new()).await.unwrap();
    assert_eq!(task.status.state, TaskState::Rejected);
}

#[tokio::test]
async fn an_unknown_peer_is_refused_by_name() {
    let d = delegator("b", "http://127.0.0.1:9", None);
    assert_eq!(d.peers(), vec!["b".to_owned()]);
    let e = d.delegate(request("c", "m1", "x"), CancellationToken::new()).await.unwrap_err();
    assert!(matches!(&e, DelegateError::UnknownPeer(n) if n == "c"), "{e:?}");
    assert!(e.to_string().contains("a2a.peers"), "{e}");
}

/// Waits until the peer has a WORKING task and returns its id.
async fn wait_working(peer: &Daemon) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let list = peer.call("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
        if let Some(id) = list["tasks"][0]["id"].as_str() {
            return id.to_owned();
        }
        assert!(Instant::now() < deadline, "the peer never started working");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn cancelling_the_delegation_cancels_the_peers_task() {
    let peer = Daemon::start(&["--agent", "tck"]);
    for streaming in [true, false] {
        let px = proxy(&peer, streaming).await;
        let d = Arc::new(delegator("b", &px.url, None));
        let cancel = CancellationToken::new();
        let (d2, c2) = (d.clone(), cancel.clone());
        let call = tokio::spawn(async move {
            d2.delegate(request("b", &uniq("test-resubscribe-message-id"), "x"), c2).await
        });
        let id = wait_working(&peer).await;
        cancel.cancel();
        let e = tokio::time::timeout(Duration::from_secs(10), call).await.unwrap().unwrap().unwrap_err();
        assert!(matches!(e, DelegateError::Cancelled), "{e:?}");
        wait_for_state(&peer, &id, "TASK_STATE_CANCELED", Duration::from_secs(10)).await;
        assert!(px.methods().iter().any(|m| m == "CancelTask"), "streaming={streaming}: {:?}", px.methods());
    }
}

const PEER_AUTH: &str = r#"
auth:
  tokens:
    - id: "agent:delegator"
      role: agent
      token: "env:PEER_TOKEN"
"#;
const TOKEN: &str = "peer-t0ken-5d1c";

#[tokio::test]
async fn credentials_are_sent_as_a_bearer_token() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), PEER_AUTH);
    let peer = Daemon::start_with_env(
        &dir.path().join("data"),
        &["--agent", "tck", "--config", cfg.to_str().unwrap()],
        &[("PEER_TOKEN", TOKEN)],
    )
    .with_token(TOKEN);
    let px = proxy(&peer, true).await;
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let d = delegator("b", &px.url, Some(&format!("file:{}", token_file.display())));
    let task =
        d.delegate(request("b", &uniq("tck-complete-task"), "hi"), CancellationToken::new()).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    assert!(px.seen().iter().all(|s| s.authorization.as_deref() == Some(&format!("Bearer {TOKEN}") as &str)));

    // Without credentials the peer refuses, and the error says where to look.
    let d = delegator("b", &px.url, None);
    let e = d
        .delegate(request("b", &uniq("tck-complete-task"), "hi"), CancellationToken::new())
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("401") && text.contains("credentials"), "{text}");
    assert!(!text.contains(TOKEN));
}

#[tokio::test]
async fn credentials_go_only_to_the_configured_origin() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), PEER_AUTH);
    let peer = Daemon::start_with_env(
        &dir.path().join("data"),
        &["--agent", "tck", "--config", cfg.to_str().unwrap()],
        &[("PEER_TOKEN", TOKEN)],
    );
    // A card served at one origin that points its interface at another.
    let px = proxy_with(&peer, true, false, false).await;
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let d = delegator("b", &px.url, Some(&format!("file:{}", token_file.display())));
    let e = d
        .delegate(request("b", &uniq("tck-complete-task"), "hi"), CancellationToken::new())
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("another origin") && text.contains("a2a.peers[b].url"), "{text}");
    assert!(px.methods().is_empty(), "nothing was sent: {:?}", px.methods());
    let list = peer.as_token(Some(TOKEN)).call("ListTasks", json!({})).await;
    assert_eq!(list["tasks"], json!([]), "the peer got nothing: {list}");
}

// ---- The `delegate` tool, driven by the scripted model of a real daemon ----

fn scripted_daemon(dir: &std::path::Path, steps: Value, peers: &str) -> (Daemon, std::path::PathBuf) {
    let script = dir.join("script.json");
    std::fs::write(&script, serde_json::to_vec(&steps).unwrap()).unwrap();
    let record = dir.join("requests.jsonl");
    let yaml = format!(
        "model:\n  kind: scripted\n  script: {}\n  record_to: {}\n{peers}",
        script.display(),
        record.display()
    );
    let cfg = write_config(dir, &yaml);
    (Daemon::start_in(&dir.join("data"), &["--config", cfg.to_str().unwrap()]), record)
}

fn recorded(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tool_names(req: &Value) -> Vec<String> {
    req["tools"].as_array().into_iter().flatten().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn the_model_delegates_with_the_tool_and_gets_the_peers_answer() {
    // The peer is the default agent with the echo model.
    let peer = Daemon::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "delegate", "arguments": {"peer": "echoer", "objective": "summarize the plan"}}]},
        {"tool_calls": [{"id": "c2", "name": "delegate", "arguments": {"peer": "nobody", "objective": "x"}}]},
        {"text": "The peer said its part."}
    ]);
    let peers = format!("a2a:\n  peers:\n    - name: echoer\n      url: {}\n", peer.url);
    let (d, record) = scripted_daemon(dir.path(), steps, &peers);
    let r = d.call("SendMessage", send_params("m1", "Ask the peer.", None)).await;
    let id = r["task"]["id"].as_str().unwrap();
    let t = wait_for_state(&d, id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert!(t.to_string().contains("The peer said its part."), "{t}");

    let reqs = recorded(&record);
    assert_eq!(reqs.len(), 3);
    assert!(tool_names(&reqs[0]).contains(&"delegate".to_owned()), "{:?}", tool_names(&reqs[0]));
    let enum_ = &reqs[0]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "delegate").unwrap()["parameters"]
        ["properties"]["peer"]["enum"];
    assert_eq!(enum_, &json!(["echoer"]));
    let tool_result = |req: &Value| req["messages"].as_array().unwrap().last().unwrap().clone();
    let first = tool_result(&reqs[1]);
    assert_eq!(first["role"], "tool");
    assert_eq!(first["content"], "echo: summarize the plan", "{first}");
    let second = tool_result(&reqs[2]);
    let text = second["content"].as_str().unwrap();
    assert!(text.contains("\"nobody\"") && text.contains("echoer"), "{text}");

    // The peer ran a real task for it.
    let list = peer.call("ListTasks", json!({})).await;
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1, "{list}");
}

#[tokio::test]
async fn cancelling_a_delegating_task_cancels_the_peers_task() {
    // The peer's model takes a minute to answer.
    let peer_dir = tempfile::tempdir().unwrap();
    let (peer, _) = scripted_daemon(peer_dir.path(), json!([{"text": "too late", "delay_ms": 60000}]), "");
    let dir = tempfile::tempdir().unwrap();
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "delegate", "arguments": {"peer": "b", "objective": "take your time"}}]},
        {"text": "unreached"}
    ]);
    let peers = format!("a2a:\n  peers:\n    - name: b\n      url: {}\n", peer.url);
    let (d, _record) = scripted_daemon(dir.path(), steps, &peers);
    let r = d
        .call(
            "SendMessage",
            json!({"message": user_msg("m1", "go"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = r["task"]["id"].as_str().unwrap();
    let theirs = wait_working(&peer).await;
    d.call("CancelTask", json!({"id": id})).await;
    wait_for_state(&d, id, "TASK_STATE_CANCELED", Duration::from_secs(10)).await;
    wait_for_state(&peer, &theirs, "TASK_STATE_CANCELED", Duration::from_secs(10)).await;
}

#[tokio::test]
async fn peers_from_the_environment_delegate_with_credentials_that_never_reach_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), PEER_AUTH);
    let peer = Daemon::start_with_env(
        &dir.path().join("peer"),
        &["--config", cfg.to_str().unwrap()],
        &[("PEER_TOKEN", TOKEN)],
    )
    .with_token(TOKEN);
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "delegate", "arguments": {"peer": "b", "objective": "hello peer"}}]},
        {"text": "ok"}
    ]);
    let script = dir.path().join("script.json");
    std::fs::write(&script, serde_json::to_vec(&steps).unwrap()).unwrap();
    let peers = format!("b={};credentials=env:B_TOKEN", peer.url);
    let d = Daemon::start_with_env(
        &dir.path().join("caller"),
        &["--model", "scripted", "--model-script", script.to_str().unwrap()],
        &[("AGENTD_A2A_PEERS", peers.as_str()), ("B_TOKEN", TOKEN), ("AGENTD_LOG", "debug")],
    );
    let r = d.call("SendMessage", send_params("m1", "go", None)).await;
    let id = r["task"]["id"].as_str().unwrap();
    let t = wait_for_state(&d, id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert!(t.to_string().contains("ok"), "{t}");
    // The authenticated peer ran it.
    let list = peer.call("ListTasks", json!({})).await;
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1, "{list}");
    assert!(list.to_string().contains("echo: hello peer"), "{list}");
    assert!(!d.log().contains(TOKEN), "the peer token reached the log");
}

#[test]
fn bad_peer_configuration_stops_the_daemon_with_the_reason() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--data-dir"]).arg(dir.path()).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&["--a2a-peer", "b=http://127.0.0.1:9;credentials=env:AGENTD_TEST_NO_SUCH_VAR"], &[]);
    assert!(
        e.contains("a2a.peers[b].credentials") && e.contains("AGENTD_TEST_NO_SUCH_VAR is not set"),
        "{e}"
    );
    let e = run(&["--a2a-peer", "b=ftp://h"], &[]);
    assert!(e.contains("a2a.peers[b].url"), "{e}");
    let e = run(&["--a2a-peer", "b=http://h;credentials=plaintext"], &[]);
    assert!(e.contains("--a2a-peer") && e.contains("env:NAME"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let twice = "a2a:\n  peers:\n    - {name: a, url: 'http://h'}\n    - {name: a, url: 'http://i'}\n";
    let cfg = write_config(dir.path(), twice);
    let e = run(&["--config", cfg.to_str().unwrap()], &[]);
    assert!(e.contains("\"a\" is used twice"), "{e}");
}

#[tokio::test]
async fn without_peers_the_model_has_no_delegate_tool() {
    let dir = tempfile::tempdir().unwrap();
    let (d, record) = scripted_daemon(dir.path(), json!([{"text": "hi"}]), "");
    let r = d.call("SendMessage", send_params("m1", "hello", None)).await;
    wait_for_state(&d, r["task"]["id"].as_str().unwrap(), "TASK_STATE_COMPLETED", Duration::from_secs(15))
        .await;
    let reqs = recorded(&record);
    assert_eq!(reqs.len(), 1);
    assert!(!tool_names(&reqs[0]).contains(&"delegate".to_owned()), "{:?}", tool_names(&reqs[0]));
}
