//! Tools the model may call. A call's result (or its error) goes back to
//! the model as text; a bad call never fails the turn, the model sees why.

use crate::model::{ToolCall, ToolSpec};
use agentd_core::TaskControl;
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

#[async_trait]
pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> ToolSpec;
    /// Runs the tool with parsed arguments; `Err` is reported to the model.
    async fn call(&self, args: Value, control: &TaskControl) -> Result<String, String>;
}

#[derive(Clone, Default)]
pub struct Tools {
    tools: Vec<Arc<dyn Tool>>,
}

impl Tools {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self { tools }
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// Runs one call and returns what the model gets back: the tool's
    /// output, or (`Err`) why the call failed.
    pub async fn call(&self, call: &ToolCall, control: &TaskControl) -> Result<String, String> {
        let Some(tool) = self.tools.iter().find(|t| t.spec().name == call.name) else {
            let names: Vec<String> = self.specs().into_iter().map(|s| s.name).collect();
            return Err(format!(
                "error: there is no tool named {:?}; available tools: [{}]",
                call.name,
                names.join(", ")
            ));
        };
        let args = if call.arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_str(&call.arguments) {
                Ok(v) => v,
                Err(e) => {
                    return Err(format!("error: the arguments are not valid JSON ({e}); send a JSON object"));
                }
            }
        };
        tool.call(args, control).await.map_err(|e| format!("error: {e}"))
    }
}
