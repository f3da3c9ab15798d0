//! Tools the model may call. A call's result (or its error) goes back to
//! the model as text; a bad call never fails the turn, the model sees why.
//!
//! Built-in tools are fixed; tool sources (an MCP server's list) are asked
//! at each model call. What a call is offered is an [`Offer`], capped at
//! `max_tools`, and a tool call is dispatched only to a tool of that offer:
//! a model naming a tool it was not offered gets an error, not a call.
//! An agent's [`Narrowing`] (a subagent's tool sets) is applied to both.

use super::replay::Seq;
use crate::model::{ToolCall, ToolSpec};
use crate::narrowing::Narrowing;
use agentd_core::{JournalEntry, StepRecord, TaskControl, ToolProgress};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// The most tools one model call is offered unless configured.
pub const DEFAULT_MAX_TOOLS: usize = 128;

/// What a resumed turn does with a call of a tool that started before a
/// restart and has no recorded result: its effect is uncertain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnUncertain {
    /// Call it again with the same idempotency key (tools declared
    /// idempotent; built-in tools that adopt what the first attempt started).
    Retry,
    /// Fail the turn, naming the tool: running it twice may do harm.
    Fail,
    /// Ask a person on an approval gate: approved, it is retried; denied
    /// (or not answered in time), the model is told it was not run again.
    Ask(UncertainGate),
    /// Not run again: the model gets "interrupted; outcome unknown" as
    /// the call's error and the turn goes on.
    Report,
}

/// Who is asked whether to run an interrupted call again, and how long
/// the question waits (as for the tool's approvals).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UncertainGate {
    /// The MCP server that owns the tool, shown in the question.
    pub server: Option<String>,
    pub channel: Option<String>,
    /// Principal ids that may answer besides the owner and operators.
    pub answerers: Vec<String>,
    pub timeout: std::time::Duration,
}

/// Who a tool call is: the same key on every attempt, so a tool (or the
/// server behind it) can recognise a retry and not act twice.
#[derive(Clone, Debug)]
pub struct CallKey {
    /// `<task id>:<step>:<index of the call in the step>`.
    pub key: String,
    /// 1 for the first run, one more per retry after a restart.
    pub attempt: u32,
    /// A fresh id made for the call at its first attempt and journaled, for
    /// what the call starts (a subagent's task id): a retry finds it again.
    pub id: String,
    /// A person approved running this call again after a restart cut it:
    /// a tool that would ask for an approval of the call does not ask twice.
    pub rerun_approved: bool,
    /// What an earlier attempt started elsewhere and journaled (a peer's
    /// task): this attempt follows it instead of starting another.
    pub progress: Option<ToolProgress>,
    /// Where the call's place in the turn's journal is, for its progress.
    pub(super) journal: Option<CallJournal>,
}

/// A running call's place in its turn's journal.
#[derive(Clone, Debug)]
pub(super) struct CallJournal {
    pub step: u32,
    pub call: u32,
    pub seq: Seq,
}

impl CallKey {
    /// Commits what the call started at `peer` (its task id) to the turn's
    /// journal; returns once committed, so a restart after it follows that
    /// task. A call outside a turn's journal records nothing.
    pub async fn record_progress(
        &self,
        control: &TaskControl,
        peer: &str,
        task_id: &str,
    ) -> Result<(), agentd_core::Error> {
        let Some(j) = &self.journal else { return Ok(()) };
        let step = StepRecord::ToolProgress(ToolProgress {
            step: j.step,
            call: j.call,
            peer: peer.to_owned(),
            task_id: task_id.to_owned(),
        });
        let entry = JournalEntry { task_id: control.task_id().to_owned(), seq: j.seq.take(), step };
        control.record_steps(vec![entry]).await
    }
}

#[async_trait]
pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> ToolSpec;
    /// Runs the tool with parsed arguments; `Err` is reported to the model.
    async fn call(&self, args: Value, control: &TaskControl) -> Result<String, String>;
    /// What a restart does with a call of this tool whose result is unknown.
    fn on_uncertain(&self) -> OnUncertain {
        OnUncertain::Fail
    }
    /// Whether a call cut by a restart after it journaled its progress
    /// ([`CallKey::record_progress`]) is run again to follow what it
    /// started, whatever [`Tool::on_uncertain`] says of a call without.
    fn follows_progress(&self) -> bool {
        false
    }
    /// Runs one call carrying its key; by default the key is not passed on.
    async fn call_keyed(&self, args: Value, control: &TaskControl, _key: &CallKey) -> Result<String, String> {
        self.call(args, control).await
    }
}

/// Tools that come and go (the tools of MCP servers), asked for at each
/// model call.
#[async_trait]
pub trait ToolSource: Send + Sync + 'static {
    /// The tools on offer now, in a stable order.
    async fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

#[derive(Clone)]
pub struct Tools {
    tools: Vec<Arc<dyn Tool>>,
    sources: Vec<Arc<dyn ToolSource>>,
    max_tools: usize,
    narrowing: Narrowing,
    /// Tools the operator declared safe to call again (`durability.retry_tools`).
    retry: Arc<[String]>,
}

impl Default for Tools {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl Tools {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            tools,
            sources: Vec::new(),
            max_tools: DEFAULT_MAX_TOOLS,
            narrowing: Narrowing::default(),
            retry: Arc::from([]),
        }
    }

    /// Tools whose uncertain calls are retried whatever the tool says:
    /// exact names, or a prefix ending in `*`.
    pub fn with_retry_tools(mut self, names: Vec<String>) -> Self {
        self.retry = names.into();
        self
    }

    /// Adds a source whose tools follow the built-in ones.
    pub fn with_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    /// Caps the tools of one model call (`mcp.max_tools`).
    pub fn with_max_tools(mut self, max_tools: usize) -> Self {
        self.max_tools = max_tools;
        self
    }

    /// These tools narrowed further: only those `narrowing` admits.
    pub fn narrowed(mut self, narrowing: Narrowing) -> Self {
        self.narrowing = narrowing;
        self
    }

    /// These tools without the built-in one named `name`.
    pub fn without(mut self, name: &str) -> Self {
        self.tools.retain(|t| t.spec().name != name);
        self
    }

    /// These tools with `tool` in place of the built-in one of its name
    /// (or first, when there is none).
    pub fn replacing(mut self, tool: Arc<dyn Tool>) -> Self {
        let name = tool.spec().name;
        match self.tools.iter().position(|t| t.spec().name == name) {
            Some(i) => self.tools[i] = tool,
            None => self.tools.insert(0, tool),
        }
        self
    }

    /// What the next model call is offered: the built-in tools, then each
    /// source's, the first of a name kept, those the narrowing admits, cut
    /// at `max_tools` (logged).
    pub async fn offer(&self) -> Offer {
        let mut all = self.tools.clone();
        for s in &self.sources {
            all.extend(s.tools().await);
        }
        let mut seen = std::collections::HashSet::new();
        all.retain(|t| seen.insert(t.spec().name));
        all.retain(|t| self.narrowing.admits(&t.spec().name));
        if all.len() > self.max_tools {
            let cut: Vec<String> = all[self.max_tools..].iter().map(|t| t.spec().name).collect();
            tracing::warn!(
                offered = self.max_tools,
                available = all.len(),
                left_out = %cut.join(", "),
                "more tools than a model call may be offered (mcp.max_tools); the list was cut"
            );
            all.truncate(self.max_tools);
        }
        Offer { tools: all, narrowing: self.narrowing.clone(), retry: self.retry.clone() }
    }
}

/// The tools one model call was offered; calls are dispatched only to them.
pub struct Offer {
    tools: Vec<Arc<dyn Tool>>,
    narrowing: Narrowing,
    retry: Arc<[String]>,
}

impl Offer {
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// The policy for an uncertain call of `name`: a name not on offer was
    /// never called, so running it "again" is harmless.
    pub fn on_uncertain(&self, name: &str) -> OnUncertain {
        let declared = |p: &String| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => p == name,
        };
        if self.retry.iter().any(declared) {
            return OnUncertain::Retry;
        }
        self.tools.iter().find(|t| t.spec().name == name).map_or(OnUncertain::Retry, |t| t.on_uncertain())
    }

    /// Whether a cut call of `name` with journaled progress is run again to
    /// follow it ([`Tool::follows_progress`]).
    pub fn follows_progress(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.spec().name == name && t.follows_progress())
    }

    /// Runs one call and returns what the model gets back: the tool's
    /// output, or (`Err`) why the call failed.
    pub async fn call(
        &self,
        call: &ToolCall,
        control: &TaskControl,
        key: &CallKey,
    ) -> Result<String, String> {
        let tool = self.dispatchable(&call.name)?;
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
        tool.call_keyed(args, control, key).await.map_err(|e| format!("error: {e}"))
    }

    /// The tool a call of `name` goes to: one of the offer, and checked
    /// again against the narrowing, whatever the list holds.
    fn dispatchable(&self, name: &str) -> Result<&Arc<dyn Tool>, String> {
        let offered = self.tools.iter().find(|t| t.spec().name == name);
        offered.filter(|_| self.narrowing.admits(name)).ok_or_else(|| {
            let names: Vec<String> = self.specs().into_iter().map(|s| s.name).collect();
            format!(
                "error: there is no tool named {name:?} on offer; available tools: [{}]",
                names.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Named(&'static str);

    #[async_trait]
    impl Tool for Named {
        fn spec(&self) -> ToolSpec {
            ToolSpec { name: self.0.into(), description: String::new(), parameters: serde_json::json!({}) }
        }
        async fn call(&self, _args: Value, _control: &TaskControl) -> Result<String, String> {
            Ok(self.0.into())
        }
    }

    struct Source(Vec<&'static str>);

    #[async_trait]
    impl ToolSource for Source {
        async fn tools(&self) -> Vec<Arc<dyn Tool>> {
            self.0.iter().map(|n| Arc::new(Named(n)) as Arc<dyn Tool>).collect()
        }
    }

    fn names(offer: &Offer) -> Vec<String> {
        offer.specs().into_iter().map(|s| s.name).collect()
    }

    #[tokio::test]
    async fn an_offer_is_built_in_tools_then_sources_first_of_a_name_kept_cut_at_max_tools() {
        let tools = Tools::new(vec![Arc::new(Named("spawn_subagent"))]).with_source(Arc::new(Source(vec![
            "a__x",
            "spawn_subagent",
            "a__y",
            "b__z",
        ])));
        assert_eq!(names(&tools.offer().await), ["spawn_subagent", "a__x", "a__y", "b__z"]);
        assert_eq!(names(&tools.clone().with_max_tools(2).offer().await), ["spawn_subagent", "a__x"]);
    }

    #[tokio::test]
    async fn a_narrowed_offer_lists_and_dispatches_only_what_the_narrowing_admits() {
        let tools = Tools::new(vec![Arc::new(Named("spawn_subagent"))])
            .with_source(Arc::new(Source(vec!["a__x", "a__y", "b__z"])))
            .narrowed(Narrowing::default().then(&["a__x".into(), "b".into()]))
            .with_max_tools(2);
        assert_eq!(names(&tools.offer().await), ["a__x", "b__z"], "narrowed before the cap");
        // An offer that holds a tool its narrowing does not admit (a
        // source's list changed) still refuses the call.
        let offer = Offer {
            tools: vec![Arc::new(Named("a__y"))],
            narrowing: Narrowing::default().then(&["a__x".into()]),
            retry: Arc::from([]),
        };
        let e = offer.dispatchable("a__y").err().expect("not admitted");
        assert!(e.contains("no tool named \"a__y\" on offer"), "{e}");
    }
}
