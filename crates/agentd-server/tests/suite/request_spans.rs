//! A line logged deep inside a request (in a store commit on the SQLite
//! writer's caller) carries the request's id, so an internal error in the
//! log can be followed back to the request that caused it; and each A2A
//! operation runs in a span named after it, under the request's.

use crate::support::serve_on;
use agentd_server::{ExtensionRegistry, VersionPolicy};
use agentd_store::{SqliteOptions, SqliteStore};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, PoisonError};
use tracing_subscriber::fmt::format::FmtSpan;

/// Appends what the subscriber writes to a shared string.
struct Captured(Arc<Mutex<String>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push_str(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

// A current-thread runtime: the server, the engine and this client all run
// on the test's thread, where the capturing subscriber is the default.
#[tokio::test]
async fn lines_inside_json_rpc_calls_name_the_request_and_the_operation() {
    let log = Arc::new(Mutex::new(String::new()));
    let sink = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || Captured(sink.clone()))
        .with_ansi(false)
        // A line as each span closes: an operation that logs nothing
        // itself (a read) still shows its span.
        .with_span_events(FmtSpan::CLOSE)
        .finish();
    // tracing-core caches whether a log line is wanted per call site, for
    // the whole process. With a single subscriber registered (this one) it
    // asks only the default of the thread that reaches a call site first:
    // a line another test's thread logs first (a store commit) would stay
    // off here. A second registered one (a no-op, nobody's default) makes
    // it ask every registered subscriber, and the cache is rebuilt so.
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let _default = tracing::subscriber::set_default(subscriber);
    tracing::callsite::rebuild_interest_cache();

    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("agentd.db"), SqliteOptions::default()).expect("store");
    let (addr, stop) =
        serve_on(Arc::new(store), ExtensionRegistry::new(Vec::new()), VersionPolicy::Lenient).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}});
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}{}", agentd_server::card::JSONRPC_PATH))
        .header("a2a-version", "1.0")
        .header("x-request-id", "trace-me-42")
        .json(&body)
        .send()
        .await
        .expect("post");
    assert_eq!(resp.headers()["x-request-id"], "trace-me-42");
    let answer: Value = resp.json().await.expect("json");
    assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    let task_id = answer["result"]["task"]["id"].as_str().expect("the task's id").to_owned();
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}});
    let resp = reqwest::Client::new()
        .post(format!("http://{addr}{}", agentd_server::card::JSONRPC_PATH))
        .header("a2a-version", "1.0")
        .header("x-request-id", "read-me-43")
        .json(&body)
        .send()
        .await
        .expect("post");
    let answer: Value = resp.json().await.expect("json");
    assert_eq!(answer["result"]["id"], task_id.as_str(), "{answer}");
    stop.cancel();

    let log = log.lock().unwrap_or_else(PoisonError::into_inner).clone();
    let commits: Vec<&str> =
        log.lines().filter(|l| l.contains("store.commit") && l.contains("committed")).collect();
    assert!(!commits.is_empty(), "no commit was logged:\n{log}");
    for line in &commits {
        assert!(
            line.contains("request{id=trace-me-42}") && line.contains("send_message{"),
            "a commit of the call is logged without its request and operation: {line}\n{log}"
        );
    }
    let read = format!("request{{id=read-me-43}}:get_task{{task_id={task_id}}}");
    assert!(log.lines().any(|l| l.contains(&read)), "no {read} span was logged:\n{log}");
}
