//! What the tests that build an engine in process share.

use agentd_core::{Agent, EngineBuilder, EngineConfig, PushUrlPolicy, ReplicaConfig, Runtime, Store};
use async_trait::async_trait;
use std::sync::Arc;

/// Lets every push URL through: these tests push nowhere.
pub struct AnyUrl;

#[async_trait]
impl PushUrlPolicy for AnyUrl {
    async fn check(&self, _url: &str) -> Result<(), String> {
        Ok(())
    }
}

/// An engine on `store` running `agent` as the replica `replica` says.
pub fn replica(store: Arc<dyn Store>, agent: Arc<dyn Agent>, replica: ReplicaConfig) -> Runtime {
    EngineBuilder::new(store, agent, Arc::new(AnyUrl), EngineConfig { replica, ..EngineConfig::default() })
        .build()
}
