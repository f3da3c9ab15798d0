//! One tool of an MCP server as a tool of the agent loop.

use crate::hub::Inner;
use crate::policy::Decision;
use crate::render;
use crate::server::CallError;
use agentd_core::TaskControl;
use agentd_runtime::agent_loop::Tool;
use agentd_runtime::model::ToolSpec;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

pub struct McpTool {
    hub: Arc<Inner>,
    /// The owning server (its index in the hub).
    server: usize,
    tool: rmcp::model::Tool,
    /// The name the model sees.
    name: String,
}

impl McpTool {
    pub(crate) fn new(hub: Arc<Inner>, server: usize, tool: rmcp::model::Tool, name: String) -> Self {
        Self { hub, server, tool, name }
    }

    /// The server that owns the tool.
    pub fn server(&self) -> &str {
        &self.hub.servers[self.server].spec.name
    }

    /// The tool's name on its server.
    pub fn tool(&self) -> &str {
        &self.tool.name
    }
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.clone(),
            description: self.tool.description.as_deref().unwrap_or_default().to_owned(),
            parameters: Value::Object((*self.tool.input_schema).clone()),
        }
    }

    async fn call(&self, args: Value, _control: &TaskControl) -> Result<String, String> {
        self.invoke(args).await
    }
}

impl McpTool {
    /// Decides, then calls the tool on its server: the text of its result,
    /// or why there is none (an `isError` result is an error too).
    pub async fn invoke(&self, args: Value) -> Result<String, String> {
        let (server, tool) = (self.server(), self.tool());
        match self.hub.policy.decide(server, tool, &args) {
            Decision::Allow => {}
            Decision::Deny(why) => return Err(format!("the call of {} was denied: {why}", self.name)),
            Decision::Ask => {
                return Err(format!(
                    "the call of {} needs an approval this daemon cannot ask for",
                    self.name
                ));
            }
        }
        let Value::Object(args) = args else {
            return Err("the arguments must be a JSON object".into());
        };
        let background = self.hub.background()?;
        match self.hub.servers[self.server].call(tool, args, background).await {
            Ok(result) => {
                let (text, is_error) = render::render(&result);
                if is_error { Err(format!("the tool reported an error: {text}")) } else { Ok(text) }
            }
            Err(e @ (CallError::Unavailable(_) | CallError::Refused(_) | CallError::Timeout(_))) => {
                Err(e.to_string())
            }
        }
    }
}
