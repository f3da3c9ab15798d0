//! Push delivery through the real daemon to a real webhook receiver (axum on
//! 127.0.0.1): bodies, headers, order, retries, the durable outbox across
//! `kill -9`, the SSRF guard at registration and push turned off. No test
//! sends traffic anywhere but loopback: other addresses are only registered
//! (and refused).

use crate::common::receiver::{Hit, Receiver, hook_url};
use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A loopback port with nothing listening (a receiver that is down).
async fn free_port() -> u16 {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    l.local_addr().expect("addr").port()
}

/// A daemon that logs each failed delivery attempt (a debug line), so that
/// a test can wait for the attempts it needs to have happened.
fn push_daemon(dir: &Path, env: &[(&str, &str)]) -> Daemon {
    let mut all = vec![("AGENTD_PUSH_BACKOFF_MS", "50"), ("AGENTD_LOG", "info,agentd_server::push=debug")];
    all.extend_from_slice(env);
    Daemon::start_with_env(dir, &["--agent", "tck", "--push-allow-private"], &all)
}

/// Waits until the daemon has logged `n` failed delivery attempts for
/// `task_id` (panics after 10 s).
async fn wait_failed_attempts(d: &Daemon, task_id: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = d.log();
        let failed = log.lines().filter(|l| l.contains("will retry") && l.contains(task_id)).count();
        if failed >= n {
            return;
        }
        assert!(Instant::now() < deadline, "only {failed} of {n} failed attempts for {task_id}; log:\n{log}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn webhook(url: &str) -> Value {
    json!({
        "url": url,
        "token": "notify-tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "hook-cred-1"},
    })
}

/// SendMessage params with an inline push config.
fn send_with_push(prefix: &str, url: &str) -> Value {
    json!({"message": user_msg(&uniq(prefix), "x"), "configuration": {"taskPushNotificationConfig": webhook(url)}})
}

fn has_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(o) => o.iter().any(|(k, v)| k == key || has_key(v, key)),
        Value::Array(a) => a.iter().any(|v| has_key(v, key)),
        _ => false,
    }
}

/// Checks one delivered request: headers and a StreamResponse body for `task_id`.
fn assert_push(hit: &Hit, task_id: &str) {
    let h = &hit.headers;
    let header = |name: &str| h.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert_eq!(header("content-type"), "application/a2a+json", "{hit:?}");
    assert_eq!(header("authorization"), "Bearer hook-cred-1", "{hit:?}");
    assert_eq!(header("x-a2a-notification-token"), "notify-tok-1", "{hit:?}");
    let body = &hit.body;
    let k = kind(body);
    assert!(k == "statusUpdate" || k == "artifactUpdate" || k == "task", "a StreamResponse: {body}");
    assert!(body.get("jsonrpc").is_none(), "no JSON-RPC envelope: {body}");
    assert_eq!(body[k]["taskId"].as_str().or(body[k]["id"].as_str()), Some(task_id), "{body}");
    assert!(!has_key(body, "history"), "a push body never carries history: {body}");
}

/// The kinds and states of the delivered (200) hits, in arrival order.
fn delivered(hits: &[Hit]) -> Vec<String> {
    hits.iter()
        .filter(|h| h.status == 200)
        .map(|h| match state(&h.body) {
            Some(s) => format!("{}:{s}", kind(&h.body)),
            None => kind(&h.body).to_owned(),
        })
        .collect()
}

const CHUNKED_SEQUENCE: [&str; 4] = [
    "statusUpdate:TASK_STATE_WORKING",
    "artifactUpdate",
    "artifactUpdate",
    "statusUpdate:TASK_STATE_COMPLETED",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_config_receives_every_event_in_order_with_credentials() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = push_daemon(tmp.path(), &[]);
    let mut rx = Receiver::start(0).await;
    let r = d.call("SendMessage", send_with_push("tck-stream-artifact-chunked", &rx.url())).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let hits = rx.until_state(&id, "TASK_STATE_COMPLETED", Duration::from_secs(10)).await;
    for h in &hits {
        assert_push(h, &id);
    }
    assert_eq!(delivered(&hits), CHUNKED_SEQUENCE, "{hits:#?}");
    let chunks: Vec<&Value> = hits.iter().filter_map(|h| h.body.get("artifactUpdate")).collect();
    assert_eq!(chunks[0]["artifact"]["parts"][0]["text"], "chunk-1 ");
    assert_eq!(chunks[1]["artifact"]["parts"][0]["text"], "chunk-2");
    assert_eq!(chunks[1]["append"], true);
    assert_eq!(chunks[1]["lastChunk"], true);
    // The inline config was stored on the task, with an id.
    let list = d.call("ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
    assert_eq!(list["configs"][0]["url"], rx.url().as_str(), "{list}");
    assert_eq!(list["configs"][0]["taskId"], id.as_str(), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_created_on_a_waiting_task_receives_the_resume() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = push_daemon(tmp.path(), &[]);
    let mut rx = Receiver::start(0).await;
    let r = d.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    // REST create: taskId from the path.
    let (status, created) =
        d.rest(Method::POST, &format!("/tasks/{id}/pushNotificationConfigs"), Some(webhook(&rx.url()))).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["taskId"], id.as_str());
    let mut m = user_msg(&uniq("tck-complete-task"), "answer");
    m["taskId"] = json!(id);
    let r = d.call("SendMessage", json!({"message": m})).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let hits = rx.until_state(&id, "TASK_STATE_COMPLETED", Duration::from_secs(10)).await;
    for h in &hits {
        assert_push(h, &id);
    }
    assert_eq!(delivered(&hits), ["statusUpdate:TASK_STATE_WORKING", "statusUpdate:TASK_STATE_COMPLETED"]);
    let last = &hits.last().expect("hit").body["statusUpdate"];
    assert_eq!(last["status"]["message"]["parts"][0]["text"], "Hello from TCK", "{last}");
    assert!(last["contextId"].as_str().is_some_and(|c| !c.is_empty()), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_answering_503_gets_the_events_again_in_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = push_daemon(tmp.path(), &[]);
    let mut rx = Receiver::start(3).await;
    let r = d.call("SendMessage", send_with_push("tck-stream-artifact-chunked", &rx.url())).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let hits = rx.until_state(&id, "TASK_STATE_COMPLETED", Duration::from_secs(10)).await;
    let failed: Vec<&Hit> = hits.iter().filter(|h| h.status == 503).collect();
    assert_eq!(failed.len(), 3, "{hits:#?}");
    for h in &failed {
        assert_eq!(
            state(&h.body),
            Some("TASK_STATE_WORKING"),
            "the first event is retried, later ones wait: {hits:#?}"
        );
    }
    for h in &hits {
        assert_push(h, &id);
    }
    assert_eq!(delivered(&hits), CHUNKED_SEQUENCE, "nothing overtakes a retried event: {hits:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_was_down_gets_the_events_once_it_is_up() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = push_daemon(tmp.path(), &[]);
    let port = free_port().await;
    let r = d.call("SendMessage", send_with_push("tck-stream-artifact-chunked", &hook_url(port))).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    assert_eq!(
        r["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "the task does not wait for its webhook"
    );
    wait_failed_attempts(&d, &id, 2).await;
    let mut rx = Receiver::start_on(port, 0).await;
    let hits = rx.until_state(&id, "TASK_STATE_COMPLETED", Duration::from_secs(10)).await;
    for h in &hits {
        assert_push(h, &id);
    }
    assert_eq!(delivered(&hits), CHUNKED_SEQUENCE, "{hits:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_pending_at_kill_9_is_delivered_after_restart() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A long backoff: after the first failed attempt the retry is far away,
    // so only the restart can bring it forward.
    let mut d = push_daemon(tmp.path(), &[("AGENTD_PUSH_BACKOFF_MS", "60000")]);
    let port = free_port().await;
    let r = d.call("SendMessage", send_with_push("tck-input-required", &hook_url(port))).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    // The first attempt failed and its retry is a minute away when the
    // daemon dies.
    wait_failed_attempts(&d, &id, 1).await;
    d.kill9();
    let mut rx = Receiver::start_on(port, 0).await;
    let _d = push_daemon(tmp.path(), &[("AGENTD_PUSH_BACKOFF_MS", "60000")]);
    let hits = rx.until_state(&id, "TASK_STATE_INPUT_REQUIRED", Duration::from_secs(10)).await;
    for h in &hits {
        assert_push(h, &id);
    }
    assert_eq!(delivered(&hits), ["statusUpdate:TASK_STATE_INPUT_REQUIRED"]);
    let q = &hits[0].body["statusUpdate"]["status"]["message"];
    assert_eq!(q["parts"][0]["text"], "Please provide more input", "{q}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_webhook_never_fails_the_task() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = push_daemon(tmp.path(), &[("AGENTD_PUSH_BACKOFF_MS", "10")]);
    let port = free_port().await;
    let r = d.call("SendMessage", send_with_push("tck-stream-artifact-chunked", &hook_url(port))).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    // Once the worker has failed a few times, look again.
    wait_failed_attempts(&d, &id, 3).await;
    let t = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(t["artifacts"][0]["parts"].as_array().map(Vec::len), Some(2), "{t}");
    // A waiting task with a dead webhook still resumes and completes.
    let r = d.call("SendMessage", send_with_push("tck-input-required", &hook_url(port))).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let mut m = user_msg(&uniq("tck-complete-task"), "answer");
    m["taskId"] = json!(id);
    let r = d.call("SendMessage", json!({"message": m})).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
}

/// The BadRequest field violations of an error's details.
fn violated_fields(details: &Value) -> Vec<String> {
    details
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["@type"] == "type.googleapis.com/google.rpc.BadRequest")
        .flat_map(|d| d["fieldViolations"].as_array().cloned().unwrap_or_default())
        .filter_map(|v| v["field"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn private_webhook_urls_are_refused_at_registration() {
    let d = Daemon::start(&["--agent", "tck"]);
    let r = d.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let port = free_port().await;
    let urls = [
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://localhost:{port}/hook"),
        "http://10.1.2.3/".to_owned(),
        "http://169.254.169.254/".to_owned(),
    ];
    for url in &urls {
        let r = d.rpc("CreateTaskPushNotificationConfig", json!({"taskId": id, "url": url})).await;
        assert_rpc_error(&r, -32602, None);
        assert_eq!(violated_fields(&r["error"]["data"]), ["url"], "{url}: {r}");
        let msg = r["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("allow_private"), "{url}: the refusal says how to allow it: {msg}");

        let (status, body) = d
            .rest(Method::POST, &format!("/tasks/{id}/pushNotificationConfigs"), Some(json!({"url": url})))
            .await;
        assert_rest_error(status, &body, 400, None);
        assert_eq!(violated_fields(&body["error"]["details"]), ["url"], "{url}: {body}");

        let inline = json!({"message": user_msg(&uniq("tck-complete-task"), "x"), "configuration": {"taskPushNotificationConfig": {"url": url}}});
        let r = d.rpc("SendMessage", inline).await;
        assert_rpc_error(&r, -32602, None);
        assert_eq!(
            violated_fields(&r["error"]["data"]),
            ["configuration.taskPushNotificationConfig.url"],
            "{url}: {r}"
        );
    }
    // An authentication without a scheme: refused alone and inline alike.
    let no_scheme =
        json!({"url": "https://example.com/hook", "authentication": {"scheme": " ", "credentials": "c"}});
    let mut create = no_scheme.clone();
    create["taskId"] = json!(id);
    let r = d.rpc("CreateTaskPushNotificationConfig", create).await;
    assert_rpc_error(&r, -32602, None);
    assert_eq!(violated_fields(&r["error"]["data"]), ["authentication.scheme"], "{r}");
    let inline = json!({"message": user_msg(&uniq("tck-complete-task"), "x"), "configuration": {"taskPushNotificationConfig": no_scheme}});
    let r = d.rpc("SendMessage", inline).await;
    assert_rpc_error(&r, -32602, None);
    assert_eq!(
        violated_fields(&r["error"]["data"]),
        ["configuration.taskPushNotificationConfig.authentication.scheme"],
        "{r}"
    );
    let list = d.call("ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
    assert_eq!(list["configs"].as_array().map(Vec::len).unwrap_or(0), 0, "nothing was registered: {list}");
    let all = d.call("ListTasks", json!({})).await;
    assert_eq!(all["totalSize"], 1, "a refused inline config creates no task: {all}");
}

#[tokio::test]
async fn push_turned_off_refuses_the_four_operations_and_inline_configs() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_with_env(tmp.path(), &["--agent", "tck"], &[("AGENTD_PUSH_ENABLED", "false")]);
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", d.url))
        .await
        .expect("card")
        .json()
        .await
        .expect("json");
    assert_ne!(card["capabilities"]["pushNotifications"], true, "the card does not promise push: {card}");
    let r = d.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let url = "http://127.0.0.1:9/hook";
    let calls = [
        ("CreateTaskPushNotificationConfig", json!({"taskId": id, "url": url})),
        ("GetTaskPushNotificationConfig", json!({"taskId": id, "id": "c1"})),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        ("DeleteTaskPushNotificationConfig", json!({"taskId": id, "id": "c1"})),
        (
            "SendMessage",
            json!({"message": user_msg(&uniq("tck-complete-task"), "x"), "configuration": {"taskPushNotificationConfig": {"url": url}}}),
        ),
    ];
    for (method, params) in calls {
        let r = d.rpc(method, params).await;
        assert_rpc_error(&r, -32003, Some("PUSH_NOTIFICATION_NOT_SUPPORTED"));
    }
    let base = format!("/tasks/{id}/pushNotificationConfigs");
    let rest = [
        (Method::POST, base.clone(), Some(json!({"url": url}))),
        (Method::GET, format!("{base}/c1"), None),
        (Method::GET, base.clone(), None),
        (Method::DELETE, format!("{base}/c1"), None),
    ];
    for (method, path, body) in rest {
        let (status, body) = d.rest(method, &path, body).await;
        assert_rest_error(status, &body, 400, Some("PUSH_NOTIFICATION_NOT_SUPPORTED"));
    }
    let all = d.call("ListTasks", json!({})).await;
    assert_eq!(all["totalSize"], 1, "a refused inline config creates no task: {all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_killed_while_working_pushes_its_failure_after_restart() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = push_daemon(tmp.path(), &[]);
    let mut rx = Receiver::start(0).await;
    let mut params = send_with_push("test-resubscribe-message-id", &rx.url());
    params["configuration"]["returnImmediately"] = json!(true);
    let r = d.call("SendMessage", params).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let hits = rx.until_state(&id, "TASK_STATE_WORKING", Duration::from_secs(3)).await;
    assert_eq!(delivered(&hits), ["statusUpdate:TASK_STATE_WORKING"]);
    d.kill9();
    let _d = push_daemon(tmp.path(), &[]);
    let hits = rx.until_state(&id, "TASK_STATE_FAILED", Duration::from_secs(10)).await;
    for h in &hits {
        assert_push(h, &id);
    }
    // At least once: the WORKING delivery may be repeated when the kill
    // came before the daemon recorded it (receivers deduplicate, §4.3.3).
    let seq = delivered(&hits);
    let (last, before) = seq.split_last().expect("hits");
    assert_eq!(last, "statusUpdate:TASK_STATE_FAILED", "{hits:#?}");
    assert!(
        before.iter().all(|s| s == "statusUpdate:TASK_STATE_WORKING"),
        "only a repeat may come first: {seq:?}"
    );
    let why = hits.last().expect("hit").body["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(why.contains("restarted"), "the pushed failure says why: {why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_receiver_holds_neither_the_stop_nor_the_event() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = push_daemon(tmp.path(), &[]);
    // A receiver that accepts connections and never answers.
    let hang = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = hang.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let hanging = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = hang.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(sock);
        }
    });
    let r = d.call("SendMessage", send_with_push("tck-input-required", &hook_url(port))).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(5);
    while accepted.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "the delivery never connected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = Instant::now();
    let (status, d) = tokio::task::spawn_blocking(move || (d.stop(), d)).await.expect("stop");
    assert!(status.success(), "{status:?}; log:\n{}", d.log());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "a delivery in flight held the stop: {:?}",
        started.elapsed()
    );
    hanging.abort();
    let _ = hanging.await;
    let mut rx = Receiver::start_on(port, 0).await;
    let _d = push_daemon(tmp.path(), &[]);
    let hits = rx.until_state(&id, "TASK_STATE_INPUT_REQUIRED", Duration::from_secs(10)).await;
    assert_eq!(delivered(&hits), ["statusUpdate:TASK_STATE_INPUT_REQUIRED"], "{hits:#?}");
}

/// One principal's webhooks all point at a tarpit (it accepts and never
/// answers) and outnumber the worker's delivery slots: they hold that
/// principal's part of the slots, not all of them, and another
/// principal's notifications go out while every one of them hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_whose_webhooks_never_answer_holds_back_no_other_principal() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A request timeout far past the test's bounds: no tarpit delivery
    // ends (and frees its slot) while the test runs.
    let p = principals::start(tmp.path(), "push:\n  timeout_secs: 300\n");
    let tarpit = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = tarpit.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let hanging = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = tarpit.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            held.push(sock);
        }
    });
    // More of alice's webhooks than the worker has slots (32).
    for _ in 0..40 {
        let r = p.alice.call("SendMessage", send_with_push("tck-complete-task", &hook_url(port))).await;
        assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    }
    // Her deliveries are in flight: as many as her part of the slots.
    let deadline = Instant::now() + Duration::from_secs(10);
    while accepted.load(Ordering::SeqCst) < 8 {
        assert!(Instant::now() < deadline, "alice's deliveries never reached the tarpit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut rx = Receiver::start(0).await;
    let r = p.bob.call("SendMessage", send_with_push("tck-complete-task", &rx.url())).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let hits = rx.until_state(&id, "TASK_STATE_COMPLETED", Duration::from_secs(10)).await;
    assert_eq!(
        delivered(&hits).last().map(String::as_str),
        Some("statusUpdate:TASK_STATE_COMPLETED"),
        "{hits:#?}"
    );
    let held = accepted.load(Ordering::SeqCst);
    assert_eq!(held, 8, "alice holds her part of the 32 slots (a quarter), no more");
    hanging.abort();
    let _ = hanging.await;
}

/// A task takes at most 16 configs (one that replaces a config is not one
/// more), each field within its size; the list comes in pages.
#[tokio::test]
async fn configs_per_task_and_their_fields_are_bounded_and_listed_in_pages() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = push_daemon(tmp.path(), &[]);
    let r = d.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let url = "https://example.com/hook";
    let ids: Vec<String> = (0..16).map(|i| format!("c{i:02}")).collect();
    for c in &ids {
        d.call("CreateTaskPushNotificationConfig", json!({"taskId": id, "id": c, "url": url})).await;
    }
    let r =
        d.rpc("CreateTaskPushNotificationConfig", json!({"taskId": id, "id": "one-more", "url": url})).await;
    assert_rpc_error(&r, -32004, None);
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("16 push configs"), "{r}");
    let mut inline = json!({"message": user_msg(&uniq("m"), "more"), "configuration": {"taskPushNotificationConfig": {"id": "inline", "url": url}}});
    inline["message"]["taskId"] = json!(id);
    assert_rpc_error(&d.rpc("SendMessage", inline).await, -32004, None);
    // Replacing one is not one more.
    d.call(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "c03", "url": "https://example.com/other"}),
    )
    .await;

    let mut listed = Vec::new();
    let mut token = String::new();
    loop {
        let page = d
            .call("ListTaskPushNotificationConfigs", json!({"taskId": id, "pageSize": 5, "pageToken": token}))
            .await;
        let configs = page["configs"].as_array().expect("configs");
        assert!(configs.len() <= 5, "{page}");
        listed.extend(configs.iter().map(|c| c["id"].as_str().unwrap_or_default().to_owned()));
        token = page["nextPageToken"].as_str().unwrap_or_default().to_owned();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(listed, ids, "every config once, oldest first");
    let r = d
        .rpc("ListTaskPushNotificationConfigs", json!({"taskId": id, "pageSize": 5, "pageToken": "nope"}))
        .await;
    assert_rpc_error(&r, -32602, None);
    assert_eq!(violated_fields(&r["error"]["data"]), ["pageToken"], "{r}");

    // Fields within their sizes, alone and inline.
    let long_url = format!("https://example.com/{}", "a".repeat(2048));
    let r = d
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c00", "url": long_url, "token": "t".repeat(4097)}),
        )
        .await;
    assert_rpc_error(&r, -32602, None);
    assert_eq!(violated_fields(&r["error"]["data"]), ["url", "token"], "{r}");
    let inline = json!({"message": user_msg(&uniq("tck-complete-task"), "x"), "configuration": {"taskPushNotificationConfig": {"url": url, "authentication": {"scheme": "Bearer", "credentials": "k".repeat(8193)}}}});
    let r = d.rpc("SendMessage", inline).await;
    assert_rpc_error(&r, -32602, None);
    assert_eq!(
        violated_fields(&r["error"]["data"]),
        ["configuration.taskPushNotificationConfig.authentication.credentials"],
        "{r}"
    );
}
