//! Configuration: embedded defaults, then a YAML file (`--config`), then
//! `AGENTD_*` environment variables, then flags; later sources win.
//! Secrets are given by reference (`env:NAME`, `file:/path`) and are never
//! logged.

use anyhow::{Context, bail};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

mod env;
pub(crate) mod paths;
mod telemetry;

pub use telemetry::{OtlpConfig, TelemetryConfig};

#[derive(Args, Debug, Default)]
pub struct ServeFlags {
    /// Address to listen on, IP:PORT or HOST:PORT (AGENTD_LISTEN). Port 0 picks a free port.
    #[arg(long, value_parser = parse_listen)]
    pub listen: Option<SocketAddr>,
    /// Data directory; holds the SQLite database (AGENTD_DATA_DIR).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The store: a postgres://user@host:port/dbname URL, its password in
    /// store.password (AGENTD_STORE; default: SQLite in the data directory).
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// This replica's id among the daemons sharing a PostgreSQL store
    /// (AGENTD_REPLICA_ID; default: host name and process id).
    #[arg(long, value_name = "ID")]
    pub replica_id: Option<String>,
    /// YAML configuration file (AGENTD_CONFIG).
    #[arg(long, env = "AGENTD_CONFIG")]
    pub config: Option<PathBuf>,
    /// Agent profile: `default` (the instruction document's agent) or `tck` (AGENTD_AGENT).
    #[arg(long, value_enum)]
    pub agent: Option<AgentProfile>,
    /// A second listener serving only /metrics, IP:PORT or HOST:PORT (AGENTD_METRICS_LISTEN).
    #[arg(long, value_parser = parse_listen)]
    pub metrics_listen: Option<SocketAddr>,
    /// Let webhooks reach loopback and private addresses (tests, single host).
    #[arg(long)]
    pub push_allow_private: bool,
    /// Base URL written into the agent card (AGENTD_PUBLIC_URL).
    #[arg(long)]
    pub public_url: Option<String>,
    /// The agent's instruction document (AGENTD_INSTRUCTION); default: a built-in one.
    #[arg(long)]
    pub instruction: Option<PathBuf>,
    /// Model provider: echo, scripted, openai or anthropic (AGENTD_MODEL).
    #[arg(long, value_parser = model_kind())]
    pub model: Option<agentd_runtime::model::ModelKind>,
    /// Base URL(s) of the openai or anthropic model, comma-separated for
    /// failover (AGENTD_MODEL_URL).
    #[arg(long)]
    pub model_url: Option<String>,
    /// Model name sent to the openai or anthropic server (AGENTD_MODEL_NAME).
    #[arg(long)]
    pub model_name: Option<String>,
    /// Script file of the scripted model (AGENTD_MODEL_SCRIPT).
    #[arg(long)]
    pub model_script: Option<PathBuf>,
    /// An A2A peer, `NAME=URL` or `NAME=URL;credentials=env:VAR`; repeatable,
    /// replaces a configured peer of the same name (AGENTD_A2A_PEERS, comma-separated).
    #[arg(long = "a2a-peer", value_name = "NAME=URL")]
    pub a2a_peers: Vec<String>,
    /// An MCP server over streamable HTTP, `NAME=URL`; repeatable, replaces a
    /// configured server of the same name (mcp.servers, AGENTD_MCP_SERVERS).
    #[arg(long = "mcp-server", value_name = "NAME=URL")]
    pub mcp_servers: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    #[serde(deserialize_with = "listen_address")]
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub agent: AgentProfile,
    /// The instruction document; `None` means the built-in default agent.
    pub instruction: Option<PathBuf>,
    pub public_url: Option<String>,
    /// `lenient` (missing A2A-Version means 1.0) or `strict` (means 0.3).
    pub a2a_version: VersionMode,
    pub max_body_bytes: usize,
    /// Interval of SSE keep-alive comments on open streams, in seconds.
    pub sse_keep_alive_secs: u64,
    /// Connection timeouts and caps, and bounds on request parsing.
    pub server: ServerLimitsConfig,
    pub store: StoreConfig,
    /// This replica's id in the lease table of a shared store; unset: the
    /// host name and the process id.
    pub replica_id: Option<String>,
    /// Leases of the replicas sharing a PostgreSQL store (`docs/scaling.md`).
    pub replicas: ReplicasConfig,
    pub model: agentd_runtime::model::ModelConfig,
    pub limits: LimitsConfig,
    pub push: PushConfig,
    pub auth: AuthConfig,
    pub tls: TlsConfig,
    pub log: LogConfig,
    pub commands: CommandsConfig,
    pub subagents: SubagentsConfig,
    pub events: EventsConfig,
    pub reminders: RemindersConfig,
    pub a2a: A2aConfig,
    pub bridges: BridgesConfig,
    pub card: CardSection,
    pub shutdown: ShutdownConfig,
    /// MCP servers whose tools the agent gets (`docs/tools.md`).
    pub mcp: agentd_mcp::McpConfig,
    /// How an interrupted turn resumes (`docs/durability.md`).
    pub durability: DurabilityConfig,
    /// Where traces are exported (`docs/observability.md`).
    pub telemetry: TelemetryConfig,
    /// `GET /metrics` (`docs/observability.md`).
    pub metrics: MetricsConfig,
    /// Keys of the document's `!config` that agentd does not use (logged at start).
    #[serde(skip)]
    pub ignored_document_keys: Vec<String>,
    /// `AGENTD_*` variables set that are no configuration key (logged at start).
    #[serde(skip)]
    pub unknown_env: Vec<String>,
    /// The instruction document as [`load`] read it for its `!config`:
    /// the daemon starts from the same reading (one parse, and no second
    /// read of a file that may have changed in between).
    #[serde(skip)]
    pub document: crate::instruction::Preloaded,
}

/// How the agent presents itself on its card. Unset name and description
/// come from the instruction document (its title, its first paragraph).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CardSection {
    pub name: Option<String>,
    pub description: Option<String>,
    pub provider: Option<ProviderSection>,
    pub documentation_url: Option<String>,
}

/// The card's `provider`: who runs the agent.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderSection {
    pub organization: String,
    pub url: String,
}

/// Bridges of human-gate questions to channels (`docs/bridges.md`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BridgesConfig {
    /// Signing secrets of webhook channels by channel name, by reference
    /// (`env:NAME` or `file:/path`); a channel listed here gets signed bodies.
    pub secrets: std::collections::BTreeMap<String, agentd_runtime::model::SecretRef>,
}

/// Delegation to other A2A agents (`docs/delegation.md`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct A2aConfig {
    pub peers: Vec<agentd_runtime::delegate::PeerConfig>,
    /// The pause between GetTask polls of a peer without streaming, in ms.
    pub poll_interval_ms: u64,
    /// Timeout of each unary request to a peer, in seconds.
    pub request_timeout_secs: u64,
}

impl Default for A2aConfig {
    fn default() -> Self {
        let d = agentd_runtime::delegate::DelegateOptions::default();
        Self {
            peers: Vec::new(),
            poll_interval_ms: u64::try_from(d.poll_interval.as_millis()).unwrap_or(500),
            request_timeout_secs: d.request_timeout.as_secs(),
        }
    }
}

impl A2aConfig {
    pub fn options(&self) -> agentd_runtime::delegate::DelegateOptions {
        agentd_runtime::delegate::DelegateOptions {
            poll_interval: std::time::Duration::from_millis(self.poll_interval_ms),
            request_timeout: std::time::Duration::from_secs(self.request_timeout_secs),
        }
    }

    /// Adds or replaces peers from `NAME=URL[;credentials=REF]` specs.
    fn merge_specs<'a>(&mut self, specs: impl Iterator<Item = &'a str>, source: &str) -> anyhow::Result<()> {
        for spec in specs {
            let peer = agentd_runtime::delegate::PeerConfig::parse_spec(spec)
                .map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
            self.peers.retain(|p| p.name != peer.name);
            self.peers.push(peer);
        }
        Ok(())
    }
}

/// How a stop (SIGTERM, SIGINT) drains the daemon.
/// Where `/metrics` is served and who may read it (`docs/observability.md`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// A second listener serving `/metrics` alone (besides the main one).
    #[serde(deserialize_with = "optional_listen_address")]
    pub listen: Option<SocketAddr>,
    /// Scrapes need no credentials on any listener; by default only on a
    /// loopback one (elsewhere an operator's).
    pub public: bool,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShutdownConfig {
    /// How long running turns may go on to finish once a stop begins, in
    /// seconds; the tasks of those still running then fail with a status
    /// saying the daemon stopped.
    pub grace_secs: u64,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        Self { grace_secs: 30 }
    }
}

/// The durable event log behind the events feed (`docs/ext/events`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventsConfig {
    /// The most events kept.
    pub retain_count: u64,
    /// The oldest event kept, in seconds.
    pub retain_secs: u64,
    /// How often retention runs, in milliseconds.
    pub prune_interval_ms: u64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self { retain_count: 100_000, retain_secs: 7 * 24 * 3600, prune_interval_ms: 60_000 }
    }
}

/// The command extension (`docs/commands.md`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CommandsConfig {
    pub grants: GrantsConfig,
}

/// The command ops each role may run; operators may run every op.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct GrantsConfig {
    pub user: Vec<String>,
    pub agent: Vec<String>,
}

impl Default for GrantsConfig {
    fn default() -> Self {
        let d: Vec<String> =
            agentd_runtime::commands::ops::DEFAULT_GRANTS.iter().map(|s| (*s).to_owned()).collect();
        Self { user: d.clone(), agent: d }
    }
}

impl CommandsConfig {
    pub fn grants(&self) -> anyhow::Result<agentd_runtime::commands::Grants> {
        agentd_runtime::commands::Grants::new(&self.grants.user, &self.grants.agent)
            .map_err(anyhow::Error::msg)
    }
}

/// Limits on subagents.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubagentsConfig {
    /// How deep subagents may nest (one spawned by a command or a turn is at depth 1).
    pub max_depth: u32,
    /// Subagents running at once, daemon-wide.
    pub max_live: usize,
    /// Tokens per turn of a subagent.
    pub max_tokens: u64,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        let d = agentd_runtime::subagents::SubagentLimits::default();
        Self { max_depth: d.max_depth, max_live: d.max_live, max_tokens: d.max_tokens }
    }
}

impl SubagentsConfig {
    pub fn limits(&self) -> agentd_runtime::subagents::SubagentLimits {
        agentd_runtime::subagents::SubagentLimits {
            max_depth: self.max_depth,
            max_live: self.max_live,
            max_tokens: self.max_tokens,
        }
    }
}

/// Limits of the reminders extension (also published as its card params).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RemindersConfig {
    /// Largest `ttlTurns` a reminder may ask for.
    pub max_ttl_turns: u32,
    /// Largest reminder body, in bytes.
    pub max_body_bytes: u32,
    /// Active reminders one task may hold; more are refused.
    pub max_pending_per_task: u32,
}

impl Default for RemindersConfig {
    fn default() -> Self {
        let d = agentd_core::ReminderLimits::default();
        Self {
            max_ttl_turns: d.max_ttl_turns,
            max_body_bytes: d.max_body_bytes,
            max_pending_per_task: d.max_pending_per_task,
        }
    }
}

impl RemindersConfig {
    pub fn limits(&self) -> anyhow::Result<agentd_core::ReminderLimits> {
        for (key, v) in [
            ("max_ttl_turns", self.max_ttl_turns),
            ("max_body_bytes", self.max_body_bytes),
            ("max_pending_per_task", self.max_pending_per_task),
        ] {
            if v == 0 {
                bail!("reminders.{key} must be at least 1");
            }
        }
        Ok(agentd_core::ReminderLimits {
            max_ttl_turns: self.max_ttl_turns,
            max_body_bytes: self.max_body_bytes,
            max_pending_per_task: self.max_pending_per_task,
        })
    }
}

/// How long a replica's leases last and how often expired ones are adopted.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplicasConfig {
    /// A lease not renewed for this long expires (database clock); renewed
    /// every third of it. A dead replica's work moves on after about this.
    pub lease_ttl_ms: u64,
    /// How often a replica looks for expired leases to adopt their work;
    /// unset: a third of the ttl.
    pub poll_interval_ms: Option<u64>,
}

impl Default for ReplicasConfig {
    fn default() -> Self {
        Self { lease_ttl_ms: 10_000, poll_interval_ms: None }
    }
}

impl ReplicasConfig {
    /// The engine's replica settings, with `id` (or host and pid).
    pub fn replica(&self, id: Option<&str>) -> anyhow::Result<agentd_core::ReplicaConfig> {
        if self.lease_ttl_ms < 300 {
            bail!("replicas.lease_ttl_ms must be at least 300");
        }
        if self.poll_interval_ms == Some(0) {
            bail!("replicas.poll_interval_ms must be at least 1");
        }
        let ttl = std::time::Duration::from_millis(self.lease_ttl_ms);
        let id = match id {
            Some(id) if id.trim().is_empty() => bail!("replica_id must not be empty"),
            Some(id) => id.to_owned(),
            None => default_replica_id(),
        };
        Ok(agentd_core::ReplicaConfig {
            id,
            lease_ttl: ttl,
            poll_interval: self.poll_interval_ms.map_or(ttl / 3, std::time::Duration::from_millis),
        })
    }
}

/// `host:pid`: unique among live processes of a host, readable in `status`.
fn default_replica_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_owned()))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}", std::process::id())
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// Where the state lives: unset (or `sqlite`) for the SQLite file in
    /// the data directory, or a `postgres://user@host:port/dbname` URL
    /// (`docs/scaling.md`). The config file may say `store: postgres://…`
    /// for `store: {url: postgres://…}`.
    pub url: Option<String>,
    /// The PostgreSQL password by reference, `env:NAME` or `file:/path`
    /// (never in the URL).
    pub password: Option<String>,
    /// SQLite only: `full` (fsync every commit group; survives power loss)
    /// or `normal` (survives a process crash, not a power loss).
    pub sync: StoreSync,
}

/// The store a configuration names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKind<'a> {
    /// `agentd.db` in the data directory.
    Sqlite,
    /// A PostgreSQL database at this URL (no password in it).
    Postgres(&'a str),
}

impl StoreConfig {
    /// Which store `url` names; refuses anything else, naming the key.
    pub fn kind(&self) -> anyhow::Result<StoreKind<'_>> {
        match self.url.as_deref().map(str::trim) {
            None | Some("") | Some("sqlite") => Ok(StoreKind::Sqlite),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(StoreKind::Postgres(url))
            }
            Some(url) => bail!(
                "store.url {url:?} is not a store agentd knows: leave it unset (or `sqlite`) for SQLite, \
                 or give a postgres://user@host:port/dbname URL"
            ),
        }
    }

    /// The PostgreSQL store's options, the password resolved from its reference.
    pub fn postgres_options(&self, url: &str) -> anyhow::Result<agentd_store::PostgresOptions> {
        let password = match &self.password {
            Some(reference) => Some(resolve_secret(reference).context("store.password")?),
            None => None,
        };
        let options = agentd_store::PostgresOptions { url: url.to_owned(), password };
        options.config().map_err(store_url_error)?;
        Ok(options)
    }
}

fn store_url_error(e: agentd_core::StoreError) -> anyhow::Error {
    match e {
        agentd_core::StoreError::Backend(why) => anyhow::anyhow!("store.url: {why}"),
        other => anyhow::anyhow!("store.url: {other}"),
    }
}

/// What a client can hold of the listener and of request processing
/// (`docs/configuration.md`, "Connections and request limits").
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerLimitsConfig {
    pub header_read_timeout_ms: u64,
    pub body_read_timeout_ms: u64,
    pub idle_timeout_ms: u64,
    pub http2_keep_alive_ms: u64,
    pub max_connections: usize,
    pub max_connections_per_peer: usize,
    pub max_streams: usize,
    pub max_json_depth: usize,
    pub max_json_values: usize,
    pub max_body_bytes_in_flight: usize,
    /// What one principal (without credentials: one peer address) may hold
    /// of `max_body_bytes_in_flight`; unset: a quarter of it, at least
    /// `max_body_bytes`.
    pub max_body_bytes_in_flight_per_principal: Option<usize>,
    /// What one principal (without credentials: one peer address) may hold
    /// of `max_streams`; unset: a quarter of it, at least one.
    pub max_streams_per_principal: Option<usize>,
}

impl Default for ServerLimitsConfig {
    fn default() -> Self {
        let d = agentd_server::ServerConfig::default();
        let ms = |t: std::time::Duration| u64::try_from(t.as_millis()).unwrap_or(u64::MAX);
        Self {
            header_read_timeout_ms: ms(d.connections.header_read_timeout),
            body_read_timeout_ms: ms(d.connections.body_read_timeout),
            idle_timeout_ms: ms(d.connections.idle_timeout),
            http2_keep_alive_ms: ms(d.connections.http2_keep_alive),
            max_connections: d.connections.max_connections,
            max_connections_per_peer: d.connections.max_connections_per_peer,
            max_streams: d.max_streams,
            max_json_depth: d.json.max_depth,
            max_json_values: d.json.max_values,
            max_body_bytes_in_flight: d.max_body_bytes_in_flight,
            max_body_bytes_in_flight_per_principal: None,
            max_streams_per_principal: None,
        }
    }
}

impl ServerLimitsConfig {
    pub fn connections(&self) -> agentd_server::ConnectionLimits {
        let ms = std::time::Duration::from_millis;
        agentd_server::ConnectionLimits {
            header_read_timeout: ms(self.header_read_timeout_ms),
            body_read_timeout: ms(self.body_read_timeout_ms),
            idle_timeout: ms(self.idle_timeout_ms),
            http2_keep_alive: ms(self.http2_keep_alive_ms),
            max_connections: self.max_connections,
            max_connections_per_peer: self.max_connections_per_peer,
        }
    }
    pub fn json(&self) -> agentd_proto::JsonLimits {
        agentd_proto::JsonLimits { max_depth: self.max_json_depth, max_values: self.max_json_values }
    }
    /// `max_streams_per_principal`, or its default: a quarter of
    /// `max_streams`, at least one.
    pub fn streams_per_principal(&self) -> usize {
        self.max_streams_per_principal.unwrap_or((self.max_streams / 4).max(1))
    }
    /// `max_body_bytes_in_flight_per_principal`, or its default: a quarter
    /// of the budget, at least one body of `max_body_bytes`.
    pub fn body_bytes_per_principal(&self, max_body_bytes: usize) -> usize {
        self.max_body_bytes_in_flight_per_principal
            .unwrap_or_else(|| (self.max_body_bytes_in_flight / 4).max(max_body_bytes))
    }
}

/// How a turn resumes after a restart (`docs/durability.md`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DurabilityConfig {
    /// Tools safe to call again when a restart left a call of theirs
    /// without a result (idempotent ones): exact names, or a prefix ending
    /// in `*`. A call of any other tool fails its turn, naming the tool.
    pub retry_tools: Vec<String>,
}

/// Limits of one turn of the agent loop.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_steps: u32,
    pub max_tokens: u64,
    pub deadline_secs: u64,
    pub max_output_tokens: Option<u32>,
    pub context_tokens: usize,
    pub stream_flush_ms: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let d = agentd_runtime::agent_loop::Limits::default();
        Self {
            max_steps: d.max_steps,
            max_tokens: d.max_tokens,
            deadline_secs: d.deadline.as_secs(),
            max_output_tokens: d.max_output_tokens,
            context_tokens: d.context_tokens,
            stream_flush_ms: u64::try_from(d.flush_interval.as_millis()).unwrap_or(50),
        }
    }
}

impl LimitsConfig {
    pub fn limits(&self) -> agentd_runtime::agent_loop::Limits {
        agentd_runtime::agent_loop::Limits {
            max_steps: self.max_steps,
            max_tokens: self.max_tokens,
            deadline: std::time::Duration::from_secs(self.deadline_secs),
            max_output_tokens: self.max_output_tokens,
            context_tokens: self.context_tokens,
            flush_interval: std::time::Duration::from_millis(self.stream_flush_ms),
            ..Default::default()
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct PushConfig {
    pub enabled: bool,
    pub allow_private: bool,
    pub max_attempts: u32,
    pub timeout_secs: u64,
    /// The first retry delay after a failed delivery, in ms; doubles per attempt.
    pub backoff_ms: u64,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    pub tokens: Vec<TokenConfig>,
    /// This agent's resource identifier: the `aud` JWTs must carry and the
    /// `resource` of its protected-resource metadata. Default: `public_url`.
    pub resource: Option<String>,
    /// OpenID Connect issuers whose JWTs are accepted (`docs/security.md`).
    pub issuers: Vec<IssuerConfig>,
}

impl AuthConfig {
    /// The resource identifier: `auth.resource`, else the public URL.
    pub fn resource<'a>(&'a self, public_url: Option<&'a str>) -> Option<&'a str> {
        self.resource.as_deref().or(public_url)
    }
}

/// One trusted JWT issuer.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IssuerConfig {
    /// The `iss` of its tokens; its discovery document is found under it.
    pub issuer: String,
    /// Where the discovery document is, when not under `issuer`.
    #[serde(default)]
    pub discovery_url: Option<String>,
    /// Or the JWKS itself (no discovery).
    #[serde(default)]
    pub jwks_url: Option<String>,
    /// Accepted `aud` values; default: the resource identifier.
    #[serde(default)]
    pub audience: Vec<String>,
    /// Accepted algorithms; default: every asymmetric one. HS* is refused.
    #[serde(default)]
    pub algorithms: Vec<String>,
    #[serde(default = "IssuerConfig::default_leeway")]
    pub leeway_secs: u64,
    /// The claim naming the caller, and what precedes it in the principal id.
    #[serde(default = "IssuerConfig::default_id_claim")]
    pub id_claim: String,
    #[serde(default = "IssuerConfig::default_id_prefix")]
    pub id_prefix: String,
    /// The claim whose values give the role (`roles`, `groups`, `scope`, a
    /// dotted path like `realm_access.roles`), and the values that do.
    #[serde(default)]
    pub role_claim: Option<String>,
    #[serde(default)]
    pub roles: BTreeMap<String, Role>,
    #[serde(default = "IssuerConfig::default_role")]
    pub default_role: Role,
    /// Least time between two JWKS fetches for an unknown `kid`.
    #[serde(default = "IssuerConfig::default_refresh")]
    pub jwks_refresh_secs: u64,
    /// The JWKS is fetched again when older than this.
    #[serde(default = "IssuerConfig::default_max_age")]
    pub jwks_max_age_secs: u64,
}

impl IssuerConfig {
    fn default_leeway() -> u64 {
        30
    }
    fn default_id_claim() -> String {
        "sub".into()
    }
    fn default_id_prefix() -> String {
        "user:".into()
    }
    fn default_role() -> Role {
        Role::User
    }
    fn default_refresh() -> u64 {
        30
    }
    fn default_max_age() -> u64 {
        3600
    }
}

/// TLS on the listener; with `client_ca`, mutual TLS (`docs/security.md`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain and private key of the listener.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// PEM CA certificates a client certificate must chain to.
    pub client_ca: Option<PathBuf>,
    pub client_identity: ClientIdentityConfig,
}

/// How a client certificate names its principal: `prefix` + the name
/// `from` picks, with the role `roles` gives that name, else `role`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClientIdentityConfig {
    pub from: agentd_server::CertName,
    pub prefix: String,
    pub role: Role,
    pub roles: BTreeMap<String, Role>,
}

impl Default for ClientIdentityConfig {
    fn default() -> Self {
        Self {
            from: agentd_server::CertName::Cn,
            prefix: "agent:".into(),
            role: Role::Agent,
            roles: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// Principal id, e.g. `user:alice`.
    pub id: String,
    pub role: Role,
    /// The token's SHA-256 digest in hex (preferred: the secret never touches the config).
    pub sha256: Option<String>,
    /// Or the token itself by reference: `env:NAME` or `file:/path`.
    pub token: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A tracing filter, e.g. `info` or `agentd=debug`.
    pub level: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 7420)),
            data_dir: PathBuf::from(".agentd"),
            agent: AgentProfile::Default,
            instruction: None,
            public_url: None,
            a2a_version: VersionMode::Lenient,
            max_body_bytes: 4 * 1024 * 1024,
            sse_keep_alive_secs: 15,
            server: ServerLimitsConfig::default(),
            store: StoreConfig::default(),
            replica_id: None,
            replicas: ReplicasConfig::default(),
            model: agentd_runtime::model::ModelConfig::default(),
            limits: LimitsConfig::default(),
            push: PushConfig::default(),
            auth: AuthConfig::default(),
            tls: TlsConfig::default(),
            log: LogConfig::default(),
            commands: CommandsConfig::default(),
            subagents: SubagentsConfig::default(),
            a2a: A2aConfig::default(),
            bridges: BridgesConfig::default(),
            card: CardSection::default(),
            shutdown: ShutdownConfig::default(),
            mcp: agentd_mcp::McpConfig::default(),
            durability: DurabilityConfig::default(),
            telemetry: TelemetryConfig::default(),
            metrics: MetricsConfig::default(),
            ignored_document_keys: Vec::new(),
            unknown_env: Vec::new(),
            document: Default::default(),
            reminders: RemindersConfig::default(),
            events: EventsConfig::default(),
        }
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self { url: None, password: None, sync: StoreSync::Full }
    }
}

impl Default for PushConfig {
    fn default() -> Self {
        Self { enabled: true, allow_private: false, max_attempts: 10, timeout_secs: 10, backoff_ms: 1000 }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { format: LogFormat::Text, level: "info".into() }
    }
}

/// The agent a daemon runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum AgentProfile {
    /// The instruction document's agent over the configured model.
    #[default]
    Default,
    /// The A2A conformance kit's agent (ignores the model).
    Tck,
}

impl AgentProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentProfile::Default => "default",
            AgentProfile::Tck => "tck",
        }
    }
}

impl std::fmt::Display for AgentProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a request without `A2A-Version` speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VersionMode {
    /// A missing header means 1.0.
    #[default]
    Lenient,
    /// A missing header means 0.3, which agentd does not serve.
    Strict,
}

/// When SQLite syncs a commit to disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreSync {
    /// Every commit group: survives a power loss.
    #[default]
    Full,
    /// Survives a process crash, not a power loss.
    Normal,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// For people.
    #[default]
    Text,
    /// JSON lines, for collectors.
    Json,
}

/// A token's role (`agentd_core::PrincipalRole` as configuration writes it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Operator,
    User,
    Agent,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Operator => "operator",
            Role::User => "user",
            Role::Agent => "agent",
        }
    }

    pub fn principal_role(self) -> agentd_core::PrincipalRole {
        match self {
            Role::Operator => agentd_core::PrincipalRole::Operator,
            Role::User => agentd_core::PrincipalRole::User,
            Role::Agent => agentd_core::PrincipalRole::Agent,
        }
    }
}

/// A listen address: `IP:PORT`, or `HOST:PORT` with the host name resolved
/// now (an IPv4 address first: `localhost` then means 127.0.0.1, where the
/// client verbs' default URL points).
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let text = text.trim();
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("{text:?} is not HOST:PORT (127.0.0.1:7420, localhost:7420, [::1]:7420)"));
    };
    let port: u16 = port.parse().map_err(|_| format!("{text:?}: {port:?} is not a port number"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!(
            "{text:?} has no host: write 127.0.0.1:{port} (or 0.0.0.0:{port} for every interface)"
        ));
    }
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{text:?}: the host name {host:?} does not resolve ({e})"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{text:?}: the host name {host:?} has no address"))
}

fn listen_address<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let text = String::deserialize(d)?;
    parse_listen(&text).map_err(serde::de::Error::custom)
}

fn optional_listen_address<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
    match Option::<String>::deserialize(d)? {
        Some(text) => parse_listen(&text).map(Some).map_err(serde::de::Error::custom),
        None => Ok(None),
    }
}

/// `--model`: one of the model kinds, with clap's list of possible values.
fn model_kind() -> impl clap::builder::TypedValueParser<Value = agentd_runtime::model::ModelKind> {
    use agentd_runtime::model::ModelKind;
    clap::builder::TypedValueParser::map(clap::builder::PossibleValuesParser::new(ModelKind::NAMES), |name| {
        ModelKind::from_name(&name).expect("a possible value is a kind")
    })
}

/// Resolves a secret reference: `env:NAME` or `file:/path`. Inline secrets
/// are refused so they cannot leak through a config file or a log.
pub fn resolve_secret(reference: &str) -> anyhow::Result<String> {
    if let Some(name) = reference.strip_prefix("env:") {
        std::env::var(name).with_context(|| format!("environment variable {name} is not set"))
    } else if let Some(path) = reference.strip_prefix("file:") {
        Ok(std::fs::read_to_string(path)
            .with_context(|| format!("cannot read secret file {path}"))?
            .trim()
            .to_owned())
    } else {
        bail!("secrets are given by reference: `env:NAME` or `file:/path`")
    }
}

/// The process's `AGENTD_*` variables.
pub fn process_env() -> BTreeMap<String, String> {
    std::env::vars().filter(|(k, _)| k.starts_with("AGENTD_")).collect()
}

/// Builds the effective configuration.
///
/// Precedence, leaf by leaf: flags, then `AGENTD_*` variables, then the
/// config file, then the instruction document's `!config` blocks (merged
/// under the file, earlier blocks winning over later ones), then defaults.
pub fn load(flags: &ServeFlags) -> anyhow::Result<Config> {
    load_from(flags, &process_env())
}

/// [`load`] with the variables of `env` instead of the process's.
pub fn load_from(flags: &ServeFlags, env: &BTreeMap<String, String>) -> anyhow::Result<Config> {
    let var = |name: &str| env.get(name).filter(|v| !v.is_empty()).cloned();
    let config_path = flags.config.clone().or_else(|| var("AGENTD_CONFIG").map(PathBuf::from));
    let (mut tree, origin) = match &config_path {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read config file {}", path.display()))?;
            let mut tree: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text)
                .with_context(|| format!("invalid config file {}", path.display()))?;
            paths::relative_to(&mut tree, path.parent().unwrap_or(std::path::Path::new("")));
            (tree, format!("config file {}", path.display()))
        }
        None => (serde_yaml_ng::Value::Null, "configuration".to_owned()),
    };
    let overlay = env::overlay(env)?;
    for (variable, _, value) in &overlay.set {
        env::set_path(&mut tree, &variable.path, value.clone());
    }
    let document = flags
        .instruction
        .clone()
        .or_else(|| tree.get("instruction").and_then(|v| v.as_str()).map(PathBuf::from));
    let mut instruction = crate::instruction::load(document.as_deref())?;
    let mut fragments = std::mem::take(&mut instruction.config);
    if let Some(dir) = document.as_deref().and_then(std::path::Path::parent) {
        for fragment in &mut fragments {
            paths::relative_to(&mut fragment.value, dir);
        }
    }
    store_shorthand(&mut tree);
    let mut from_document = Vec::new();
    let mut ignored = Vec::new();
    for fragment in &fragments {
        merge_under(&mut tree, &fragment.value, &mut Vec::new(), &mut from_document);
    }
    let mut cfg = loop {
        let attempt = tree.clone();
        let attempt =
            if attempt.is_null() { serde_yaml_ng::Value::Mapping(Default::default()) } else { attempt };
        let err = match serde_path_to_error::deserialize::<_, Config>(attempt) {
            Ok(cfg) => break cfg,
            Err(e) => e,
        };
        // A key agentd does not know, coming from the document: the
        // specification's dialect has settings agentd has no use for
        // (`limits.max_runs`, say). They are skipped with a warning; the
        // config file stays strict.
        let path: Vec<String> = err.path().to_string().split('.').map(str::to_owned).collect();
        if let Some((variable, text, _)) = overlay.set.iter().find(|(v, _, _)| path.starts_with(&v.path)) {
            bail!("{}={text:?}: {}: {}", variable.name, err.path(), err.inner());
        }
        let copied = from_document.iter().any(|p| path.starts_with(p));
        if err.inner().to_string().starts_with("unknown field") && copied && !path.is_empty() {
            remove_path(&mut tree, &path);
            ignored.push(path.join("."));
            continue;
        }
        let blocks: Vec<&str> = fragments.iter().map(|f| f.origin.as_str()).collect();
        match blocks.is_empty() {
            true => bail!("invalid {origin}: {}: {}", err.path(), err.inner()),
            false => bail!(
                "invalid {origin} (with the !config blocks at {}): {}: {}",
                blocks.join(", "),
                err.path(),
                err.inner()
            ),
        }
    };
    if let Some(v) = &flags.instruction {
        cfg.instruction = Some(v.clone());
    }
    if let Some(v) = flags.model {
        cfg.model.kind = v;
    }
    apply_model_aliases(&mut cfg.model, flags, &var);
    if let Some(v) = &flags.model_script {
        cfg.model.script = Some(v.clone());
    }
    if let Some(v) = var("AGENTD_A2A_PEERS") {
        cfg.a2a.merge_specs(split_list(&v).iter().map(String::as_str), "AGENTD_A2A_PEERS")?;
    }
    cfg.a2a.merge_specs(flags.a2a_peers.iter().map(String::as_str), "--a2a-peer")?;
    for spec in &flags.mcp_servers {
        let Some((name, url)) = spec.split_once('=') else {
            bail!("--mcp-server {spec:?}: write it as NAME=URL");
        };
        cfg.mcp.servers.retain(|s| s.name != name);
        cfg.mcp.servers.push(agentd_mcp::ServerConfig {
            name: name.to_owned(),
            http: Some(agentd_mcp::HttpConfig { url: url.to_owned(), headers: Default::default() }),
            stdio: None,
            tools: Default::default(),
            policy: Default::default(),
            timeout_secs: agentd_mcp::config::DEFAULT_TIMEOUT_SECS,
        });
    }
    if let Some(v) = flags.listen {
        cfg.listen = v;
    }
    if let Some(v) = flags.metrics_listen {
        cfg.metrics.listen = Some(v);
    }
    if let Some(v) = &flags.data_dir {
        cfg.data_dir.clone_from(v);
    }
    if let Some(v) = &flags.store {
        cfg.store.url = Some(v.clone());
    }
    if let Some(v) = &flags.replica_id {
        cfg.replica_id = Some(v.clone());
    }
    if let Some(v) = flags.agent {
        cfg.agent = v;
    }
    if let Some(v) = &flags.public_url {
        cfg.public_url = Some(v.clone());
    }
    if flags.push_allow_private {
        cfg.push.allow_private = true;
    }
    cfg.ignored_document_keys = ignored;
    cfg.unknown_env = overlay.unknown;
    cfg.document = crate::instruction::Preloaded::new(document, instruction);
    validate(&cfg)?;
    Ok(cfg)
}

/// `store: postgres://…` is short for `store: {url: postgres://…}`.
fn store_shorthand(tree: &mut serde_yaml_ng::Value) {
    if let Some(store) = tree.get_mut("store")
        && let Some(url) = store.as_str()
    {
        let mut mapping = serde_yaml_ng::Mapping::new();
        mapping.insert("url".into(), url.into());
        *store = serde_yaml_ng::Value::Mapping(mapping);
    }
}

/// Copies every leaf of `under` that `tree` does not set: `tree` wins at
/// each leaf, mappings merge key by key, anything else is a leaf. The path
/// of every key copied is pushed onto `copied`.
fn merge_under(
    tree: &mut serde_yaml_ng::Value,
    under: &serde_yaml_ng::Value,
    at: &mut Vec<String>,
    copied: &mut Vec<Vec<String>>,
) {
    use serde_yaml_ng::Value;
    match (tree, under) {
        (Value::Mapping(mine), Value::Mapping(theirs)) => {
            for (k, v) in theirs {
                at.push(k.as_str().unwrap_or_default().to_owned());
                match mine.get_mut(k) {
                    Some(existing) => merge_under(existing, v, at, copied),
                    None => {
                        mine.insert(k.clone(), v.clone());
                        copied.push(at.clone());
                    }
                }
                at.pop();
            }
        }
        (tree @ Value::Null, v) => {
            *tree = v.clone();
            copied.push(at.clone());
        }
        _ => {}
    }
}

fn remove_path(tree: &mut serde_yaml_ng::Value, path: &[String]) {
    match path {
        [] => {}
        [last] => {
            if let Some(m) = tree.as_mapping_mut() {
                m.remove(last.as_str());
            }
        }
        [first, rest @ ..] => {
            if let Some(child) = tree.get_mut(first.as_str()) {
                remove_path(child, rest);
            }
        }
    }
}

/// `--model-url` and `--model-name` set the endpoints and model name of the
/// remote provider in use, and so do `AGENTD_MODEL_URL` and
/// `AGENTD_MODEL_NAME` (whose keys are the openai ones) for `anthropic`.
fn apply_model_aliases(
    model: &mut agentd_runtime::model::ModelConfig,
    flags: &ServeFlags,
    var: &dyn Fn(&str) -> Option<String>,
) {
    let anthropic = model.kind == agentd_runtime::model::ModelKind::Anthropic;
    let env = |name: &str| if anthropic { var(name) } else { None };
    let url = flags.model_url.clone().or_else(|| env("AGENTD_MODEL_URL"));
    let name = flags.model_name.clone().or_else(|| env("AGENTD_MODEL_NAME"));
    if let Some((endpoints, model_name)) = model.remote_mut() {
        if let Some(v) = url {
            *endpoints = split_list(&v);
        }
        if let Some(v) = name {
            *model_name = v;
        }
    }
}

fn split_list(v: &str) -> Vec<String> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

fn validate(cfg: &Config) -> anyhow::Result<()> {
    let kind = cfg.model.kind;
    if let Some((endpoints, name)) = cfg.model.remote() {
        if endpoints.is_empty() {
            bail!(
                "the {kind} model needs the server's base URL: --model-url http://127.0.0.1:8080/v1 \
                 (AGENTD_MODEL_URL, or model.{kind}.endpoints in the config file)"
            );
        }
        if name.trim().is_empty() {
            bail!(
                "the {kind} model needs the model's name: --model-name NAME \
                 (AGENTD_MODEL_NAME, or model.{kind}.model in the config file)"
            );
        }
    }
    check_log_filter(&cfg.log.level)?;
    let store = cfg.store.kind()?;
    if let StoreKind::Postgres(url) = store {
        // The URL's form, and no password in it, before anything starts.
        agentd_store::PostgresOptions { url: url.to_owned(), password: None }
            .config()
            .map_err(store_url_error)?;
    }
    if let Some(reference) = &cfg.store.password {
        if store == StoreKind::Sqlite {
            bail!("store.password is for a PostgreSQL store: set store.url (--store, AGENTD_STORE) too");
        }
        if !(reference.starts_with("env:") || reference.starts_with("file:")) {
            bail!("store.password is given by reference: `env:NAME` or `file:/path`");
        }
    }
    if cfg.mcp.max_tools == 0 {
        bail!("mcp.max_tools must be at least 1");
    }
    for (i, server) in cfg.mcp.servers.iter().enumerate() {
        agentd_mcp::from_config(server).map_err(|e| anyhow::anyhow!("mcp.servers[{i}]: {e}"))?;
    }
    let l = &cfg.limits;
    if l.max_steps == 0 || l.max_tokens == 0 || l.deadline_secs == 0 || l.stream_flush_ms == 0 {
        bail!("limits.max_steps, max_tokens, deadline_secs and stream_flush_ms must be at least 1");
    }
    if cfg.max_body_bytes < 1024 {
        bail!("max_body_bytes must be at least 1024");
    }
    let srv = &cfg.server;
    if [srv.header_read_timeout_ms, srv.body_read_timeout_ms, srv.idle_timeout_ms, srv.http2_keep_alive_ms]
        .contains(&0)
    {
        bail!(
            "server.header_read_timeout_ms, body_read_timeout_ms, idle_timeout_ms and http2_keep_alive_ms must be at least 1"
        );
    }
    if srv.max_connections == 0 || srv.max_connections > 1_000_000 {
        bail!("server.max_connections must be between 1 and 1000000");
    }
    if srv.max_connections_per_peer == 0 || srv.max_connections_per_peer > srv.max_connections {
        bail!("server.max_connections_per_peer must be between 1 and server.max_connections");
    }
    if srv.max_streams == 0 || srv.max_json_values == 0 {
        bail!("server.max_streams and server.max_json_values must be at least 1");
    }
    // serde_json stops at 128 levels on its own, as a parse error.
    if !(1..=100).contains(&srv.max_json_depth) {
        bail!("server.max_json_depth must be between 1 and 100");
    }
    if srv.max_body_bytes_in_flight < cfg.max_body_bytes {
        bail!("server.max_body_bytes_in_flight must be at least max_body_bytes (one request must fit)");
    }
    if let Some(n) = srv.max_streams_per_principal
        && !(1..=srv.max_streams).contains(&n)
    {
        bail!("server.max_streams_per_principal must be between 1 and server.max_streams");
    }
    if let Some(n) = srv.max_body_bytes_in_flight_per_principal
        && !(cfg.max_body_bytes..=srv.max_body_bytes_in_flight).contains(&n)
    {
        bail!(
            "server.max_body_bytes_in_flight_per_principal must be between max_body_bytes and \
             server.max_body_bytes_in_flight"
        );
    }
    if cfg.sse_keep_alive_secs == 0 {
        bail!("sse_keep_alive_secs must be at least 1");
    }
    if cfg.push.backoff_ms == 0 {
        bail!("push.backoff_ms must be at least 1");
    }
    cfg.commands.grants()?;
    let s = &cfg.subagents;
    if s.max_depth == 0 || s.max_live == 0 || s.max_tokens == 0 {
        bail!("subagents.max_depth, max_live and max_tokens must be at least 1");
    }
    if cfg.a2a.poll_interval_ms == 0 || cfg.a2a.request_timeout_secs == 0 {
        bail!("a2a.poll_interval_ms and a2a.request_timeout_secs must be at least 1");
    }
    validate_card(&cfg.card)?;
    for t in &cfg.auth.tokens {
        if t.sha256.is_some() == t.token.is_some() {
            bail!("auth.tokens[{}]: give exactly one of `sha256` or `token`", t.id);
        }
    }
    let tls = &cfg.tls;
    if tls.cert.is_some() != tls.key.is_some() {
        bail!("tls.cert and tls.key go together: give both, or neither for cleartext");
    }
    if tls.client_ca.is_some() && tls.cert.is_none() {
        bail!(
            "tls.client_ca needs tls.cert and tls.key: client certificates are asked for in a TLS handshake"
        );
    }
    for (i, issuer) in cfg.auth.issuers.iter().enumerate() {
        if issuer.audience.is_empty() && cfg.auth.resource(cfg.public_url.as_deref()).is_none() {
            bail!(
                "auth.issuers[{i}]: no audience: set auth.resource (AGENTD_AUTH_RESOURCE) to this agent's \
                 resource identifier, the `aud` its tokens carry (or public_url, or the issuer's audience)"
            );
        }
    }
    cfg.telemetry.validate()?;
    let credentials = !cfg.auth.tokens.is_empty() || !cfg.auth.issuers.is_empty() || tls.client_ca.is_some();
    if !cfg.listen.ip().is_loopback() && !credentials {
        bail!(
            "refusing to listen on {} without credentials: anyone who can reach it could act as an operator. \
             Configure auth.tokens, auth.issuers or tls.client_ca in the config file, or listen on 127.0.0.1",
            cfg.listen
        );
    }
    if let Some(m) = cfg.metrics.listen
        && !m.ip().is_loopback()
        && !cfg.metrics.public
        && !credentials
    {
        bail!(
            "metrics.listen {m} is not loopback and scrapes there need an operator's credentials, but none are \
             configured: set metrics.public: true to let anyone who reaches it read the metrics, or configure \
             auth.tokens, auth.issuers or tls.client_ca"
        );
    }
    Ok(())
}

fn validate_card(card: &CardSection) -> anyhow::Result<()> {
    let url = |key: &str, v: &str| -> anyhow::Result<()> {
        match reqwest::Url::parse(v) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(()),
            _ => bail!("card.{key} {v:?} must be an http:// or https:// URL"),
        }
    };
    for (key, v) in [("name", &card.name), ("description", &card.description)] {
        if v.as_deref().is_some_and(|v| v.trim().is_empty()) {
            bail!("card.{key} must not be empty (leave it out to take it from the instruction document)");
        }
    }
    if let Some(u) = &card.documentation_url {
        url("documentation_url", u)?;
    }
    if let Some(p) = &card.provider {
        if p.organization.trim().is_empty() {
            bail!("card.provider.organization must not be empty");
        }
        url("provider.url", &p.url)?;
    }
    Ok(())
}

/// The filter the log is written with: `level`, with rmcp's own lines at
/// `warn` when the level is `info`. rmcp logs each connection's whole
/// initialize result, a Rust debug dump, at INFO (agentd logs a line of its
/// own for it); at `debug`, or when the filter names rmcp, it is as asked.
pub fn log_directives(level: &str) -> String {
    let directives: Vec<&str> = level.split(',').map(str::trim).filter(|d| !d.is_empty()).collect();
    let names_rmcp = directives.iter().any(|d| d.starts_with("rmcp"));
    let bare = directives.iter().rev().find(|d| !d.contains(['=', '['])).map(|d| d.to_ascii_lowercase());
    if names_rmcp || bare.as_deref() != Some("info") {
        return level.to_owned();
    }
    format!("{level},rmcp=warn")
}

pub fn log_filter_error(level: &str, e: &dyn std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!(
        "the log filter {level:?} (AGENTD_LOG or log.level) is not valid: {e}; \
         write a level (`info`, `debug`) or directives such as `agentd=debug,info`"
    )
}

const LEVELS: &[&str] = &["off", "error", "warn", "info", "debug", "trace"];

/// A tracing filter that does what it says. `EnvFilter` reads a bare word
/// (`verbose`) as a target at every level, which silently logs nothing;
/// here a bare word must be a level, and a target is written `TARGET=LEVEL`.
fn check_log_filter(level: &str) -> anyhow::Result<()> {
    if let Err(e) = tracing_subscriber::EnvFilter::try_new(level) {
        return Err(log_filter_error(level, &e));
    }
    for directive in level.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let bare = !directive.contains(['=', '[']);
        if bare && !LEVELS.contains(&directive.to_ascii_lowercase().as_str()) {
            return Err(log_filter_error(
                level,
                &format!("{directive:?} is not a level ({})", LEVELS.join(", ")),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod env_table;

#[cfg(test)]
mod tests {
    use super::{ServeFlags, StoreKind, StoreSync, load_from};
    use std::collections::BTreeMap;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn the_store_is_sqlite_unless_a_postgres_url_is_given() {
        let cfg = load_from(&ServeFlags::default(), &env(&[])).expect("defaults");
        assert_eq!(cfg.store.kind().expect("kind"), StoreKind::Sqlite, "no flag: SQLite, as before");
        assert_eq!(cfg.store.sync, StoreSync::Full, "SQLite syncs every commit group unless told otherwise");
        let url = "postgres://agentd@db.example.com:5432/agentd";
        let cfg = load_from(&ServeFlags::default(), &env(&[("AGENTD_STORE", url)])).expect("AGENTD_STORE");
        assert_eq!(cfg.store.kind().expect("kind"), StoreKind::Postgres(url));
        let flags = ServeFlags { store: Some(url.to_owned()), ..ServeFlags::default() };
        let cfg = load_from(&flags, &env(&[])).expect("--store");
        assert_eq!(cfg.store.kind().expect("kind"), StoreKind::Postgres(url));
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("agentd.yaml");
        std::fs::write(&file, format!("store: {url}\n")).expect("write config");
        let flags = ServeFlags { config: Some(file), ..ServeFlags::default() };
        let cfg = load_from(&flags, &env(&[])).expect("the shorthand");
        assert_eq!(cfg.store.kind().expect("kind"), StoreKind::Postgres(url), "store: URL is store.url");
    }

    #[test]
    fn a_bad_store_setting_is_refused_naming_its_key() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("AGENTD_STORE", "mysql://db/agentd")], "store.url"),
            (&[("AGENTD_STORE_PASSWORD", "env:PW")], "store.password is for a PostgreSQL store"),
            (&[("AGENTD_STORE", "postgres://a@db/x"), ("AGENTD_STORE_PASSWORD", "hunter2")], "by reference"),
        ];
        for (vars, says) in cases {
            let e = load_from(&ServeFlags::default(), &env(vars)).expect_err("refused").to_string();
            assert!(e.contains(says), "{vars:?}: {e}");
            assert!(!e.contains("hunter2"), "the password is not shown: {e}");
        }
        let inline = env(&[("AGENTD_STORE", "postgres://a:hunter2@db/x")]);
        let e = load_from(&ServeFlags::default(), &inline).expect_err("a password in the URL").to_string();
        assert!(e.contains("store.password") && !e.contains("hunter2"), "{e}");
    }

    #[test]
    fn rmcp_logs_at_warn_unless_asked_for() {
        use super::log_directives;
        assert_eq!(log_directives("info"), "info,rmcp=warn");
        assert_eq!(log_directives("agentd=debug,INFO"), "agentd=debug,INFO,rmcp=warn");
        for as_asked in ["debug", "warn", "off", "rmcp=info,info", "agentd=debug"] {
            assert_eq!(log_directives(as_asked), as_asked);
        }
    }

    #[test]
    fn a_log_filter_must_say_something_real() {
        for ok in ["info", "DEBUG", "agentd=debug,info", "warn,agentd_server=trace"] {
            assert!(super::check_log_filter(ok).is_ok(), "{ok}");
        }
        for bad in ["verbose", "info,lots", "agentd=loud"] {
            let e = super::check_log_filter(bad).unwrap_err().to_string();
            assert!(e.contains("AGENTD_LOG") && e.contains(bad), "{bad}: {e}");
        }
    }

    /// What identity settings a listener needs: a non-loopback one runs with
    /// mutual TLS alone; TLS files come in pairs; a JWT issuer needs an audience.
    #[test]
    fn identity_settings_are_checked_together() {
        use super::{ServeFlags, load_from};
        use std::collections::BTreeMap;
        let load = |pairs: &[(&str, &str)]| {
            let mut env: BTreeMap<String, String> =
                pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            env.insert("AGENTD_LISTEN".into(), "0.0.0.0:7420".into());
            load_from(&ServeFlags::default(), &env).map_err(|e| format!("{e:#}"))
        };
        let (cert, key, ca) = (
            ("AGENTD_TLS_CERT", "/c.pem"),
            ("AGENTD_TLS_KEY", "/k.pem"),
            ("AGENTD_TLS_CLIENT_CA", "/ca.pem"),
        );
        assert!(load(&[cert, key, ca]).is_ok(), "mutual TLS alone protects a public listener");
        assert!(load(&[cert, key]).unwrap_err().contains("without credentials"));
        assert!(load(&[cert, ca]).unwrap_err().contains("tls.cert and tls.key go together"));
        let issuer = ("AGENTD_AUTH_ISSUERS", "[{issuer: 'https://idp.example.com'}]");
        assert!(load(&[issuer]).unwrap_err().contains("auth.resource"));
        assert!(load(&[issuer, ("AGENTD_PUBLIC_URL", "https://agent.example.com")]).is_ok());
    }

    /// A listen address may name its host; one that does not resolve is
    /// refused naming the variable that gave it.
    #[test]
    fn listen_addresses_resolve_host_names() {
        let loopback = |a: std::net::SocketAddr| a.ip().is_loopback();
        assert!(super::parse_listen("localhost:7420").is_ok_and(|a| loopback(a) && a.port() == 7420));
        assert_eq!(super::parse_listen("[::1]:80").unwrap().to_string(), "[::1]:80");
        let cfg =
            load_from(&ServeFlags::default(), &env(&[("AGENTD_LISTEN", "localhost:0")])).expect("a name");
        assert!(loopback(cfg.listen), "{}", cfg.listen);
        let e = load_from(&ServeFlags::default(), &env(&[("AGENTD_LISTEN", "no-such-host.invalid:1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("AGENTD_LISTEN") && e.contains("does not resolve"), "{e}");
        let e = super::parse_listen("127.0.0.1:http").unwrap_err();
        assert!(e.contains("not a port number"), "{e}");
    }

    /// A metrics listener nobody could scrape is refused: not loopback, not
    /// public, and no credentials an operator could show.
    #[test]
    fn a_metrics_listener_nobody_could_scrape_is_refused() {
        use super::{ServeFlags, load_from};
        use std::collections::BTreeMap;
        let load = |pairs: &[(&str, &str)]| {
            let env: BTreeMap<String, String> =
                pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            load_from(&ServeFlags::default(), &env).map_err(|e| format!("{e:#}"))
        };
        let public = ("AGENTD_METRICS_LISTEN", "0.0.0.0:9464");
        let e = load(&[public]).unwrap_err();
        assert!(e.contains("metrics.listen 0.0.0.0:9464") && e.contains("metrics.public"), "{e}");
        assert!(load(&[public, ("AGENTD_METRICS_PUBLIC", "true")]).is_ok());
        assert!(
            load(&[public, ("AGENTD_AUTH_TOKENS", "[{id: 'operator:ops', role: operator, sha256: 'ab'}]")])
                .is_ok()
        );
        assert!(load(&[("AGENTD_METRICS_LISTEN", "127.0.0.1:9464")]).is_ok(), "loopback: open");
    }
}
