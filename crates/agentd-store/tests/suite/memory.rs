//! The shared conformance suite against `MemoryStore`.

use agentd_store::MemoryStore;

agentd_store::conformance_tests!(|| ((), MemoryStore::new()));

#[tokio::test]
async fn run_all_in_one_go() {
    agentd_store::conformance::run_all(|| ((), MemoryStore::new())).await;
}
