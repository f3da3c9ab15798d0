//! What every handler shares: the engine handle, the authenticator, the
//! card, the extension registry, the listener's settings and the request
//! admission budgets.

use crate::auth::Authenticator;
use crate::card::CardService;
use crate::extensions::ExtensionRegistry;
use agentd_core::Engine;
use agentd_proto::JsonLimits;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use crate::admission::Admission;

/// How a request without `A2A-Version` is treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VersionPolicy {
    /// A missing header means 1.0 (the default; what most peers expect).
    Lenient,
    /// A missing header means 0.3, which this server does not speak (§3.6.2).
    Strict,
}

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub version_policy: VersionPolicy,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// Interval of SSE keep-alive comments.
    pub keep_alive: Duration,
    /// Timeouts and caps of connections, before any request is read.
    pub connections: ConnectionLimits,
    /// Bounds on a JSON body counted while it is parsed.
    pub json: JsonLimits,
    /// Request body bytes being read and processed at once, all requests
    /// together; bigger requests queue for their share.
    pub max_body_bytes_in_flight: usize,
    /// What one principal (without credentials configured: one peer
    /// address) may hold of `max_body_bytes_in_flight` at once.
    pub max_body_bytes_in_flight_per_principal: usize,
    /// Streams (SSE and gRPC server streams) open at once.
    pub max_streams: usize,
    /// What one principal (without credentials: one peer address) may hold
    /// of `max_streams`.
    pub max_streams_per_principal: usize,
    /// What `/readyz` reports.
    pub readiness: crate::readiness::Readiness,
    /// TLS (and mutual TLS) on the listener; `None`: cleartext.
    pub tls: Option<crate::listen::Tls>,
    /// `GET /metrics` on this listener needs no credentials (it is bound to
    /// loopback, or `metrics.public`); otherwise an operator's.
    pub metrics_open: bool,
    /// `public_url`: its host is this agent's too (`same_origin.rs`).
    pub public_url: Option<String>,
}

/// What one client can hold of the listener.
#[derive(Clone, Debug)]
pub struct ConnectionLimits {
    /// A request head (and, before the first request, anything at all)
    /// must arrive within this time of the connection waiting for it.
    pub header_read_timeout: Duration,
    /// A request body must be read completely within this time of the
    /// server starting to read it.
    pub body_read_timeout: Duration,
    /// A connection with no request in flight is closed after this time
    /// (HTTP/1.1 waits at most `header_read_timeout` for its next request).
    pub idle_timeout: Duration,
    /// HTTP/2 PING interval; a peer that does not answer within it is gone.
    pub http2_keep_alive: Duration,
    /// Connections open at once, all peers together.
    pub max_connections: usize,
    /// Connections open at once from one IP address.
    pub max_connections_per_peer: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            body_read_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            http2_keep_alive: Duration::from_secs(20),
            max_connections: 4096,
            max_connections_per_peer: 256,
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            version_policy: VersionPolicy::Lenient,
            max_body_bytes: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            connections: ConnectionLimits::default(),
            json: JsonLimits::default(),
            max_body_bytes_in_flight: 32 * 1024 * 1024,
            max_body_bytes_in_flight_per_principal: 8 * 1024 * 1024,
            max_streams: 2048,
            max_streams_per_principal: 512,
            readiness: crate::readiness::Readiness::default(),
            tls: None,
            metrics_open: false,
            public_url: None,
        }
    }
}

#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub auth: Arc<Authenticator>,
    pub card: Arc<CardService>,
    pub extensions: Arc<ExtensionRegistry>,
    pub config: Arc<ServerConfig>,
    /// The budgets requests and streams take a share of (built from `config`).
    pub admission: Arc<Admission>,
    /// Fires at shutdown; open streams end with it.
    pub shutdown: CancellationToken,
}
