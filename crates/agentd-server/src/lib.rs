//! The A2A bindings on one listener: JSON-RPC 2.0 and HTTP+JSON/REST, SSE
//! for the streaming methods, gRPC (chosen by `content-type`, over HTTP/2),
//! the agent card, authentication and push delivery. This is the one place
//! domain errors become wire errors; it holds no business rules (those are
//! in `agentd-core`).

pub mod auth;
pub mod bridges;
pub mod card;
mod dispatch;
mod errors;
pub mod ext_docs;
pub mod extensions;
pub mod fuzzing;
pub mod grpc;
mod jsonrpc;
mod params;
pub mod push;
pub mod readiness;
mod rest;
mod routes;
mod sse;
pub mod state;

pub use auth::{Authenticator, TokenEntry};
pub use card::{CardConfig, CardService};
pub use extensions::{DeclaredExtension, ExtensionRegistry};
pub use readiness::Readiness;
pub use routes::app;
pub use state::{AppState, ServerConfig, VersionPolicy};

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Serves `app` on an already bound listener until `shutdown` fires.
/// Taking the listener (not an address) lets tests bind `127.0.0.1:0`.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let router = app(state);
    // axum does not set TCP_NODELAY: without it, the second small SSE frame
    // of a stream waits for the client's delayed ACK (~40 ms, Nagle).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, router.into_make_service_with_connect_info::<std::net::SocketAddr>())
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}
