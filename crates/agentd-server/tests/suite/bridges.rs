//! Bridges end to end: a `ChannelBridge` over a real SqliteStore queues
//! gate announcements in the outbox; the push worker POSTs them to a real
//! receiver on 127.0.0.1:0. Body shapes, the HMAC signature, a retry after
//! a 500, clear errors, and delivery after a `kill -9` (a child process
//! announces while the receiver is down and is killed; the parent restarts
//! the worker on the same database with the receiver up).

use agentd_core::{EngineBuilder, EngineConfig, GateAnnouncement, GateBridge, Outbox, OutboxItem};
use agentd_proto::ErrorKind;
use agentd_runtime::EchoAgent;
use agentd_server::bridges::{BridgeSecrets, ChannelBridge, DeclaredChannel, SigningKey, sign};
use agentd_server::errors::json;
use agentd_server::push::{PushWorkerConfig, SsrfGuard, spawn_push_worker};
use agentd_store::{SqliteOptions, SqliteStore};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(20);
const SECRET: &str = "bridge-s3cret-42";

#[derive(Debug)]
struct Hit {
    headers: HeaderMap,
    body: Vec<u8>,
    status: StatusCode,
}

struct Rx {
    tx: mpsc::UnboundedSender<Hit>,
    /// Requests still to answer 500.
    fail: AtomicUsize,
}

async fn hook(State(s): State<Arc<Rx>>, headers: HeaderMap, body: axum::body::Bytes) -> StatusCode {
    let failing = s.fail.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
    let status = if failing { StatusCode::INTERNAL_SERVER_ERROR } else { StatusCode::OK };
    let _ = s.tx.send(Hit { headers, body: body.to_vec(), status });
    status
}

fn serve_receiver(listener: tokio::net::TcpListener, fail: usize) -> mpsc::UnboundedReceiver<Hit> {
    let (tx, rx) = mpsc::unbounded_channel();
    let state = Arc::new(Rx { tx, fail: AtomicUsize::new(fail) });
    let app = axum::Router::new().route("/hook", axum::routing::post(hook)).with_state(state);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    rx
}

async fn receiver(fail: usize) -> (SocketAddr, mpsc::UnboundedReceiver<Hit>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (addr, serve_receiver(listener, fail))
}

async fn next_hit(rx: &mut mpsc::UnboundedReceiver<Hit>) -> Hit {
    tokio::time::timeout(WAIT, rx.recv()).await.expect("a delivery in time").expect("receiver alive")
}

/// The outbox of an engine on the SQLite store at `db`.
fn engine(db: &Path) -> Outbox {
    let store = SqliteStore::open(db, SqliteOptions::default()).expect("open store");
    let policy = Arc::new(SsrfGuard::new(true));
    EngineBuilder::new(Arc::new(store), Arc::new(EchoAgent), policy, EngineConfig::default()).outbox()
}

fn worker_config() -> PushWorkerConfig {
    let secrets = HashMap::from([("ops".to_owned(), SigningKey::new(SECRET))]);
    PushWorkerConfig {
        allow_private: true,
        timeout: Duration::from_secs(5),
        max_attempts: 100,
        backoff_base: Duration::from_millis(20),
        backoff_max: Duration::from_millis(200),
        bridge_secrets: BridgeSecrets::new(secrets),
    }
}

fn channel(name: &str, kind: &str, url: &str) -> DeclaredChannel {
    DeclaredChannel { name: name.into(), kind: Some(kind.into()), target: Some(url.into()) }
}

fn announcement(task: &str, channel: &str) -> GateAnnouncement {
    GateAnnouncement {
        task_id: task.into(),
        run_id: Some("demo-01JQ".into()),
        question: "Approve the release?".into(),
        ask_schema: Some(json!({"type": "object", "properties": {"approve": {"type": "boolean"}}})),
        channel: channel.into(),
        escalation: false,
        answer_hint: format!("agentd answer {task} '{{\"approve\":true}}'"),
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or_else(|| panic!("header {name} missing: {h:?}"))
}

fn now_secs() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

#[tokio::test]
async fn webhook_announcements_arrive_signed_with_the_documented_body() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(&dir.path().join("agentd.db"));
    let (addr, mut rx) = receiver(0).await;
    let url = format!("http://{addr}/hook");
    let bridge = ChannelBridge::new(e.clone(), &[channel("ops", "webhook", &url)], SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let worker = spawn_push_worker(e.clone(), worker_config(), stop.clone());

    bridge.announce(announcement("task-1", "@channel/ops")).await.expect("announce");
    let hit = next_hit(&mut rx).await;
    assert_eq!(header(&hit.headers, "content-type"), "application/json");
    let body: Value = serde_json::from_slice(&hit.body).unwrap();
    assert_eq!(
        body,
        json!({
            "taskId": "task-1",
            "runId": "demo-01JQ",
            "question": "Approve the release?",
            "askSchema": {"type": "object", "properties": {"approve": {"type": "boolean"}}},
            "channel": "@channel/ops",
            "target": url,
            "answerHint": "agentd answer task-1 '{\"approve\":true}'",
            "escalation": false
        })
    );
    let ts = header(&hit.headers, "x-agentd-timestamp");
    let sig = header(&hit.headers, "x-agentd-signature");
    let key = SigningKey::new(SECRET);
    assert_eq!(sign::verify(&key, ts, sig, &hit.body, now_secs(), 300), Ok(()));
    assert!(sign::verify(&SigningKey::new("wrong"), ts, sig, &hit.body, now_secs(), 300).is_err());
    // The row is gone; once the worker has stopped, nothing else arrived:
    // delivered exactly once.
    wait_for_outbox(&e, "the delivered row is removed", |rows| rows.is_empty()).await;
    stop.cancel();
    worker.await.unwrap();
    assert!(rx.try_recv().is_err(), "delivered once");
}

#[tokio::test]
async fn a_failed_delivery_is_retried_until_the_receiver_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(&dir.path().join("agentd.db"));
    let (addr, mut rx) = receiver(2).await;
    let bridge = ChannelBridge::new(
        e.clone(),
        &[channel("ops", "webhook", &format!("http://{addr}/hook"))],
        SsrfGuard::new(true),
    );
    let stop = CancellationToken::new();
    let worker = spawn_push_worker(e.clone(), worker_config(), stop.clone());
    bridge.announce(announcement("task-2", "ops")).await.unwrap();
    let first = next_hit(&mut rx).await;
    assert_eq!(first.status, StatusCode::INTERNAL_SERVER_ERROR);
    let second = next_hit(&mut rx).await;
    assert_eq!(second.status, StatusCode::INTERNAL_SERVER_ERROR);
    let third = next_hit(&mut rx).await;
    assert_eq!(third.status, StatusCode::OK);
    assert_eq!(first.body, third.body, "the same announcement is retried");
    // Each attempt is signed at its own time and verifies.
    let key = SigningKey::new(SECRET);
    for h in [&first, &third] {
        let (ts, sig) = (header(&h.headers, "x-agentd-timestamp"), header(&h.headers, "x-agentd-signature"));
        assert_eq!(sign::verify(&key, ts, sig, &h.body, now_secs(), 300), Ok(()));
    }
    stop.cancel();
    worker.await.unwrap();
}

#[tokio::test]
async fn slack_channels_get_an_incoming_webhook_message_unsigned() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(&dir.path().join("agentd.db"));
    let (addr, mut rx) = receiver(0).await;
    // "ops" has a secret in the worker config, but Slack does not verify one.
    let bridge = ChannelBridge::new(
        e.clone(),
        &[channel("ops", "slack", &format!("http://{addr}/hook"))],
        SsrfGuard::new(true),
    );
    let stop = CancellationToken::new();
    let worker = spawn_push_worker(e.clone(), worker_config(), stop.clone());
    let mut a = announcement("task-3", "ops");
    a.escalation = true;
    bridge.announce(a).await.unwrap();
    let hit = next_hit(&mut rx).await;
    let body: Value = serde_json::from_slice(&hit.body).unwrap();
    let text = body["text"].as_str().unwrap();
    assert!(text.starts_with("Still waiting for an answer (run demo-01JQ): Approve the release?"), "{text}");
    let blocks = body["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "section");
    assert!(blocks.last().unwrap()["elements"][0]["text"].as_str().unwrap().contains("agentd answer task-3"));
    assert!(hit.headers.get("x-agentd-signature").is_none());
    stop.cancel();
    worker.await.unwrap();
}

#[tokio::test]
async fn unknown_channels_kinds_and_refused_targets_are_clear_errors_and_queue_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let e = engine(&dir.path().join("agentd.db"));
    let declared = [
        channel("ops", "webhook", "http://127.0.0.1:9/hook"),
        channel("mail", "email", "mailto:ops@example.com"),
    ];
    let bridge = ChannelBridge::new(e.clone(), &declared, SsrfGuard::new(false));
    assert_eq!(bridge.problems().len(), 1, "{:?}", bridge.problems());

    let err = json(bridge.announce(announcement("t", "nowhere")).await.unwrap_err());
    assert_eq!(err.kind, ErrorKind::InvalidParams);
    assert!(err.message.contains("\"nowhere\"") && err.message.contains("[mail, ops]"), "{}", err.message);
    let err = json(bridge.announce(announcement("t", "mail")).await.unwrap_err());
    assert!(
        err.message.contains("kind \"email\"") && err.message.contains("webhook, slack"),
        "{}",
        err.message
    );
    // Without --push-allow-private, loopback targets are refused as for push.
    let err = json(bridge.announce(announcement("t", "ops")).await.unwrap_err());
    assert!(err.message.contains("push.allow_private"), "{}", err.message);
    assert!(e.due(i64::MAX, 10).await.unwrap().is_empty(), "nothing was queued");
}

const CHILD_DB: &str = "AGENTD_BRIDGE_CHILD_DB";
const CHILD_URL: &str = "AGENTD_BRIDGE_CHILD_URL";

/// Run by the test process as a child of its own (the variables are set
/// only in that child's environment): the same test, as the process that
/// is killed.
#[tokio::test]
async fn an_announcement_survives_kill_9_and_is_delivered_after_restart() {
    if let (Ok(db), Ok(url)) = (std::env::var(CHILD_DB), std::env::var(CHILD_URL)) {
        return announce_and_wait_to_be_killed(Path::new(&db), &url).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("agentd.db");
    // A port with nobody listening: the receiver is down.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/hook");
    let name = format!("{}::an_announcement_survives_kill_9_and_is_delivered_after_restart", module());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(CHILD_DB, &db)
        .env(CHILD_URL, &url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child");
    let stdout = child.stdout.take().unwrap();
    let attempted = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).any(|l| l.contains("ATTEMPTED"))
    });
    // The child announced and its worker failed an attempt against the
    // closed port (a committed attempt count).
    assert!(tokio::time::timeout(WAIT, attempted).await.unwrap().unwrap(), "the child never attempted");
    child.kill().expect("kill -9");
    child.wait().unwrap();

    let listener =
        tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("rebind the receiver port");
    let mut rx = serve_receiver(listener, 0);
    let e = engine(&db);
    let pending = e.due(i64::MAX, 10).await.unwrap();
    assert_eq!(pending.len(), 1, "the acknowledged announcement is a row after kill -9");
    assert!(pending[0].attempts >= 1, "the child tried before it died: {}", pending[0].attempts);
    let stop = CancellationToken::new();
    let worker = spawn_push_worker(e.clone(), worker_config(), stop.clone());
    let hit = next_hit(&mut rx).await;
    let body: Value = serde_json::from_slice(&hit.body).unwrap();
    assert_eq!(body["taskId"], "task-k9");
    let (ts, sig) = (header(&hit.headers, "x-agentd-timestamp"), header(&hit.headers, "x-agentd-signature"));
    assert_eq!(sign::verify(&SigningKey::new(SECRET), ts, sig, &hit.body, now_secs(), 300), Ok(()));
    stop.cancel();
    worker.await.unwrap();
}

/// The child's side of the kill -9 test: announces to a receiver that is
/// down, with the worker retrying; once a failed attempt is committed, says
/// so on stdout and waits to be killed.
async fn announce_and_wait_to_be_killed(db: &Path, url: &str) {
    let e = engine(db);
    let _worker = spawn_push_worker(e.clone(), worker_config(), CancellationToken::new());
    let bridge = ChannelBridge::new(e.clone(), &[channel("ops", "webhook", url)], SsrfGuard::new(true));
    bridge.announce(announcement("task-k9", "ops")).await.expect("announce");
    wait_for_outbox(&e, "a failed attempt", |rows| rows.iter().any(|r| r.attempts >= 1)).await;
    println!("ATTEMPTED");
    std::future::pending::<()>().await;
}

/// Polls the outbox until `done` holds for its rows (panics after [`WAIT`]).
async fn wait_for_outbox(e: &Outbox, what: &str, done: impl Fn(&[OutboxItem]) -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done(&e.due(i64::MAX, 10).await.expect("outbox")) {
        assert!(tokio::time::Instant::now() < deadline, "the outbox never showed {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// This module's path as the test harness names it (without the crate).
fn module() -> &'static str {
    module_path!().split_once("::").map_or("", |(_, m)| m)
}
