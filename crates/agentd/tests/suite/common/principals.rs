//! A daemon with two users and an operator, each with a bearer token from a
//! config file: `user:alice`, `user:bob`, `operator:ops`.

use super::{Daemon, write_config};
use sha2::{Digest, Sha256};
use std::path::Path;

pub const ALICE: &str = "alice-token-0123456789";
pub const BOB: &str = "bob-token-9876543210";
pub const OPS: &str = "ops-token-abcdefghij";

/// The daemon (no token) and a handle for alice, bob and ops. `extra` is
/// appended to the YAML config; data lives in `dir/data`.
pub struct Principals {
    pub d: Daemon,
    pub alice: Daemon,
    pub bob: Daemon,
    pub ops: Daemon,
}

pub fn start(dir: &Path, extra: &str) -> Principals {
    let digest = |t: &str| hex::encode(Sha256::digest(t.as_bytes()));
    let (alice, bob, ops) = (digest(ALICE), digest(BOB), digest(OPS));
    // Digests, not `env:` references: the daemon runs in this process.
    let yaml = format!(
        "auth:\n  tokens:\n    - {{id: \"user:alice\", role: user, sha256: \"{alice}\"}}\n    \
         - {{id: \"user:bob\", role: user, sha256: \"{bob}\"}}\n    \
         - {{id: \"operator:ops\", role: operator, sha256: \"{ops}\"}}\n{extra}"
    );
    let conf = write_config(dir, &yaml);
    let args = ["--agent", "tck", "--push-allow-private", "--config", conf.to_str().expect("utf-8 path")];
    let d = Daemon::start_in(&dir.join("data"), &args);
    let (alice, bob, ops) = (d.as_token(Some(ALICE)), d.as_token(Some(BOB)), d.as_token(Some(OPS)));
    Principals { d, alice, bob, ops }
}
