//! The gRPC binding end to end against the real daemon, with a tonic client
//! generated from the same proto, dialing the `host:port` the card's GRPC
//! interface names: every operation, both streams, the error statuses with
//! their ErrorInfo / BadRequest details, authentication, and HTTP/1.1
//! JSON-RPC still answering on the same port.

use crate::common::*;
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient, part::Content};
use serde_json::json;
use std::time::Duration;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request, Status, Streaming};
use tonic_types::StatusExt;

type Client = A2aServiceClient<Channel>;

const TCK: &[&str] = &["--agent", "tck", "--push-allow-private"];
const WAIT: Duration = Duration::from_secs(20);

/// The GRPC interface of the public card: `host:port`, no scheme.
async fn grpc_target(d: &Daemon) -> String {
    let card: serde_json::Value = d
        .http
        .get(format!("{}/.well-known/agent-card.json", d.url))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("card json");
    let iface = card["supportedInterfaces"]
        .as_array()
        .and_then(|a| a.iter().find(|i| i["protocolBinding"] == "GRPC"))
        .unwrap_or_else(|| panic!("the card declares a GRPC interface: {card}"));
    assert_eq!(iface["protocolVersion"], "1.0", "{iface}");
    let url = iface["url"].as_str().expect("url").to_owned();
    assert!(!url.contains("://"), "a gRPC target has no scheme: {url}");
    assert_eq!(Some(url.as_str()), d.url.strip_prefix("http://"), "host:port of the listener");
    url
}

/// A client over HTTP/2 cleartext (prior knowledge), as `grpc.insecure_channel` dials.
async fn client(d: &Daemon) -> Client {
    let target = grpc_target(d).await;
    let ch = Endpoint::from_shared(format!("http://{target}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    A2aServiceClient::new(ch)
}

/// A request with `a2a-version: 1.0` (and a bearer token, if the daemon has one).
fn req<T>(d: &Daemon, msg: T) -> Request<T> {
    let mut r = Request::new(msg);
    r.metadata_mut().insert("a2a-version", "1.0".parse().expect("ascii"));
    if let Some(t) = &d.token {
        r.metadata_mut().insert("authorization", format!("Bearer {t}").parse().expect("ascii"));
    }
    r
}

fn text(t: &str) -> pb::Part {
    pb::Part { content: Some(Content::Text(t.into())), ..Default::default() }
}

/// A user message whose messageId starts with `prefix` (the tck profile keys on it).
fn msg(prefix: &str, task_id: &str) -> pb::Message {
    pb::Message {
        message_id: uniq(prefix),
        task_id: task_id.into(),
        role: pb::Role::User as i32,
        parts: vec![text("hello over gRPC")],
        ..Default::default()
    }
}

fn send(m: pb::Message) -> pb::SendMessageRequest {
    pb::SendMessageRequest { message: Some(m), ..Default::default() }
}

fn task_of(r: pb::SendMessageResponse) -> pb::Task {
    match r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn state(t: &pb::Task) -> pb::TaskState {
    pb::TaskState::try_from(t.status.as_ref().map_or(0, |s| s.state)).expect("a known state")
}

/// The state a stream event carries (`task` or `statusUpdate`).
fn event_state(ev: &pb::StreamResponse) -> Option<pb::TaskState> {
    use pb::stream_response::Payload;
    let s = match ev.payload.as_ref()? {
        Payload::Task(t) => t.status.as_ref()?.state,
        Payload::StatusUpdate(u) => u.status.as_ref()?.state,
        _ => return None,
    };
    pb::TaskState::try_from(s).ok()
}

/// Every remaining event until the stream ends with OK.
async fn drain(s: &mut Streaming<pb::StreamResponse>) -> Vec<pb::StreamResponse> {
    let mut out = Vec::new();
    let read = async {
        while let Some(ev) = s.message().await.expect("stream ends with OK") {
            out.push(ev);
        }
    };
    tokio::time::timeout(WAIT, read).await.expect("the stream ends");
    out
}

async fn next(s: &mut Streaming<pb::StreamResponse>) -> pb::StreamResponse {
    tokio::time::timeout(WAIT, s.message())
        .await
        .expect("an event in time")
        .expect("no error")
        .expect("an event")
}

/// The status code and ErrorInfo (reason, domain) of a failed call.
fn assert_status(s: &Status, code: Code, reason: &str) {
    assert_eq!(s.code(), code, "{s:?}");
    let details = s.get_error_details();
    let info = details.error_info().unwrap_or_else(|| panic!("ErrorInfo in grpc-status-details-bin: {s:?}"));
    assert_eq!(info.reason, reason, "{s:?}");
    assert_eq!(info.domain, "a2a-protocol.org", "{s:?}");
}

/// The fields a BadRequest detail names.
fn violations(s: &Status) -> Vec<String> {
    let details = s.get_error_details();
    let br = details.bad_request().unwrap_or_else(|| panic!("BadRequest in details: {s:?}"));
    br.field_violations.iter().map(|v| v.field.clone()).collect()
}

/// A task waiting in INPUT_REQUIRED with nothing running.
async fn waiting_task(d: &Daemon, c: &mut Client) -> pb::Task {
    let t = task_of(
        c.send_message(req(d, send(msg("tck-input-required", "")))).await.expect("send").into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    t
}

#[tokio::test]
async fn send_message_blocks_until_completed_and_get_and_list_find_it() {
    let d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let t = task_of(
        c.send_message(req(&d, send(msg("tck-artifact-data", "")))).await.expect("send").into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert!(!t.id.is_empty() && !t.context_id.is_empty());
    // google.protobuf.Value carried the data part through: {"key":"value","count":42}.
    let data = t.artifacts.iter().flat_map(|a| &a.parts).find_map(|p| match &p.content {
        Some(Content::Data(v)) => Some(v.clone()),
        _ => None,
    });
    let Some(prost_types::Value { kind: Some(prost_types::value::Kind::StructValue(s)) }) = data else {
        panic!("a data artifact: {t:?}")
    };
    assert_eq!(s.fields["count"].kind, Some(prost_types::value::Kind::NumberValue(42.0)));

    let got = c
        .get_task(req(
            &d,
            pb::GetTaskRequest { id: t.id.clone(), history_length: Some(0), ..Default::default() },
        ))
        .await
        .expect("get")
        .into_inner();
    assert_eq!((got.id.as_str(), state(&got)), (t.id.as_str(), pb::TaskState::Completed));
    assert!(got.history.is_empty(), "historyLength 0 omits history");
    // Without historyLength the task is shown whole, as the send answered it.
    let whole = c
        .get_task(req(&d, pb::GetTaskRequest { id: t.id.clone(), ..Default::default() }))
        .await
        .expect("get");
    assert_eq!(whole.into_inner(), t, "GetTask shows the completed task whole");

    let list = c
        .list_tasks(req(
            &d,
            pb::ListTasksRequest {
                context_id: t.context_id.clone(),
                page_size: Some(10),
                ..Default::default()
            },
        ))
        .await
        .expect("list")
        .into_inner();
    assert_eq!(list.tasks.len(), 1, "{list:?}");
    assert_eq!(list.tasks[0].id, t.id);
    assert_eq!((list.next_page_token.as_str(), list.total_size), ("", 1));
    assert!(list.tasks[0].artifacts.is_empty(), "artifacts only with includeArtifacts");

    // A direct reply is a Message, not a Task.
    let r = c.send_message(req(&d, send(msg("tck-message-response", "")))).await.expect("send").into_inner();
    assert!(matches!(r.payload, Some(pb::send_message_response::Payload::Message(_))), "{r:?}");
}

#[tokio::test]
async fn send_streaming_message_starts_with_the_task_and_ends_at_completed() {
    let d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let mut s = c
        .send_streaming_message(req(&d, send(msg("tck-stream-artifact-chunked", ""))))
        .await
        .expect("stream opens")
        .into_inner();
    let evs = drain(&mut s).await;
    use pb::stream_response::Payload;
    assert!(matches!(evs.first().and_then(|e| e.payload.as_ref()), Some(Payload::Task(_))), "{evs:?}");
    assert_eq!(evs.last().and_then(event_state), Some(pb::TaskState::Completed), "{evs:?}");
    let chunks: Vec<_> = evs
        .iter()
        .filter_map(|e| match &e.payload {
            Some(Payload::ArtifactUpdate(a)) => Some((a.append, a.last_chunk)),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, [(false, false), (true, true)], "{evs:?}");

    // A direct reply streams as one Message, then the stream ends.
    let mut s = c
        .send_streaming_message(req(&d, send(msg("tck-message-response", ""))))
        .await
        .expect("stream opens")
        .into_inner();
    let evs = drain(&mut s).await;
    assert!(matches!(evs.as_slice(), [pb::StreamResponse { payload: Some(Payload::Message(_)) }]), "{evs:?}");
}

#[tokio::test]
async fn subscribe_to_a_waiting_task_then_resume_it() {
    let d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let t = waiting_task(&d, &mut c).await;
    let mut s = c
        .subscribe_to_task(req(&d, pb::SubscribeToTaskRequest { id: t.id.clone(), ..Default::default() }))
        .await
        .expect("subscribe")
        .into_inner();
    let first = next(&mut s).await;
    assert!(
        matches!(first.payload, Some(pb::stream_response::Payload::Task(_))),
        "the snapshot first: {first:?}"
    );
    assert_eq!(event_state(&first), Some(pb::TaskState::InputRequired));

    // Resume on another connection; the events reach the open stream.
    let mut other = client(&d).await;
    let done = task_of(
        other
            .send_message(req(&d, send(msg("tck-complete-task", &t.id))))
            .await
            .expect("resume")
            .into_inner(),
    );
    assert_eq!(state(&done), pb::TaskState::Completed, "{done:?}");
    let rest = drain(&mut s).await;
    assert_eq!(rest.last().and_then(event_state), Some(pb::TaskState::Completed), "{rest:?}");

    // Terminal now: refused before any message.
    let e = c
        .subscribe_to_task(req(&d, pb::SubscribeToTaskRequest { id: t.id.clone(), ..Default::default() }))
        .await
        .expect_err("a terminal task has no stream");
    assert_status(&e, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
    let e = c
        .subscribe_to_task(req(
            &d,
            pb::SubscribeToTaskRequest { id: "no-such-task".into(), ..Default::default() },
        ))
        .await
        .expect_err("unknown task");
    assert_status(&e, Code::NotFound, "TASK_NOT_FOUND");
}

#[tokio::test]
async fn cancel_task_and_its_errors() {
    let d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let t = waiting_task(&d, &mut c).await;
    let canceled = c
        .cancel_task(req(&d, pb::CancelTaskRequest { id: t.id.clone(), ..Default::default() }))
        .await
        .expect("cancel")
        .into_inner();
    assert_eq!(state(&canceled), pb::TaskState::Canceled, "{canceled:?}");

    let done = task_of(
        c.send_message(req(&d, send(msg("tck-complete-task", "")))).await.expect("send").into_inner(),
    );
    let e = c
        .cancel_task(req(&d, pb::CancelTaskRequest { id: done.id.clone(), ..Default::default() }))
        .await
        .expect_err("a completed task cannot be canceled");
    assert_status(&e, Code::FailedPrecondition, "TASK_NOT_CANCELABLE");
    let e = c
        .cancel_task(req(&d, pb::CancelTaskRequest { id: "no-such-task".into(), ..Default::default() }))
        .await
        .expect_err("unknown task");
    assert_status(&e, Code::NotFound, "TASK_NOT_FOUND");
    // A message to a terminal task is UnsupportedOperation.
    let e = c.send_message(req(&d, send(msg("tck-complete-task", &done.id)))).await.expect_err("terminal");
    assert_status(&e, Code::FailedPrecondition, "UNSUPPORTED_OPERATION");
}

#[tokio::test]
async fn push_config_crud() {
    let d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let t = waiting_task(&d, &mut c).await;
    let cfg = pb::TaskPushNotificationConfig {
        task_id: t.id.clone(),
        url: "http://127.0.0.1:9/hook".into(),
        token: "tok".into(),
        authentication: Some(pb::AuthenticationInfo { scheme: "Bearer".into(), credentials: "cred".into() }),
        ..Default::default()
    };
    let created = c.create_task_push_notification_config(req(&d, cfg)).await.expect("create").into_inner();
    assert!(!created.id.is_empty(), "{created:?}");
    assert_eq!((created.task_id.as_str(), created.url.as_str()), (t.id.as_str(), "http://127.0.0.1:9/hook"));

    let get = pb::GetTaskPushNotificationConfigRequest {
        task_id: t.id.clone(),
        id: created.id.clone(),
        ..Default::default()
    };
    let got = c.get_task_push_notification_config(req(&d, get.clone())).await.expect("get").into_inner();
    assert_eq!(got.id, created.id);

    let list = pb::ListTaskPushNotificationConfigsRequest { task_id: t.id.clone(), ..Default::default() };
    let listed =
        c.list_task_push_notification_configs(req(&d, list.clone())).await.expect("list").into_inner();
    assert_eq!(listed.configs.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), [created.id.as_str()]);

    let del = pb::DeleteTaskPushNotificationConfigRequest {
        task_id: t.id.clone(),
        id: created.id.clone(),
        ..Default::default()
    };
    c.delete_task_push_notification_config(req(&d, del)).await.expect("delete");
    let e = c.get_task_push_notification_config(req(&d, get)).await.expect_err("deleted");
    assert_status(&e, Code::NotFound, "TASK_NOT_FOUND");
    let listed = c.list_task_push_notification_configs(req(&d, list)).await.expect("list").into_inner();
    assert!(listed.configs.is_empty(), "{listed:?}");
}

#[tokio::test]
async fn the_extended_card_lists_all_three_interfaces() {
    let d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let card = c
        .get_extended_agent_card(req(&d, pb::GetExtendedAgentCardRequest::default()))
        .await
        .expect("card")
        .into_inner();
    assert_eq!(card.name, "agentd");
    let bindings: Vec<_> = card.supported_interfaces.iter().map(|i| i.protocol_binding.as_str()).collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    assert_eq!(card.capabilities.as_ref().and_then(|c| c.streaming), Some(true));
    assert!(!card.skills.is_empty());
}

#[tokio::test]
async fn errors_are_statuses_with_error_info_and_bad_request() {
    let d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let e = c
        .get_task(req(&d, pb::GetTaskRequest { id: "no-such-task".into(), ..Default::default() }))
        .await
        .expect_err("unknown task");
    assert_status(&e, Code::NotFound, "TASK_NOT_FOUND");
    assert_eq!(
        e.get_error_details().error_info().and_then(|i| i.metadata.get("taskId").cloned()).as_deref(),
        Some("no-such-task")
    );

    // An unsupported version, on a unary and on a streaming method.
    let mut r = Request::new(send(msg("tck-complete-task", "")));
    r.metadata_mut().insert("a2a-version", "99.0".parse().expect("ascii"));
    let e = c.send_message(r).await.expect_err("version 99.0");
    assert_status(&e, Code::FailedPrecondition, "VERSION_NOT_SUPPORTED");
    let mut r = Request::new(send(msg("tck-stream-001", "")));
    r.metadata_mut().insert("a2a-version", "99.0".parse().expect("ascii"));
    let e = c.send_streaming_message(r).await.expect_err("version 99.0 before any stream");
    assert_status(&e, Code::FailedPrecondition, "VERSION_NOT_SUPPORTED");

    // Invalid params: INVALID_ARGUMENT with a BadRequest naming the field.
    let mut m = msg("tck-complete-task", "");
    m.parts.clear();
    let e = c.send_message(req(&d, send(m))).await.expect_err("no parts");
    assert_status(&e, Code::InvalidArgument, "INVALID_PARAMS");
    assert_eq!(violations(&e), ["message.parts"]);
    let mut m = msg("tck-complete-task", "");
    m.parts.push(pb::Part::default());
    let e = c.send_message(req(&d, send(m))).await.expect_err("a part with no content");
    assert_status(&e, Code::InvalidArgument, "INVALID_PARAMS");
    assert_eq!(violations(&e), ["message.parts[1]"]);
    let e = c.send_message(req(&d, pb::SendMessageRequest::default())).await.expect_err("no message");
    assert_eq!(violations(&e), ["message"]);
    let e = c.get_task(req(&d, pb::GetTaskRequest::default())).await.expect_err("no id");
    assert_eq!((e.code(), violations(&e)), (Code::InvalidArgument, vec!["id".to_owned()]));
    let e = c
        .list_tasks(req(&d, pb::ListTasksRequest { status: 99, ..Default::default() }))
        .await
        .expect_err("unknown state");
    assert_eq!(violations(&e), ["status"]);
}

#[tokio::test]
async fn http1_json_rpc_and_rest_still_answer_on_the_same_port() {
    let d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let t = waiting_task(&d, &mut c).await;
    // reqwest speaks HTTP/1.1 here; the task created over gRPC is the same task.
    let got = d.call("GetTask", json!({"id": t.id})).await;
    assert_eq!(got["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{got}");
    let (status, body) = d.rest(reqwest::Method::GET, &format!("/tasks/{}", t.id), None).await;
    assert_eq!((status, &body["id"]), (200, &json!(t.id)), "{body}");
    let r = d.http.get(format!("{}/healthz", d.url)).send().await.expect("healthz");
    assert_eq!(r.version(), reqwest::Version::HTTP_11);
    assert_eq!(r.status(), 200);
    // A JSON-RPC request is not taken for gRPC, nor a gRPC one for JSON-RPC.
    let r = d.rpc("GetTask", json!({"id": "no-such-task"})).await;
    assert_rpc_error(&r, -32001, Some("TASK_NOT_FOUND"));
}

#[tokio::test]
async fn bearer_tokens_are_checked_on_grpc_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = write_config(
        tmp.path(),
        "auth:\n  tokens:\n    - id: \"user:alice\"\n      role: user\n      token: \"env:ALICE_TOKEN\"\n",
    );
    let cfg = cfg.to_str().expect("utf-8 path").to_owned();
    let d = Daemon::start_with_env(
        tmp.path(),
        &["--agent", "tck", "--config", &cfg],
        &[("ALICE_TOKEN", "alice-grpc-1")],
    );
    let mut c = client(&d).await;
    let get = || pb::GetTaskRequest { id: "x".into(), ..Default::default() };
    let e = c.get_task(req(&d, get())).await.expect_err("no token");
    assert_status(&e, Code::Unauthenticated, "UNAUTHENTICATED");
    assert!(e.metadata().get("www-authenticate").is_some(), "{e:?}");
    let e = c.get_task(req(&d.as_token(Some("wrong")), get())).await.expect_err("a wrong token");
    assert_status(&e, Code::Unauthenticated, "UNAUTHENTICATED");
    let alice = d.as_token(Some("alice-grpc-1"));
    let e = c.get_task(req(&alice, get())).await.expect_err("authenticated, but no such task");
    assert_status(&e, Code::NotFound, "TASK_NOT_FOUND");
    let t = task_of(
        c.send_message(req(&alice, send(msg("tck-complete-task", "")))).await.expect("send").into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed);
}

#[tokio::test]
async fn an_open_stream_ends_with_unavailable_when_the_daemon_stops() {
    let mut d = Daemon::start(TCK);
    let mut c = client(&d).await;
    let t = waiting_task(&d, &mut c).await;
    let mut s = c
        .subscribe_to_task(req(&d, pb::SubscribeToTaskRequest { id: t.id.clone(), ..Default::default() }))
        .await
        .expect("subscribe")
        .into_inner();
    assert_eq!(event_state(&next(&mut s).await), Some(pb::TaskState::InputRequired));
    let stopped = tokio::task::spawn_blocking(move || d.stop());
    let end = tokio::time::timeout(WAIT, s.message()).await.expect("the stream ends at shutdown");
    match end {
        Err(e) => assert_eq!(e.code(), Code::Unavailable, "{e:?}"),
        Ok(None) => {}
        Ok(Some(ev)) => panic!("no event after shutdown: {ev:?}"),
    }
    let status = stopped.await.expect("join");
    assert!(status.success(), "a clean exit with a gRPC stream open: {status:?}");
}

#[tokio::test]
async fn data_values_are_bounded_as_in_json() {
    // Each null costs 4 bytes on the wire and far more converted: a gRPC
    // message is held to the JSON bindings' value limit (20,000 by default).
    let d = Daemon::start(&["--agent", "tck"]);
    let mut c = client(&d).await;
    let nulls = |n: usize| {
        let null = prost_types::Value { kind: Some(prost_types::value::Kind::NullValue(0)) };
        let list = prost_types::ListValue { values: vec![null; n] };
        pb::Part {
            content: Some(Content::Data(prost_types::Value {
                kind: Some(prost_types::value::Kind::ListValue(list)),
            })),
            ..Default::default()
        }
    };
    let mut m = msg("tck-complete-task", "");
    m.parts.push(nulls(100_000));
    let e = c.send_message(req(&d, send(m))).await.expect_err("over the value limit");
    assert_status(&e, Code::InvalidArgument, "INVALID_PARAMS");
    assert!(e.message().contains("server.max_json_values"), "names the limit: {e:?}");
    let mut m = msg("tck-complete-task", "");
    m.parts.push(nulls(19_000));
    let t = task_of(c.send_message(req(&d, send(m))).await.expect("within the limit").into_inner());
    assert_eq!(state(&t), pb::TaskState::Completed);
}
