//! Building the engine. The parts the runtime plugs in (the command
//! handler, task observers, the agents of link kinds, the gate keeper) are
//! collected by [`EngineBuilder`] and installed once by
//! [`EngineBuilder::build`], before anything is served: no setter exists
//! on a built engine.
//!
//! Two phases, because the dependency is a cycle: some of those parts
//! call back into the engine (workflow runs emit feed events through a
//! [`Runtime`], the gate bridge queues announcements in the [`Outbox`]), so
//! their handles must exist before the engine is complete. The builder
//! gives them out ([`EngineBuilder::runtime`], [`EngineBuilder::outbox`]);
//! until `build` they see an engine with nothing installed.

use super::{CommandHandler, Engine, EngineConfig, Inner, Outbox, PushUrlPolicy, Runtime, TaskObserver};
use crate::agent::Agent;
use crate::gate::{GateBridge, GateKeeper};
use crate::record::LinkKind;
use crate::slots::Slots;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock};

/// What the runtime plugs into the engine.
#[derive(Default)]
pub(super) struct Installed {
    /// Runs the command extension's ops; without one, commands are refused.
    pub(super) commands: Option<Arc<dyn CommandHandler>>,
    /// Told about every task that reached a terminal state.
    pub(super) observers: Vec<Arc<dyn TaskObserver>>,
    /// The agent of every task of a link kind (workflow runs), also after a
    /// restart: such tasks are resumed by it instead of failed.
    pub(super) link_agents: HashMap<LinkKind, Arc<dyn Agent>>,
    /// Checks answers to human gates; without one, any message answers.
    pub(super) gates: Option<Arc<dyn GateKeeper>>,
    /// Announces the gates of tool-call approvals (`engine/approval.rs`).
    pub(super) bridge: Option<Arc<dyn GateBridge>>,
}

/// What an engine that is not built yet has installed.
pub(super) static NOTHING_INSTALLED: LazyLock<Installed> = LazyLock::new(Installed::default);

/// Collects what the engine is built with; [`EngineBuilder::build`] returns
/// the [`Runtime`], whose [`Runtime::engine`] is the handle for bindings.
pub struct EngineBuilder {
    engine: Engine,
    installed: Installed,
}

impl EngineBuilder {
    pub fn new(
        store: Arc<dyn Store>,
        agent: Arc<dyn Agent>,
        push_policy: Arc<dyn PushUrlPolicy>,
        config: EngineConfig,
    ) -> Self {
        // Every commit is timed, whichever backend is behind.
        let store = Arc::new(super::metered::Metered { inner: store, metrics: config.metrics.clone() });
        let engine = Engine::new(Inner {
            store,
            agent,
            push_policy,
            config,
            slots: Slots::default(),
            conversations: Default::default(),
            claims: Arc::default(),
            push_config_writes: Default::default(),
            installed: OnceLock::new(),
            task_agents: Default::default(),
            closed_contexts: Default::default(),
            children: Default::default(),
            background: crate::Background::new(),
            runs: tokio_util::task::TaskTracker::new(),
            run_gens: Default::default(),
            stopping: Default::default(),
            halted: Default::default(),
            leasing: Default::default(),
            context_waiters: Default::default(),
        });
        Self { engine, installed: Installed::default() }
    }

    /// The runtime handle of the engine being built, for a part it is built
    /// with that calls back into it (see the module's documentation).
    pub fn runtime(&self) -> Runtime {
        Runtime::new(self.engine.clone())
    }

    /// The outbox of the engine being built (the gate bridge queues in it;
    /// the push worker drains it).
    pub fn outbox(&self) -> Outbox {
        Outbox::new(self.engine.inner.clone())
    }

    /// Runs the command extension's ops (without one, commands are refused).
    pub fn commands(mut self, handler: Arc<dyn CommandHandler>) -> Self {
        self.installed.commands = Some(handler);
        self
    }

    /// Adds an observer told about every task that reaches a terminal state.
    pub fn observer(mut self, observer: Arc<dyn TaskObserver>) -> Self {
        self.installed.observers.push(observer);
        self
    }

    /// Makes `agent` run every task linked as `kind` (unless it was started
    /// with its own) and resume those that were running at a restart.
    pub fn link_agent(mut self, kind: LinkKind, agent: Arc<dyn Agent>) -> Self {
        self.installed.link_agents.insert(kind, agent);
        self
    }

    /// The keeper of human gates (without one, any message answers).
    pub fn gate_keeper(mut self, keeper: Arc<dyn GateKeeper>) -> Self {
        self.installed.gates = Some(keeper);
        self
    }

    /// The bridge that announces the gates of tool-call approvals.
    pub fn gate_bridge(mut self, bridge: Arc<dyn GateBridge>) -> Self {
        self.installed.bridge = Some(bridge);
        self
    }

    /// Installs what was collected and returns the engine's runtime handle.
    pub fn build(self) -> Runtime {
        let EngineBuilder { engine, installed } = self;
        // Only `build` sets it, and it consumes the one builder.
        let _ = engine.inner.installed.set(installed);
        Runtime::new(engine)
    }
}
