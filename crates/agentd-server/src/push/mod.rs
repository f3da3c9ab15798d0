//! Push notification delivery (A2A §4.3.3, §13.2).
//!
//! * [`SsrfGuard`]: the engine's [`agentd_core::PushUrlPolicy`]; refuses
//!   webhook URLs that resolve to loopback, private, link-local and other
//!   non-public addresses unless `allow_private`.
//! * [`spawn_push_worker`]: drains the store's durable outbox with retries,
//!   exponential backoff and per-webhook ordering; the delivery client
//!   re-checks every address it connects to ([`GuardedResolver`]) and never
//!   follows redirects.

mod addr;
pub(crate) mod deliver;
mod ssrf;
mod worker;

pub use addr::refusal_reason;
pub use deliver::{PUSH_CONTENT_TYPE, TOKEN_HEADER};
pub use ssrf::{GuardedResolver, SsrfGuard, Target, is_localhost_name};
pub use worker::{PushWorkerConfig, spawn_push_worker};
