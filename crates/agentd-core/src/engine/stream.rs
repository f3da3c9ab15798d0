//! A stream of one task's events, as SendStreamingMessage and
//! SubscribeToTask deliver them: the task snapshot first, then every event
//! in commit order, ending at a terminal state (and, for message streams,
//! at an interrupted one).

use crate::slots::Event;
use agentd_proto::{A2aError, ErrorKind, StreamResponse, Task};
use std::sync::Arc;
use tokio::sync::broadcast::{self, error::RecvError};

pub struct TaskEvents {
    /// Lets a dropped stream release an idle task's slot.
    engine: Option<super::Engine>,
    first: Option<Task>,
    task_id: String,
    rx: broadcast::Receiver<Event>,
    close_on_interrupt: bool,
    done: bool,
    /// Whether reminder lifecycle events are shown (the request activated
    /// the reminders extension); otherwise they are skipped.
    reminder_events: bool,
    /// Ends after the first snapshot (for a gate's answerer, who may not
    /// follow the task past its answer).
    snapshot_only: bool,
}

impl TaskEvents {
    pub(crate) fn new(
        engine: &super::Engine,
        first: Task,
        rx: broadcast::Receiver<Event>,
        close_on_interrupt: bool,
    ) -> Self {
        let engine = Some(engine.clone());
        Self {
            engine,
            task_id: first.id.clone(),
            first: Some(first),
            rx,
            close_on_interrupt,
            done: false,
            reminder_events: false,
            snapshot_only: false,
        }
    }

    /// Shows reminder lifecycle events on this stream (off by default).
    pub fn with_reminder_events(mut self, on: bool) -> Self {
        self.reminder_events = on;
        self
    }

    /// This stream ends after its first event, the snapshot.
    pub(crate) fn snapshot_only(mut self) -> Self {
        self.snapshot_only = true;
        self
    }

    /// The snapshot, if this stream yields only that.
    pub(crate) fn take_snapshot(&mut self) -> Option<Task> {
        if self.snapshot_only { self.first.take() } else { None }
    }

    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The next event, `None` when the stream is over. An error means this
    /// stream fell too far behind and was cut off (the task is unaffected).
    pub async fn next(&mut self) -> Option<Result<Event, A2aError>> {
        if let Some(t) = self.first.take() {
            let state = t.status.state;
            self.done = self.snapshot_only
                || state.is_terminal()
                || (self.close_on_interrupt && state.is_interrupted());
            return Some(Ok(Arc::new(StreamResponse::Task(t))));
        }
        if self.done {
            return None;
        }
        let received = loop {
            match self.rx.recv().await {
                Ok(ev) if crate::reminder::is_lifecycle_event(&ev) => {
                    // Never ends a stream: the task's state did not change.
                    if self.reminder_events {
                        return Some(Ok(ev));
                    }
                }
                other => break other,
            }
        };
        match received {
            Ok(ev) => {
                if let StreamResponse::StatusUpdate(s) = ev.as_ref() {
                    let state = s.status.state;
                    self.done = state.is_terminal() || (self.close_on_interrupt && state.is_interrupted());
                }
                Some(Ok(ev))
            }
            Err(RecvError::Closed) => None,
            Err(RecvError::Lagged(n)) => {
                self.done = true;
                Some(Err(A2aError::new(
                    ErrorKind::Internal,
                    format!("this stream fell {n} events behind and was closed; resubscribe to continue"),
                )))
            }
        }
    }

    /// Consumes events until the stream ends (blocking SendMessage).
    pub(crate) async fn settle(mut self) {
        while let Some(ev) = self.next().await {
            if ev.is_err() {
                break;
            }
        }
    }
}

impl Drop for TaskEvents {
    fn drop(&mut self) {
        // A subscriber of a task that waits with nothing running may have
        // been the only reason its slot stayed in memory.
        if let (Some(engine), Ok(rt)) = (self.engine.take(), tokio::runtime::Handle::try_current()) {
            let id = std::mem::take(&mut self.task_id);
            rt.spawn(async move { engine.evict_idle(&id).await });
        }
    }
}
