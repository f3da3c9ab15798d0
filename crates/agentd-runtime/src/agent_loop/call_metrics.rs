//! The GenAI metrics of one model call (`gen_ai_client_*`): its duration
//! and outcome, the time to its first streamed text, its tokens.

use crate::model::{ModelError, ModelResponse};
use agentd_core::TaskControl;
use std::time::Instant;

pub(super) struct CallMetrics {
    control: TaskControl,
    provider: String,
    started: Instant,
    first_chunk: bool,
    finished: bool,
}

impl CallMetrics {
    pub(super) fn start(control: &TaskControl, provider: &str) -> Self {
        Self {
            control: control.clone(),
            provider: provider.to_owned(),
            started: Instant::now(),
            first_chunk: false,
            finished: false,
        }
    }

    /// A text delta arrived: the first one times the first chunk.
    pub(super) fn chunk(&mut self) {
        if !self.first_chunk {
            self.first_chunk = true;
            let m = self.control.runtime().engine().metrics();
            m.model.first_chunk(&self.provider, self.started.elapsed().as_secs_f64());
        }
    }

    /// The call answered. A text that came whole (not streamed, or
    /// streamed faster than it was read) is its first chunk too.
    pub(super) fn finish(&mut self, result: &Result<ModelResponse, ModelError>) {
        if result.as_ref().is_ok_and(|r| !r.text.is_empty()) {
            self.chunk();
        }
        self.finished = true;
        let m = self.control.runtime().engine().metrics();
        let secs = self.started.elapsed().as_secs_f64();
        match result {
            Ok(r) => {
                m.model.call(&self.provider, Ok(()), secs);
                m.model.tokens(&self.provider, r.usage.input_tokens, r.usage.output_tokens);
            }
            Err(e) => m.model.call(&self.provider, Err(error_type(e)), secs),
        }
    }
}

impl Drop for CallMetrics {
    /// A call dropped before it answered (the turn's deadline, a failure
    /// to record its text) counts as abandoned.
    fn drop(&mut self) {
        if !self.finished {
            let m = self.control.runtime().engine().metrics();
            m.model.call(&self.provider, Err("abandoned"), self.started.elapsed().as_secs_f64());
        }
    }
}

/// The `error_type` label: a closed set.
fn error_type(e: &ModelError) -> &'static str {
    match e {
        ModelError::Cancelled => "cancelled",
        ModelError::Timeout => "timeout",
        ModelError::Http { status, .. } if *status >= 500 => "http_5xx",
        ModelError::Http { status, .. } if *status >= 400 => "http_4xx",
        ModelError::Http { .. } => "http",
        ModelError::Protocol(_) => "protocol",
        ModelError::Config(_) => "config",
        ModelError::Unavailable(_) => "unavailable",
    }
}
