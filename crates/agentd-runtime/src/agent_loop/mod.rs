//! The agent loop: build the model input (delivered instruction, the
//! conversation, steering input, then the task's active reminders), call
//! the model, run the tools it asks for, repeat until it answers without
//! tool calls or a limit stops it. The answer streams as artifact updates
//! of one reply artifact (the texts of the turn's model calls, a blank line
//! between them) and ends the turn COMPLETED.

mod history;
mod limits;
mod reminders;
mod reply;
mod tools;

pub use history::{message_text, render_history};
pub use limits::Limits;
pub use reminders::reminder_messages;
pub use tools::{DEFAULT_MAX_TOOLS, Offer, Tool, ToolSource, Tools};

use crate::model::{ChatMessage, ModelError, ModelProvider, ModelRequest};
use agentd_core::{Agent, Error, TaskControl, Turn};
use agentd_proto::Message;
use async_trait::async_trait;
use reply::{CallError, ReplyStream};
use std::sync::Arc;
use tokio::time::Instant;

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

    async fn turn(&self, c: &TaskControl) -> Result<(), Stop> {
        c.working(None).await?;
        let started = Instant::now();
        let deadline = started + self.limits.deadline;
        let conversation = c.conversation().await?;
        let mut messages = vec![ChatMessage::system(self.system.to_string())];
        messages.extend(render_history(&conversation, self.limits.context_tokens));
        let mut reply = ReplyStream::new(c.clone(), self.limits.flush_interval);
        let mut tokens = 0u64;
        for step in 1..=self.limits.max_steps {
            for m in c.take_steering().await {
                messages.push(ChatMessage::user(message_text(&m)));
            }
            // Reminders ride only on this request: `messages` (the
            // conversation so far) never holds them.
            let reminders = c.reminders_for_model_call().await;
            let mut input = messages.clone();
            input.extend(reminder_messages(&reminders, self.model.honours_role_hints()));
            // The tools of this call; its tool calls go only to them.
            let offer = self.tools.offer().await;
            let request = ModelRequest {
                messages: input,
                tools: offer.specs(),
                max_output_tokens: self.limits.max_output_tokens,
            };
            let response = tokio::select! {
                r = reply.call(self.model.as_ref(), &request, c.cancelled()) => r,
                () = tokio::time::sleep_until(deadline) => Err(CallError::Model(ModelError::Timeout)),
            };
            let response = match response {
                Ok(r) => r,
                Err(CallError::Task(e)) => return Err(e.into()),
                Err(CallError::Model(ModelError::Cancelled)) => return Err(Stop::Gone),
                Err(CallError::Model(ModelError::Timeout)) if Instant::now() >= deadline => {
                    return Err(Stop::Fail(format!(
                        "the turn hit its deadline of {} s after {} model call(s); raise limits.deadline_secs for longer work",
                        self.limits.deadline.as_secs(),
                        step
                    )));
                }
                Err(CallError::Model(e)) => return Err(Stop::Fail(format!("the model call failed: {e}"))),
            };
            tokens += response.usage.input_tokens + response.usage.output_tokens;
            if tokens > self.limits.max_tokens {
                return Err(Stop::Fail(format!(
                    "the turn used {tokens} tokens, over its limit of {}; raise {} or shorten the conversation",
                    self.limits.max_tokens, self.limits.max_tokens_key
                )));
            }
            if response.tool_calls.is_empty() {
                reply.finish().await?;
                c.complete(Some(Message::agent_text(response.text))).await?;
                return Ok(());
            }
            messages
                .push(ChatMessage::assistant_with_tools(response.text.clone(), response.tool_calls.clone()));
            for call in &response.tool_calls {
                // A tool that waits (a subagent, a delegation) is bounded by
                // the turn's deadline too.
                let result = tokio::select! {
                    r = offer.call(call, c) => r,
                    () = tokio::time::sleep_until(deadline) => return Err(Stop::Fail(format!(
                        "the turn hit its deadline of {} s while the tool {} was running; raise limits.deadline_secs for longer work",
                        self.limits.deadline.as_secs(),
                        call.name
                    ))),
                };
                messages.push(match result {
                    Ok(out) => ChatMessage::tool_result(call.id.clone(), out),
                    Err(why) => ChatMessage::tool_error(call.id.clone(), why),
                });
            }
        }
        Err(Stop::Fail(format!(
            "the turn reached its limit of {} model calls without a final answer; raise limits.max_steps if the task needs more",
            self.limits.max_steps
        )))
    }
}

#[async_trait]
impl Agent for LoopAgent {
    async fn run(&self, turn: Turn) {
        let c = turn.control;
        if let Err(Stop::Fail(why)) = self.turn(&c).await {
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
