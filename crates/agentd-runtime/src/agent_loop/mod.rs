//! The agent loop: build the model input (delivered instruction, the
//! conversation, steering input, then the task's active reminders), call
//! the model, run the tools it asks for, repeat until it answers without
//! tool calls or a limit stops it. The answer streams as artifact updates
//! of one reply artifact (the texts of the turn's model calls, a blank line
//! between them) and ends the turn COMPLETED.
//!
//! Each model response and each tool call's start and result is journaled
//! on the task before the loop acts on it (`agentd_core::journal`); a run
//! started again after a restart replays the journal: recorded calls are
//! not made again, limits count what was recorded, and a tool call started
//! without a result goes by its tool's [`OnUncertain`] policy.

mod call_metrics;
mod history;
mod limits;
mod reminders;
mod replay;
mod reply;
mod spans;
mod tools;
mod uncertain;

pub use history::{message_text, render_history};
pub use limits::Limits;
pub use reminders::reminder_messages;
pub use tools::{CallKey, DEFAULT_MAX_TOOLS, Offer, OnUncertain, Tool, ToolSource, Tools, UncertainGate};

use uncertain::Resolved;

use crate::model::{ChatMessage, ModelError, ModelProvider, ModelRequest, ModelResponse, ToolCall};
use agentd_core::{
    Agent, Error, JournalEntry, ModelStep, StepRecord, TaskControl, TaskRecord, ToolOutcome, ToolStart, Turn,
};
use agentd_proto::{Message, PartContent, TaskState, Timestamp, new_id};
use async_trait::async_trait;
use replay::{Replay, journal_calls, response_of};
use reply::{CallError, ReplyStream, reply_artifact_id};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tracing::Instrument;

/// An agent driven by a model.
pub struct LoopAgent {
    model: Arc<dyn ModelProvider>,
    /// The system prompt: the instruction document as delivered.
    system: Arc<str>,
    limits: Limits,
    tools: Tools,
}

/// How a turn ended when it did not end with an answer.
enum Stop {
    /// The task changed under the run (canceled): nothing more to do.
    Gone,
    /// The run must fail the task with this reason.
    Fail(String),
}

impl From<Error> for Stop {
    /// A task that is gone (ended by someone else, canceled) stops the run
    /// quietly; any other failure to move it (a store write that failed)
    /// fails the task, saying why.
    fn from(e: Error) -> Self {
        if e.task_gone() { Stop::Gone } else { Stop::Fail(failure_reason(&e)) }
    }
}

/// The status message of a task whose run could not record its work.
pub(crate) fn failure_reason(e: &Error) -> String {
    format!("the run could not record its work and stopped: {e}")
}

impl LoopAgent {
    pub fn new(
        model: Arc<dyn ModelProvider>,
        system: impl Into<Arc<str>>,
        limits: Limits,
        tools: Tools,
    ) -> Self {
        Self { model, system: system.into(), limits, tools }
    }

    /// `input` is the message that started this run (for a resumed run, the
    /// answer to an approval its tool call waited for).
    async fn turn(&self, c: &TaskControl, resumed: bool, input: &Message) -> Result<(), Stop> {
        let replay = Replay::new(if resumed { c.journal().await? } else { Vec::new() });
        if resumed {
            tracing::info!(
                task = c.task_id(),
                entries = replay.next_seq() - 1,
                "resuming the turn from its journal"
            );
        }
        let record = if resumed { Some(c.record().await?) } else { None };
        if record.as_ref().is_none_or(|r| r.state() != TaskState::Working) {
            c.working(None).await?;
        }
        // The turn's time counts from its first run, across restarts.
        let now_ms = Timestamp::now().millis();
        let turn_started_ms = replay.first().map_or(now_ms, |m| m.turn_started_ms);
        let elapsed = Duration::from_millis(u64::try_from(now_ms - turn_started_ms).unwrap_or(0));
        let deadline = Instant::now() + self.limits.deadline.saturating_sub(elapsed);
        let mut conversation = c.conversation().await?;
        // A resumed turn's model input begins with the history its first
        // run began with; what came after reached the model as steering
        // input (recorded with its step) or is still to be delivered.
        let mut late: Vec<Message> = Vec::new();
        let mut history_len = 0;
        if let Some(current) = conversation.last_mut() {
            history_len = replay.first().map_or(current.messages.len(), |m| m.history_len);
            history_len = history_len.min(current.messages.len());
            let mut consumed = replay.consumed_steering();
            // The answer to an approval goes to the waiting call, never to
            // the model.
            let approval = record.as_ref().and_then(|r| r.meta.approval.as_ref());
            if approval.is_some() {
                consumed.insert(input.message_id.as_str());
            }
            late = current
                .messages
                .split_off(history_len)
                .into_iter()
                .filter(|m| !consumed.contains(m.message_id.as_str()))
                .collect();
        }
        let mut messages = vec![ChatMessage::system(self.system.to_string())];
        messages.extend(render_history(&conversation, self.limits.context_tokens));
        let committed = record.as_ref().and_then(reply_text);
        let mut reply =
            ReplyStream::resumed(c.clone(), self.limits.flush_interval, &replay.texts(), committed);
        let mut tokens = 0u64;
        let entry = |seq: u32, step: StepRecord| JournalEntry { task_id: c.task_id().to_owned(), seq, step };
        for step in 1..=self.limits.max_steps {
            // The tools of this call; its tool calls go only to them.
            let offer = self.tools.offer().await;
            let (response, recorded) = match replay.model(step) {
                Some(m) => {
                    // Made before the restart: its response is journaled.
                    messages.extend(m.steering.iter().map(|s| ChatMessage::user(message_text(s))));
                    (response_of(m), None)
                }
                None => {
                    let mut steering = std::mem::take(&mut late);
                    steering.extend(c.take_steering().await);
                    messages.extend(steering.iter().map(|s| ChatMessage::user(message_text(s))));
                    // Reminders ride only on this request: `messages` (the
                    // conversation so far) never holds them. Those of a call
                    // a restart cut are not delivered (counted) again.
                    let reminders = match replay.reminders(step) {
                        Some(r) => r.clone(),
                        None => {
                            let (r, journaled) = c.reminders_for_step(step, replay.next_seq()).await;
                            if journaled {
                                replay.take_seq();
                            }
                            r
                        }
                    };
                    let mut input = messages.clone();
                    input.extend(reminder_messages(&reminders, self.model.honours_role_hints()));
                    let request = ModelRequest {
                        messages: input,
                        tools: offer.specs(),
                        max_output_tokens: self.limits.max_output_tokens,
                    };
                    // No model call on a lease that may be another replica's now.
                    c.check_lease()?;
                    let response = self.call_model(c, &mut reply, &request, deadline, step).await?;
                    let model = ModelStep {
                        step,
                        turn_started_ms,
                        history_len,
                        steering,
                        reminders,
                        text: response.text.clone(),
                        tool_calls: journal_calls(&response.tool_calls),
                        input_tokens: response.usage.input_tokens,
                        output_tokens: response.usage.output_tokens,
                    };
                    (response, Some(model))
                }
            };
            tokens += response.usage.input_tokens + response.usage.output_tokens;
            if tokens > self.limits.max_tokens {
                return Err(Stop::Fail(format!(
                    "the turn used {tokens} tokens, over its limit of {}; raise {} or shorten the conversation",
                    self.limits.max_tokens, self.limits.max_tokens_key
                )));
            }
            // Journaled before the run acts on the response: with the first
            // tool call's start, or with the completion it causes.
            let mut unrecorded: Vec<JournalEntry> =
                recorded.map(|m| entry(replay.take_seq(), StepRecord::Model(m))).into_iter().collect();
            if response.tool_calls.is_empty() {
                reply.finish().await?;
                c.complete_with_steps(Some(Message::agent_text(response.text)), unrecorded).await?;
                return Ok(());
            }
            messages
                .push(ChatMessage::assistant_with_tools(response.text.clone(), response.tool_calls.clone()));
            for (index, call) in response.tool_calls.iter().enumerate() {
                let index = u32::try_from(index).unwrap_or(u32::MAX);
                if let Some(result) = replay.result(step, index) {
                    messages.push(tool_message(call, result.clone()));
                    continue;
                }
                let mut rerun_approved = false;
                let start = match replay.started(step, index) {
                    None => ToolStart {
                        step,
                        call: index,
                        name: call.name.clone(),
                        attempt: 1,
                        key: format!("{}:{step}:{index}", c.task_id()),
                        id: new_id(),
                    },
                    // A call that waits for its approval has not run yet.
                    Some(before) if awaits_approval(record.as_ref(), call) => {
                        ToolStart { attempt: before.attempt + 1, ..before.clone() }
                    }
                    Some(before) => {
                        let progressed = replay.progress(step, index).is_some();
                        match uncertain::resolve(c, &offer, call, before, progressed).await? {
                            Resolved::Again { start, approved } => {
                                rerun_approved = approved;
                                start
                            }
                            // Not run again: its result is recorded at once, so
                            // a later restart does not ask again.
                            Resolved::Result(result) => {
                                let outcome = ToolOutcome { step, call: index, result: result.clone() };
                                unrecorded.push(entry(replay.take_seq(), StepRecord::ToolResult(outcome)));
                                c.record_steps(std::mem::take(&mut unrecorded)).await?;
                                messages.push(tool_message(call, result));
                                continue;
                            }
                        }
                    }
                };
                let key = CallKey {
                    key: start.key.clone(),
                    attempt: start.attempt,
                    id: start.id.clone(),
                    rerun_approved,
                    progress: replay.progress(step, index).cloned(),
                    journal: Some(tools::CallJournal { step, call: index, seq: replay.seq() }),
                };
                unrecorded.push(entry(replay.take_seq(), StepRecord::ToolStarted(start)));
                c.record_steps(std::mem::take(&mut unrecorded)).await?;
                tracing::debug!(task = c.task_id(), step, call = index, attempt = key.attempt, key = %key.key, tool = %call.name, "tool call started");
                // A tool that waits (a subagent, a delegation) is bounded by
                // the turn's deadline too.
                let span = spans::execute_tool(call);
                let result = tokio::select! {
                    r = offer.call(call, c, &key).instrument(span.clone()) => r,
                    () = tokio::time::sleep_until(deadline) => return Err(Stop::Fail(format!(
                        "the turn hit its deadline of {} s while the tool {} was running; raise limits.deadline_secs for longer work",
                        self.limits.deadline.as_secs(),
                        call.name
                    ))),
                };
                if c.cancelled().is_cancelled() {
                    // Canceled or stopped: what the tool answered then is no result.
                    return Err(Stop::Gone);
                }
                spans::tool_done(&span, &result);
                let outcome = ToolOutcome { step, call: index, result: result.clone() };
                unrecorded.push(entry(replay.take_seq(), StepRecord::ToolResult(outcome)));
                messages.push(tool_message(call, result));
            }
            if !unrecorded.is_empty() {
                c.record_steps(unrecorded).await?;
            }
        }
        Err(Stop::Fail(format!(
            "the turn reached its limit of {} model calls without a final answer; raise limits.max_steps if the task needs more",
            self.limits.max_steps
        )))
    }

    /// One model call streamed into the reply, bounded by the deadline.
    async fn call_model(
        &self,
        c: &TaskControl,
        reply: &mut ReplyStream,
        request: &ModelRequest,
        deadline: Instant,
        step: u32,
    ) -> Result<ModelResponse, Stop> {
        let span = spans::chat(self.model.as_ref());
        let stop = c.cancelled().child_token();
        let call = reply.call(self.model.as_ref(), request, &stop).instrument(span.clone());
        tokio::pin!(call);
        let response = tokio::select! {
            r = &mut call => r,
            () = tokio::time::sleep_until(deadline) => {
                // Stopped, then waited for, not dropped: the call commits the
                // reply as it streams, and a commit dropped half way would
                // leave the task's live record behind the store's, so that
                // no later change (the failure below) could commit.
                stop.cancel();
                let _ = call.await;
                Err(CallError::Model(ModelError::Timeout))
            }
        };
        spans::chat_done(&span, &response);
        match response {
            Ok(r) => Ok(r),
            Err(CallError::Task(e)) => Err(e.into()),
            Err(CallError::Model(ModelError::Cancelled)) => Err(Stop::Gone),
            Err(CallError::Model(ModelError::Timeout)) if Instant::now() >= deadline => {
                Err(Stop::Fail(format!(
                    "the turn hit its deadline of {} s after {} model call(s); raise limits.deadline_secs for longer work",
                    self.limits.deadline.as_secs(),
                    step
                )))
            }
            Err(CallError::Model(e)) => Err(Stop::Fail(format!("the model call failed: {e}"))),
        }
    }
}

/// What the model gets back for a tool call.
fn tool_message(call: &ToolCall, result: Result<String, String>) -> ChatMessage {
    match result {
        Ok(out) => ChatMessage::tool_result(call.id.clone(), out),
        Err(why) => ChatMessage::tool_error(call.id.clone(), why),
    }
}

/// Whether `call` is the tool call the task's approval record is about:
/// asked (or answered) and not yet taken by the call, so never made.
fn awaits_approval(record: Option<&TaskRecord>, call: &ToolCall) -> bool {
    // The question whether to run a cut call again is not that call's approval.
    let Some(a) = record.and_then(|r| r.meta.approval.as_ref()).filter(|a| !a.interrupted) else {
        return false;
    };
    let args: serde_json::Value =
        serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Object(Default::default()));
    a.tool == call.name && a.args_hash == agentd_core::approval::args_hash(&args)
}

/// Why a resumed turn stops at a call whose outcome is unknown.
fn uncertain_failure(tool: &str) -> String {
    format!(
        "the tool {tool} was running when agentd stopped and whether it took effect is unknown; \
         it is not declared safe to run again, so the turn stops here (send the request again to retry it)"
    )
}

/// The text of a task's reply artifact as committed, if it has one.
fn reply_text(rec: &TaskRecord) -> Option<String> {
    let id = reply_artifact_id(rec.id());
    let artifact = rec.task.artifacts.as_ref()?.iter().find(|a| a.artifact_id == id)?;
    Some(
        artifact
            .parts
            .iter()
            .map(|p| match &p.content {
                PartContent::Text(t) => t.to_string(),
                _ => String::new(),
            })
            .collect(),
    )
}

#[async_trait]
impl Agent for LoopAgent {
    fn resumes(&self) -> bool {
        true
    }

    async fn run(&self, turn: Turn) {
        let c = turn.control;
        let span = spans::invoke_agent(&c, &turn.input);
        // Its deliveries (push, bridges) join this turn's trace.
        span.in_scope(|| agentd_client::trace::remember(c.task_id()));
        if let Err(Stop::Fail(why)) = self.turn(&c, turn.resumed, &turn.input).instrument(span.clone()).await
        {
            spans::failed(&span, &why);
            tracing::info!(task = c.task_id(), reason = %why, "turn failed");
            match c.fail(&why).await {
                Ok(()) => {}
                Err(e) if e.task_gone() => {
                    tracing::debug!(task = c.task_id(), error = %e, "the turn's task ended meanwhile")
                }
                Err(e) => {
                    tracing::error!(task = c.task_id(), reason = %why, error = %e, "could not fail the turn")
                }
            }
        }
    }
}
