//! All the MCP servers of the daemon as one source of tools for the agent
//! loop: each model call is offered the tools of the servers that are up,
//! named `<server>__<tool>` (`names.rs`), and each call goes back to the
//! server that owns the tool.

use crate::names;
use crate::policy::{AllowAll, ToolPolicy};
use crate::server::{Server, ServerSpec};
use crate::tool::McpTool;
use agentd_core::Background;
use agentd_runtime::agent_loop::{Tool, ToolSource};
use async_trait::async_trait;
use std::sync::{Arc, OnceLock};

#[derive(Clone)]
pub struct McpHub {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) servers: Vec<Arc<Server>>,
    /// The daemon's background (stderr readers), set by [`McpHub::start`].
    pub(crate) background: OnceLock<Background>,
    pub(crate) policy: Arc<dyn ToolPolicy>,
}

impl Inner {
    pub(crate) fn background(&self) -> Result<&Background, String> {
        self.background.get().ok_or_else(|| "the MCP client was not started".to_owned())
    }
}

impl McpHub {
    /// Refuses two servers of one name.
    pub fn new(specs: Vec<ServerSpec>) -> Result<Self, String> {
        let mut seen = std::collections::HashSet::new();
        for s in &specs {
            if !seen.insert(s.name.clone()) {
                return Err(format!("two MCP servers are named {:?}; names must be unique", s.name));
            }
        }
        let http = agentd_client::LazyHttp::new(|| {
            reqwest::Client::builder()
                .connect_timeout(std::time::Duration::from_secs(10))
                .build()
                .map_err(|e| format!("cannot build the MCP HTTP client: {e}"))
        });
        let servers = specs.into_iter().map(|s| Arc::new(Server::new(s, http.clone()))).collect();
        Ok(Self {
            inner: Arc::new(Inner { servers, background: OnceLock::new(), policy: Arc::new(AllowAll) }),
        })
    }

    /// Decides each call before it is made (approval gates plug in here).
    pub fn with_policy(self, policy: Arc<dyn ToolPolicy>) -> Self {
        let inner = Inner { servers: self.inner.servers.clone(), background: OnceLock::new(), policy };
        Self { inner: Arc::new(inner) }
    }

    pub fn is_empty(&self) -> bool {
        self.inner.servers.is_empty()
    }

    /// Starts the client on the daemon's background and connects to every
    /// server (a stdio server starts now; one that is down is logged and
    /// tried again when its tools are needed).
    pub fn start(&self, background: &Background) {
        if self.inner.background.set(background.clone()).is_err() {
            return;
        }
        for server in &self.inner.servers {
            let server = server.clone();
            let bg = background.clone();
            background.spawn(async move { server.warm(&bg).await });
        }
    }
}

impl McpHub {
    /// Calls the tool the model knows as `name`, if it is on offer now.
    pub async fn call(&self, name: &str, args: serde_json::Value) -> Result<String, String> {
        let offered = self.offered().await;
        let Some(tool) = offered.iter().find(|t| t.spec().name == name) else {
            let names: Vec<String> = offered.iter().map(|t| t.spec().name).collect();
            return Err(format!(
                "there is no tool named {name:?} on offer; available: [{}]",
                names.join(", ")
            ));
        };
        tool.invoke(args).await
    }

    /// Each server with its number of tools on offer, or why it has none.
    pub async fn check(&self) -> Vec<(String, Result<usize, String>)> {
        let Ok(background) = self.inner.background() else { return Vec::new() };
        let lists = futures::future::join_all(self.inner.servers.iter().map(|s| s.tools(background))).await;
        self.inner.servers.iter().zip(lists).map(|(s, l)| (s.spec.name.clone(), l.map(|t| t.len()))).collect()
    }

    /// The tools on offer now, named.
    pub async fn offered(&self) -> Vec<Arc<McpTool>> {
        let Ok(background) = self.inner.background() else { return Vec::new() };
        let lists = futures::future::join_all(self.inner.servers.iter().map(|s| s.tools(background))).await;
        let mut owned = Vec::new();
        for (i, list) in lists.into_iter().enumerate() {
            match list {
                Ok(tools) => owned.extend(tools.into_iter().map(|t| (i, t))),
                Err(e) => tracing::debug!(error = %e, "an MCP server's tools are not offered"),
            }
        }
        let pairs: Vec<(&str, &str)> =
            owned.iter().map(|(i, t)| (self.inner.servers[*i].spec.name.as_str(), t.name.as_ref())).collect();
        let names = names::assign(&pairs);
        owned
            .into_iter()
            .zip(names)
            .map(|((i, tool), name)| Arc::new(McpTool::new(self.inner.clone(), i, tool, name)))
            .collect()
    }
}

#[async_trait]
impl ToolSource for McpHub {
    async fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.offered().await.into_iter().map(|t| t as Arc<dyn Tool>).collect()
    }
}
