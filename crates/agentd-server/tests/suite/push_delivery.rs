//! Push delivery end to end: the echo agent's events reach a real webhook
//! receiver (axum on 127.0.0.1) through the outbox and the push worker, with
//! headers, retries, ordering, restarts and the SSRF guard. No test sends
//! traffic anywhere but loopback: non-loopback addresses are only classified.

use agentd_core::{
    Engine, EngineBuilder, EngineConfig, Outbox, Principal, PrincipalRole, PushUrlPolicy, Store,
};
use agentd_proto::{
    AuthenticationInfo, ErrorKind, Message, Part, Role, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, TaskPushNotificationConfig, TaskState, new_id,
};
use agentd_runtime::EchoAgent;
use agentd_server::errors::json;
use agentd_server::push::{GuardedResolver, PushWorkerConfig, SsrfGuard, refusal_reason, spawn_push_worker};
use agentd_store::MemoryStore;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(15);

/// One request the receiver got, and what it answered.
#[derive(Debug)]
struct Hit {
    headers: HeaderMap,
    body: String,
    status: StatusCode,
}

struct RxState {
    tx: mpsc::UnboundedSender<Hit>,
    /// Requests still to answer 503.
    fail: AtomicUsize,
}

async fn hook(State(s): State<Arc<RxState>>, headers: HeaderMap, body: String) -> StatusCode {
    let failing = s.fail.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
    let status = if failing { StatusCode::SERVICE_UNAVAILABLE } else { StatusCode::OK };
    let _ = s.tx.send(Hit { headers, body, status });
    status
}

/// A webhook receiver on `listener` answering 503 to its first `fail` requests.
fn serve_receiver(listener: tokio::net::TcpListener, fail: usize) -> mpsc::UnboundedReceiver<Hit> {
    let (tx, rx) = mpsc::unbounded_channel();
    let state = Arc::new(RxState { tx, fail: AtomicUsize::new(fail) });
    let app = axum::Router::new().route("/hook", axum::routing::post(hook)).with_state(state);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    rx
}

async fn receiver(fail: usize) -> (SocketAddr, mpsc::UnboundedReceiver<Hit>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind receiver");
    let addr = listener.local_addr().expect("receiver address");
    (addr, serve_receiver(listener, fail))
}

/// An engine over `store` and its outbox.
fn engine_with(store: Arc<dyn Store>, policy: SsrfGuard) -> (Engine, Outbox) {
    let builder = EngineBuilder::new(store, Arc::new(EchoAgent), Arc::new(policy), EngineConfig::default());
    let outbox = builder.outbox();
    (builder.build().engine().clone(), outbox)
}

fn alice() -> Principal {
    Principal::new("user:alice", PrincipalRole::User)
}

fn fast(allow_private: bool) -> PushWorkerConfig {
    PushWorkerConfig {
        allow_private,
        timeout: Duration::from_secs(5),
        max_attempts: 100,
        backoff_base: Duration::from_millis(20),
        backoff_max: Duration::from_millis(100),
        ..PushWorkerConfig::default()
    }
}

fn webhook(url: String) -> TaskPushNotificationConfig {
    TaskPushNotificationConfig {
        url,
        token: "tok-123".into(),
        authentication: Some(AuthenticationInfo { scheme: "Bearer".into(), credentials: "s3cret".into() }),
        ..Default::default()
    }
}

fn request(text: &str, push: Option<TaskPushNotificationConfig>) -> SendMessageRequest {
    SendMessageRequest {
        message: Some(Message {
            message_id: new_id(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Default::default()
        }),
        configuration: Some(SendMessageConfiguration {
            task_push_notification_config: push,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Sends a message that registers `push` inline; returns the task id once
/// the (blocking) call answered with the completed task.
async fn run_task(engine: &Engine, push: Option<TaskPushNotificationConfig>) -> String {
    match engine.send_message(&alice(), request("hello webhook", push)).await {
        Ok(SendMessageResponse::Task(t)) => {
            assert_eq!(t.status.state, TaskState::Completed, "a webhook never holds up its task");
            t.id
        }
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn next_hit(rx: &mut mpsc::UnboundedReceiver<Hit>) -> Hit {
    tokio::time::timeout(WAIT, rx.recv()).await.expect("webhook delivery in time").expect("receiver alive")
}

fn event(hit: &Hit) -> StreamResponse {
    serde_json::from_str(&hit.body)
        .unwrap_or_else(|e| panic!("body {} is not a StreamResponse: {e}", hit.body))
}

fn is_completed(e: &StreamResponse) -> bool {
    matches!(e, StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Completed)
}

/// The requests answered 200, up to and including the COMPLETED status.
async fn delivered_until_completed(
    rx: &mut mpsc::UnboundedReceiver<Hit>,
    all: &mut Vec<Hit>,
) -> Vec<StreamResponse> {
    let mut ok = Vec::new();
    loop {
        let hit = next_hit(rx).await;
        let status = hit.status;
        let e = event(&hit);
        all.push(hit);
        if status == StatusCode::OK {
            let done = is_completed(&e);
            ok.push(e);
            if done {
                return ok;
            }
        }
    }
}

/// The shape the echo agent's task produces: WORKING, two artifact chunks,
/// COMPLETED, all for `task_id`.
fn assert_echo_sequence(events: &[StreamResponse], task_id: &str) {
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            StreamResponse::StatusUpdate(u) => {
                assert_eq!(u.task_id, task_id);
                format!("status:{}", u.status.state.as_str())
            }
            StreamResponse::ArtifactUpdate(a) => {
                assert_eq!(a.task_id, task_id);
                format!("artifact:last={}", a.last_chunk)
            }
            other => panic!("unexpected push body {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "status:TASK_STATE_WORKING",
            "artifact:last=false",
            "artifact:last=true",
            "status:TASK_STATE_COMPLETED"
        ],
        "events arrive once each and in order"
    );
}

/// Waits until an outbox row records `n` failed attempts.
async fn wait_attempts(outbox: &Outbox, n: u32) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let rows = outbox.due(i64::MAX, 100).await.expect("store");
        if rows.iter().any(|r| r.attempts >= n) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "no delivery failed {n} times: {rows:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn wait_outbox_empty(outbox: &Outbox) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while outbox.next_due().await.expect("store").is_some() {
        assert!(tokio::time::Instant::now() < deadline, "outbox never drained");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn delivers_stream_responses_with_credentials_and_token() {
    let (addr, mut rx) = receiver(0).await;
    let (engine, outbox) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let worker = spawn_push_worker(outbox.clone(), fast(true), stop.clone());

    let task_id = run_task(&engine, Some(webhook(format!("http://{addr}/hook")))).await;
    let mut all = Vec::new();
    let events = delivered_until_completed(&mut rx, &mut all).await;
    assert_echo_sequence(&events, &task_id);
    for hit in &all {
        assert_eq!(hit.status, StatusCode::OK);
        assert_eq!(hit.headers["content-type"], "application/a2a+json");
        assert_eq!(hit.headers["authorization"], "Bearer s3cret");
        assert_eq!(hit.headers["x-a2a-notification-token"], "tok-123");
        assert!(!hit.body.contains("\"history\""), "push bodies carry no history: {}", hit.body);
        let json: serde_json::Value = serde_json::from_str(&hit.body).expect("JSON");
        let member = json.as_object().expect("object");
        assert_eq!(member.len(), 1, "a bare StreamResponse, no envelope: {}", hit.body);
        assert!(member.contains_key("statusUpdate") || member.contains_key("artifactUpdate"), "{}", hit.body);
    }
    let completed = all.last().expect("a delivery");
    let json: serde_json::Value = serde_json::from_str(&completed.body).expect("JSON");
    assert_eq!(json["statusUpdate"]["taskId"], task_id.as_str());
    assert_eq!(json["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    wait_outbox_empty(&outbox).await;

    stop.cancel();
    worker.await.expect("worker ends cleanly");
}

#[tokio::test]
async fn optional_headers_are_left_out() {
    let (addr, mut rx) = receiver(0).await;
    let (engine, outbox) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let _worker = spawn_push_worker(outbox.clone(), fast(true), stop.clone());

    let mut cfg = webhook(format!("http://{addr}/hook"));
    cfg.token.clear();
    cfg.authentication = Some(AuthenticationInfo { scheme: "Bearer".into(), credentials: String::new() });
    let task_id = run_task(&engine, Some(cfg)).await;
    let mut all = Vec::new();
    let events = delivered_until_completed(&mut rx, &mut all).await;
    assert_echo_sequence(&events, &task_id);
    for hit in &all {
        assert!(!hit.headers.contains_key("authorization"));
        assert!(!hit.headers.contains_key("x-a2a-notification-token"));
    }
    stop.cancel();
}

#[tokio::test]
async fn retries_with_backoff_and_keeps_order() {
    let (addr, mut rx) = receiver(2).await;
    let (engine, outbox) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let _worker = spawn_push_worker(outbox.clone(), fast(true), stop.clone());

    let task_id = run_task(&engine, Some(webhook(format!("http://{addr}/hook")))).await;
    let mut all = Vec::new();
    let events = delivered_until_completed(&mut rx, &mut all).await;
    assert_echo_sequence(&events, &task_id);
    let statuses: Vec<u16> = all.iter().map(|h| h.status.as_u16()).collect();
    assert_eq!(statuses, [503, 503, 200, 200, 200, 200]);
    // The first event was retried as is; nothing overtook it.
    assert_eq!(all[0].body, all[1].body);
    assert_eq!(all[1].body, all[2].body);
    wait_outbox_empty(&outbox).await;
    stop.cancel();
}

#[tokio::test]
async fn a_receiver_that_comes_up_later_still_gets_everything() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("address")
    }; // dropped: nothing listens there yet
    let (engine, outbox) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let _worker = spawn_push_worker(outbox.clone(), fast(true), stop.clone());

    let task_id = run_task(&engine, Some(webhook(format!("http://{addr}/hook")))).await;
    wait_attempts(&outbox, 2).await; // a few refused connects
    let listener = {
        let mut tries = 0;
        loop {
            match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    eprintln!("rebinding {addr}: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("cannot rebind {addr}: {e}"),
            }
        }
    };
    let mut rx = serve_receiver(listener, 0);
    let mut all = Vec::new();
    let events = delivered_until_completed(&mut rx, &mut all).await;
    assert_echo_sequence(&events, &task_id);
    wait_outbox_empty(&outbox).await;
    stop.cancel();
}

#[tokio::test]
async fn gives_up_after_max_attempts_without_touching_the_task() {
    let (addr, mut rx) = receiver(usize::MAX).await;
    let store = Arc::new(MemoryStore::new());
    let (engine, outbox) = engine_with(store.clone(), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let cfg = PushWorkerConfig { max_attempts: 3, backoff_base: Duration::from_millis(5), ..fast(true) };
    let _worker = spawn_push_worker(outbox.clone(), cfg, stop.clone());

    let task_id = run_task(&engine, Some(webhook(format!("http://{addr}/hook")))).await;
    wait_outbox_empty(&outbox).await;
    let mut hits = Vec::new();
    while let Ok(hit) = rx.try_recv() {
        hits.push(hit);
    }
    assert_eq!(hits.len(), 4 * 3, "three attempts for each of the four events");
    for attempts in hits.chunks(3) {
        assert!(
            attempts
                .iter()
                .all(|h| h.body == attempts[0].body && h.status == StatusCode::SERVICE_UNAVAILABLE)
        );
    }
    let bodies: Vec<StreamResponse> = hits.iter().step_by(3).map(event).collect();
    assert_echo_sequence(&bodies, &task_id);
    let rec = store.get_task(&task_id).await.expect("store").expect("task");
    assert_eq!(rec.task.status.state, TaskState::Completed);
    stop.cancel();
}

#[tokio::test]
async fn a_retry_pending_at_shutdown_is_delivered_after_restart() {
    let (addr, mut rx) = receiver(1).await;
    let (engine, outbox) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    // A backoff far beyond the test: only the restart can deliver.
    let slow = PushWorkerConfig {
        backoff_base: Duration::from_secs(3600),
        backoff_max: Duration::from_secs(3600),
        ..fast(true)
    };
    let worker = spawn_push_worker(outbox.clone(), slow, stop.clone());

    let task_id = run_task(&engine, Some(webhook(format!("http://{addr}/hook")))).await;
    let first = next_hit(&mut rx).await;
    assert_eq!(first.status, StatusCode::SERVICE_UNAVAILABLE);
    // The failure is recorded (its retry an hour away); once the worker has
    // stopped, nothing else was sent.
    wait_attempts(&outbox, 1).await;
    stop.cancel();
    tokio::time::timeout(WAIT, worker).await.expect("worker stops").expect("worker ends cleanly");
    assert!(rx.try_recv().is_err(), "the failed event holds back the rest");
    assert!(outbox.next_due().await.expect("store").is_some(), "rows stay queued");

    let stop = CancellationToken::new();
    let _worker = spawn_push_worker(outbox.clone(), fast(true), stop.clone());
    let mut all = Vec::new();
    let events = delivered_until_completed(&mut rx, &mut all).await;
    assert_echo_sequence(&events, &task_id);
    assert_eq!(events.len(), all.len(), "after the restart every request succeeded");
    wait_outbox_empty(&outbox).await;
    stop.cancel();
}

#[tokio::test]
async fn delivery_refuses_private_targets_when_not_allowed() {
    let (addr, mut rx) = receiver(0).await;
    // Registration allowed (as if DNS had said otherwise), delivery guarded.
    let (engine, outbox) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let cfg = PushWorkerConfig { max_attempts: 2, backoff_base: Duration::from_millis(5), ..fast(false) };
    let _worker = spawn_push_worker(outbox.clone(), cfg, stop.clone());

    run_task(&engine, Some(webhook(format!("http://{addr}/hook")))).await;
    run_task(&engine, Some(webhook(format!("http://localhost:{}/hook", addr.port())))).await;
    run_task(&engine, Some(webhook(format!("http://[::ffff:127.0.0.1]:{}/hook", addr.port())))).await;
    wait_outbox_empty(&outbox).await;
    assert!(rx.try_recv().is_err(), "nothing reached the private receiver");
    stop.cancel();
}

#[tokio::test]
async fn ssrf_guard_refuses_private_and_non_http_urls() {
    let guard = SsrfGuard::new(false);
    let cases = [
        ("http://127.0.0.1:8080/hook", "a loopback address"),
        ("http://localhost/", "loopback name"),
        ("http://api.localhost:9000/", "loopback name"),
        ("http://10.0.0.1/", "a private address"),
        ("http://192.168.1.20/", "a private address"),
        ("http://172.20.0.1/", "a private address"),
        ("http://169.254.169.254/latest/meta-data", "a link-local address"),
        ("http://[::1]/", "a loopback address"),
        ("http://[fd00::1]/", "unique-local"),
        ("http://[fe80::1]/", "a link-local address"),
        ("http://[::ffff:10.0.0.1]/", "a private address"),
        ("http://100.64.1.1/", "carrier-grade NAT"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://2130706433/", "a loopback address"),
        ("http://224.0.0.1/", "multicast"),
        ("ftp://example.com/", "must use http or https"),
        ("file:///etc/passwd", "must use http or https"),
        ("not a url", "not a valid URL"),
    ];
    for (url, why) in cases {
        let e = guard.check(url).await.expect_err(url);
        assert!(e.contains(why), "{url}: {e}");
    }
    let e = guard.check("http://127.0.0.1:8080/hook").await.expect_err("loopback");
    assert!(e.contains("127.0.0.1") && e.contains("push.allow_private"), "{e}");
    // Public literals pass without any lookup or connection.
    guard.check("https://8.8.8.8/hook").await.expect("public IPv4");
    guard.check("https://[2001:4860:4860::8888]/hook").await.expect("public IPv6");

    let open = SsrfGuard::new(true);
    for url in ["http://127.0.0.1:8080/hook", "http://localhost/", "http://[::1]/", "http://10.0.0.1/"] {
        open.check(url).await.unwrap_or_else(|e| panic!("{url} allowed with allow_private: {e}"));
    }
    open.check("ftp://example.com/").await.expect_err("the scheme rule always holds");
}

#[tokio::test]
async fn registration_refuses_private_urls_naming_the_field() {
    let (engine, _) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(false));
    let task_id = run_task(&engine, None).await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost/",
        "http://10.0.0.1/",
        "http://169.254.169.254/",
        "http://[::1]/",
        "ftp://example.com/",
    ] {
        let cfg =
            TaskPushNotificationConfig { task_id: task_id.clone(), url: url.into(), ..Default::default() };
        let e = json(engine.create_push_config(&alice(), cfg).await.expect_err(url));
        assert_eq!(e.kind, ErrorKind::InvalidParams, "{url}");
        assert_eq!(e.violations.first().map(|v| v.field.as_str()), Some("url"), "{url}: {e}");
    }
    let e = engine
        .send_message(&alice(), request("hi", Some(webhook("http://192.168.0.1/hook".into()))))
        .await
        .expect_err("inline config with a private URL");
    let e = json(e);
    assert_eq!(e.kind, ErrorKind::InvalidParams);
    assert_eq!(e.violations[0].field, "configuration.taskPushNotificationConfig.url");

    let (open, _) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(true));
    let task_id = run_task(&open, None).await;
    let cfg =
        TaskPushNotificationConfig { task_id, url: "http://127.0.0.1:9/hook".into(), ..Default::default() };
    open.create_push_config(&alice(), cfg).await.expect("loopback allowed with allow_private");
}

#[tokio::test]
async fn guarded_resolver_filters_refused_addresses() {
    use reqwest::dns::{Name, Resolve};
    let strict = GuardedResolver::new(SsrfGuard::new(false));
    let e = strict.lookup("127.0.0.1").await.expect_err("loopback literal");
    assert!(e.contains("a loopback address"), "{e}");
    let e = strict.lookup("localhost").await.expect_err("localhost, unresolved");
    assert!(e.contains("loopback name"), "{e}");
    let name: Name = "localhost".parse().expect("name");
    assert!(strict.resolve(name).await.is_err());

    let open = GuardedResolver::new(SsrfGuard::new(true));
    let addrs = open.lookup("127.0.0.1").await.expect("allowed");
    assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    let name: Name = "localhost".parse().expect("name");
    let addrs: Vec<SocketAddr> = open.resolve(name).await.expect("allowed").collect();
    assert!(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()), "{addrs:?}");
}

#[test]
fn classifier_covers_the_ranges_of_a2a_13_2() {
    let why = |s: &str| refusal_reason(s.parse().expect("ip"));
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.5.4",
        "192.168.0.1",
        "169.254.1.1",
        "::1",
        "fe80::2",
        "fc00::3",
        "::ffff:192.168.0.1",
        "100.100.0.1",
        "192.0.2.5",
        "2001:db8::5",
        "255.255.255.255",
        "ff02::1",
    ] {
        assert!(why(ip).is_some(), "{ip} must be refused");
    }
    for ip in ["8.8.8.8", "93.184.216.34", "2606:4700::1111", "::ffff:1.1.1.1"] {
        assert_eq!(why(ip), None, "{ip} is public");
    }
}

#[tokio::test]
async fn a_dead_webhook_does_not_delay_another() {
    let (dead, mut dead_rx) = receiver(usize::MAX).await;
    let (live, mut live_rx) = receiver(0).await;
    let (engine, outbox) = engine_with(Arc::new(MemoryStore::new()), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let cfg = PushWorkerConfig {
        backoff_base: Duration::from_secs(3600),
        backoff_max: Duration::from_secs(3600),
        ..fast(true)
    };
    let _worker = spawn_push_worker(outbox.clone(), cfg, stop.clone());

    run_task(&engine, Some(webhook(format!("http://{dead}/hook")))).await;
    assert_eq!(next_hit(&mut dead_rx).await.status, StatusCode::SERVICE_UNAVAILABLE);
    let task_id = run_task(&engine, Some(webhook(format!("http://{live}/hook")))).await;
    let mut all = Vec::new();
    let events = delivered_until_completed(&mut live_rx, &mut all).await;
    assert_echo_sequence(&events, &task_id);
    assert!(dead_rx.try_recv().is_err(), "the dead webhook waits for its retry");
    stop.cancel();
}

#[tokio::test]
async fn sqlite_outbox_survives_a_restart() {
    use agentd_store::{SqliteOptions, SqliteStore};
    let dir = std::env::temp_dir().join(format!("agentd-push-{}", new_id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("agentd.db");
    let (addr, mut rx) = receiver(1).await;

    let task_id = {
        let store = SqliteStore::open(&path, SqliteOptions::default()).expect("open store");
        let (engine, outbox) = engine_with(Arc::new(store), SsrfGuard::new(true));
        let stop = CancellationToken::new();
        let slow = PushWorkerConfig {
            backoff_base: Duration::from_secs(3600),
            backoff_max: Duration::from_secs(3600),
            ..fast(true)
        };
        let worker = spawn_push_worker(outbox.clone(), slow, stop.clone());
        let task_id = run_task(&engine, Some(webhook(format!("http://{addr}/hook")))).await;
        assert_eq!(next_hit(&mut rx).await.status, StatusCode::SERVICE_UNAVAILABLE);
        stop.cancel();
        tokio::time::timeout(WAIT, worker).await.expect("worker stops").expect("worker ends cleanly");
        task_id
    };

    let store = SqliteStore::open(&path, SqliteOptions::default()).expect("reopen store");
    let (_engine, outbox) = engine_with(Arc::new(store), SsrfGuard::new(true));
    let stop = CancellationToken::new();
    let _worker = spawn_push_worker(outbox.clone(), fast(true), stop.clone());
    let mut all = Vec::new();
    let events = delivered_until_completed(&mut rx, &mut all).await;
    assert_echo_sequence(&events, &task_id);
    wait_outbox_empty(&outbox).await;
    stop.cancel();
    let _ = std::fs::remove_dir_all(&dir);
}
