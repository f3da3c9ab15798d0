//! The reply artifact of a turn, streamed: text deltas from the model are
//! committed as artifact updates, the first at once, then whatever arrived
//! each flush interval (one commit per delta would make streaming cost a
//! durable write per token); the last update carries `lastChunk`. Updates
//! are text chunks: the stored artifact holds the reply as one text part.
//!
//! A turn of several model calls (text, tool calls, more text) is one
//! reply: the texts of its calls are separated by [`STEP_SEPARATOR`].

use crate::model::{ModelError, ModelProvider, ModelRequest, ModelResponse};
use agentd_core::{Error, TaskControl};
use agentd_proto::{Artifact, Part};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, interval_at};
use tokio_util::sync::CancellationToken;

/// Why a streamed model call ended without a response.
pub enum CallError {
    /// The model failed (or the call was canceled).
    Model(ModelError),
    /// A chunk of the reply could not be committed to the task.
    Task(Error),
}

/// Between the texts of two model calls of one turn: a blank line, so
/// "Let me look that up." and the answer after the tool call read as two
/// paragraphs instead of one glued sentence.
pub const STEP_SEPARATOR: &str = "\n\n";

pub struct ReplyStream {
    control: TaskControl,
    artifact_id: String,
    flush: Duration,
    /// Whether a first chunk went out (later ones append).
    started: bool,
    /// Text received and not yet committed.
    pending: String,
    /// Whether the reply has any text yet (sent or pending).
    has_text: bool,
    /// Whether the current model call's text has begun.
    call_has_text: bool,
}

impl ReplyStream {
    pub fn new(control: TaskControl, flush: Duration) -> Self {
        let artifact_id = format!("{}-reply", control.task_id());
        Self {
            control,
            artifact_id,
            flush,
            started: false,
            pending: String::new(),
            has_text: false,
            call_has_text: false,
        }
    }

    async fn emit(&mut self, text: String, last: bool) -> Result<(), Error> {
        let artifact = Artifact {
            artifact_id: self.artifact_id.clone(),
            name: "reply".into(),
            parts: vec![Part::text(text)],
            ..Default::default()
        };
        self.control.text_chunk(artifact, self.started, last).await?;
        self.started = true;
        Ok(())
    }

    /// Adds text of the current model call, after the separator when it is
    /// the call's first text and an earlier call said something.
    fn push(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if !self.call_has_text && self.has_text {
            self.pending.push_str(STEP_SEPARATOR);
        }
        self.call_has_text = true;
        self.has_text = true;
        self.pending.push_str(text);
    }

    /// One model call with its deltas streamed into the reply.
    pub async fn call(
        &mut self,
        model: &dyn ModelProvider,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, CallError> {
        if !self.pending.is_empty() {
            let text = std::mem::take(&mut self.pending);
            self.emit(text, false).await.map_err(CallError::Task)?;
        }
        self.call_has_text = false;
        let (tx, mut rx) = mpsc::channel::<String>(256);
        let call = model.complete(request, &tx, cancel);
        tokio::pin!(call);
        let mut tick = interval_at(Instant::now() + self.flush, self.flush);
        loop {
            tokio::select! {
                result = &mut call => {
                    while let Ok(d) = rx.try_recv() {
                        self.push(&d);
                    }
                    // A provider that streamed nothing still answered.
                    if let Ok(r) = &result && !self.call_has_text {
                        self.push(&r.text);
                    }
                    return result.map_err(CallError::Model);
                }
                Some(delta) = rx.recv() => {
                    self.push(&delta);
                    // The first text goes out at once: time to first token
                    // is what a user waiting on a stream feels.
                    if !self.started && !self.pending.is_empty() {
                        let text = std::mem::take(&mut self.pending);
                        self.emit(text, false).await.map_err(CallError::Task)?;
                    }
                }
                _ = tick.tick() => {
                    if !self.pending.is_empty() {
                        let text = std::mem::take(&mut self.pending);
                        self.emit(text, false).await.map_err(CallError::Task)?;
                    }
                }
            }
        }
    }

    /// Closes the reply with what is left of the last call's text.
    pub async fn finish(&mut self) -> Result<(), Error> {
        let rest = std::mem::take(&mut self.pending);
        self.emit(rest, true).await
    }
}
