//! The A2A bindings on one listener: JSON-RPC 2.0 and HTTP+JSON/REST, SSE
//! for the streaming methods, gRPC (chosen by `content-type`, over HTTP/2),
//! the agent card, authentication and push delivery. This is the one place
//! domain errors become wire errors; it holds no business rules (those are
//! in `agentd-core`).

mod admission;
mod answers;
pub mod auth;
pub mod bridges;
pub mod card;
mod console;
mod dispatch;
pub mod errors;
pub mod ext_docs;
pub mod extensions;
pub mod fuzzing;
#[cfg(feature = "grpc")]
pub mod grpc;
mod jsonrpc;
mod listen;
pub mod metrics;
mod operation;
mod params;
pub mod push;
pub mod readiness;
mod request_id;
mod rest;
mod routes;
mod same_origin;
mod sse;
pub mod state;
mod trace;

pub use auth::{Authenticator, Issuer, IssuerSettings, PeerIdentity, TokenEntry};
pub use card::{CardConfig, CardSecurity, CardService};
pub use extensions::{DeclaredExtension, ExtensionRegistry};
pub use readiness::Readiness;
pub use routes::app;
pub use state::{Admission, AppState, ConnectionLimits, ServerConfig, VersionPolicy};

pub use listen::{
    CertName, ClientIdentityRule, Tls, TlsSettings, serve, serve_metrics, when_connections_close_in_bulk,
};
