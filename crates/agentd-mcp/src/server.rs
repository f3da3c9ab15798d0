//! One MCP server: its connection, made when first needed and again after
//! it was lost (with backoff between failed attempts), its tool list
//! (listed again after `notifications/tools/list_changed`), and its calls,
//! each bounded by the server's timeout. A server that is down answers at
//! once with an error saying why, so a turn never waits on it.

use crate::glob::ToolFilter;
use crate::stdio;
use agentd_client::backoff::Backoff;
use agentd_core::{Background, PushUrlPolicy};
use agentd_runtime::model::SecretRef;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation, JsonObject, Tool,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;
use tokio::time::Instant;

/// How long a stdio child that failed its handshake gets to finish writing
/// its stderr into the error.
const STDERR_DRAIN: Duration = Duration::from_secs(2);

/// The least a connection (start, handshake, tool list) is given, whatever
/// the calls' timeout: an interpreter that loads its SDK takes seconds.
const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A server ready to be connected to.
#[derive(Clone)]
pub struct ServerSpec {
    pub name: String,
    pub transport: TransportSpec,
    pub filter: ToolFilter,
    pub timeout: Duration,
    /// Which calls are made, asked about or denied.
    pub policy: crate::policy::PolicyConfig,
}

#[derive(Clone)]
pub enum TransportSpec {
    Http(HttpSpec),
    Stdio(StdioSpec),
}

#[derive(Clone)]
pub struct HttpSpec {
    pub url: String,
    pub headers: Vec<Header>,
    /// Checked before each connection: the SSRF policy, for servers that
    /// documents from the wire declare. `None` for the operator's own.
    pub url_policy: Option<Arc<dyn PushUrlPolicy>>,
}

/// A header whose value is a secret given by reference, after `prefix`
/// (`Bearer `).
#[derive(Clone, Debug)]
pub struct Header {
    pub name: String,
    pub prefix: String,
    pub secret: SecretRef,
}

#[derive(Clone, Debug)]
pub struct StdioSpec {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Why a call gave no result.
#[derive(Debug)]
pub enum CallError {
    /// The server could not be reached, or the call failed on the way.
    Unavailable(String),
    /// The server answered with a JSON-RPC error.
    Refused(String),
    /// The server did not answer in time.
    Timeout(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Unavailable(s) | CallError::Refused(s) | CallError::Timeout(s) => f.write_str(s),
        }
    }
}

/// The client side of a connection: notes a changed tool list.
struct Handler {
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.stale.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentd", env!("CARGO_PKG_VERSION")),
        )
    }
}

struct Conn {
    service: RunningService<RoleClient, Handler>,
    /// The server's tools the filter admits.
    tools: Vec<Tool>,
    stale: Arc<AtomicBool>,
    /// Which connection this is, so a failure drops only its own.
    generation: u64,
}

#[derive(Default)]
struct State {
    conn: Option<Conn>,
    /// Failed connection attempts since the last success.
    failures: u32,
    retry_at: Option<Instant>,
    last_error: String,
}

pub struct Server {
    pub spec: ServerSpec,
    http: agentd_client::LazyHttp,
    state: Mutex<State>,
    generations: AtomicU64,
    backoff: Backoff,
}

impl Server {
    pub fn new(spec: ServerSpec, http: agentd_client::LazyHttp) -> Self {
        Self {
            spec,
            http,
            state: Mutex::new(State::default()),
            generations: AtomicU64::new(0),
            backoff: Backoff::equal_jitter(Duration::from_secs(1), Duration::from_secs(60)),
        }
    }

    /// The server's tools the agent may have; connects (or lists again)
    /// when needed. An error says why there are none.
    pub async fn tools(&self, background: &Background) -> Result<Vec<Tool>, String> {
        let mut st = self.state.lock().await;
        self.ensure(&mut st, background).await?;
        let conn = st.conn.as_mut().expect("ensured");
        if conn.stale.swap(false, Ordering::SeqCst) {
            match self.list(&conn.service).await {
                Ok(tools) => conn.tools = tools,
                Err(e) => {
                    let e = format!("the MCP server {} failed to list its tools again: {e}", self.spec.name);
                    self.lost(&mut st, e.clone());
                    return Err(e);
                }
            }
        }
        Ok(st.conn.as_ref().map(|c| c.tools.clone()).unwrap_or_default())
    }

    /// Calls the server's tool `tool`, which the filter must admit, with
    /// `meta` as the request's `_meta` when given.
    pub async fn call(
        &self,
        tool: &str,
        args: JsonObject,
        meta: Option<JsonObject>,
        background: &Background,
    ) -> Result<CallToolResult, CallError> {
        let name = &self.spec.name;
        if !self.spec.filter.admits(tool) {
            return Err(CallError::Refused(format!(
                "the tool {tool} of the MCP server {name} is not allowed here"
            )));
        }
        let (peer, generation) = {
            let mut st = self.state.lock().await;
            self.ensure(&mut st, background).await.map_err(CallError::Unavailable)?;
            let conn = st.conn.as_ref().expect("ensured");
            (conn.service.peer().clone(), conn.generation)
        };
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(args);
        params.meta = with_trace(meta.map(Into::into));
        let secs = self.spec.timeout.as_secs();
        match tokio::time::timeout(self.spec.timeout, peer.call_tool(params)).await {
            Err(_) => Err(CallError::Timeout(format!(
                "the MCP server {name} did not answer the call of {tool} within {secs} s (its timeout_secs)"
            ))),
            Ok(Ok(result)) => Ok(result),
            Ok(Err(ServiceError::McpError(e))) => Err(CallError::Refused(format!(
                "the MCP server {name} refused the call of {tool}: {}",
                e.message
            ))),
            Ok(Err(e)) => {
                let why = format!("the MCP server {name} failed during the call of {tool}: {e}");
                let mut st = self.state.lock().await;
                if st.conn.as_ref().is_some_and(|c| c.generation == generation) {
                    self.lost(&mut st, why.clone());
                }
                Err(CallError::Unavailable(why))
            }
        }
    }

    /// Connects at start, so a stdio server runs from the start and a
    /// server that is down is in the log at once.
    pub async fn warm(&self, background: &Background) {
        let mut st = self.state.lock().await;
        if let Err(e) = self.ensure(&mut st, background).await {
            tracing::warn!(mcp_server = %self.spec.name, error = %e, "MCP server not available at start; retried when its tools are needed");
        }
    }

    fn lost(&self, st: &mut State, why: String) {
        tracing::warn!(mcp_server = %self.spec.name, error = %why, "MCP server connection lost");
        st.conn = None;
        st.last_error = why;
    }

    /// Makes sure there is a live connection, or says why there is none.
    async fn ensure(&self, st: &mut State, background: &Background) -> Result<(), String> {
        if st.conn.as_ref().is_some_and(|c| c.service.is_closed()) {
            self.lost(st, format!("the MCP server {} closed the connection", self.spec.name));
        }
        if st.conn.is_some() {
            return Ok(());
        }
        if let Some(at) = st.retry_at {
            let now = Instant::now();
            if now < at {
                return Err(format!(
                    "{}; the next attempt to connect is in {} s",
                    st.last_error,
                    (at - now).as_secs().max(1)
                ));
            }
        }
        let limit = self.spec.timeout.max(MIN_CONNECT_TIMEOUT);
        match tokio::time::timeout(limit, self.connect(background)).await {
            Ok(Ok(conn)) => {
                let name = &self.spec.name;
                let info = conn.service.peer().peer_info();
                let implementation = info.as_ref().and_then(|i| i.server_info.as_ref());
                let (server, version) =
                    implementation.map_or(("?", "?"), |i| (i.name.as_str(), i.version.as_str()));
                let tools = conn.tools.len();
                tracing::info!(mcp_server = %name, server, version, tools, "MCP server {name} connected: {server} {version}, {tools} tools");
                tracing::debug!(mcp_server = %name, initialize = ?info, "MCP server {name}'s initialize result");
                st.conn = Some(conn);
                st.failures = 0;
                st.retry_at = None;
                Ok(())
            }
            Ok(Err(e)) => Err(self.failed(st, e)),
            Err(_) => Err(self.failed(
                st,
                format!(
                    "the MCP server {} did not complete its handshake within {} s",
                    self.spec.name,
                    limit.as_secs()
                ),
            )),
        }
    }

    fn failed(&self, st: &mut State, why: String) -> String {
        st.retry_at = Some(Instant::now() + self.backoff.delay(st.failures));
        st.failures = st.failures.saturating_add(1);
        st.last_error = why.clone();
        tracing::warn!(mcp_server = %self.spec.name, error = %why, failures = st.failures, "MCP server connection failed");
        why
    }

    async fn connect(&self, background: &Background) -> Result<Conn, String> {
        let name = &self.spec.name;
        let stale = Arc::new(AtomicBool::new(false));
        let handler = Handler { stale: stale.clone() };
        let service = match &self.spec.transport {
            TransportSpec::Http(h) => {
                if let Some(policy) = &h.url_policy {
                    policy
                        .check(&h.url)
                        .await
                        .map_err(|e| format!("the MCP server {name} may not be reached: {e}"))?;
                }
                let mut headers = HashMap::new();
                for Header { name: k, prefix, secret } in &h.headers {
                    let secret =
                        secret.resolve().map_err(|e| format!("the MCP server {name}'s header {k}: {e}"))?;
                    let key = http::HeaderName::try_from(k.as_str())
                        .map_err(|e| format!("the MCP server {name}'s header {k:?}: {e}"))?;
                    let mut value = http::HeaderValue::try_from(format!("{prefix}{}", secret.expose()))
                        .map_err(|_| {
                            format!("the MCP server {name}'s header {k}: the secret is no header value")
                        })?;
                    value.set_sensitive(true);
                    headers.insert(key, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(h.url.clone())
                    .custom_headers(headers)
                    .reinit_on_expired_session(true);
                let transport = StreamableHttpClientTransport::with_client(self.http.get()?.clone(), config);
                handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("the MCP server {name} at {} failed its handshake: {e}", h.url))?
            }
            TransportSpec::Stdio(s) => {
                let child = stdio::spawn(name, s, background).map_err(|e| {
                    format!("the MCP server {name} could not be started ({}): {e}", s.command)
                })?;
                let stdio::Child { transport, stderr, mut reader } = child;
                match handler.serve(transport).await {
                    Ok(service) => service,
                    Err(e) => {
                        // The child is gone or going: let it finish its stderr.
                        let _ = tokio::time::timeout(STDERR_DRAIN, &mut reader).await;
                        let said = stderr.text();
                        let said =
                            if said.is_empty() { String::new() } else { format!("; its stderr:\n{said}") };
                        return Err(format!(
                            "the MCP server {name} ({}) failed its handshake: {e}{said}",
                            s.command
                        ));
                    }
                }
            }
        };
        let tools = self
            .list(&service)
            .await
            .map_err(|e| format!("the MCP server {name} failed to list its tools: {e}"))?;
        let generation = self.generations.fetch_add(1, Ordering::SeqCst);
        Ok(Conn { service, tools, stale, generation })
    }

    async fn list(&self, service: &RunningService<RoleClient, Handler>) -> Result<Vec<Tool>, String> {
        let limit = self.spec.timeout.max(MIN_CONNECT_TIMEOUT);
        let all = tokio::time::timeout(limit, service.peer().list_all_tools())
            .await
            .map_err(|_| format!("no answer within {} s", limit.as_secs()))?
            .map_err(|e| e.to_string())?;
        let (kept, left): (Vec<Tool>, Vec<Tool>) =
            all.into_iter().partition(|t| self.spec.filter.admits(&t.name));
        if !left.is_empty() {
            let names: Vec<&str> = left.iter().map(|t| t.name.as_ref()).collect();
            tracing::debug!(mcp_server = %self.spec.name, left_out = %names.join(", "), "tools left out by tools.allow/deny");
        }
        Ok(kept)
    }
}

/// The call's `_meta` with the current span's W3C trace context added
/// (`traceparent`, `tracestate`: the MCP convention, over stdio as over
/// HTTP); unchanged when tracing is off.
fn with_trace(meta: Option<rmcp::model::RequestMetaObject>) -> Option<rmcp::model::RequestMetaObject> {
    let headers = agentd_client::trace::headers();
    if headers.is_empty() {
        return meta;
    }
    let mut meta = meta.unwrap_or_default();
    for (key, value) in headers {
        match key.as_str() {
            "traceparent" => meta.set_traceparent(value),
            "tracestate" => meta.set_tracestate(value),
            _ => {}
        }
    }
    Some(meta)
}
