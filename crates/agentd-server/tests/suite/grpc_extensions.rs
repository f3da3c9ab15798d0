//! gRPC service parameters in process: `a2a-extensions` metadata activates
//! declared extensions (echoed in the response metadata, on success and on
//! error), a required extension that was not requested is refused, and a
//! missing `a2a-version` follows the version policy. The daemon declares no
//! extensions, so this builds the server by hand.

use crate::support::serve_in_process;
use agentd_server::grpc::pb::{self, a2a_service_client::A2aServiceClient};
use agentd_server::{DeclaredExtension, ExtensionRegistry, VersionPolicy};
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;
use tonic::{Code, Request};
use tonic_types::StatusExt;

const REQUIRED: &str = "https://agentd.dev/ext/required/v1";
const OPTIONAL: &str = "https://agentd.dev/ext/optional/v1";

fn ext(uri: &str, required: bool) -> DeclaredExtension {
    DeclaredExtension {
        uri: uri.into(),
        description: String::new(),
        required,
        params: None,
        methods: vec!["GetTask".into(), "SendMessage".into()],
    }
}

/// A server on 127.0.0.1:0 declaring both extensions; its gRPC client.
async fn start(policy: VersionPolicy) -> (A2aServiceClient<Channel>, CancellationToken) {
    let extensions = ExtensionRegistry::new(vec![ext(REQUIRED, true), ext(OPTIONAL, false)]);
    let (addr, shutdown) = serve_in_process(extensions, policy).await;
    let ch = Channel::from_shared(format!("http://{addr}")).expect("uri").connect().await.expect("connect");
    (A2aServiceClient::new(ch), shutdown)
}

fn get_task(extensions: Option<&str>) -> Request<pb::GetTaskRequest> {
    let mut r = Request::new(pb::GetTaskRequest { id: "no-such-task".into(), ..Default::default() });
    r.metadata_mut().insert("a2a-version", "1.0".parse().expect("ascii"));
    if let Some(e) = extensions {
        r.metadata_mut().insert("a2a-extensions", e.parse().expect("ascii"));
    }
    r
}

fn reason(s: &tonic::Status) -> String {
    s.get_error_details().error_info().map(|i| i.reason.clone()).unwrap_or_default()
}

#[tokio::test]
async fn extensions_are_activated_echoed_and_required_ones_enforced() {
    let (mut c, stop) = start(VersionPolicy::Lenient).await;

    let e = c.get_task(get_task(None)).await.expect_err("the required extension is missing");
    assert_eq!((e.code(), reason(&e).as_str()), (Code::FailedPrecondition, "EXTENSION_SUPPORT_REQUIRED"));
    let e = c.get_task(get_task(Some(OPTIONAL))).await.expect_err("still missing");
    assert_eq!(reason(&e), "EXTENSION_SUPPORT_REQUIRED");

    // Activated: the error of the call itself carries the echo.
    let both = format!("{REQUIRED}, {OPTIONAL}, https://unknown.example/x");
    let e = c.get_task(get_task(Some(&both))).await.expect_err("no such task");
    assert_eq!(reason(&e), "TASK_NOT_FOUND");
    let echo = e.metadata().get("a2a-extensions").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(echo, format!("{REQUIRED}, {OPTIONAL}"), "only declared, requested ones");

    // And a successful call echoes them in its response metadata.
    let mut r = Request::new(pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: "m1".into(),
            role: pb::Role::User as i32,
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text("hi".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    });
    r.metadata_mut().insert("a2a-extensions", REQUIRED.parse().expect("ascii"));
    let resp = c.send_message(r).await.expect("send");
    let echo = resp.metadata().get("a2a-extensions").and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert_eq!(echo, REQUIRED);
    stop.cancel();
}

#[tokio::test]
async fn a_missing_version_follows_the_policy() {
    let (mut c, stop) = start(VersionPolicy::Strict).await;
    let mut r = Request::new(pb::GetTaskRequest { id: "x".into(), ..Default::default() });
    r.metadata_mut().insert("a2a-extensions", REQUIRED.parse().expect("ascii"));
    let e = c.get_task(r).await.expect_err("strict: no version means 0.3");
    assert_eq!((e.code(), reason(&e).as_str()), (Code::FailedPrecondition, "VERSION_NOT_SUPPORTED"));
    let e = c.get_task(get_task(Some(REQUIRED))).await.expect_err("1.0 is fine; the task is not");
    assert_eq!(reason(&e), "TASK_NOT_FOUND");
    stop.cancel();
    let (mut c, stop) = start(VersionPolicy::Lenient).await;
    let mut r = Request::new(pb::GetTaskRequest { id: "x".into(), ..Default::default() });
    r.metadata_mut().insert("a2a-extensions", REQUIRED.parse().expect("ascii"));
    let e = c.get_task(r).await.expect_err("lenient: no version means 1.0");
    assert_eq!(reason(&e), "TASK_NOT_FOUND");
    stop.cancel();
}
