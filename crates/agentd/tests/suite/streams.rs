//! Streams end to end on both bindings: SendStreamingMessage ordering and
//! close, SubscribeToTask on a waiting task, fan-out to several subscribers,
//! errors answered before any stream opens, keep-alive comments, and open
//! streams ending cleanly when the daemon is stopped.

use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

const TCK: &[&str] = &["--agent", "tck"];

/// The two ways to open a stream, for tests that run on both bindings.
#[derive(Clone, Copy, Debug)]
enum Binding {
    JsonRpc,
    Rest,
}

const BOTH: [Binding; 2] = [Binding::JsonRpc, Binding::Rest];

impl Binding {
    fn is_rpc(self) -> bool {
        matches!(self, Binding::JsonRpc)
    }

    async fn send_stream(self, d: &Daemon, params: Value) -> SseStream {
        match self {
            Binding::JsonRpc => d.rpc_stream("SendStreamingMessage", params).await,
            Binding::Rest => d.rest_stream(Method::POST, "/message:stream", Some(params)).await,
        }
    }

    async fn subscribe(self, d: &Daemon, task_id: &str) -> SseStream {
        match self {
            Binding::JsonRpc => d.rpc_stream("SubscribeToTask", json!({"id": task_id})).await,
            Binding::Rest => d.rest_stream(Method::POST, &format!("/tasks/{task_id}:subscribe"), None).await,
        }
    }

    /// Every remaining event of an open stream, unwrapped, until it closes.
    async fn events(self, s: &mut SseStream) -> Vec<Value> {
        s.collect().await.iter().map(|f| payload(f, self.is_rpc())).collect()
    }

    async fn next(self, s: &mut SseStream) -> Option<Value> {
        s.next().await.map(|f| payload(&f, self.is_rpc()))
    }
}

fn assert_sse(s: &SseStream) {
    assert_eq!(s.status, 200, "a stream answers 200");
    assert!(s.is_sse(), "content-type is text/event-stream, got {:?}", s.content_type);
}

/// A task waiting in INPUT_REQUIRED with nothing running.
async fn waiting_task(d: &Daemon) -> String {
    let r = d.call("SendMessage", json!({"message": user_msg(&uniq("tck-input-required"), "start")})).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    r["task"]["id"].as_str().expect("task id").to_owned()
}

/// Resumes a waiting task with a message whose id picks the tck scenario.
async fn resume(d: &Daemon, task_id: &str, scenario: &str) -> Value {
    let mut m = user_msg(&uniq(scenario), "go on");
    m["taskId"] = json!(task_id);
    d.call("SendMessage", json!({"message": m, "configuration": {"returnImmediately": true}})).await
}

fn states(evs: &[Value]) -> Vec<String> {
    evs.iter().filter_map(|e| state(e).map(str::to_owned)).collect()
}

#[tokio::test]
async fn streaming_message_orders_task_working_chunks_completed_then_closes() {
    let d = Daemon::start(TCK);
    for b in BOTH {
        let mut s =
            b.send_stream(&d, json!({"message": user_msg(&uniq("tck-stream-artifact-chunked"), "x")})).await;
        assert_sse(&s);
        let evs = b.events(&mut s).await;
        let kinds: Vec<&str> = evs.iter().map(kind).collect();
        assert_eq!(
            kinds,
            ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"],
            "{b:?}: {evs:?}"
        );
        let task = &evs[0]["task"];
        let id = task["id"].as_str().expect("task id");
        let ctx = task["contextId"].as_str().expect("context id");
        assert_eq!(state(&evs[0]), Some("TASK_STATE_SUBMITTED"), "{b:?}");
        assert_eq!(state(&evs[1]), Some("TASK_STATE_WORKING"), "{b:?}");
        for e in &evs[1..] {
            let inner = e.as_object().and_then(|o| o.values().next()).expect("member");
            assert_eq!(inner["taskId"], id, "{b:?}: every event names the task: {e}");
            assert_eq!(inner["contextId"], ctx, "{b:?}: every event names the context: {e}");
        }
        let (c1, c2) = (&evs[2]["artifactUpdate"], &evs[3]["artifactUpdate"]);
        assert_eq!(c1["artifact"]["artifactId"], "chunked");
        assert_eq!(c1["artifact"]["parts"][0]["text"], "chunk-1 ");
        assert!(!c1["append"].as_bool().unwrap_or(false), "first chunk does not append: {c1}");
        assert!(!c1["lastChunk"].as_bool().unwrap_or(false), "first chunk is not the last: {c1}");
        assert_eq!(c2["artifact"]["artifactId"], "chunked");
        assert_eq!(c2["artifact"]["parts"][0]["text"], "chunk-2");
        assert_eq!(c2["append"], true, "second chunk appends: {c2}");
        assert_eq!(c2["lastChunk"], true, "second chunk is the last: {c2}");
        assert_eq!(state(&evs[4]), Some("TASK_STATE_COMPLETED"), "{b:?}: COMPLETED is last");
        // The stored task has the whole artifact.
        let t = d.call("GetTask", json!({"id": id})).await;
        assert_eq!(t["artifacts"][0]["parts"].as_array().map(Vec::len), Some(2), "{t}");
        assert!(s.raw.contains("data: "), "one data line per event");
    }
}

#[tokio::test]
async fn a_message_stream_closes_after_input_required() {
    let d = Daemon::start(TCK);
    for b in BOTH {
        let mut s = b.send_stream(&d, json!({"message": user_msg(&uniq("tck-input-required"), "x")})).await;
        assert_sse(&s);
        let evs = b.events(&mut s).await;
        assert_eq!(states(&evs), ["TASK_STATE_SUBMITTED", "TASK_STATE_INPUT_REQUIRED"], "{b:?}: {evs:?}");
        assert_eq!(kind(&evs[0]), "task");
        let q = &evs[1]["statusUpdate"]["status"]["message"];
        assert_eq!(q["role"], "ROLE_AGENT", "the question is an agent message: {q}");
    }
}

#[tokio::test]
async fn subscribing_to_a_waiting_task_stays_open_until_a_resume_completes_it() {
    let d = Daemon::start(TCK);
    for b in BOTH {
        let id = waiting_task(&d).await;
        let mut s = b.subscribe(&d, &id).await;
        assert_sse(&s);
        let first = b.next(&mut s).await.expect("first event");
        assert_eq!(kind(&first), "task", "{b:?}: the snapshot comes first: {first}");
        assert_eq!(first["task"]["id"], id.as_str());
        assert_eq!(state(&first), Some("TASK_STATE_INPUT_REQUIRED"));
        assert!(
            s.stays_open_for(Duration::from_secs(1)).await,
            "{b:?}: a subscription on a waiting task stays open"
        );
        resume(&d, &id, "tck-complete-task").await;
        let rest = b.events(&mut s).await;
        assert_eq!(states(&rest), ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"], "{b:?}: {rest:?}");
        assert_eq!(
            rest[1]["statusUpdate"]["status"]["message"]["parts"][0]["text"], "Hello from TCK",
            "{b:?}: {rest:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_subscribers_receive_identical_sequences() {
    let d = Daemon::start(TCK);
    let id = waiting_task(&d).await;
    let mut subs = vec![
        (Binding::JsonRpc, Binding::JsonRpc.subscribe(&d, &id).await),
        (Binding::Rest, Binding::Rest.subscribe(&d, &id).await),
        // REST subscribe by GET as well (the proto's verb).
        (Binding::Rest, d.rest_stream(Method::GET, &format!("/tasks/{id}:subscribe"), None).await),
    ];
    for (b, s) in &mut subs {
        assert_sse(s);
        let first = b.next(s).await.expect("snapshot");
        assert_eq!(kind(&first), "task");
    }
    resume(&d, &id, "tck-stream-artifact-chunked").await;
    let mut seqs = Vec::new();
    for (b, mut s) in subs {
        seqs.push(tokio::spawn(async move { b.events(&mut s).await }));
    }
    let mut all = Vec::new();
    for h in seqs {
        all.push(h.await.expect("subscriber"));
    }
    let kinds: Vec<&str> = all[0].iter().map(kind).collect();
    assert_eq!(
        kinds,
        ["statusUpdate", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"],
        "resume WORKING, agent WORKING, two chunks, COMPLETED: {:?}",
        all[0]
    );
    assert_eq!(states(&all[0]).last().map(String::as_str), Some("TASK_STATE_COMPLETED"));
    assert_eq!(all[0], all[1], "JSON-RPC and REST subscribers see the same events in the same order");
    assert_eq!(all[0], all[2], "every subscriber sees the same events in the same order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_subscriber_affects_neither_the_others_nor_the_task() {
    let d = Daemon::start(TCK);
    let id = waiting_task(&d).await;
    let mut a = Binding::JsonRpc.subscribe(&d, &id).await;
    let mut b = Binding::Rest.subscribe(&d, &id).await;
    let mut c = Binding::JsonRpc.subscribe(&d, &id).await;
    for (bind, s) in [(Binding::JsonRpc, &mut a), (Binding::Rest, &mut b), (Binding::JsonRpc, &mut c)] {
        assert_eq!(kind(&bind.next(s).await.expect("snapshot")), "task");
    }
    // The agent works for 4 s after the resume, then completes.
    resume(&d, &id, "test-resubscribe-message-id").await;
    let ev = Binding::JsonRpc.next(&mut c).await.expect("event");
    assert_eq!(state(&ev), Some("TASK_STATE_WORKING"));
    drop(c);
    let t = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_WORKING", "the task goes on: {t}");
    let (ea, eb) = tokio::join!(Binding::JsonRpc.events(&mut a), Binding::Rest.events(&mut b));
    assert_eq!(ea, eb, "the remaining subscribers agree");
    assert_eq!(states(&ea).last().map(String::as_str), Some("TASK_STATE_COMPLETED"), "{ea:?}");
    assert_eq!(states(&ea).first().map(String::as_str), Some("TASK_STATE_WORKING"), "{ea:?}");
    let t = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
}

#[tokio::test]
async fn a_terminal_task_is_refused_before_any_stream() {
    let d = Daemon::start(TCK);
    let r = d.call("SendMessage", json!({"message": user_msg(&uniq("tck-complete-task"), "x")})).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED");

    let mut s = Binding::JsonRpc.subscribe(&d, &id).await;
    assert!(!s.is_sse(), "no stream for a terminal task: {}", s.content_type);
    assert_eq!(s.status, 200);
    let body = s.plain_body().await;
    assert_rpc_error(&body, -32004, Some("UNSUPPORTED_OPERATION"));
    assert_eq!(body["id"], json!(7));

    for method in [Method::POST, Method::GET] {
        let mut s = d.rest_stream(method.clone(), &format!("/tasks/{id}:subscribe"), None).await;
        assert!(!s.is_sse(), "{method}: no stream for a terminal task");
        let status = s.status;
        assert_rest_error(status, &s.plain_body().await, 400, Some("UNSUPPORTED_OPERATION"));
    }

    // A streaming message to the terminal task: the same, before any stream.
    let mut m = user_msg(&uniq("tck-complete-task"), "more");
    m["taskId"] = json!(id);
    let mut s = Binding::JsonRpc.send_stream(&d, json!({"message": m.clone()})).await;
    assert!(!s.is_sse());
    assert_rpc_error(&s.plain_body().await, -32004, Some("UNSUPPORTED_OPERATION"));
    let mut s = Binding::Rest.send_stream(&d, json!({"message": m})).await;
    assert!(!s.is_sse());
    let status = s.status;
    assert_rest_error(status, &s.plain_body().await, 400, Some("UNSUPPORTED_OPERATION"));
}

#[tokio::test]
async fn an_unknown_task_is_task_not_found_before_any_stream() {
    let d = Daemon::start(TCK);
    let mut s = Binding::JsonRpc.subscribe(&d, "no-such-task").await;
    assert!(!s.is_sse());
    assert_rpc_error(&s.plain_body().await, -32001, Some("TASK_NOT_FOUND"));
    let mut s = Binding::Rest.subscribe(&d, "no-such-task").await;
    assert!(!s.is_sse());
    let status = s.status;
    assert_rest_error(status, &s.plain_body().await, 404, Some("TASK_NOT_FOUND"));

    let mut m = user_msg(&uniq("tck-complete-task"), "x");
    m["taskId"] = json!("no-such-task");
    let mut s = Binding::JsonRpc.send_stream(&d, json!({"message": m.clone()})).await;
    assert!(!s.is_sse());
    assert_rpc_error(&s.plain_body().await, -32001, Some("TASK_NOT_FOUND"));
    let mut s = Binding::Rest.send_stream(&d, json!({"message": m})).await;
    assert!(!s.is_sse());
    let status = s.status;
    assert_rest_error(status, &s.plain_body().await, 404, Some("TASK_NOT_FOUND"));
}

#[tokio::test]
async fn an_idle_open_stream_carries_keep_alive_comments() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_with_env(tmp.path(), TCK, &[("AGENTD_SSE_KEEP_ALIVE_SECS", "1")]);
    let id = waiting_task(&d).await;
    for b in BOTH {
        let mut s = b.subscribe(&d, &id).await;
        assert_sse(&s);
        assert_eq!(
            s.next().await.map(|f| kind(&payload(&f, b.is_rpc())).to_owned()).as_deref(),
            Some("task")
        );
        assert!(s.stays_open_for(Duration::from_millis(2500)).await, "{b:?}: no event while the task waits");
        let comments = s.raw.lines().filter(|l| l.starts_with(':') && l.contains("keep-alive")).count();
        assert!(comments >= 1, "{b:?}: keep-alive comments on an idle stream; raw: {:?}", s.raw);
        assert_eq!(s.raw.matches("data:").count(), 1, "{b:?}: comments only, no extra events");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_open_streams_cleanly_and_exits_zero() {
    // A process (the signal is the subject) with no grace: the turn that
    // is running is stopped at once.
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::start_with_env(tmp.path(), TCK, &[("AGENTD_SHUTDOWN_GRACE_SECS", "0")]);
    let id = waiting_task(&d).await;
    let rpc = d
        .http
        .post(d.jsonrpc_url())
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "SubscribeToTask", "params": {"id": id}}))
        .send()
        .await
        .expect("rpc subscribe");
    let rest = d
        .http
        .post(d.rest_url(&format!("/tasks/{id}:subscribe")))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("rest subscribe");
    // A task the agent works on for 4 s: its stream must end at the stop
    // too, without waiting for the task, with the task's final status.
    let r = d
        .call(
            "SendMessage",
            json!({"message": user_msg(&uniq("test-resubscribe-message-id"), "x"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let working = r["task"]["id"].as_str().expect("id").to_owned();
    let busy = d
        .http
        .post(d.rest_url(&format!("/tasks/{working}:subscribe")))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("rest subscribe");
    let mut serving = Vec::new();
    let mut read = |r| {
        let (tx, rx) = tokio::sync::oneshot::channel();
        serving.push(rx);
        tokio::spawn(read_to_end(r, Duration::from_secs(15), tx))
    };
    let (rpc_read, rest_read, busy_read) = (read(rpc), read(rest), read(busy));
    // Each stream has sent its snapshot and is open.
    for rx in serving {
        tokio::time::timeout(Duration::from_secs(10), rx).await.expect("a first event").expect("reader");
    }
    assert!(
        !rpc_read.is_finished() && !rest_read.is_finished() && !busy_read.is_finished(),
        "streams are open before the stop"
    );
    let started = std::time::Instant::now();
    let status = tokio::task::spawn_blocking(move || {
        let s = d.stop();
        (s, d)
    })
    .await
    .expect("stop");
    let (status, d) = status;
    assert!(status.success(), "SIGTERM exits with status 0: {status:?}; log:\n{}", d.log());
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "open streams do not hold the stop: {:?}",
        started.elapsed()
    );
    let mut busy_text = String::new();
    for (name, h) in [("JSON-RPC", rpc_read), ("REST", rest_read), ("REST (working task)", busy_read)] {
        let (text, clean) = h.await.expect("reader");
        if name.contains("working") {
            busy_text = text.clone();
        }
        assert!(clean, "{name}: the stream ended cleanly, not cut off: {text:?}");
        assert!(text.matches("data:").count() >= 1, "{name}: the snapshot, then the close: {text:?}");
        assert!(
            !text.contains("TASK_STATE_COMPLETED"),
            "{name}: closed by the stop, not by the task: {text:?}"
        );
    }
    let last = busy_text.lines().filter_map(|l| l.strip_prefix("data:")).next_back().expect("frames");
    let last: Value = serde_json::from_str(last.trim()).expect("JSON frame");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_FAILED",
        "the working task's stream ends with its final status: {busy_text:?}"
    );
    // The task that was working is failed with the stop's reason (not a
    // crash's) after a restart.
    let d = Daemon::start_in(&d.data_dir.clone(), TCK);
    let t = d.call("GetTask", json!({"id": working})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_FAILED", "{t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().expect("a status message");
    assert!(why.contains("agentd was stopped while this task was running"), "{why}");
}

#[tokio::test]
async fn a_streamed_follow_up_resumes_a_waiting_task_and_closes_at_completion() {
    let d = Daemon::start(TCK);
    for b in BOTH {
        let id = waiting_task(&d).await;
        let mut m = user_msg(&uniq("tck-stream-artifact-chunked"), "go on");
        m["taskId"] = json!(id);
        let mut s = b.send_stream(&d, json!({"message": m})).await;
        assert_sse(&s);
        let evs = b.events(&mut s).await;
        let kinds: Vec<&str> = evs.iter().map(kind).collect();
        assert_eq!(
            kinds,
            ["task", "statusUpdate", "artifactUpdate", "artifactUpdate", "statusUpdate"],
            "{b:?}: {evs:?}"
        );
        let task = &evs[0]["task"];
        assert_eq!(task["id"], id.as_str());
        assert_eq!(state(&evs[0]), Some("TASK_STATE_WORKING"), "{b:?}: the snapshot shows the resumed task");
        let history = task["history"].as_array().expect("history");
        assert_eq!(
            history.last().map(|m| m["messageId"].clone()),
            Some(m["messageId"].clone()),
            "{b:?}: the follow-up is in the history"
        );
        assert_eq!(states(&evs).last().map(String::as_str), Some("TASK_STATE_COMPLETED"), "{b:?}");
    }
}

#[tokio::test]
async fn canceling_a_waiting_task_ends_its_subscriptions() {
    let d = Daemon::start(TCK);
    for b in BOTH {
        let id = waiting_task(&d).await;
        let mut s = b.subscribe(&d, &id).await;
        assert_eq!(kind(&b.next(&mut s).await.expect("snapshot")), "task");
        let t = d.call("CancelTask", json!({"id": id})).await;
        assert_eq!(t["status"]["state"], "TASK_STATE_CANCELED", "{t}");
        let rest = b.events(&mut s).await;
        assert_eq!(states(&rest), ["TASK_STATE_CANCELED"], "{b:?}: CANCELED, then the close: {rest:?}");
    }
}

#[tokio::test]
async fn a_direct_reply_stream_is_one_message_then_close() {
    let d = Daemon::start(TCK);
    for b in BOTH {
        let mut s = b.send_stream(&d, json!({"message": user_msg(&uniq("tck-message-response"), "x")})).await;
        assert_sse(&s);
        let evs = b.events(&mut s).await;
        assert_eq!(evs.len(), 1, "{b:?}: {evs:?}");
        assert_eq!(kind(&evs[0]), "message", "{b:?}: {evs:?}");
        assert_eq!(evs[0]["message"]["role"], "ROLE_AGENT");
    }
}

/// Resident memory of a process now (VmRSS), in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kib * 1024
}

/// A JSON-RPC SubscribeToTask stream on a connection of its own from
/// loopback address `from`, once its first event (the snapshot) arrived:
/// the daemon holds all it will hold while the stream waits.
async fn open_subscription(addr: &str, from: std::net::Ipv4Addr, task_id: &str) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind((from, 0).into()).expect("bind");
    let mut s = socket.connect(addr.parse().expect("address")).await.expect("connect");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}});
    let body = body.to_string();
    let head = format!(
        "POST /a2a/jsonrpc HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         A2A-Version: 1.0\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(format!("{head}{body}").as_bytes()).await.expect("write");
    let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
    loop {
        let n = s.read(&mut buf).await.expect("read");
        assert!(n > 0, "the stream closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some(at) = text.find("data:")
            && text[at..].contains("\n\n")
        {
            assert!(text.starts_with("HTTP/1.1 200"), "{text}");
            return s;
        }
    }
}

/// When a burst of clients goes away (3,200 streams, each on its own
/// connection), the daemon gives the freed memory back to the kernel at
/// once (after each 1,024 closes), not at its next periodic check 10 s on: the next burst then starts
/// on fresh pages, resident only where written, instead of reusing these
/// fully resident (10,000 streams in rounds of new connections peaked at
/// 217 MiB that way, against 166 MiB). glibc's malloc only: the jemalloc
/// build gives pages back by itself.
#[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "jemalloc")))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_of_a_burst_of_connections_is_given_back_once_they_close() {
    const PEERS: u64 = 8;
    const PER_PEER: u64 = 400;
    let env = [
        ("AGENTD_LOG", "info,agentd_glibc=debug"),
        ("AGENTD_SERVER_MAX_STREAMS", "4096"),
        ("AGENTD_SERVER_MAX_STREAMS_PER_PRINCIPAL", "512"),
        ("AGENTD_SERVER_MAX_CONNECTIONS", "4096"),
        ("AGENTD_SERVER_MAX_CONNECTIONS_PER_PEER", "512"),
    ];
    let d = Daemon::in_fresh_dir(|dir| Daemon::start_with_env(dir, TCK, &env));
    let id = waiting_task(&d).await;
    let addr = d.url.strip_prefix("http://").expect("http url").to_owned();
    let before = rss(d.pid());
    let mut opening = tokio::task::JoinSet::new();
    for i in 0..PEERS * PER_PEER {
        let (addr, id) = (addr.clone(), id.clone());
        let from = std::net::Ipv4Addr::new(127, 0, 0, 2 + (i % PEERS) as u8);
        opening.spawn(async move { open_subscription(&addr, from, &id).await });
    }
    let streams = opening.join_all().await;
    let open = rss(d.pid());
    assert!(open > before + 32 * 1024 * 1024, "the streams hold memory: {before} → {open} bytes");
    drop(streams);
    // A quarter at least of what the streams held comes back, and the
    // daemon asked for it, rather than found it at its periodic check.
    // (The release build gives back nearly all; this unoptimised one, whose
    // allocations differ, keeps up to half among live chunks.)
    let given_back =
        |log: &str| log.lines().any(|l| l.contains("freed heap pages given back") && l.contains("asked"));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while rss(d.pid()) > open - (open - before) / 4 || !given_back(&d.log()) {
        assert!(
            std::time::Instant::now() < deadline,
            "resident {before} bytes before the streams, {open} with them open, {} 5 s after they closed; log:\n{}",
            rss(d.pid()),
            d.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An open stream costs the daemon its connection's HTTP buffers (8 KiB
/// to read, 8 KiB to write, hyper's) and little more: at 28 KiB each, the
/// 10,000 streams of the fan-out benchmark held 400 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_stream_holds_under_18_kib_of_the_daemons_memory() {
    let d = Daemon::process(TCK);
    let id = waiting_task(&d).await;
    let addr = d.url.strip_prefix("http://").expect("http url").to_owned();
    // The first streams pay for what all share (the task's channel, the
    // allocator's arenas); the ones measured come from four addresses, each
    // under the per-address cap.
    let mut streams = Vec::new();
    for _ in 0..16 {
        streams.push(open_subscription(&addr, [127, 0, 0, 1].into(), &id).await);
    }
    let (before, n) = (rss(d.pid()), 800);
    let from = |i: u64| std::net::Ipv4Addr::new(127, 0, 0, 2 + (i % 4) as u8);
    // One at a time: what a request costs while it is answered (parsing,
    // the snapshot) is freed but stays resident, and would count once per
    // concurrent request.
    for i in 0..n {
        streams.push(open_subscription(&addr, from(i), &id).await);
    }
    let per_stream = rss(d.pid()).saturating_sub(before) / n;
    assert!(per_stream < 18 * 1024, "{per_stream} bytes per open stream");
    // Still streams: the resume reaches every one of them.
    resume(&d, &id, "tck-complete-task").await;
    for mut s in streams {
        use tokio::io::AsyncReadExt;
        let mut got = Vec::new();
        while !String::from_utf8_lossy(&got).contains("TASK_STATE_COMPLETED") {
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(Duration::from_secs(30), s.read(&mut buf)).await.expect("event");
            let n = n.expect("read");
            assert!(n > 0, "closed before the terminal event: {}", String::from_utf8_lossy(&got));
            got.extend_from_slice(&buf[..n]);
        }
    }
}
