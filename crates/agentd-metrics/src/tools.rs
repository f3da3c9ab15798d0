//! Tool calls by server, tool and outcome. Server and tool names come from
//! the configuration and instruction documents, so they are bounded; a cap
//! on distinct pairs holds anyway, against a server listing tools without
//! end: past it, calls count under `tool="_other"`.

use crate::latency_histogram;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::collections::HashSet;
use std::sync::Mutex;

/// Distinct `(server, tool)` pairs given series of their own.
pub const MAX_TOOL_SERIES: usize = 256;

/// The tool label of calls past the cap.
const OTHER: &str = "_other";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Labels {
    server: String,
    tool: String,
    outcome: &'static str,
}

pub struct ToolMetrics {
    duration: Family<Labels, Histogram, fn() -> Histogram>,
    seen: Mutex<HashSet<(String, String)>>,
}

impl ToolMetrics {
    pub(crate) fn new(registry: &mut Registry) -> Self {
        let s = Self { duration: Family::new_with_constructor(latency_histogram), seen: Mutex::default() };
        registry.register(
            "agentd_tool_call_duration_seconds",
            "Tool calls of MCP servers, by server, tool and outcome (ok, error, failed, denied); \
             `_count` is the number of calls",
            s.duration.clone(),
        );
        s
    }

    pub fn call(&self, server: &str, tool: &str, outcome: &'static str, secs: f64) {
        let tool = if self.admit(server, tool) { tool } else { OTHER };
        let labels = Labels { server: server.to_owned(), tool: tool.to_owned(), outcome };
        self.duration.get_or_create(&labels).observe(secs);
    }

    /// Whether `(server, tool)` has (or may now take) a series of its own.
    fn admit(&self, server: &str, tool: &str) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let key = (server.to_owned(), tool.to_owned());
        if seen.contains(&key) {
            return true;
        }
        if seen.len() >= MAX_TOOL_SERIES {
            return false;
        }
        seen.insert(key);
        true
    }
}
