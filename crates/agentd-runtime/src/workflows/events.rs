//! The one place a run's `run`, `step` and `gate` events are produced.
//! Each is logged, and handed to the sink the daemon wires in (the events
//! feed), if any. Events are emitted only after the change they describe
//! was committed.

pub use agentd_proto::ext::events::{GateAction, RunEventState, StepEventStatus};

use agentd_proto::ext::events::{EventKind, GateData, RunData, StepData};
use serde_json::Value;

/// What happened to a run.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEvent {
    /// The run started, or reached a state (`working`, `completed`, …).
    Run { run_id: String, task_id: String, workflow: String, state: RunEventState, reason: Option<String> },
    /// A step started, finished, was skipped or failed.
    Step {
        run_id: String,
        task_id: String,
        step: String,
        kind: &'static str,
        status: StepEventStatus,
        error: Option<String>,
    },
    /// A gate opened, was answered, escalated or timed out.
    Gate { run_id: String, task_id: String, step: String, action: GateAction, channel: String },
}

impl RunEvent {
    /// The events-feed kind: `run`, `step` or `gate`.
    pub fn kind(&self) -> &'static str {
        match self {
            RunEvent::Run { .. } => "run",
            RunEvent::Step { .. } => "step",
            RunEvent::Gate { .. } => "gate",
        }
    }

    /// The task the event is about (who may see it).
    pub fn task_id(&self) -> &str {
        match self {
            RunEvent::Run { task_id, .. }
            | RunEvent::Step { task_id, .. }
            | RunEvent::Gate { task_id, .. } => task_id,
        }
    }

    /// The event's `data` in the feed.
    pub fn data(&self) -> Value {
        let v = match self.clone() {
            RunEvent::Run { run_id, task_id, workflow, state, reason } => {
                serde_json::to_value(RunData { run_id, task_id, workflow, state, reason })
            }
            RunEvent::Step { run_id, task_id, step, kind, status, error } => {
                serde_json::to_value(StepData { run_id, task_id, step, kind: kind.to_owned(), status, error })
            }
            RunEvent::Gate { run_id, task_id, step, action, channel } => {
                let channel = (!channel.is_empty()).then_some(channel);
                serde_json::to_value(GateData { run_id, task_id, step, action, channel })
            }
        };
        v.unwrap_or_default()
    }
}

/// Where run events go beyond the log (the events feed).
pub trait RunEventSink: Send + Sync + 'static {
    fn emit(&self, event: &RunEvent);
}

/// Logs `event` and hands it to `sink`.
pub fn emit(sink: Option<&dyn RunEventSink>, event: RunEvent) {
    tracing::info!(kind = event.kind(), data = %event.data(), "workflow event");
    if let Some(s) = sink {
        s.emit(&event);
    }
}

/// The events-feed sink: commits each event with `Runtime::emit_event`, one
/// at a time in the order they were emitted (a single writer task behind a
/// channel, since `emit` cannot wait).
pub struct FeedSink {
    tx: tokio::sync::mpsc::UnboundedSender<RunEvent>,
}

impl FeedSink {
    /// Starts the writer task, tracked on the engine's background work; it
    /// ends when the sink is dropped, or at shutdown once it has written
    /// what was already handed to it.
    pub fn new(engine: agentd_core::Runtime) -> Self {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<RunEvent>();
        let background = engine.background().clone();
        let shutdown = background.shutdown().clone();
        background.spawn(async move {
            loop {
                let event = tokio::select! {
                    e = rx.recv() => e,
                    () = shutdown.cancelled() => None,
                };
                let Some(event) = event else { break };
                write(&engine, event).await;
            }
            rx.close();
            while let Ok(event) = rx.try_recv() {
                write(&engine, event).await;
            }
        });
        Self { tx }
    }
}

async fn write(engine: &agentd_core::Runtime, event: RunEvent) {
    let kind = match event {
        RunEvent::Run { .. } => EventKind::Run,
        RunEvent::Step { .. } => EventKind::Step,
        RunEvent::Gate { .. } => EventKind::Gate,
    };
    if let Err(e) = engine.emit_event(kind, event.task_id(), event.data()).await {
        tracing::warn!(error = %e, kind = event.kind(), "could not write a workflow event to the feed");
    }
}

impl RunEventSink for FeedSink {
    fn emit(&self, event: &RunEvent) {
        // Fails only when the writer task is gone (shutdown).
        let _ = self.tx.send(event.clone());
    }
}
