//! The `echo` model: offline and deterministic. It answers with what it was
//! given (`echo: <last user message>`) plus a line listing the reminder
//! blocks it saw, streamed in a few deltas. It never calls tools.

use super::reminder::{self, ReminderBlock};
use super::stream::{estimate_request_tokens, estimate_tokens, send_delta, split_deltas};
use super::types::{ChatRole, ModelError, ModelProvider, ModelRequest, ModelResponse, Usage};
use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How many deltas an answer is streamed in, at most.
const DELTAS: usize = 3;

#[derive(Clone, Debug, Default)]
pub struct EchoProvider;

/// The echo model's answer to a request: `echo: <text>` where text is the
/// last user message with its reminder blocks removed, then, if the request
/// held any reminder blocks (in any message), a line
/// `reminders: [id] body; [id] body` (bodies on one line).
pub fn echo_answer(req: &ModelRequest) -> String {
    let mut said = String::new();
    let mut reminders: Vec<ReminderBlock> = Vec::new();
    for m in &req.messages {
        let (plain, blocks) = reminder::extract(&m.content);
        reminders.extend(blocks);
        if m.role == ChatRole::User && !plain.is_empty() {
            said = plain;
        }
    }
    let mut out = format!("echo: {said}");
    if !reminders.is_empty() {
        let listed: Vec<String> = reminders
            .iter()
            .map(|r| format!("[{}] {}", r.id, r.body.split_whitespace().collect::<Vec<_>>().join(" ")))
            .collect();
        out.push_str("\nreminders: ");
        out.push_str(&listed.join("; "));
    }
    out
}

#[async_trait]
impl ModelProvider for EchoProvider {
    fn name(&self) -> &str {
        "echo"
    }

    async fn complete(
        &self,
        req: &ModelRequest,
        deltas: &mpsc::Sender<String>,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let text = echo_answer(req);
        for piece in split_deltas(&text, DELTAS) {
            send_delta(deltas, cancel, piece).await?;
        }
        let usage =
            Usage { input_tokens: estimate_request_tokens(req), output_tokens: estimate_tokens(&text) };
        Ok(ModelResponse { text, tool_calls: Vec::new(), usage, finish_reason: "stop".into() })
    }
}
