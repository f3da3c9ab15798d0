//! The `scripted` model: replays one script of steps in order, one step per
//! call, and records every request it received (in memory, and optionally
//! as JSON lines appended to a file, so an end-to-end test can read what the
//! daemon sent). A call past the last step fails with `Unavailable`.

use super::script::{self, ScriptStep};
use super::stream::{estimate_request_tokens, estimate_tokens, send_delta, sleep, split_deltas};
use super::types::{ModelError, ModelProvider, ModelRequest, ModelResponse};
use async_trait::async_trait;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How many deltas a step's text is streamed in when it names none.
const DELTAS: usize = 3;

#[derive(Debug)]
pub struct ScriptedProvider {
    state: Mutex<State>,
    record_to: Option<PathBuf>,
}

#[derive(Debug)]
struct State {
    steps: VecDeque<ScriptStep>,
    total: usize,
    recorded: Vec<ModelRequest>,
    /// With `resume`: each distinct request answered so far (as JSON) and
    /// the step it got, so the same request gets the same step again.
    answered: Option<Vec<(String, ScriptStep)>>,
}

impl ScriptedProvider {
    /// A provider replaying `steps` in order.
    pub fn from_steps(steps: Vec<ScriptStep>) -> Self {
        let total = steps.len();
        Self {
            state: Mutex::new(State { steps: steps.into(), total, recorded: Vec::new(), answered: None }),
            record_to: None,
        }
    }

    /// A provider replaying the script file at `path` (YAML or JSON, by extension).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        Ok(Self::from_steps(script::load(path.as_ref())?))
    }

    /// Also appends each request received, as one JSON line, to `path`.
    pub fn with_record_to(mut self, path: impl Into<PathBuf>) -> Self {
        self.record_to = Some(path.into());
        self
    }

    /// Goes on with the script where the requests in `record_to` left it
    /// (see `ModelConfig::resume`); from now on a request identical to an
    /// earlier one is answered with that one's step again.
    pub fn resuming(self) -> Result<Self, ModelError> {
        let earlier = match &self.record_to {
            Some(path) => std::fs::read_to_string(path).unwrap_or_default(),
            None => String::new(),
        };
        {
            let mut state = self.lock();
            let mut answered: Vec<(String, ScriptStep)> = Vec::new();
            for line in earlier.lines().filter(|l| !l.trim().is_empty()) {
                let request: ModelRequest = serde_json::from_str(line).map_err(|e| {
                    ModelError::Config(format!("scripted model: a recorded request does not read back: {e}"))
                })?;
                let key = request_key(&request);
                if !answered.iter().any(|(k, _)| *k == key)
                    && let Some(step) = state.steps.pop_front()
                {
                    answered.push((key, step));
                }
            }
            state.answered = Some(answered);
        }
        Ok(self)
    }

    /// Every request received so far, in order.
    pub fn recorded(&self) -> Vec<ModelRequest> {
        self.lock().recorded.clone()
    }

    /// Steps not yet replayed.
    pub fn remaining(&self) -> usize {
        self.lock().steps.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves consistent data.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `req` and takes the next step (with its number, from 1).
    fn next_step(&self, req: &ModelRequest) -> Result<(usize, ScriptStep), ModelError> {
        let mut state = self.lock();
        state.recorded.push(req.clone());
        if let Some(path) = &self.record_to {
            append_json_line(path, req)?;
        }
        let n = state.recorded.len();
        if state.answered.is_some() {
            let key = request_key(req);
            let total = state.total;
            let answered = state.answered.as_mut().expect("checked");
            if let Some(i) = answered.iter().position(|(k, _)| *k == key) {
                return Ok((i + 1, answered[i].1.clone()));
            }
            let Some(step) = state.steps.pop_front() else {
                return Err(ModelError::Unavailable(format!(
                    "scripted model: the script has {total} step(s) and all were used; call {n} has none"
                )));
            };
            let answered = state.answered.as_mut().expect("checked");
            answered.push((key, step.clone()));
            return Ok((answered.len(), step));
        }
        match state.steps.pop_front() {
            Some(step) => Ok((state.total - state.steps.len(), step)),
            None => Err(ModelError::Unavailable(format!(
                "scripted model: the script has {} step(s) and all were used; call {n} has none",
                state.total
            ))),
        }
    }
}

/// What makes two requests the same request.
fn request_key(req: &ModelRequest) -> String {
    serde_json::to_string(req).unwrap_or_default()
}

fn append_json_line(path: &Path, req: &ModelRequest) -> Result<(), ModelError> {
    let fail = |e: &dyn std::fmt::Display| {
        ModelError::Unavailable(format!("scripted model: cannot record to {}: {e}", path.display()))
    };
    let mut line = serde_json::to_string(req).map_err(|e| fail(&e))?;
    line.push('\n');
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| fail(&e))?;
    file.write_all(line.as_bytes()).map_err(|e| fail(&e))
}

#[async_trait]
impl ModelProvider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
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
        let (n, step) = self.next_step(req)?;
        let text = step.final_text();
        let pieces = step.deltas.clone().unwrap_or_else(|| split_deltas(&text, DELTAS));
        let delay = Duration::from_millis(step.delay_ms.unwrap_or(0));
        if pieces.is_empty() {
            sleep(delay, cancel).await?;
        }
        for piece in pieces {
            sleep(delay, cancel).await?;
            send_delta(deltas, cancel, piece).await?;
        }
        if let Some(e) = step.error {
            return Err(ModelError::Http { status: e.status, message: e.message });
        }
        let tool_calls = step.calls(n);
        let finish_reason = step
            .finish_reason
            .clone()
            .unwrap_or_else(|| if tool_calls.is_empty() { "stop" } else { "tool_calls" }.to_owned());
        let usage = step.usage.unwrap_or(super::types::Usage {
            input_tokens: estimate_request_tokens(req),
            output_tokens: estimate_tokens(&text),
        });
        Ok(ModelResponse { text, tool_calls, usage, finish_reason })
    }
}
