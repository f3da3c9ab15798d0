//! Bridges: delivery of human-gate questions to the channels the
//! instruction document declares (`docs/bridges.md`).
//!
//! * [`ChannelBridge`]: the engine's [`agentd_core::GateBridge`]; queues
//!   each announcement as a durable outbox row, committed before
//!   `announce` returns.
//! * `webhook` channels get the announcement as JSON, HMAC-signed when the
//!   channel has a secret ([`sign`]); `slack` channels get an incoming-webhook
//!   message; `log` channels a line in the daemon's log. The push worker
//!   delivers all three.

mod body;
mod bridge;
mod channel;
pub mod sign;

pub use body::{slack_body, webhook_body};
pub use bridge::ChannelBridge;
pub use channel::{DeclaredChannel, KINDS, LOG as LOG_KIND};
pub use sign::{BridgeSecrets, SIGNATURE_HEADER, SigningKey, TIMESTAMP_HEADER};
