//! The client side of A2A 1.0 as agentd speaks it, shared by the CLI,
//! delegation to A2A peers, the load generator and the end-to-end tests:
//! typed JSON-RPC calls and streams ([`Client`]), the one bounded SSE
//! decoder ([`sse`]), the one retry schedule ([`Backoff`]), the one way
//! to put an error and its causes in a line ([`describe`]), the W3C
//! trace context outgoing requests carry ([`trace`]), and a private CA, a
//! client certificate and what a failed handshake was ([`tls`]).
//!
//! No server code: this crate depends on neither axum, tonic, the engine
//! nor the store.

mod a2a;
pub mod backoff;
mod card;
mod client;
pub mod describe;
mod error;
pub mod jsonrpc;
mod lazy;
pub mod sse;
pub mod tls;
pub mod trace;

pub use backoff::Backoff;
pub use card::fetch_card;
pub use client::{Client, DEFAULT_MAX_ANSWER, EventStream};
pub use describe::{describe, root_cause};
pub use error::{ClientError, RpcError};
pub use lazy::LazyHttp;
pub use tls::{TlsFailure, TlsFiles, tls_failure};
