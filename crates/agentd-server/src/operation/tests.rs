//! Every operation is reachable from every binding that has it. The rows
//! are one exhaustive match, so a new [`OperationKind`] needs its row here.
//! Each row is checked against the real router: a request on the binding
//! activates an extension declared for that operation's method alone, so
//! the `A2A-Extensions` echo names the operation the binding resolved.

use super::{Operation, OperationKind as K};
use crate::extensions::Activated;
use crate::params::RequestContext;
use crate::push::SsrfGuard;
use crate::{AppState, Authenticator, CardConfig, CardService, DeclaredExtension, ExtensionRegistry};
use crate::{ServerConfig, card};
use agentd_core::{EngineBuilder, EngineConfig, Principal, PrincipalRole};
use agentd_proto::ext::events;
use agentd_proto::validate::Params;
use axum::body::Body;
use http::{Method, Request};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// Where an operation is on each binding.
struct Row {
    /// JSON-RPC params that decode as the operation's request.
    params: Value,
    /// The REST method and path below the REST base, if REST has it.
    rest: Option<(Method, &'static str)>,
    /// The rpc of `lf.a2a.v1.A2AService`, if gRPC has it.
    grpc: Option<&'static str>,
}

fn row(kind: K) -> Row {
    let row = |params, rest, grpc| Row { params, rest, grpc };
    let task = json!({"id": "t1"});
    let config = json!({"taskId": "t1", "id": "c1"});
    match kind {
        K::SendMessage => row(json!({}), Some((Method::POST, "/message:send")), Some("SendMessage")),
        K::SendStreamingMessage => {
            row(json!({}), Some((Method::POST, "/message:stream")), Some("SendStreamingMessage"))
        }
        K::GetTask => row(task, Some((Method::GET, "/tasks/t1")), Some("GetTask")),
        K::ListTasks => row(json!({}), Some((Method::GET, "/tasks")), Some("ListTasks")),
        K::CancelTask => row(task, Some((Method::POST, "/tasks/t1:cancel")), Some("CancelTask")),
        K::SubscribeToTask => row(task, Some((Method::GET, "/tasks/t1:subscribe")), Some("SubscribeToTask")),
        K::CreatePushConfig => row(
            json!({"taskId": "t1", "url": "https://example.com/hook"}),
            Some((Method::POST, "/tasks/t1/pushNotificationConfigs")),
            Some("CreateTaskPushNotificationConfig"),
        ),
        K::GetPushConfig => row(
            config,
            Some((Method::GET, "/tasks/t1/pushNotificationConfigs/c1")),
            Some("GetTaskPushNotificationConfig"),
        ),
        K::ListPushConfigs => row(
            json!({"taskId": "t1"}),
            Some((Method::GET, "/tasks/t1/pushNotificationConfigs")),
            Some("ListTaskPushNotificationConfigs"),
        ),
        K::DeletePushConfig => row(
            config,
            Some((Method::DELETE, "/tasks/t1/pushNotificationConfigs/c1")),
            Some("DeleteTaskPushNotificationConfig"),
        ),
        K::GetExtendedCard => {
            row(json!({}), Some((Method::GET, "/extendedAgentCard")), Some("GetExtendedAgentCard"))
        }
        // Extensions' methods: InjectTaskReminder has a REST route, the
        // events feed is JSON-RPC only; neither is in the A2A gRPC service.
        K::InjectReminder => row(
            json!({"taskId": "t1", "reminder": {"body": "check the tests"}}),
            Some((Method::POST, "/tasks/t1:injectReminder")),
            None,
        ),
        K::SubscribeEvents => row(json!({}), None, None),
    }
}

/// The URI of the test extension declared for `kind`'s method alone.
fn marker(kind: K) -> String {
    format!("https://agentd.test/ext/{}", kind.method().replace('/', "_"))
}

/// A router over a memory store, declaring one marker extension per kind.
fn app() -> axum::Router {
    let engine = EngineBuilder::new(
        Arc::new(agentd_store::MemoryStore::default()),
        Arc::new(agentd_runtime::EchoAgent),
        Arc::new(SsrfGuard::new(true)),
        EngineConfig::default(),
    )
    .build()
    .engine()
    .clone();
    let declared = K::ALL
        .into_iter()
        .map(|k| DeclaredExtension {
            uri: marker(k),
            description: String::new(),
            required: false,
            params: None,
            methods: vec![k.method().into()],
        })
        .collect();
    let extensions = ExtensionRegistry::new(declared);
    let card = CardService::new(
        CardConfig {
            name: "t".into(),
            description: "t".into(),
            version: "1".into(),
            base_url: "http://127.0.0.1:1".into(),
            streaming: true,
            push_notifications: true,
            security: Default::default(),
            input_modes: vec!["text/plain".into()],
            output_modes: vec!["text/plain".into()],
            skills: vec![card::chat_skill()],
            provider: None,
            documentation_url: None,
            max_age_secs: 0,
        },
        &extensions,
    );
    let config = Arc::new(ServerConfig::default());
    crate::app(AppState {
        engine,
        auth: Arc::new(Authenticator::default()),
        card: Arc::new(card),
        extensions: Arc::new(extensions),
        admission: Arc::new(crate::admission::Admission::new(&config)),
        config,
        shutdown: CancellationToken::new(),
    })
}

/// Sends `req` asking for every marker; the markers the answer echoes,
/// and the gRPC status when there is one (headers, or trailers).
async fn echoed(app: &axum::Router, req: http::request::Builder, body: Body) -> (String, Option<String>) {
    let all: Vec<String> = K::ALL.into_iter().map(marker).collect();
    let req = req.header("a2a-extensions", all.join(", ")).body(body).expect("request");
    let resp = app.clone().oneshot(req).await.expect("infallible");
    let header = |h: &http::HeaderMap, name| h.get(name).map(|v| v.to_str().expect("ascii").to_owned());
    let echo = header(resp.headers(), "a2a-extensions").unwrap_or_default();
    let mut status = header(resp.headers(), "grpc-status");
    let streams = resp.headers().get(http::header::CONTENT_TYPE).is_some_and(|v| v == "text/event-stream");
    if status.is_none() && !streams {
        let body = resp.into_body().collect().await.expect("body");
        status = body.trailers().and_then(|t| header(t, "grpc-status"));
    }
    (echo, status)
}

fn grpc_call(rpc: &str) -> (http::request::Builder, Body) {
    let req = Request::post(format!("/lf.a2a.v1.A2AService/{rpc}"))
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header("te", "trailers");
    // One uncompressed, empty message: every field at its default.
    (req, Body::from(vec![0u8; 5]))
}

#[test]
fn every_operation_decodes_from_its_jsonrpc_method() {
    let ctx = RequestContext {
        principal: Principal::new("user:alice", PrincipalRole::User),
        activated: Activated(vec![events::URI.into()]),
    };
    for kind in K::ALL {
        assert_eq!(K::from_method(kind.method()), Some(kind), "{kind:?}");
        let op: Operation =
            kind.decode(Params::Value(row(kind).params), &ctx).unwrap_or_else(|e| panic!("{kind:?}: {e:?}"));
        assert_eq!(op.kind(), kind);
    }
}

#[tokio::test]
async fn every_operation_has_a_binding_row() {
    let app = app();
    for kind in K::ALL {
        let row = row(kind);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": kind.method(), "params": row.params});
        let req = Request::post(card::JSONRPC_PATH).header(http::header::CONTENT_TYPE, "application/json");
        let (echo, _) = echoed(&app, req, Body::from(body.to_string())).await;
        assert_eq!(echo, marker(kind), "JSON-RPC {} resolved to another operation", kind.method());

        if let Some((method, path)) = row.rest {
            let req = Request::builder().method(method.clone()).uri(format!("{}{path}", card::REST_PATH));
            let body = if method == Method::POST { row.params.to_string() } else { String::new() };
            let (echo, _) =
                echoed(&app, req.header(http::header::CONTENT_TYPE, "application/json"), body.into()).await;
            assert_eq!(echo, marker(kind), "REST {method} {path} is not {kind:?}");
        }

        if let Some(rpc) = row.grpc {
            let (req, body) = grpc_call(rpc);
            let (echo, status) = echoed(&app, req, body).await;
            assert_ne!(status.as_deref(), Some("12"), "gRPC {rpc} is unimplemented");
            assert_eq!(echo, marker(kind), "gRPC {rpc} is not {kind:?}");
        }
    }
}

#[tokio::test]
async fn the_table_covers_every_rpc_of_the_grpc_service() {
    let proto = include_str!("../../proto/a2a.proto");
    let rpcs: Vec<&str> = proto
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rpc "))
        .map(|l| l.split('(').next().expect("a name").trim())
        .collect();
    let rows: Vec<&str> = K::ALL.into_iter().filter_map(|k| row(k).grpc).collect();
    assert_eq!(rpcs.len(), 11, "the proto's rpcs: {rpcs:?}");
    for rpc in &rpcs {
        assert!(rows.contains(rpc), "the rpc {rpc} has no operation row");
    }
    assert_eq!(rows.len(), rpcs.len(), "rows name rpcs the service does not have: {rows:?}");

    // The check above would see a missing rpc: an unknown one is UNIMPLEMENTED.
    let (req, body) = grpc_call("NoSuchRpc");
    let (_, status) = echoed(&app(), req, body).await;
    assert_eq!(status.as_deref(), Some("12"));
}
