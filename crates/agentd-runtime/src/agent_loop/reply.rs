//! The reply artifact of a turn, streamed: text deltas from the model are
//! committed as artifact updates, the first at once, then whatever arrived
//! each flush interval (one commit per delta would make streaming cost a
//! durable write per token); the last update carries `lastChunk`.

use crate::model::{ModelError, ModelProvider, ModelRequest, ModelResponse};
use agentd_core::TaskControl;
use agentd_proto::{A2aError, Artifact, Part};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{Instant, interval_at};
use tokio_util::sync::CancellationToken;

pub struct ReplyStream {
    control: TaskControl,
    artifact_id: String,
    flush: Duration,
    /// Whether a first chunk went out (later ones append).
    started: bool,
    /// Text received and not yet committed.
    pending: String,
}

impl ReplyStream {
    pub fn new(control: TaskControl, flush: Duration) -> Self {
        let artifact_id = format!("{}-reply", control.task_id());
        Self { control, artifact_id, flush, started: false, pending: String::new() }
    }

    async fn emit(&mut self, text: String, last: bool) -> Result<(), A2aError> {
        let artifact = Artifact {
            artifact_id: self.artifact_id.clone(),
            name: "reply".into(),
            parts: vec![Part::text(text)],
            ..Default::default()
        };
        self.control.artifact(artifact, self.started, last).await?;
        self.started = true;
        Ok(())
    }

    /// One model call with its deltas streamed into the reply.
    pub async fn call(
        &mut self,
        model: &dyn ModelProvider,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, ModelError> {
        if !self.pending.is_empty() {
            let text = std::mem::take(&mut self.pending);
            self.emit(text, false).await.map_err(|_| ModelError::Cancelled)?;
        }
        let (tx, mut rx) = mpsc::channel::<String>(256);
        let call = model.complete(request, &tx, cancel);
        tokio::pin!(call);
        let mut tick = interval_at(Instant::now() + self.flush, self.flush);
        loop {
            tokio::select! {
                result = &mut call => {
                    while let Ok(d) = rx.try_recv() {
                        self.pending.push_str(&d);
                    }
                    return result;
                }
                Some(delta) = rx.recv() => {
                    self.pending.push_str(&delta);
                    // The first text goes out at once: time to first token
                    // is what a user waiting on a stream feels.
                    if !self.started {
                        let text = std::mem::take(&mut self.pending);
                        self.emit(text, false).await.map_err(|_| ModelError::Cancelled)?;
                    }
                }
                _ = tick.tick() => {
                    if !self.pending.is_empty() {
                        let text = std::mem::take(&mut self.pending);
                        self.emit(text, false).await.map_err(|_| ModelError::Cancelled)?;
                    }
                }
            }
        }
    }

    /// Closes the reply after the final answer `text` (used whole when the
    /// provider streamed nothing).
    pub async fn finish(&mut self, text: &str) -> Result<(), A2aError> {
        let rest = std::mem::take(&mut self.pending);
        let last = if self.started || !rest.is_empty() { rest } else { text.to_owned() };
        self.emit(last, true).await
    }
}
