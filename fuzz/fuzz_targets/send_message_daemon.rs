//! The daemon the `send_message` target sends to, wired as `agentd serve`
//! wires it by default. The stable replay of the saved scripts
//! (`crates/agentd-server/tests/suite/fuzz_regressions.rs`) includes this very
//! file, so a script is replayed against the daemon the fuzzer ran.

use agentd_core::{Engine, EngineBuilder, EngineConfig};
use agentd_runtime::agent_loop::{Limits, Tool, Tools};
use agentd_runtime::commands::{Commands, Grants, ops::DEFAULT_GRANTS};
use agentd_runtime::model::ModelConfig;
use agentd_runtime::subagents::{SubagentLimits, SubagentManager};
use agentd_server::push::SsrfGuard;
use agentd_store::{SqliteOptions, SqliteStore};
use std::path::Path;
use std::sync::Arc;

/// The daemon `agentd serve` wires by default: the agent loop on the echo
/// model with the subagent tool, the command ops with the default grants,
/// a SQLite store in `dir`, webhooks to private addresses refused.
pub fn engine(dir: &Path) -> Engine {
    let store = SqliteStore::open(&dir.join("agentd.db"), SqliteOptions { synchronous_full: false })
        .expect("open store");
    let model = agentd_runtime::model::from_config(ModelConfig::default()).expect("echo model");
    let subagents = SubagentManager::new(model.clone(), Limits::default(), SubagentLimits::default());
    let tools: Vec<Arc<dyn Tool>> =
        subagents.tool().into_iter().map(|t| Arc::new(t) as Arc<dyn Tool>).collect();
    let agent = agentd_runtime::profile(
        "default",
        model.clone(),
        "You are agentd.",
        Limits::default(),
        Tools::new(tools),
    )
    .expect("default profile");
    let grants: Vec<String> = DEFAULT_GRANTS.iter().map(|s| (*s).to_owned()).collect();
    let grants = Grants::new(&grants, &grants).expect("default grants");
    let runtime =
        EngineBuilder::new(Arc::new(store), agent, Arc::new(SsrfGuard::new(false)), EngineConfig::default())
            .commands(Arc::new(Commands::new(grants, subagents.clone(), model.name())))
            .observer(subagents)
            .build();
    runtime.engine().clone()
}
