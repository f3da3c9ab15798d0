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
    /// Whether the artifact exists (later chunks append).
    started: bool,
    /// The reply as it should read: every call's text so far.
    text: String,
    /// The reply as the artifact holds it (committed chunks). After a
    /// restart it may run ahead of `text` (the interrupted call's text):
    /// the call made again sends only what goes beyond it.
    sent: String,
    /// Whether the current model call's text has begun.
    call_has_text: bool,
}

impl ReplyStream {
    /// The reply of a resumed turn: `recorded` are the texts of the calls
    /// the journal holds, `committed` the artifact's text (if it exists).
    pub fn resumed(
        control: TaskControl,
        flush: Duration,
        recorded: &[&str],
        committed: Option<String>,
    ) -> Self {
        let artifact_id = reply_artifact_id(control.task_id());
        let mut reply = Self {
            control,
            artifact_id,
            flush,
            started: committed.is_some(),
            text: String::new(),
            sent: committed.unwrap_or_default(),
            call_has_text: false,
        };
        for t in recorded {
            reply.call_has_text = false;
            reply.push(t);
        }
        reply.call_has_text = false;
        reply
    }

    /// Whether the artifact lacks part of the reply's text.
    fn unsent(&self) -> bool {
        !self.sent.starts_with(&self.text)
    }

    /// Brings the artifact up to the reply's text: the part beyond what it
    /// holds, or, when it holds something else (a resumed call that said
    /// something new), the whole text replacing it.
    async fn emit(&mut self, last: bool) -> Result<(), Error> {
        let (chunk, append) = if self.text.starts_with(&self.sent) {
            (self.text[self.sent.len()..].to_owned(), self.started)
        } else {
            (self.text.clone(), false)
        };
        let artifact = Artifact {
            artifact_id: self.artifact_id.clone(),
            name: "reply".into(),
            parts: vec![Part::text(chunk.clone())],
            ..Default::default()
        };
        self.control.text_chunk(artifact, append, last).await?;
        if append {
            self.sent.push_str(&chunk);
        } else {
            self.sent = chunk;
        }
        self.started = true;
        Ok(())
    }

    /// Adds text of the current model call, after the separator when it is
    /// the call's first text and an earlier call said something.
    fn push(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if !self.call_has_text && !self.text.is_empty() {
            self.text.push_str(STEP_SEPARATOR);
        }
        self.call_has_text = true;
        self.text.push_str(text);
    }

    /// One model call with its deltas streamed into the reply.
    pub async fn call(
        &mut self,
        model: &dyn ModelProvider,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, CallError> {
        if self.unsent() {
            self.emit(false).await.map_err(CallError::Task)?;
        }
        self.call_has_text = false;
        let (tx, mut rx) = mpsc::channel::<String>(256);
        let mut metrics = super::call_metrics::CallMetrics::start(&self.control, model.name());
        let call = model.complete(request, &tx, cancel);
        tokio::pin!(call);
        let mut tick = interval_at(Instant::now() + self.flush, self.flush);
        loop {
            tokio::select! {
                result = &mut call => {
                    metrics.finish(&result);
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
                    metrics.chunk();
                    self.push(&delta);
                    // The first text goes out at once: time to first token
                    // is what a user waiting on a stream feels.
                    if !self.started && self.unsent() {
                        self.emit(false).await.map_err(CallError::Task)?;
                    }
                }
                _ = tick.tick() => {
                    if self.unsent() {
                        self.emit(false).await.map_err(CallError::Task)?;
                    }
                }
            }
        }
    }

    /// Closes the reply with what is left of the last call's text.
    pub async fn finish(&mut self) -> Result<(), Error> {
        self.emit(true).await
    }
}

/// The id of a turn's reply artifact: one per task, so a resumed turn
/// continues the same artifact.
pub fn reply_artifact_id(task_id: &str) -> String {
    format!("{task_id}-reply")
}
