//! The GenAI metrics of one model call (`gen_ai_client_*`): its duration
//! and outcome, the time to its first streamed text, its tokens. The
//! provider's series are resolved before the call, so recording it
//! allocates nothing.

use crate::model::{ModelError, ModelResponse};
use agentd_core::TaskControl;
use agentd_metrics::ProviderCalls;
use std::sync::Arc;
use std::time::Instant;

pub(super) struct CallMetrics {
    calls: Arc<ProviderCalls>,
    started: Instant,
    first_chunk: bool,
    finished: bool,
}

impl CallMetrics {
    pub(super) fn start(control: &TaskControl, provider: &str) -> Self {
        let calls = control.runtime().engine().metrics().model.provider(provider);
        Self { calls, started: Instant::now(), first_chunk: false, finished: false }
    }

    /// A text delta arrived: the first one times the first chunk.
    pub(super) fn chunk(&mut self) {
        if !self.first_chunk {
            self.first_chunk = true;
            self.calls.first_chunk(self.started.elapsed().as_secs_f64());
        }
    }

    /// The call answered. A text that came whole (not streamed, or
    /// streamed faster than it was read) is its first chunk too.
    pub(super) fn finish(&mut self, result: &Result<ModelResponse, ModelError>) {
        if result.as_ref().is_ok_and(|r| !r.text.is_empty()) {
            self.chunk();
        }
        self.finished = true;
        let secs = self.started.elapsed().as_secs_f64();
        match result {
            Ok(r) => self.calls.ok(secs, r.usage.input_tokens, r.usage.output_tokens),
            Err(e) => self.calls.failed(error_type(e), secs),
        }
    }
}

impl Drop for CallMetrics {
    /// A call dropped before it answered (the turn's deadline, a failure
    /// to record its text) counts as abandoned.
    fn drop(&mut self) {
        if !self.finished {
            self.calls.failed("abandoned", self.started.elapsed().as_secs_f64());
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
