//! The daemon as a library: [`Daemon::bind`] binds its listeners first (an
//! address in use stops the start before any data is made);
//! [`Daemon::build`] checks the configuration, opens the store and recovers
//! it; [`Daemon::serve`] serves the bound listeners until a shutdown token fires, then drains: it stops taking new
//! work, lets running turns finish within `shutdown.grace_secs`, stops the
//! rest with an explicit status, ends the streams and waits for every
//! background task (all are on the engine's [`agentd_core::Background`]).
//! `agentd serve` (`serve.rs`) is a thin caller; the tests run daemons in
//! process the same way.

use crate::config::{Config, StoreKind, StoreSync};
use agentd_core::{Drained, EngineBuilder, EngineConfig, GateBridge, Halted, Outbox, Runtime};
use agentd_proto::AgentProvider;
use agentd_proto::ext::events::LifecycleEvent;
use agentd_proto::jsonrpc::methods;
use agentd_runtime::agent_loop::{Tool, Tools};
use agentd_runtime::commands;
use agentd_runtime::delegate::{A2aDelegator, DelegateTool, Delegator};
use agentd_runtime::model::ModelKind;
use agentd_runtime::subagents::SubagentManager;
use agentd_runtime::workflows::{FeedSink, RunWorkflowTool, WorkflowDeps, Workflows, WorkflowsHandle};
use agentd_server::bridges::{BridgeSecrets, ChannelBridge, DeclaredChannel, SigningKey};
use agentd_server::push::{PushWorkerConfig, SsrfGuard, spawn_push_worker};
use agentd_server::{
    Admission, AppState, Authenticator, CardConfig, CardService, DeclaredExtension, ExtensionRegistry,
    Readiness, ServerConfig, VersionPolicy,
};
use agentd_store::{PostgresStore, SqliteOptions, SqliteStore};
use anyhow::Context;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The warning for a `!config` key agentd has no use for (serve and check).
pub(crate) const IGNORED_KEY: &str =
    "the instruction document's !config sets a key agentd does not use; ignored";

/// The MCP servers of the configuration and of the operator's instruction
/// document (which may use loopback and stdio: both are the operator's),
/// with their policies; approvals ask the document's `!human` entries.
fn mcp_hub(
    cfg: &Config,
    document: &[agentd_instruction::McpServer],
    people: &agentd_runtime::workflows::Catalog,
) -> anyhow::Result<agentd_mcp::McpHub> {
    let mut specs = Vec::new();
    for (i, server) in cfg.mcp.servers.iter().enumerate() {
        specs.push(agentd_mcp::from_config(server).map_err(|e| anyhow::anyhow!("mcp.servers[{i}]: {e}"))?);
    }
    // The document's relative paths are its directory's, as a config file's are.
    let dir =
        cfg.instruction.as_deref().and_then(std::path::Path::parent).unwrap_or(std::path::Path::new(""));
    for server in document {
        let mut spec = agentd_mcp::from_document(server, &agentd_mcp::Origin::Operator)
            .map_err(|e| anyhow::anyhow!("the instruction document: {e}"))?;
        crate::config::paths::document_server(&mut spec, dir);
        specs.push(spec);
    }
    let policies: Vec<(String, agentd_mcp::PolicyConfig)> =
        specs.iter().map(|s| (s.name.clone(), s.policy.clone())).collect();
    let humans = |name: &str| {
        people
            .person(name)
            .map(|p| agentd_mcp::Human { principal: p.principal.clone(), channel: p.channel.clone() })
    };
    let policies =
        agentd_mcp::Policies::new(&policies, &cfg.mcp.approvals, humans).map_err(anyhow::Error::msg)?;
    Ok(agentd_mcp::McpHub::new(specs).map_err(anyhow::Error::msg)?.with_policy(Arc::new(policies)))
}

/// What `serve` would refuse in the instruction document at `path` alone
/// (no config file, no variables): its `!config` blocks, checked as part
/// of the configuration, and its `!mcp` servers with their policies. Ok
/// with the `!config` keys serve would ignore, to warn about.
pub(crate) fn check_document(path: &std::path::Path) -> anyhow::Result<Vec<String>> {
    let flags = crate::config::ServeFlags { instruction: Some(path.to_path_buf()), ..Default::default() };
    let cfg = crate::config::load_from(&flags, &Default::default())?;
    let instruction = cfg.document.take_or_load(Some(path))?;
    mcp_hub(&cfg, &instruction.mcp_servers, &instruction.workflows)?;
    Ok(cfg.ignored_document_keys.clone())
}

/// How long runs stopped after the grace get to end, and how long the
/// background work gets once told to stop.
const HALT_WAIT: Duration = Duration::from_secs(5);
const STOP_WAIT: Duration = Duration::from_secs(10);

/// The daemon's bound listeners ([`Daemon::bind`]).
pub struct Listeners {
    pub main: TcpListener,
    /// `metrics.listen`'s, when set.
    pub metrics: Option<TcpListener>,
}

impl Listeners {
    /// Where the main listener listens (port 0 chosen).
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.main.local_addr()
    }
}

/// Binds `addr`; an address in use says so and what to do.
async fn listen(addr: std::net::SocketAddr, what: &str) -> anyhow::Result<TcpListener> {
    match TcpListener::bind(addr).await {
        Ok(l) => Ok(l),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => anyhow::bail!(
            "cannot listen on {addr}{what}: the address is in use (another agentd, or another program, \
             listens there): stop it, or pick another port (--listen, AGENTD_LISTEN, port 0 for any free one)"
        ),
        Err(e) => Err(anyhow::Error::new(e).context(format!("cannot listen on {addr}{what}"))),
    }
}

/// A daemon built from its configuration, with its store open and
/// recovered, not serving yet.
pub struct Daemon {
    cfg: Config,
    runtime: Runtime,
    outbox: Outbox,
    auth: Authenticator,
    tls: Option<agentd_server::Tls>,
    extensions: ExtensionRegistry,
    skills: Vec<agentd_proto::AgentSkill>,
    card_name: String,
    card_description: String,
    input_modes: Vec<String>,
    bridge_secrets: BridgeSecrets,
    /// The commit of the `started` lifecycle event, begun once recovery is
    /// done so its sync overlaps the rest of the start; `serve` waits for
    /// it before it accepts, so it precedes every event of a request.
    started: tokio::task::JoinHandle<Result<(), agentd_core::Error>>,
    /// Held until the daemon is dropped (after `serve` returns).
    _data_dir: crate::data_lock::DataDirLock,
}

impl Daemon {
    /// Checks the configuration, locks the data directory, opens the store
    /// and recovers it (workflow runs resume; other tasks that were running
    /// fail with a reason). Logs go to the caller's tracing subscriber.
    pub async fn build(cfg: Config) -> anyhow::Result<Daemon> {
        for key in &cfg.ignored_document_keys {
            tracing::warn!(key = %key, "{IGNORED_KEY}");
        }
        for name in &cfg.unknown_env {
            tracing::warn!(variable = %name, "this AGENTD_* variable is no configuration key (docs/configuration.md); ignored");
        }
        // Credentials and model first: a config error must not touch the data
        // (opening the store runs recovery).
        let auth = crate::identity::authenticator(&cfg)?;
        let tls = crate::identity::tls(&cfg)?;
        let model = agentd_runtime::model::from_config(cfg.model.clone())
            .map_err(|e| anyhow::anyhow!("model: {e}"))?;
        let grants = cfg.commands.grants()?;
        let subagents = SubagentManager::new(model.clone(), cfg.limits.limits(), cfg.subagents.limits());
        let delegator = delegator(&cfg)?;
        let mut tools: Vec<Arc<dyn Tool>> =
            subagents.tool().into_iter().map(|t| Arc::new(t) as Arc<dyn Tool>).collect();
        if let Some(t) = DelegateTool::new(delegator.clone()) {
            tools.push(Arc::new(t));
        }
        let instruction = cfg.document.take_or_load(cfg.instruction.as_deref())?;
        // Told the workflows once they exist (they are made with the engine).
        let workflows_handle = WorkflowsHandle::default();
        if let Some(t) = RunWorkflowTool::new(&instruction.workflows, workflows_handle.clone()) {
            tools.push(Arc::new(t));
        }
        let bridge_secrets = bridge_secrets(&cfg, &instruction.channels)?;
        let mcp = mcp_hub(&cfg, &instruction.mcp_servers, &instruction.workflows)?;
        let mut tools = Tools::new(tools)
            .with_max_tools(cfg.mcp.max_tools)
            .with_retry_tools(cfg.durability.retry_tools.clone());
        if !mcp.is_empty() {
            tools = tools.with_source(Arc::new(mcp.clone()));
        }
        // Subagents and workflow steps name the sets they get out of these.
        subagents.set_tools(tools.clone());
        let agent = agentd_runtime::profile(
            cfg.agent.as_str(),
            model.clone(),
            &instruction.system_prompt,
            cfg.limits.limits(),
            tools,
        )
        .context("unknown agent profile")?;
        if cfg.data_dir.exists() && !cfg.data_dir.is_dir() {
            anyhow::bail!(
                "the data directory {} is a file, not a directory: point --data-dir (AGENTD_DATA_DIR) elsewhere",
                cfg.data_dir.display()
            );
        }
        std::fs::create_dir_all(&cfg.data_dir)
            .with_context(|| format!("cannot create data directory {}", cfg.data_dir.display()))?;
        // Before the store is opened (recovery would fail another daemon's
        // running tasks); held until the daemon is dropped.
        let data_dir = crate::data_lock::lock(&cfg.data_dir)?;
        let store = open_store(&cfg).await?;
        let reminder_limits = cfg.reminders.limits()?;
        let engine_cfg = EngineConfig {
            push_enabled: cfg.push.enabled,
            reminders: reminder_limits,
            events_retain_count: cfg.events.retain_count,
            events_retain: Duration::from_secs(cfg.events.retain_secs),
            replica: cfg.replicas.replica(cfg.replica_id.as_deref())?,
            ..EngineConfig::default()
        };
        let input_modes = engine_cfg.input_modes.clone();
        let builder =
            EngineBuilder::new(store, agent, Arc::new(SsrfGuard::new(cfg.push.allow_private)), engine_cfg);
        let outbox = builder.outbox();
        // Opened gates are announced through the bridge; runs delegate through
        // the same delegator as the model's `delegate` tool; run, step and gate
        // events go to the events feed.
        let gate_bridge = gate_bridge(&cfg, &outbox, &instruction.channels);
        let workflows = Workflows::new(
            instruction.workflows,
            WorkflowDeps {
                subagents: subagents.clone(),
                system_prompt: instruction.system_prompt.clone(),
                bridge: Some(gate_bridge.clone()),
                delegator: Some(delegator.clone()),
                events: Some(Arc::new(FeedSink::new(builder.runtime()))),
            },
        );
        workflows_handle.set(&workflows);
        let runtime = workflows
            .install(builder)
            .commands(Arc::new(
                commands::Commands::new(grants, subagents.clone(), model.name())
                    .with_workflows(workflows.clone()),
            ))
            .link_agent(agentd_core::LinkKind::Subagent, subagents.clone())
            .observer(subagents)
            .gate_bridge(gate_bridge)
            .build();
        // Stdio servers start now; servers that are down are logged.
        mcp.start(runtime.background());
        // Runs that were working resume here; the others fail with a reason.
        let failed = runtime.recover().await.map_err(|e| anyhow::anyhow!("recovery failed: {e}"))?;
        if failed > 0 {
            tracing::warn!(tasks = failed, "tasks interrupted by the last shutdown were marked failed");
        }
        workflows.rearm_gates(&runtime).await.map_err(|e| anyhow::anyhow!("recovery failed: {e}"))?;
        // On a shared store: renew this replica's leases, adopt expired ones,
        // and watch the gates nobody watches (their replica died).
        runtime.spawn_lease_loops();
        if runtime.replicas_shared().is_some() {
            let (wf, rt) = (workflows.clone(), runtime.clone());
            let every = Duration::from_millis(cfg.replicas.lease_ttl_ms);
            runtime.background().spawn_until_shutdown(async move {
                loop {
                    tokio::time::sleep(every).await;
                    if let Err(e) = wf.rearm_gates(&rt).await {
                        tracing::warn!(error = %e, "could not look for gates to watch");
                    }
                }
            });
        }
        let rt = runtime.clone();
        let started = runtime
            .background()
            .spawn(async move { rt.emit_lifecycle(LifecycleEvent::Started, VERSION).await });

        let mut declared = agentd_server::ext_docs::declared();
        let mut command_params = commands::card_params();
        command_params.insert("workflows".into(), workflows.catalog().card_entries().into());
        declared.push(DeclaredExtension {
            uri: commands::URI.into(),
            description:
                "Commands: a DataPart {\"agentd\": {\"op\": …}} runs an op deterministically (see params.ops)"
                    .into(),
            required: false,
            params: Some(command_params),
            methods: vec![methods::SEND_MESSAGE.into(), methods::SEND_STREAMING_MESSAGE.into()],
        });
        declared.push(crate::reminders::declared(&reminder_limits));
        let extensions = ExtensionRegistry::new(declared);
        let mut skills = vec![agentd_server::card::chat_skill()];
        skills.extend(commands::skills());
        skills.extend(workflows.catalog().skills());
        // The card names the agent: the config's `card:`, else the document.
        let card_name =
            cfg.card.name.clone().or(instruction.title.clone()).unwrap_or_else(|| "agentd".into());
        let card_description = cfg
            .card
            .description
            .clone()
            .or(instruction.summary.clone())
            .unwrap_or_else(|| format!("An agentd agent ({} profile) served over A2A 1.0", cfg.agent));
        Ok(Daemon {
            cfg,
            runtime,
            outbox,
            auth,
            tls,
            extensions,
            skills,
            card_name,
            card_description,
            input_modes,
            bridge_secrets,
            started,
            _data_dir: data_dir,
        })
    }

    /// Binds the configured `listen` (and `metrics.listen`) addresses.
    /// Called before [`Daemon::build`]: an address in use then stops the
    /// start before the data directory or its database is made.
    pub async fn bind(cfg: &Config) -> anyhow::Result<Listeners> {
        let main = listen(cfg.listen, "").await?;
        let metrics = match cfg.metrics.listen {
            Some(addr) => Some(listen(addr, " for metrics (metrics.listen)").await?),
            None => None,
        };
        Ok(Listeners { main, metrics })
    }

    /// Serves on `listeners` until `shutdown` fires, then drains (see the
    /// module's documentation). Returns once every background task ended.
    pub async fn serve(self, listeners: Listeners, shutdown: CancellationToken) -> anyhow::Result<()> {
        let Listeners { main: listener, metrics: metrics_listener } = listeners;
        let Daemon {
            cfg,
            runtime,
            outbox,
            mut auth,
            tls,
            extensions,
            skills,
            card_name,
            card_description,
            input_modes,
            bridge_secrets,
            started,
            _data_dir,
        } = self;
        let local = listener.local_addr()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let base_url = cfg.public_url.clone().unwrap_or_else(|| format!("{scheme}://{local}"));
        auth.set_metadata_url(format!(
            "{}{}",
            base_url.trim_end_matches('/'),
            agentd_server::auth::RESOURCE_METADATA_PATH
        ));
        let card = CardService::new(
            CardConfig {
                name: card_name.clone(),
                description: card_description,
                version: env!("CARGO_PKG_VERSION").into(),
                base_url: base_url.clone(),
                streaming: true,
                push_notifications: cfg.push.enabled,
                security: crate::identity::card_security(&cfg, &auth, &base_url),
                input_modes,
                output_modes: vec!["text/plain".into(), "application/json".into()],
                skills,
                provider: cfg
                    .card
                    .provider
                    .as_ref()
                    .map(|p| AgentProvider { organization: p.organization.clone(), url: p.url.clone() }),
                documentation_url: cfg.card.documentation_url.clone(),
                max_age_secs: 300,
            },
            &extensions,
        );
        let background = runtime.background().clone();
        let readiness = Readiness::default();
        crate::probe::spawn(&cfg.model, readiness.clone(), &background);
        let every = Duration::from_millis(cfg.replicas.lease_ttl_ms) / 3;
        crate::store_probe::spawn(&runtime, every, readiness.clone());
        let config = Arc::new(ServerConfig {
            version_policy: if cfg.a2a_version == crate::config::VersionMode::Strict {
                VersionPolicy::Strict
            } else {
                VersionPolicy::Lenient
            },
            max_body_bytes: cfg.max_body_bytes,
            keep_alive: Duration::from_secs(cfg.sse_keep_alive_secs),
            connections: cfg.server.connections(),
            json: cfg.server.json(),
            max_body_bytes_in_flight: cfg.server.max_body_bytes_in_flight,
            max_body_bytes_in_flight_per_principal: cfg.server.body_bytes_per_principal(cfg.max_body_bytes),
            max_streams: cfg.server.max_streams,
            max_streams_per_principal: cfg.server.streams_per_principal(),
            readiness: readiness.clone(),
            tls,
            metrics_open: cfg.metrics.public || local.ip().is_loopback(),
            public_url: cfg.public_url.clone(),
        });
        let state = AppState {
            engine: runtime.engine().clone(),
            auth: Arc::new(auth),
            card: Arc::new(card),
            extensions: Arc::new(extensions),
            admission: Arc::new(Admission::new(&config)),
            config,
            // Streams end when the background work stops: after the drain,
            // so they carry their tasks' ends.
            shutdown: background.shutdown().clone(),
        };
        // Always running: bridge announcements use the outbox even when push
        // notifications are disabled (then no push rows are ever queued).
        let _push = spawn_push_worker(
            outbox,
            PushWorkerConfig {
                allow_private: cfg.push.allow_private,
                max_attempts: cfg.push.max_attempts,
                timeout: Duration::from_secs(cfg.push.timeout_secs),
                backoff_base: Duration::from_millis(cfg.push.backoff_ms),
                bridge_secrets,
                ..PushWorkerConfig::default()
            },
            background.shutdown().clone(),
        );
        background.spawn_until_shutdown(prune_events(
            runtime.clone(),
            Duration::from_millis(cfg.events.prune_interval_ms.max(10)),
        ));
        let started = started.await.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string()));
        if let Err(e) = started {
            background.stop(STOP_WAIT).await;
            anyhow::bail!("cannot write the start event: {e}");
        }
        log_start(&cfg, &card_name);
        tracing::info!(url = %base_url, agent = %cfg.agent, data = %cfg.data_dir.display(), "agentd listening on {base_url}");
        // Accepting stops at `shutdown`; open connections are asked to close
        // after what they have in flight.
        if let Some(metrics) = metrics_listener {
            let at = metrics.local_addr()?;
            let open = cfg.metrics.public || at.ip().is_loopback();
            tracing::info!(%at, open, "metrics listening on {scheme}://{at}/metrics");
            let serve = agentd_server::serve_metrics(metrics, state.clone(), open, shutdown.clone());
            background.spawn(async move {
                if let Err(e) = serve.await {
                    tracing::error!(error = %e, "the metrics listener failed");
                }
            });
        }
        let mut server = background.spawn(agentd_server::serve(listener, state, shutdown.clone()));
        let ended_early = tokio::select! {
            // The listener ends by itself at `shutdown` too.
            biased;
            () = shutdown.cancelled() => None,
            r = &mut server => Some(r),
        };
        if let Some(r) = ended_early.filter(|_| !shutdown.is_cancelled()) {
            background.stop(STOP_WAIT).await;
            r.context("the listener task failed")?.context("the listener failed")?;
            anyhow::bail!("the listener stopped before a shutdown was asked for");
        }
        drain(&runtime, &readiness, Duration::from_secs(cfg.shutdown.grace_secs)).await;
        if !background.stop(STOP_WAIT).await {
            tracing::warn!(tasks = background.len(), "background tasks still running at exit");
        }
        if server.is_finished()
            && let Ok(Err(e)) = server.await
        {
            tracing::warn!(error = %e, "the listener ended with an error");
        }
        tracing::info!("agentd stopped");
        Ok(())
    }
}

/// Stops taking work, lets the runs finish within `grace`, then stops
/// those left with an explicit status.
async fn drain(runtime: &Runtime, readiness: &Readiness, grace: Duration) {
    tracing::info!(grace_secs = grace.as_secs(), "shutting down: no new work; running turns may finish");
    readiness.set("shutdown", false, "agentd is shutting down");
    runtime.stop_accepting();
    // Committed before the feeds close, so open feeds deliver it.
    if let Err(e) = runtime.emit_lifecycle(LifecycleEvent::Stopping, VERSION).await {
        tracing::warn!(error = %e, "cannot write the stop event");
    }
    let drained = runtime.drain_runs(grace).await;
    if drained == Drained::All {
        return;
    }
    let Halted { failed, left } = runtime.halt(HALT_WAIT).await;
    if drained == Drained::WaitingForPeople {
        tracing::info!(
            tasks = left,
            "the turns left wait for a person (an approval, a gate): they keep waiting, and resume at the next start"
        );
    } else if failed == 0 {
        tracing::warn!(
            tasks = left,
            grace_secs = grace.as_secs(),
            "turns still running after the shutdown grace were stopped; they resume at the next start"
        );
    } else {
        tracing::warn!(
            failed,
            resuming = left,
            grace_secs = grace.as_secs(),
            "turns still running after the shutdown grace were stopped; those their agent cannot resume failed, the others resume at the next start"
        );
    }
}

/// The store the configuration names: SQLite in the data directory (the
/// default) or a PostgreSQL database, its password read now.
async fn open_store(cfg: &Config) -> anyhow::Result<Arc<dyn agentd_core::Store>> {
    match cfg.store.kind()? {
        StoreKind::Sqlite => {
            let db = cfg.data_dir.join("agentd.db");
            check_writable(&cfg.data_dir, &db)?;
            let options = SqliteOptions { synchronous_full: cfg.store.sync == StoreSync::Full };
            let store = SqliteStore::open(&db, options)
                .with_context(|| format!("cannot open the store at {}", db.display()))?;
            Ok(Arc::new(store))
        }
        StoreKind::Postgres(url) => {
            let options = cfg.store.postgres_options(url)?;
            // The URL holds no password (`postgres_options` refuses one).
            let store = PostgresStore::open(&options)
                .await
                .with_context(|| format!("cannot open the PostgreSQL store at {url}"))?;
            tracing::info!(
                url,
                replica = %cfg.replicas.replica(cfg.replica_id.as_deref())?.id,
                lease_ttl_ms = cfg.replicas.lease_ttl_ms,
                "store: PostgreSQL"
            );
            Ok(Arc::new(store))
        }
    }
}

/// The store must be written to (recovery, every commit); the engine
/// reports a failed write as an internal error without its cause, so a
/// read-only directory or database is named here, with the system's reason.
fn check_writable(dir: &std::path::Path, db: &std::path::Path) -> anyhow::Result<()> {
    let probe = dir.join(".agentd-write-check");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .with_context(|| format!("the data directory {} is not writable", dir.display()))?;
    if db.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(db)
            .with_context(|| format!("the database {} is not writable", db.display()))?;
    }
    Ok(())
}

/// The A2A delegator over `a2a.peers` (credentials are read now). Workflow
/// steps and the `delegate` tool share it.
fn delegator(cfg: &Config) -> anyhow::Result<Arc<dyn Delegator>> {
    let d = A2aDelegator::new(&cfg.a2a.peers, cfg.a2a.options()).map_err(anyhow::Error::msg)?;
    Ok(Arc::new(d))
}

/// The signing secrets of `bridges.secrets`, read now (an unreadable one
/// stops the daemon before the store is opened).
fn bridge_secrets(cfg: &Config, channels: &[agentd_instruction::Channel]) -> anyhow::Result<BridgeSecrets> {
    let mut keys = HashMap::new();
    for (name, reference) in &cfg.bridges.secrets {
        if !channels.iter().any(|c| &c.name == name) {
            tracing::warn!(channel = %name, "bridges.secrets names a channel the instruction document does not declare");
        }
        let secret = reference.resolve().map_err(|e| anyhow::anyhow!("bridges.secrets.{name}: {e}"))?;
        keys.insert(name.clone(), SigningKey::new(secret.expose().as_bytes()));
    }
    Ok(BridgeSecrets::new(keys))
}

/// The gate bridge over the document's channels. Channels no bridge can
/// deliver to are a warning here and an error when a gate names them.
fn gate_bridge(
    cfg: &Config,
    outbox: &Outbox,
    channels: &[agentd_instruction::Channel],
) -> Arc<dyn GateBridge> {
    let declared: Vec<DeclaredChannel> = channels
        .iter()
        .map(|c| DeclaredChannel { name: c.name.clone(), kind: c.kind.clone(), target: c.target.clone() })
        .collect();
    let bridge = ChannelBridge::new(outbox.clone(), &declared, SsrfGuard::new(cfg.push.allow_private));
    for problem in bridge.problems() {
        tracing::warn!("{problem}");
    }
    Arc::new(bridge)
}

/// Applies event retention now and then, for as long as the daemon runs.
async fn prune_events(runtime: Runtime, every: Duration) {
    loop {
        if let Err(e) = runtime.prune_events().await {
            tracing::warn!(error = %e, "event retention failed");
        }
        tokio::time::sleep(every).await;
    }
}

/// What this daemon runs, in one line: the agent's name and document, the
/// model and where it is, where the data is.
fn log_start(cfg: &Config, name: &str) {
    let document =
        cfg.instruction.as_ref().map_or_else(|| "built-in".to_owned(), |p| p.display().to_string());
    let m = &cfg.model;
    let (endpoints, model_name) = match (m.kind, m.remote()) {
        (_, Some((endpoints, name))) => (endpoints.join(", "), name.to_owned()),
        (ModelKind::Scripted, None) => {
            (m.script.as_ref().map(|p| p.display().to_string()).unwrap_or_default(), String::new())
        }
        _ => (String::new(), String::new()),
    };
    tracing::info!(
        agent = %name, instruction = %document, model = %m.kind, endpoints = %endpoints, model_name = %model_name,
        profile = %cfg.agent, data = %cfg.data_dir.display(),
        "running {name:?} with the {} model", m.kind
    );
}
