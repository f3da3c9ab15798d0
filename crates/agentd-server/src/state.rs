//! What every handler shares: the engine handle, the authenticator, the
//! card, the extension registry and the listener's settings.

use crate::auth::Authenticator;
use crate::card::CardService;
use crate::extensions::ExtensionRegistry;
use agentd_core::Engine;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

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
    /// What `/readyz` reports.
    pub readiness: crate::readiness::Readiness,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            version_policy: VersionPolicy::Lenient,
            max_body_bytes: 4 * 1024 * 1024,
            keep_alive: Duration::from_secs(15),
            readiness: crate::readiness::Readiness::default(),
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
    /// Fires at shutdown; open streams end with it.
    pub shutdown: CancellationToken,
}
