//! Traces end to end: `agentd serve` processes (the tracer is process-wide)
//! export to a real OTLP/HTTP receiver (`common/otlp.rs`); the callers send
//! a W3C `traceparent`. One SendMessage with a model call and a tool call of
//! a real MCP server is one trace under the caller's span; a delegation to a
//! second agentd and a push delivery carry it on; with no endpoint nothing
//! is exported and nothing is propagated. The receiver runs on the MCP
//! tests' Python, so `AGENTD_MCP_TESTS=skip` skips these too.

use crate::common::otlp::Otlp;
use crate::common::receiver::Receiver;
use crate::common::*;
use crate::mcp_servers::{HttpServer, skipped};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// The caller's trace and span.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn traceparent() -> String {
    format!("00-{TRACE}-{CALLER_SPAN}-01")
}

/// An `agentd serve` process with the scripted model playing `steps` (its
/// requests recorded in `dir/requests.jsonl`), the config `yaml` besides,
/// and `env`.
fn daemon(dir: &Path, steps: Value, yaml: &str, env: &[(&str, &str)]) -> Daemon {
    let script = dir.join("script.json");
    std::fs::write(&script, serde_json::to_vec(&steps).unwrap()).unwrap();
    let record = dir.join("requests.jsonl");
    let config = format!(
        "model:\n  kind: scripted\n  script: {}\n  record_to: {}\n{yaml}",
        script.display(),
        record.display()
    );
    let cfg = write_config(dir, &config);
    Daemon::start_with_env(&dir.join("data"), &["--config", cfg.to_str().unwrap()], env)
}

fn telemetry(otlp: &Otlp) -> String {
    format!("telemetry:\n  otlp:\n    endpoint: {}\n", otlp.endpoint())
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// The one span named `name` of `trace` (panics on none or several).
fn one<'a>(spans: &'a [Value], trace: &str, name: &str) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|s| s["trace_id"] == trace && s["name"] == name).collect();
    assert_eq!(found.len(), 1, "one {name} span in the trace; spans: {spans:#?}");
    found[0]
}

fn completed(r: &Value) -> (String, String) {
    let t = &r["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    (t["id"].as_str().unwrap().to_owned(), t["contextId"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_send_message_is_one_trace_under_the_callers_span_through_the_turn_the_model_and_the_tool() {
    if skipped() {
        return;
    }
    let otlp = Otlp::start();
    let mcp = HttpServer::start();
    let dir = tempfile::tempdir().unwrap();
    let steps = json!([
        {"tool_calls": [
            {"id": "c1", "name": "py__echo", "arguments": {"text": "hi"}},
            {"id": "c2", "name": "py__trace_context", "arguments": {}}
        ]},
        {"text": "done"}
    ]);
    let yaml = format!(
        "{}mcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n",
        telemetry(&otlp),
        mcp.url()
    );
    // The request's debug line shows what every line of the request carries.
    let mut d = daemon(dir.path(), steps, &yaml, &[("AGENTD_LOG", "info,agentd_server::request_id=debug")]);
    let message_id = uniq("m");
    let (headers, r) = d
        .rpc_with(
            "SendMessage",
            send_params(&message_id, "use the tool", None),
            &[("traceparent", &traceparent())],
        )
        .await;
    let (task_id, context_id) = completed(&r);
    let request_id = headers["x-request-id"].to_str().unwrap().to_owned();
    // A health probe starts no trace.
    assert_eq!(d.http.get(format!("{}/healthz", d.url)).send().await.unwrap().status(), 200);
    assert!(d.stop().success());

    let spans = otlp
        .until("execute_tool span", Duration::from_secs(30), |s| {
            s.iter().any(|s| s["name"] == "execute_tool py__echo")
        })
        .await;
    // The server span: the caller's trace, the caller's span its parent.
    let server = one(&spans, TRACE, "POST /a2a/jsonrpc");
    assert_eq!(server["kind"], "SPAN_KIND_SERVER");
    assert_eq!(server["parent_span_id"], CALLER_SPAN);
    assert_eq!(server["service"], "agentd");
    assert_eq!(attr(server, "rpc.method"), "SendMessage");
    assert_eq!(attr(server, "a2a.message.id"), message_id.as_str());
    assert_eq!(attr(server, "a2a.task.id"), task_id.as_str());
    assert_eq!(attr(server, "gen_ai.conversation.id"), context_id.as_str());
    assert_eq!(attr(server, "http.request.method"), "POST");
    assert_eq!(attr(server, "http.response.status_code"), 200);

    let turn = one(&spans, TRACE, "invoke_agent");
    assert_eq!(turn["parent_span_id"], server["span_id"]);
    assert_eq!(attr(turn, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(turn, "gen_ai.conversation.id"), context_id.as_str());
    assert_eq!(attr(turn, "a2a.task.id"), task_id.as_str());
    assert_eq!(attr(turn, "a2a.message.id"), message_id.as_str());

    let chats: Vec<&Value> = spans.iter().filter(|s| s["trace_id"] == TRACE && s["name"] == "chat").collect();
    assert_eq!(chats.len(), 2, "two model calls; spans: {spans:#?}");
    for chat in &chats {
        assert_eq!(chat["parent_span_id"], turn["span_id"]);
        assert_eq!(chat["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(attr(chat, "gen_ai.provider.name"), "scripted");
        assert!(attr(chat, "gen_ai.usage.input_tokens").as_i64().is_some_and(|n| n > 0), "{chat}");
        assert!(attr(chat, "gen_ai.usage.output_tokens").as_i64().is_some(), "{chat}");
    }
    let tool = one(&spans, TRACE, "execute_tool py__echo");
    assert_eq!(tool["parent_span_id"], turn["span_id"]);
    assert_eq!(attr(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(attr(tool, "gen_ai.tool.name"), "py__echo");
    assert_eq!(attr(tool, "gen_ai.tool.call.id"), "c1");

    // The MCP server got the call's context in `_meta`.
    let requests = crate::common::scripted::recorded(&dir.path().join("requests.jsonl"));
    let results = tool_results(&requests[1]);
    let carried = one(&spans, TRACE, "execute_tool py__trace_context");
    assert_eq!(carried["parent_span_id"], turn["span_id"]);
    assert_eq!(results[1], format!("00-{TRACE}-{}-01", carried["span_id"].as_str().unwrap()), "{results:?}");

    // The turn's commits are in the trace too; the engine's inner spans are not.
    assert!(spans.iter().any(|s| s["trace_id"] == TRACE && s["name"] == "store.commit"), "{spans:#?}");
    assert!(!spans.iter().any(|s| s["name"] == "send_message"), "{spans:#?}");
    assert!(!spans.iter().any(|s| s["name"] == "GET /healthz"), "{spans:#?}");

    // Every line of the request names it and its trace.
    let log = d.log();
    let line = log.lines().find(|l| l.contains(&request_id) && l.contains("request_id: request"));
    let line = line.unwrap_or_else(|| panic!("no request line for {request_id}; log:\n{log}"));
    assert!(line.contains(&format!("trace_id={TRACE}")), "{line}");
}

#[tokio::test]
async fn a_delegation_carries_the_trace_into_the_peer() {
    if skipped() {
        return;
    }
    let otlp = Otlp::start();
    let peer_dir = tempfile::tempdir().unwrap();
    // The peer: the default agent with the echo model, exporting as `peer`.
    let peer_cfg = write_config(peer_dir.path(), &telemetry(&otlp));
    let mut peer = Daemon::start_with_env(
        &peer_dir.path().join("data"),
        &["--config", peer_cfg.to_str().unwrap()],
        &[("OTEL_SERVICE_NAME", "peer")],
    );
    let dir = tempfile::tempdir().unwrap();
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "delegate", "arguments": {"peer": "echoer", "objective": "summarize"}}]},
        {"text": "done"}
    ]);
    let yaml = format!("{}a2a:\n  peers:\n    - name: echoer\n      url: {}\n", telemetry(&otlp), peer.url);
    let mut d = daemon(dir.path(), steps, &yaml, &[]);
    let (_, r) = d
        .rpc_with(
            "SendMessage",
            send_params(&uniq("m"), "ask the peer", None),
            &[("traceparent", &traceparent())],
        )
        .await;
    completed(&r);
    assert!(d.stop().success());
    assert!(peer.stop().success());

    let spans = otlp
        .until("the peer's spans of the trace", Duration::from_secs(30), |s| {
            s.iter().any(|s| s["service"] == "peer" && s["trace_id"] == TRACE && s["name"] == "invoke_agent")
        })
        .await;
    let tool = one(&spans, TRACE, "execute_tool delegate");
    let peer_calls: Vec<&Value> = spans
        .iter()
        .filter(|s| s["service"] == "peer" && s["kind"] == "SPAN_KIND_SERVER" && s["trace_id"] == TRACE)
        .collect();
    assert!(!peer_calls.is_empty(), "{spans:#?}");
    for call in &peer_calls {
        assert_eq!(
            call["parent_span_id"], tool["span_id"],
            "the peer's call is a child of the delegation: {call}"
        );
    }
    let peer_turn = spans
        .iter()
        .find(|s| s["service"] == "peer" && s["trace_id"] == TRACE && s["name"] == "invoke_agent")
        .unwrap();
    assert!(peer_calls.iter().any(|c| c["span_id"] == peer_turn["parent_span_id"]), "{spans:#?}");
}

#[tokio::test]
async fn a_push_delivery_carries_the_trace_of_the_turn_it_reports() {
    if skipped() {
        return;
    }
    let otlp = Otlp::start();
    // Its first attempt is answered 503: a failed attempt is an error span.
    let mut hook = Receiver::start(1).await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!("{}push:\n  allow_private: true\n  backoff_ms: 50\n", telemetry(&otlp));
    let mut d = daemon(dir.path(), json!([{"text": "done"}]), &yaml, &[]);
    let params = json!({
        "message": user_msg(&uniq("m"), "x"),
        "configuration": {"taskPushNotificationConfig": {"url": hook.url()}},
    });
    let (_, r) = d.rpc_with("SendMessage", params, &[("traceparent", &traceparent())]).await;
    let (task_id, _) = completed(&r);
    let hits = hook.until_state(&task_id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert!(d.stop().success());

    let spans = otlp
        .until("the deliveries' spans", Duration::from_secs(30), |s| {
            s.iter().filter(|s| s["name"] == "deliver push").count() >= hits.len()
        })
        .await;
    let turn = one(&spans, TRACE, "invoke_agent");
    for hit in &hits {
        let tp = hit.headers.get("traceparent").map(|v| v.to_str().unwrap().to_owned());
        let tp = tp.unwrap_or_else(|| panic!("a push without traceparent: {hit:?}"));
        let parts: Vec<&str> = tp.split('-').collect();
        assert_eq!(parts[1], TRACE, "{tp}");
        // The delivery's own span, a child of the turn it reports.
        let delivery =
            spans.iter().find(|s| s["span_id"] == parts[2]).unwrap_or_else(|| panic!("{tp}: {spans:#?}"));
        assert_eq!(delivery["name"], "deliver push");
        assert_eq!(delivery["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(delivery["parent_span_id"], turn["span_id"]);
        assert_eq!(attr(delivery, "a2a.task.id"), task_id.as_str());
        // STATUS_CODE_ERROR (2) for the refused attempt, unset (0) for the others.
        assert_eq!(delivery["status"], if hit.status == 503 { 2 } else { 0 }, "{delivery}");
    }
    assert!(hits.iter().any(|h| h.status == 503), "{hits:?}");
}

#[tokio::test]
async fn without_an_endpoint_nothing_is_exported_and_no_trace_context_goes_out() {
    if skipped() {
        return;
    }
    let otlp = Otlp::start();
    let mut hook = Receiver::start(0).await;
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(
        dir.path(),
        json!([{"text": "done"}]),
        "push:\n  allow_private: true\n",
        &[("AGENTD_LOG", "info,agentd_server::request_id=debug")],
    );
    let params = json!({
        "message": user_msg(&uniq("m"), "x"),
        "configuration": {"taskPushNotificationConfig": {"url": hook.url()}},
    });
    let (_, r) = d.rpc_with("SendMessage", params, &[("traceparent", &traceparent())]).await;
    let (task_id, _) = completed(&r);
    let hits = hook.until_state(&task_id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert!(d.stop().success());
    for hit in &hits {
        assert!(hit.headers.get("traceparent").is_none(), "{hit:?}");
    }
    let log = d.log();
    assert!(log.contains("request_id: request"), "{log}");
    assert!(!log.contains("trace_id"), "{log}");
    assert!(otlp.spans().is_empty(), "{:#?}", otlp.spans());
}

#[tokio::test]
async fn a_grpc_call_joins_the_trace_its_metadata_names() {
    if skipped() {
        return;
    }
    use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient, part::Content};
    let otlp = Otlp::start();
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), json!([{"text": "done"}]), &telemetry(&otlp), &[]);
    let channel = tonic::transport::Endpoint::from_shared(d.url.clone()).unwrap().connect().await.unwrap();
    let message = pb::Message {
        message_id: uniq("m"),
        role: pb::Role::User as i32,
        parts: vec![pb::Part { content: Some(Content::Text("hello".into())), ..Default::default() }],
        ..Default::default()
    };
    let mut request =
        tonic::Request::new(pb::SendMessageRequest { message: Some(message.clone()), ..Default::default() });
    request.metadata_mut().insert("a2a-version", "1.0".parse().unwrap());
    request.metadata_mut().insert("traceparent", traceparent().parse().unwrap());
    A2aServiceClient::new(channel).send_message(request).await.expect("SendMessage over gRPC");
    assert!(d.stop().success());

    let spans = otlp
        .until("the gRPC call's turn", Duration::from_secs(30), |s| {
            s.iter().any(|s| s["trace_id"] == TRACE && s["name"] == "invoke_agent")
        })
        .await;
    let server = one(&spans, TRACE, "lf.a2a.v1.A2AService/SendMessage");
    assert_eq!(server["kind"], "SPAN_KIND_SERVER");
    assert_eq!(server["parent_span_id"], CALLER_SPAN);
    assert_eq!(attr(server, "a2a.message.id"), message.message_id.as_str());
    assert_eq!(one(&spans, TRACE, "invoke_agent")["parent_span_id"], server["span_id"]);
}

#[tokio::test]
async fn a_model_call_over_http_carries_its_chat_span_as_traceparent() {
    if skipped() {
        return;
    }
    use crate::model_support::{Mock, completion};
    let otlp = Otlp::start();
    let model = Mock::start(|_, _| completion("hello")).await;
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "model:\n  kind: openai\n  openai:\n    endpoints: ['{}']\n    model: test-model\n    max_retries: 0\n{}",
        model.base,
        telemetry(&otlp)
    );
    let cfg = write_config(dir.path(), &yaml);
    let mut d = Daemon::start_with_env(&dir.path().join("data"), &["--config", cfg.to_str().unwrap()], &[]);
    let (_, r) = d
        .rpc_with("SendMessage", send_params(&uniq("m"), "hi", None), &[("traceparent", &traceparent())])
        .await;
    completed(&r);
    assert!(d.stop().success());

    let spans = otlp
        .until("the model call's span", Duration::from_secs(30), |s| {
            s.iter().any(|s| s["trace_id"] == TRACE && s["name"] == "chat test-model")
        })
        .await;
    let chat = one(&spans, TRACE, "chat test-model");
    assert_eq!(attr(chat, "gen_ai.provider.name"), "openai");
    assert_eq!(attr(chat, "gen_ai.request.model"), "test-model");
    let got = model.received();
    assert_eq!(got.len(), 1);
    let tp = got[0].headers.get("traceparent").expect("the model call's traceparent").to_str().unwrap();
    assert_eq!(tp, format!("00-{TRACE}-{}-01", chat["span_id"].as_str().unwrap()));
}

#[tokio::test]
async fn json_log_lines_of_a_request_carry_its_trace_id() {
    if skipped() {
        return;
    }
    let otlp = Otlp::start();
    let dir = tempfile::tempdir().unwrap();
    let env = [("AGENTD_LOG", "info,agentd_server::request_id=debug"), ("AGENTD_LOG_FORMAT", "json")];
    let mut d = daemon(dir.path(), json!([{"text": "done"}]), &telemetry(&otlp), &env);
    let (headers, r) = d
        .rpc_with("SendMessage", send_params(&uniq("m"), "hi", None), &[("traceparent", &traceparent())])
        .await;
    completed(&r);
    let request_id = headers["x-request-id"].to_str().unwrap().to_owned();
    assert!(d.stop().success());
    let log = d.log();
    let line: Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["span"]["id"] == request_id.as_str())
        .unwrap_or_else(|| panic!("no JSON line of request {request_id}; log:\n{log}"));
    assert_eq!(line["span"]["trace_id"], TRACE, "{line}");
}

#[tokio::test]
async fn a_malformed_traceparent_is_ignored_and_the_call_starts_a_trace_of_its_own() {
    if skipped() {
        return;
    }
    let otlp = Otlp::start();
    let dir = tempfile::tempdir().unwrap();
    let mut d = daemon(dir.path(), json!([{"text": "done"}]), &telemetry(&otlp), &[]);
    let bad = format!("00-{TRACE}-0000000000000000-01"); // an all-zero parent id is invalid
    let message_id = uniq("m");
    let (_, r) =
        d.rpc_with("SendMessage", send_params(&message_id, "hi", None), &[("traceparent", &bad)]).await;
    completed(&r);
    assert!(d.stop().success());
    let spans = otlp
        .until("the call's server span", Duration::from_secs(30), |s| {
            s.iter().any(|s| s["name"] == "POST /a2a/jsonrpc")
        })
        .await;
    let server = spans.iter().find(|s| s["name"] == "POST /a2a/jsonrpc").unwrap();
    assert_eq!(attr(server, "a2a.message.id"), message_id.as_str());
    assert_ne!(server["trace_id"], TRACE, "{server}");
    assert_eq!(server["parent_span_id"], "", "{server}");
}

#[tokio::test]
async fn the_server_span_ends_with_the_answer_while_the_turn_it_started_goes_on() {
    if skipped() {
        return;
    }
    let otlp = Otlp::start();
    let dir = tempfile::tempdir().unwrap();
    // A model that takes a second: the call answers long before the turn ends.
    let mut d = daemon(dir.path(), json!([{"text": "done", "delay_ms": 1000}]), &telemetry(&otlp), &[]);
    let params = json!({"message": user_msg(&uniq("m"), "hi"), "configuration": {"returnImmediately": true}});
    let (_, r) = d.rpc_with("SendMessage", params, &[("traceparent", &traceparent())]).await;
    let task_id = r["result"]["task"]["id"].as_str().expect("the task at once").to_owned();
    wait_for_state(&d, &task_id, "TASK_STATE_COMPLETED", Duration::from_secs(30)).await;
    assert!(d.stop().success());

    let spans = otlp
        .until("the turn's span", Duration::from_secs(30), |s| {
            s.iter().any(|s| s["trace_id"] == TRACE && s["name"] == "invoke_agent")
        })
        .await;
    let server = one(&spans, TRACE, "POST /a2a/jsonrpc");
    let turn = one(&spans, TRACE, "invoke_agent");
    assert_eq!(turn["parent_span_id"], server["span_id"]);
    let ms = |s: &Value, k: &str| s[k].as_u64().unwrap() / 1_000_000;
    assert!(ms(server, "end") - ms(server, "start") < 500, "the call took {server}");
    assert!(ms(turn, "end") >= ms(server, "end") + 900, "the turn ended before the call: {turn} {server}");
}

#[tokio::test]
async fn a_subagents_turn_is_a_child_of_the_tool_call_that_spawned_it() {
    if skipped() {
        return;
    }
    let otlp = Otlp::start();
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"instruction": "You are a researcher.", "input": "Find X.", "name": "researcher"});
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "spawn_subagent", "arguments": args}]},
        {"text": "X is 42."},
        {"text": "The researcher says: X is 42."}
    ]);
    let mut d = daemon(dir.path(), steps, &telemetry(&otlp), &[]);
    let (_, r) = d
        .rpc_with("SendMessage", send_params(&uniq("m"), "ask", None), &[("traceparent", &traceparent())])
        .await;
    let (task_id, _) = completed(&r);
    assert!(d.stop().success());

    let spans = otlp
        .until("both turns", Duration::from_secs(30), |s| {
            s.iter().filter(|s| s["trace_id"] == TRACE && s["name"] == "invoke_agent").count() == 2
        })
        .await;
    let spawn = one(&spans, TRACE, "execute_tool spawn_subagent");
    let turns: Vec<&Value> =
        spans.iter().filter(|s| s["trace_id"] == TRACE && s["name"] == "invoke_agent").collect();
    let parent =
        turns.iter().find(|t| attr(t, "a2a.task.id") == task_id.as_str()).expect("the parent's turn");
    let child =
        turns.iter().find(|t| attr(t, "a2a.task.id") != task_id.as_str()).expect("the subagent's turn");
    assert_eq!(spawn["parent_span_id"], parent["span_id"]);
    assert_eq!(child["parent_span_id"], spawn["span_id"], "{child}");
}
