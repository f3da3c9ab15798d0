//! The limits that stop a runaway turn, with their defaults.

use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Model calls per turn.
    pub max_steps: u32,
    /// Input plus output tokens per turn, as the provider reports them.
    pub max_tokens: u64,
    /// Wall-clock time per turn.
    pub deadline: Duration,
    /// Passed to the model as its answer cap.
    pub max_output_tokens: Option<u32>,
    /// Budget for earlier turns in the model input (estimated at four
    /// characters a token); the oldest turns are dropped first.
    pub context_tokens: usize,
    /// How often streamed text is committed as an artifact update.
    pub flush_interval: Duration,
    /// The configuration key of `max_tokens`, named when the limit stops a
    /// turn (a subagent's comes from `subagents.max_tokens`).
    pub max_tokens_key: &'static str,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_steps: 16,
            max_tokens: 200_000,
            deadline: Duration::from_secs(600),
            max_output_tokens: None,
            context_tokens: 32_000,
            flush_interval: Duration::from_millis(50),
            max_tokens_key: "limits.max_tokens",
        }
    }
}
