//! The script the `scripted` model replays: a list of steps, one per model
//! call, read from a YAML (`.yaml`/`.yml`) or JSON (`.json`) file.

use super::types::{ModelError, ToolCall, Usage};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One model answer. `text` is the final text (default: the concatenation of
/// `deltas`); `deltas` is how it is streamed (default: `text` in a few
/// pieces); `delay_ms` is slept before each delta (or once, if there are
/// none); `error` makes the call fail after streaming the deltas.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptStep {
    pub text: Option<String>,
    pub tool_calls: Vec<ScriptToolCall>,
    pub deltas: Option<Vec<String>>,
    pub delay_ms: Option<u64>,
    pub error: Option<ScriptError>,
    pub usage: Option<Usage>,
    /// Default `tool_calls` when the step has tool calls, else `stop`.
    pub finish_reason: Option<String>,
}

/// A tool call in a step; `arguments` is a JSON object (written out as
/// compact JSON) or a string passed through as is (to test bad arguments).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Default `call_<step>_<n>`, both counted from 1.
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: serde_json::Value,
}

/// A failure the step returns, as `ModelError::Http { status, message }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptError {
    #[serde(default = "default_status")]
    pub status: u16,
    #[serde(default)]
    pub message: String,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

fn default_status() -> u16 {
    500
}

impl ScriptStep {
    /// A step answering `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: Some(text.into()), ..Self::default() }
    }

    /// A step asking for one tool call.
    pub fn tool_call(name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self {
            tool_calls: vec![ScriptToolCall { id: None, name: name.into(), arguments }],
            ..Self::default()
        }
    }

    /// The final text of the step.
    pub fn final_text(&self) -> String {
        match (&self.text, &self.deltas) {
            (Some(t), _) => t.clone(),
            (None, Some(d)) => d.concat(),
            (None, None) => String::new(),
        }
    }

    /// The tool calls of step number `step` (from 1), with ids filled in.
    pub fn calls(&self, step: usize) -> Vec<ToolCall> {
        self.tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: c.id.clone().unwrap_or_else(|| format!("call_{step}_{}", i + 1)),
                name: c.name.clone(),
                arguments: match &c.arguments {
                    serde_json::Value::String(s) => s.clone(),
                    v => v.to_string(),
                },
            })
            .collect()
    }

    fn check(&self, n: usize) -> Result<(), String> {
        if let (Some(t), Some(d)) = (&self.text, &self.deltas)
            && *t != d.concat()
        {
            return Err(format!("step {n}: `deltas` do not add up to `text`"));
        }
        if let Some(c) = self.tool_calls.iter().find(|c| c.name.is_empty()) {
            return Err(format!("step {n}: a tool call has no name ({c:?})"));
        }
        Ok(())
    }
}

/// Reads a script file: a YAML or JSON list of steps, by extension.
pub fn load(path: &Path) -> Result<Vec<ScriptStep>, ModelError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ModelError::Config(format!("cannot read script {shown}: {e}")))?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
    let steps: Vec<ScriptStep> = match ext.as_str() {
        "yaml" | "yml" => serde_yaml_ng::from_str(&text).map_err(|e| e.to_string()),
        "json" => serde_json::from_str(&text).map_err(|e| e.to_string()),
        _ => Err("the file name must end in .yaml, .yml or .json".to_owned()),
    }
    .map_err(|e| ModelError::Config(format!("script {shown}: {e}")))?;
    for (i, step) in steps.iter().enumerate() {
        step.check(i + 1).map_err(|e| ModelError::Config(format!("script {shown}: {e}")))?;
    }
    Ok(steps)
}
