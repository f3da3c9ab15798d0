//! A turn's step journal read back for a resumed run: the recorded model
//! responses stand in for the calls (not made again), the recorded tool
//! results for the tool calls, and a tool call started without a result is
//! uncertain (its tool's policy decides).

use crate::model::{ModelResponse, ToolCall, Usage};
use agentd_core::{
    DeliveredReminder, JournalEntry, JournalToolCall, ModelStep, StepRecord, ToolProgress, ToolStart,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// What a turn's journal holds, by step.
#[derive(Default)]
pub(super) struct Replay {
    /// Reminders delivered to a call, by step (recorded with their delivery).
    inputs: HashMap<u32, Vec<DeliveredReminder>>,
    models: HashMap<u32, ModelStep>,
    /// The last start of each call: `(step, call)`.
    started: HashMap<(u32, u32), ToolStart>,
    results: HashMap<(u32, u32), Result<String, String>>,
    /// What a call started elsewhere (a peer's task), by `(step, call)`.
    progress: HashMap<(u32, u32), ToolProgress>,
    /// The seq of the next entry, shared with the running tool call that
    /// journals its progress.
    seq: Seq,
}

/// The next journal seq of a turn: the loop and its running tool call
/// take from the same counter (calls of a step run one after another).
#[derive(Clone, Debug, Default)]
pub struct Seq(Arc<AtomicU32>);

impl Seq {
    pub fn take(&self) -> u32 {
        self.0.fetch_add(1, Ordering::SeqCst)
    }

    pub fn peek(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Replay {
    pub fn new(entries: Vec<JournalEntry>) -> Self {
        let mut r = Replay::default();
        let mut next_seq = 1;
        for e in entries {
            next_seq = next_seq.max(e.seq + 1);
            match e.step {
                StepRecord::ModelInput(i) => {
                    r.inputs.insert(i.step, i.reminders);
                }
                StepRecord::Model(m) => {
                    r.models.insert(m.step, m);
                }
                StepRecord::ToolStarted(s) => {
                    r.started.insert((s.step, s.call), s);
                }
                StepRecord::ToolResult(o) => {
                    r.results.insert((o.step, o.call), o.result);
                }
                StepRecord::ToolProgress(p) => {
                    r.progress.insert((p.step, p.call), p);
                }
            }
        }
        r.seq.0.store(next_seq, Ordering::SeqCst);
        r
    }

    /// The first recorded step: when the turn began and how much of the
    /// task's history its model input began with.
    pub fn first(&self) -> Option<&ModelStep> {
        self.models.get(&1)
    }

    pub fn model(&self, step: u32) -> Option<&ModelStep> {
        self.models.get(&step)
    }

    /// The texts of the recorded model calls, in step order.
    pub fn texts(&self) -> Vec<&str> {
        let mut steps: Vec<&ModelStep> = self.models.values().collect();
        steps.sort_by_key(|m| m.step);
        steps.into_iter().map(|m| m.text.as_str()).collect()
    }

    /// The ids of the messages consumed as steering input by recorded steps.
    pub fn consumed_steering(&self) -> HashSet<&str> {
        self.models.values().flat_map(|m| m.steering.iter().map(|s| s.message_id.as_str())).collect()
    }

    /// The reminders delivered to step `step`'s call, when recorded.
    pub fn reminders(&self, step: u32) -> Option<&Vec<DeliveredReminder>> {
        self.inputs.get(&step)
    }

    pub fn result(&self, step: u32, call: u32) -> Option<&Result<String, String>> {
        self.results.get(&(step, call))
    }

    pub fn started(&self, step: u32, call: u32) -> Option<&ToolStart> {
        self.started.get(&(step, call))
    }

    pub fn progress(&self, step: u32, call: u32) -> Option<&ToolProgress> {
        self.progress.get(&(step, call))
    }

    /// A seq for a new entry.
    pub fn take_seq(&self) -> u32 {
        self.seq.take()
    }

    /// The seq the next entry gets.
    pub fn next_seq(&self) -> u32 {
        self.seq.peek()
    }

    /// The counter, for a tool call journaling its progress.
    pub fn seq(&self) -> Seq {
        self.seq.clone()
    }
}

/// The response a journaled model step recorded.
pub(super) fn response_of(m: &ModelStep) -> ModelResponse {
    ModelResponse {
        text: m.text.clone(),
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| ToolCall { id: c.id.clone(), name: c.name.clone(), arguments: c.arguments.clone() })
            .collect(),
        usage: Usage { input_tokens: m.input_tokens, output_tokens: m.output_tokens },
        finish_reason: String::new(),
    }
}

/// The tool calls of a response as journaled.
pub(super) fn journal_calls(calls: &[ToolCall]) -> Vec<JournalToolCall> {
    calls
        .iter()
        .map(|c| JournalToolCall { id: c.id.clone(), name: c.name.clone(), arguments: c.arguments.clone() })
        .collect()
}
