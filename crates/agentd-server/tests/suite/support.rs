//! What several areas share: the server built in process on a real socket.

use agentd_core::{EngineBuilder, EngineConfig, Store};
use agentd_runtime::EchoAgent;
use agentd_server::push::SsrfGuard;
use agentd_server::{
    Admission, AppState, Authenticator, CardConfig, CardService, ExtensionRegistry, ServerConfig,
    VersionPolicy,
};
use agentd_store::MemoryStore;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The server (echo agent, in-memory store) serving every binding on
/// 127.0.0.1:0 until the token is canceled; its address.
pub async fn serve_in_process(
    extensions: ExtensionRegistry,
    policy: VersionPolicy,
) -> (SocketAddr, CancellationToken) {
    serve_on(Arc::new(MemoryStore::default()), extensions, policy).await
}

/// [`serve_in_process`] over `store`.
pub async fn serve_on(
    store: Arc<dyn Store>,
    extensions: ExtensionRegistry,
    policy: VersionPolicy,
) -> (SocketAddr, CancellationToken) {
    let config = ServerConfig { version_policy: policy, ..ServerConfig::default() };
    serve_with(store, extensions, Authenticator::default(), config).await
}

/// The server with these credentials and settings.
pub async fn serve_with(
    store: Arc<dyn Store>,
    extensions: ExtensionRegistry,
    auth: Authenticator,
    config: ServerConfig,
) -> (SocketAddr, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let runtime = EngineBuilder::new(
        store,
        Arc::new(EchoAgent),
        Arc::new(SsrfGuard::new(true)),
        EngineConfig::default(),
    )
    .build();
    let card = CardService::new(
        CardConfig {
            name: "t".into(),
            description: "t".into(),
            version: "1".into(),
            base_url: format!("http://{addr}"),
            streaming: true,
            push_notifications: false,
            security: Default::default(),
            input_modes: vec!["text/plain".into()],
            output_modes: vec!["text/plain".into()],
            skills: vec![agentd_server::card::chat_skill()],
            provider: None,
            documentation_url: None,
            max_age_secs: 60,
        },
        &extensions,
    );
    let shutdown = CancellationToken::new();
    let state = AppState {
        engine: runtime.engine().clone(),
        auth: Arc::new(auth),
        card: Arc::new(card),
        extensions: Arc::new(extensions),
        admission: Arc::new(Admission::new(&config)),
        config: Arc::new(config),
        shutdown: shutdown.clone(),
    };
    tokio::spawn(agentd_server::serve(listener, state, shutdown.clone()));
    (addr, shutdown)
}

/// Writes `request` on a connection of its own and reads until the daemon
/// closes it: (status, head in lower case, body).
pub async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(request).await.expect("write");
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.expect("read");
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_owned())
}

/// A gRPC SendMessage of one text part, "hi", from `role`.
pub fn grpc_text_message(role: agentd_server::grpc::pb::Role) -> agentd_server::grpc::pb::SendMessageRequest {
    use agentd_server::grpc::pb;
    pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: "m1".into(),
            role: role.into(),
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text("hi".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The fields a gRPC error's BadRequest detail names, in order.
pub fn violated_fields(e: &tonic::Status) -> Vec<String> {
    use tonic_types::StatusExt;
    let details = e.get_error_details();
    let bad = details.bad_request().expect("BadRequest");
    bad.field_violations.iter().map(|v| v.field.clone()).collect()
}
