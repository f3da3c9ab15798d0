//! The `store` check of `/readyz` on a store several replicas share: the
//! database is asked `SELECT 1` every few seconds, and a replica that
//! cannot reach it says so (a load balancer then sends its clients to the
//! others). A replica cut from its database also gives up its runs before
//! their leases expire (`agentd-core`'s `engine/leasing.rs`). A local store
//! (SQLite) has nothing to reach and no such check.

use agentd_core::Runtime;
use agentd_server::Readiness;
use std::time::Duration;

const CHECK: &str = "store";
const TIMEOUT: Duration = Duration::from_secs(2);

/// Checks now, then every `every` until the daemon stops.
pub fn spawn(runtime: &Runtime, every: Duration, readiness: Readiness) {
    if runtime.replicas_shared().is_none() {
        return;
    }
    readiness.set(CHECK, false, "not checked yet");
    let rt = runtime.clone();
    runtime.background().spawn_until_shutdown(async move {
        loop {
            match tokio::time::timeout(TIMEOUT, rt.store_reachable()).await {
                Ok(Ok(())) => readiness.set(CHECK, true, "the database answers"),
                Ok(Err(e)) => readiness.set(CHECK, false, format!("the database does not answer: {e}")),
                Err(_) => {
                    readiness.set(CHECK, false, format!("the database did not answer within {TIMEOUT:?}"))
                }
            }
            tokio::time::sleep(every).await;
        }
    });
}
