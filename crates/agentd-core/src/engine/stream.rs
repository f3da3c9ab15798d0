//! A stream of one task's events, as SendStreamingMessage and
//! SubscribeToTask deliver them: the task snapshot first, then every event
//! in commit order, ending at a terminal state (and, for message streams,
//! at an interrupted one).

use crate::error::Error;
use crate::events::WholeTask;
use crate::fanout::Subscription;
use crate::record::TaskRecord;
use crate::slots::{Event, Published, Slot};
use agentd_proto::{StreamResponse, Task};
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

pub struct TaskEvents {
    /// Lets a dropped stream release an idle task's slot.
    engine: Option<super::Engine>,
    /// Boxed: a stream holds this for its whole life, the snapshot only
    /// until its first event.
    first: Option<Box<Task>>,
    task_id: String,
    /// The events; `None` for a wait that only settles (see [`Self::settling`]).
    rx: Option<Subscription<Event>>,
    /// For such a wait: the slot's count of settling statuses, and the
    /// value it had when the wait began.
    settles: Option<(watch::Receiver<u64>, u64)>,
    close_on_interrupt: bool,
    done: bool,
    /// Whether reminder lifecycle events are shown (the request activated
    /// the reminders extension); otherwise they are skipped.
    reminder_events: bool,
    /// Ends after the first snapshot (for a gate's answerer, who may not
    /// follow the task past its answer).
    snapshot_only: bool,
    /// The task's live slot, when the stream was opened on one: once the
    /// stream ends, its record is the committed one (see [`Self::settle`]).
    slot: Option<Arc<Slot>>,
    /// The stream saw a terminal state: the task's slot is already gone.
    terminal: bool,
}

impl TaskEvents {
    pub(crate) fn new(
        engine: &super::Engine,
        first: Task,
        rx: Subscription<Event>,
        close_on_interrupt: bool,
    ) -> Self {
        let engine = Some(engine.clone());
        Self {
            engine,
            task_id: first.id.clone(),
            first: Some(Box::new(first)),
            rx: Some(rx),
            settles: None,
            close_on_interrupt,
            done: false,
            reminder_events: false,
            snapshot_only: false,
            slot: None,
            terminal: false,
        }
    }

    /// A wait for task `id` to settle (end, or wait for input) and nothing
    /// else: no snapshot and no events, only the slot's count of settling
    /// statuses, read under the task's lock with its record in `state`.
    /// For a blocking SendMessage, which answers with the settled record:
    /// [`Self::settle`] is all it may be used for.
    pub(crate) fn settling(
        engine: &super::Engine,
        slot: &Arc<Slot>,
        id: &str,
        state: agentd_proto::TaskState,
    ) -> Self {
        let (seen, rx) = slot.watch_settles();
        let terminal = state.is_terminal();
        Self {
            engine: Some(engine.clone()),
            first: None,
            task_id: id.to_owned(),
            rx: None,
            settles: Some((rx, seen)),
            close_on_interrupt: true,
            done: terminal || state.is_interrupted(),
            reminder_events: false,
            snapshot_only: false,
            slot: Some(Arc::clone(slot)),
            terminal,
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
        if self.snapshot_only { self.first.take().map(|t| *t) } else { None }
    }

    /// Keeps the task's slot, so that [`Self::settle`] can answer with the
    /// record it holds instead of reading the task back from the store.
    pub(crate) fn with_slot(mut self, slot: &Arc<Slot>) -> Self {
        self.slot = Some(Arc::clone(slot));
        self
    }

    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The next event, `None` when the stream is over. An error means this
    /// stream fell too far behind and was cut off (the task is unaffected).
    pub async fn next(&mut self) -> Option<Result<Event, Error>> {
        // Boxed: this runs once per stream, and a stream keeps the future
        // of `next` while it waits for each event (the commit's future
        // inline made that a few KiB per stream).
        if self.first.is_some()
            && let Some(engine) = &self.engine
            && let Err(e) = Box::pin(engine.commit_pending(&self.task_id)).await
        {
            // The snapshot of a task whose creation could not be committed
            // is never shown.
            self.first = None;
            self.done = true;
            return Some(Err(e));
        }
        self.next_event().await
    }

    /// The next event, without committing a pending creation first (for
    /// [`Self::settle`], which publishes nothing).
    async fn next_event(&mut self) -> Option<Result<Event, Error>> {
        if let Some(t) = self.first.take() {
            let state = t.status.state;
            self.terminal = state.is_terminal();
            self.done =
                self.snapshot_only || self.terminal || (self.close_on_interrupt && state.is_interrupted());
            return Some(Ok(Arc::new(Published::new(StreamResponse::Task(*t)))));
        }
        if self.done {
            return None;
        }
        let rx = self.rx.as_mut()?;
        let received = loop {
            match rx.recv().await {
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
                if let StreamResponse::StatusUpdate(s) = &**ev {
                    let state = s.status.state;
                    self.terminal = state.is_terminal();
                    self.done = self.terminal || (self.close_on_interrupt && state.is_interrupted());
                }
                Some(Ok(ev))
            }
            Err(RecvError::Closed) => None,
            Err(RecvError::Lagged(n)) => {
                self.done = true;
                Some(Err(Error::Internal(format!(
                    "this stream fell {n} events behind and was closed; resubscribe to continue"
                ))))
            }
        }
    }

    /// Consumes events until the stream ends (blocking SendMessage). When it
    /// ended at a terminal or interrupted state and was opened with
    /// [`Self::with_slot`], returns the task's record from the slot: a change
    /// is adopted there, under the task's lock, after its commit and before
    /// its events are published, so this is the committed record (or a newer
    /// committed one), without a read from the store. `None` when the stream
    /// was cut off or has no slot: read the record instead. With the record,
    /// its whole Task JSON when the slot holds it for that version.
    pub(crate) async fn settle(mut self) -> Option<(TaskRecord, Option<WholeTask>)> {
        // Kept to the end: a follower keeps a task that waits in memory,
        // and with it the record this answers with.
        let mut settles = self.settles.take();
        if let Some((rx, seen)) = &mut settles {
            let seen = *seen;
            if !self.done && rx.wait_for(|n| *n > seen).await.is_err() {
                return None;
            }
        } else {
            while let Some(ev) = self.next_event().await {
                if ev.is_err() {
                    return None;
                }
            }
        }
        let slot = self.slot.take()?;
        let st = slot.state.lock().await;
        self.terminal = st.record.state().is_terminal();
        // A detached slot of a task that is not terminal was replaced by a
        // newer one (evicted and loaded again): its record may be stale.
        if st.detached && !st.record.state().is_terminal() {
            return None;
        }
        if Arc::strong_count(&slot) > 1 {
            return Some(settled(&st.record, &st.whole_task));
        }
        // Nobody else holds the slot (its run and the map let go of it) and
        // nobody can get it any more: its record is moved out, not copied.
        drop(st);
        // Not awaited inside the match: its scrutinee, a whole `Slot`,
        // would be kept in this future across the wait.
        let slot = match Arc::try_unwrap(slot) {
            Ok(slot) => {
                let st = slot.state.into_inner();
                let whole = st.whole_task.filter(|(version, _)| *version == st.record.version);
                return Some((st.record, whole.map(|(_, whole)| whole)));
            }
            Err(slot) => slot,
        };
        let st = slot.state.lock().await;
        Some(settled(&st.record, &st.whole_task))
    }
}

/// A copy of a settled record, and its whole Task JSON if that is of its version.
fn settled(rec: &TaskRecord, whole: &Option<(u64, WholeTask)>) -> (TaskRecord, Option<WholeTask>) {
    let whole = whole.as_ref().filter(|(version, _)| *version == rec.version).map(|(_, whole)| whole.clone());
    (rec.clone(), whole)
}

impl Drop for TaskEvents {
    fn drop(&mut self) {
        // A subscriber of a task that waits with nothing running may have
        // been the only reason its slot stayed in memory. A terminal task's
        // slot left the map with the change that ended it.
        if self.terminal {
            return;
        }
        if let (Some(engine), Ok(rt)) = (self.engine.take(), tokio::runtime::Handle::try_current()) {
            let id = std::mem::take(&mut self.task_id);
            let background = engine.inner.background.clone();
            background.spawn_on(async move { engine.evict_idle(&id).await }, &rt);
        }
    }
}
