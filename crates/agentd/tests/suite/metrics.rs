//! `GET /metrics` after known traffic, read with a real Prometheus parser:
//! the Python client library's `text_string_to_metric_families` (the
//! venv the MCP tests use, `AGENTD_MCP_PYTHON`), fed the scraped text and
//! answering each sample as JSON. Counts and histogram counts must move by
//! exactly what the traffic did; who may scrape is checked on a loopback
//! listener and on one that is not; no label carries an id of the traffic.

use crate::common::receiver::Receiver;
use crate::common::scripted::*;
use crate::common::workflow::{answer, daemon_resuming, doc};
use crate::common::*;
use crate::mcp_servers::{HttpServer, python, skipped};
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Parses the exposition with `prometheus_client.parser` and prints every
/// sample as `{name, labels, value, type}`; a text it cannot parse fails.
const PARSE: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({"name": s.name, "labels": s.labels, "value": s.value, "type": family.type})
json.dump(out, sys.stdout)
"#;

struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
    kind: String,
}

struct Scrape(Vec<Sample>);

impl Scrape {
    /// The sum of the samples named `name` that carry all of `labels`.
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0
            .iter()
            .filter(|s| {
                s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }

    fn kind_of(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|s| s.name == name).map(|s| s.kind.as_str())
    }
}

/// Scrapes `url` (as `token`, if any): the status and, on 200, the parse.
async fn scrape_at(url: &str, token: Option<&str>) -> (u16, Option<Scrape>) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let r = req.send().await.expect("GET /metrics");
    let status = r.status().as_u16();
    if status != 200 {
        return (status, None);
    }
    let ctype = r.headers()["content-type"].to_str().expect("content-type").to_owned();
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    let text = r.text().await.expect("body");
    (200, Some(parse(&text)))
}

async fn scrape(d: &Daemon) -> Scrape {
    let (status, s) = scrape_at(&format!("{}/metrics", d.url), d.token.as_deref()).await;
    assert_eq!(status, 200, "a loopback listener serves /metrics to anyone");
    s.expect("parsed")
}

fn parse(text: &str) -> Scrape {
    let mut child = Command::new(python())
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the parser");
    child.stdin.take().expect("stdin").write_all(text.as_bytes()).expect("write the exposition");
    let out = child.wait_with_output().expect("parser output");
    assert!(
        out.status.success(),
        "the Prometheus parser refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON samples");
    Scrape(
        samples
            .into_iter()
            .map(|s| Sample {
                name: s["name"].as_str().expect("name").to_owned(),
                labels: serde_json::from_value(s["labels"].clone()).expect("labels"),
                value: s["value"].as_f64().expect("value"),
                kind: s["type"].as_str().expect("type").to_owned(),
            })
            .collect(),
    )
}

/// Scrapes until `done` holds (the delivery worker records after the
/// receiver answered); panics with the last values after 10 s.
async fn scrape_until(d: &Daemon, what: &str, done: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = scrape(d).await;
        if done(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "the metrics never showed {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The difference of one series between two scrapes.
fn moved(before: &Scrape, after: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    after.sum(name, labels) - before.sum(name, labels)
}

const REQUESTS: &str = "agentd_request_duration_seconds_count";

#[tokio::test]
async fn requests_tasks_model_calls_and_commits_move_by_exactly_the_traffic() {
    if skipped() {
        return;
    }
    let d = Daemon::start(&[]);
    let before = scrape(&d).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let r = d.call("SendMessage", send_params(&uid("m"), &format!("hello {i}"), None)).await;
        assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
        ids.extend([&r["task"]["id"], &r["task"]["contextId"]].map(|v| v.as_str().expect("id").to_owned()));
    }
    for i in 0..2 {
        let body = json!({"message": user_msg(&uid("m"), &format!("rest {i}"))});
        let (status, r) = d.rest(reqwest::Method::POST, "/message:send", Some(body)).await;
        assert_eq!(status, 200, "{r}");
        ids.push(r["task"]["id"].as_str().expect("id").to_owned());
    }
    let missing = uid("no-such-task");
    let e = d.rpc("GetTask", json!({"id": missing})).await;
    assert!(e["error"].is_object(), "{e}");
    let target = format!("http://{}", d.url.strip_prefix("http://").expect("http"));
    let channel =
        tonic::transport::Endpoint::from_shared(target).expect("endpoint").connect().await.expect("dial");
    let mut grpc = A2aServiceClient::new(channel);
    let e = grpc.get_task(pb::GetTaskRequest { id: missing.clone(), ..Default::default() }).await;
    assert_eq!(e.expect_err("no such task").code(), tonic::Code::NotFound);
    ids.push(missing);
    let after = scrape(&d).await;

    let m = |name: &str, labels: &[(&str, &str)]| moved(&before, &after, name, labels);
    let send = [("method", "SendMessage"), ("outcome", "ok")];
    assert_eq!(m(REQUESTS, &[send[0], send[1], ("binding", "jsonrpc")]), 3.0);
    assert_eq!(m(REQUESTS, &[send[0], send[1], ("binding", "rest")]), 2.0);
    assert_eq!(
        m("agentd_request_duration_seconds_bucket", &[send[0], send[1], ("binding", "rest"), ("le", "+Inf")]),
        2.0,
        "the histogram's +Inf bucket counts every request"
    );
    assert!(m("agentd_request_duration_seconds_sum", &send) > 0.0, "latencies are summed");
    let not_found = [("method", "GetTask"), ("outcome", "task_not_found")];
    assert_eq!(m(REQUESTS, &[not_found[0], not_found[1], ("binding", "jsonrpc")]), 1.0);
    assert_eq!(m(REQUESTS, &[not_found[0], not_found[1], ("binding", "grpc")]), 1.0);
    assert_eq!(m(REQUESTS, &[("method", "GetTask"), ("outcome", "ok")]), 0.0);
    assert_eq!(after.kind_of(REQUESTS), Some("histogram"));

    // Tasks: five created, five completed, none left live.
    assert_eq!(m("agentd_tasks_created_total", &[("link_kind", "turn")]), 5.0, "a message starts a turn");
    assert_eq!(m("agentd_task_transitions_total", &[("to", "completed")]), 5.0);
    assert_eq!(after.sum("agentd_tasks", &[]), 0.0, "no task is left live");
    assert_eq!(after.kind_of("agentd_tasks"), Some("gauge"));

    // Model calls: one per turn, with its tokens, under the GenAI names.
    let echo = [("gen_ai_provider_name", "echo"), ("gen_ai_operation_name", "chat")];
    assert_eq!(m("gen_ai_client_operation_duration_seconds_count", &echo), 5.0);
    assert_eq!(m("gen_ai_client_operation_duration_seconds_count", &[("error_type", "timeout")]), 0.0);
    assert_eq!(m("gen_ai_client_operation_time_to_first_chunk_seconds_count", &echo), 5.0);
    for kind in ["input", "output"] {
        let tokens = [echo[0], echo[1], ("gen_ai_token_type", kind)];
        assert_eq!(m("gen_ai_client_token_usage_count", &tokens), 5.0, "{kind} tokens");
    }

    // Store commits: at least one per task; every commit has its batch size.
    let commits = m("agentd_store_commit_duration_seconds_count", &[("outcome", "ok")]);
    assert!(commits >= 5.0, "{commits} commits");
    assert_eq!(m("agentd_store_commit_batch_size_count", &[]), commits);
    assert!(after.sum("process_resident_memory_bytes", &[]) > 1e6);
    assert!(after.sum("process_open_fds", &[]) > 0.0);
    assert!(after.sum("process_cpu_seconds_total", &[]) > 0.0);
    assert_eq!(after.kind_of("process_cpu_seconds_total"), Some("counter"));

    // No label carries an id of the traffic.
    for s in &after.0 {
        for (k, v) in &s.labels {
            assert!(!ids.iter().any(|id| v.contains(id.as_str())), "{}{{{k}={v:?}}} carries an id", s.name);
            assert!(!looks_like_uuid(v), "{}{{{k}={v:?}}} looks like an id", s.name);
        }
    }
}

/// `8-4-4-4-12` hex digits: the shape of every id agentd makes.
fn looks_like_uuid(v: &str) -> bool {
    let groups: Vec<&str> = v.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn completed(result: &Value) -> String {
    let t = &result["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    t["id"].as_str().expect("task id").to_owned()
}

#[tokio::test]
async fn a_real_mcp_servers_tool_calls_and_push_deliveries_are_counted_by_their_labels() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    // The receiver refuses the first delivery: one retry, then the rest.
    let mut rx = Receiver::start(1).await;
    let steps = json!([
        {"tool_calls": [
            {"id": "c1", "name": "py__echo", "arguments": {"text": "hello"}},
            {"id": "c2", "name": "py__fail", "arguments": {"reason": "on purpose"}}
        ]},
        {"text": "done"}
    ]);
    let yaml = format!(
        "push:\n  allow_private: true\n  backoff_ms: 20\nmcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n",
        server.url()
    );
    let s = scripted(steps, &yaml, true);
    let params = json!({
        "message": user_msg(&uid("m"), "use the tools"),
        "configuration": {"taskPushNotificationConfig": {"url": rx.url(), "token": "t"}}
    });
    let task_id = completed(&s.alice().call("SendMessage", params).await);
    let hits = rx.until_state(&task_id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    let delivered = hits.iter().filter(|h| h.status == 200).count() as f64;
    assert_eq!(hits.len() as f64 - delivered, 1.0, "the receiver refused one");

    let push = |outcome| [("target", "push"), ("outcome", outcome)];
    let after = scrape_until(&s.d, "every delivery", |m| {
        m.sum("agentd_outbox_deliveries_total", &push("delivered")) == delivered
            && m.sum("agentd_outbox_depth", &[]) == 0.0
    })
    .await;
    assert_eq!(after.sum("agentd_outbox_deliveries_total", &push("retry")), 1.0);
    assert_eq!(after.sum("agentd_outbox_deliveries_total", &push("given_up")), 0.0);

    let tool = |name, outcome| [("server", "py"), ("tool", name), ("outcome", outcome)];
    let calls = "agentd_tool_call_duration_seconds_count";
    assert_eq!(after.sum(calls, &tool("echo", "ok")), 1.0);
    assert_eq!(after.sum(calls, &tool("fail", "error")), 1.0);
    assert_eq!(after.sum(calls, &[]), 2.0, "two calls, nothing else");
    let scripted = [("gen_ai_provider_name", "scripted")];
    assert_eq!(after.sum("gen_ai_client_operation_duration_seconds_count", &scripted), 2.0);
    assert_eq!(after.sum("agentd_task_transitions_total", &[("from", "working"), ("to", "completed")]), 1.0);
}

/// The address of the metrics listener, from the daemon's log.
async fn metrics_listener(d: &Daemon) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = d.log();
        let url = log.lines().find_map(|l| {
            let at = l.find("metrics listening on ")? + "metrics listening on ".len();
            Some(l[at..].split_whitespace().next()?.to_owned())
        });
        if let Some(url) = url {
            // Bound to every address; reached here through loopback.
            return url.replace("0.0.0.0", "127.0.0.1");
        }
        assert!(Instant::now() < deadline, "no metrics listener in the log:\n{log}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_listener_that_is_not_loopback_serves_metrics_to_operators_only_unless_public() {
    if skipped() {
        return;
    }
    let s = scripted(json!([]), "metrics:\n  listen: 0.0.0.0:0\n", true);
    let url = metrics_listener(&s.d).await;
    assert_eq!(scrape_at(&url, None).await.0, 401, "no credentials");
    assert_eq!(scrape_at(&url, Some("not-a-token")).await.0, 401, "a wrong token");
    assert_eq!(scrape_at(&url, Some(ALICE)).await.0, 403, "a user");
    let (status, m) = scrape_at(&url, Some(OPS)).await;
    assert_eq!(status, 200, "an operator");
    assert!(m.expect("parsed").sum("process_open_fds", &[]) > 0.0);
    // The main listener is loopback: open to every scraper.
    assert_eq!(scrape_at(&format!("{}/metrics", s.d.url), None).await.0, 200);
    // The metrics listener serves nothing else.
    let card = reqwest::get(url.replace("/metrics", "/.well-known/agent-card.json")).await.expect("GET");
    assert_eq!(card.status().as_u16(), 404);

    let open = scripted(json!([]), "metrics:\n  listen: 0.0.0.0:0\n  public: true\n", true);
    let url = metrics_listener(&open.d).await;
    assert_eq!(scrape_at(&url, None).await.0, 200, "metrics.public opens it");
}

#[tokio::test]
async fn live_tasks_and_open_gates_are_counted_again_after_a_restart() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let mut rx = Receiver::start(0).await;
    let document = doc(&[], "user:carol").replace(
        "::!channel{name=ops kind=webhook}",
        &format!("::!channel{{name=ops kind=webhook target={}}}", rx.url()),
    );
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "py__write_note", "arguments": {"text": "a note"}}]},
        {"text": "done"}
    ]);
    let config = format!(
        "push:\n  allow_private: true\nmcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n      policy: {{human: '@human/approver'}}\n  approvals: {{timeout_secs: 3600}}\nshutdown:\n  grace_secs: 1\nsse_keep_alive_secs: 1\n",
        server.url()
    );
    // The model goes on with its script after the restart (the turn resumes).
    let (mut s, _doc) = daemon_resuming(Some(&document), steps, true, &config, false);
    let r = s.alice().call("SendMessage", send_params(&uid("m"), "write a note", None)).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    let task_id = r["task"]["id"].as_str().expect("id").to_owned();
    rx.next("the approval's announcement", Duration::from_secs(20)).await;

    let waiting = [("state", "input_required"), ("link_kind", "turn")];
    let bridge = [("target", "bridge"), ("outcome", "delivered")];
    let m = scrape_until(&s.d, "the announcement delivered", |m| {
        m.sum("agentd_outbox_deliveries_total", &bridge) == 1.0
    })
    .await;
    assert_eq!(m.sum("agentd_tasks", &waiting), 1.0);
    assert_eq!(m.sum("agentd_tasks", &[]), 1.0);
    assert_eq!(m.sum("agentd_gates_open", &[]), 1.0);

    // A new daemon on the same store counts what is waiting there.
    s.restart();
    let m = scrape(&s.d).await;
    assert_eq!(m.sum("agentd_tasks", &waiting), 1.0, "counted from the store");
    assert_eq!(m.sum("agentd_tasks", &[]), 1.0);
    assert_eq!(m.sum("agentd_gates_open", &[]), 1.0);
    assert_eq!(m.sum("agentd_task_transitions_total", &[]), 0.0, "nothing moved since the start");

    // A stream of the task and a feed subscriber count while they are open.
    let params = json!({"id": task_id});
    let (_, stream) = s.alice().stream_with(Binding::JsonRpc, "SubscribeToTask", params, &[]).await;
    let mut events = crate::common::feed::feed(&s.alice(), json!({})).await;
    events.hello().await;
    let m = scrape(&s.d).await;
    assert_eq!(m.sum("agentd_task_streams_open", &[]), 1.0);
    assert_eq!(m.sum("agentd_feed_subscribers", &[]), 1.0);
    drop((stream, events));
    scrape_until(&s.d, "the closed streams gone", |m| {
        m.sum("agentd_task_streams_open", &[]) == 0.0 && m.sum("agentd_feed_subscribers", &[]) == 0.0
    })
    .await;

    // A reminder for the turn's next model call: injected, then emitted
    // and expired by that one call.
    let reminder = json!({"taskId": task_id, "reminder": {"body": "be brief", "ttlTurns": 1}});
    s.alice().ok(Binding::JsonRpc, "InjectTaskReminder", reminder).await;
    assert_eq!(scrape(&s.d).await.sum("agentd_reminder_events_total", &[("event", "injected")]), 1.0);

    answer(&s.carol(), &task_id, json!({"data": {"approve": true}})).await.expect("carol approves");
    wait_for_state(&s.alice(), &task_id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    let m = scrape(&s.d).await;
    for event in ["injected", "emitted", "expired"] {
        assert_eq!(m.sum("agentd_reminder_events_total", &[("event", event)]), 1.0, "{event}");
    }
    assert_eq!(m.sum("agentd_reminder_events_total", &[("event", "deduped")]), 0.0);
    assert_eq!(m.sum("agentd_tasks", &[]), 0.0);
    assert_eq!(m.sum("agentd_gates_open", &[]), 0.0);
    assert_eq!(m.sum("agentd_task_transitions_total", &[("from", "input_required"), ("to", "working")]), 1.0);
    assert_eq!(
        m.sum("agentd_tool_call_duration_seconds_count", &[("tool", "write_note"), ("outcome", "ok")]),
        1.0
    );
}
