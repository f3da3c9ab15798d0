//! Following, on one replica, the changes other replicas commit to the
//! tasks live here (`docs/scaling.md`): the store announces every
//! committed event, whoever committed it (NOTIFY wakes its follower, the
//! table is the truth, and after a lost connection it reads what it
//! missed). A `task` event whose status differs from the slot's is another
//! replica's change: the task is read again. For the holder of a run that
//! is how a cancel or input sent elsewhere reaches the run; for a replica
//! that only follows the task (a stream, a blocking SendMessage) it is how
//! the holder's progress reaches it.

use super::Engine;
use crate::slots::{Slot, SlotState};
use agentd_proto::Message;
use std::sync::Arc;

impl Engine {
    /// Another replica committed the task (a cancel, input, the holder's
    /// progress) since this one read it: the stored record replaces the
    /// slot's, and its streams get what changed (artifacts whole, then the
    /// status). Input committed there becomes steering input of a run
    /// here; a task that ended there stops its run here and leaves memory.
    pub(super) async fn reload_changed_elsewhere(&self, slot: &Arc<Slot>, st: &mut SlotState) {
        let stored = match self.inner.store.get_task(st.record.id()).await {
            Ok(Some(stored)) if stored.version > st.record.version => stored,
            _ => return,
        };
        tracing::info!(task = %stored.id(), version = stored.version, state = ?stored.state(), "the task changed on another replica; reloaded");
        self.adopt_stored(slot, st, stored);
    }

    /// Makes `stored`, a newer version of the slot's task than its record,
    /// the slot's record, and tells its streams and run what changed.
    pub(super) fn adopt_stored(
        &self,
        slot: &Arc<Slot>,
        st: &mut SlotState,
        stored: crate::record::TaskRecord,
    ) {
        let id = stored.id().to_owned();
        if st.running {
            // The answer to a tool call's approval is for the waiting call
            // (it reads the decision from the record), not the model's input.
            let undecided = |r: &crate::record::TaskRecord| {
                r.meta.approval.as_ref().is_some_and(|a| a.decision.is_none())
            };
            let answered = undecided(&st.record) && !undecided(&stored);
            let known: std::collections::HashSet<&str> =
                st.record.task.history.iter().flatten().map(|m| m.message_id.as_str()).collect();
            let arrived: Vec<Message> = stored
                .task
                .history
                .iter()
                .flatten()
                .filter(|m| m.role == agentd_proto::Role::User && !known.contains(m.message_id.as_str()))
                .filter(|m| !(answered && crate::approval::is_answer(m)))
                .cloned()
                .collect();
            st.steering.extend(arrived);
        }
        let ended = stored.state().is_terminal() || stored.state().is_interrupted();
        let relayed: Vec<(agentd_proto::Artifact, bool)> = stored
            .task
            .artifacts
            .iter()
            .flatten()
            .filter_map(|a| artifact_change(st.record.task.artifacts.as_deref().unwrap_or_default(), a))
            .collect();
        let status_moved = stored.task.status != st.record.task.status;
        st.record = stored;
        st.whole_task = None;
        let (task_id, context_id) = (id.clone(), st.record.task.context_id.clone());
        for (artifact, append) in relayed {
            let update = agentd_proto::TaskArtifactUpdateEvent {
                task_id: task_id.clone(),
                context_id: context_id.clone(),
                artifact,
                append,
                last_chunk: ended,
                metadata: None,
            };
            slot.publish(agentd_proto::StreamResponse::ArtifactUpdate(update));
        }
        if status_moved {
            let update = agentd_proto::TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: st.record.task.status.clone(),
                metadata: None,
            };
            slot.publish(agentd_proto::StreamResponse::StatusUpdate(update));
        }
        if st.record.state().is_terminal() {
            st.cancel.cancel();
            if self.inner.leasing.held.contains_key(&id) {
                self.inner.task_agents.remove(&id);
                self.notify_ended(&id, st.record.state());
            }
            st.detached = true;
            self.inner.slots.remove(&id);
        }
    }

    /// A `task` event of a task live here (run here, or followed by a
    /// stream or a blocking SendMessage), committed by another replica
    /// (its status differs from the slot's): reload the task.
    async fn on_task_event(&self, id: &str, task: &crate::EventJson) {
        let Some(slot) = self.inner.slots.get(id) else { return };
        let mut st = slot.state.lock().await;
        if st.detached {
            return;
        }
        // Only a live task's event is read, and only its status member.
        #[derive(serde::Deserialize)]
        struct StatusOf {
            #[serde(default)]
            status: serde_json::Value,
        }
        let theirs = serde_json::from_str::<StatusOf>(task.as_str()).map(|t| t.status).unwrap_or_default();
        let ours = serde_json::to_value(&st.record.task.status).unwrap_or_default();
        if ours == theirs {
            return; // this replica's own commit
        }
        self.reload_changed_elsewhere(&slot, &mut st).await;
    }

    /// A task another replica changed without a `task` event (a flush of
    /// its streamed reply): a stream here of a task run elsewhere gets the
    /// new text. The holder, and a task nobody streams here, skip it.
    async fn on_task_written(&self, id: &str) {
        if self.holds(id) {
            return;
        }
        let Some(slot) = self.inner.slots.get(id) else { return };
        if slot.followers() == 0 {
            return;
        }
        let mut st = slot.state.lock().await;
        if !st.detached {
            self.reload_changed_elsewhere(&slot, &mut st).await;
        }
    }

    /// Every task streamed here and run elsewhere, read again (task-write
    /// notifications were missed).
    async fn reload_streamed_elsewhere(&self) {
        for slot in self.inner.slots.all() {
            if slot.followers() == 0 {
                continue;
            }
            let mut st = slot.state.lock().await;
            if !st.detached && !self.holds(st.record.id()) {
                self.reload_changed_elsewhere(&slot, &mut st).await;
            }
        }
    }

    /// Every live task, read again (the event channel lagged).
    async fn reload_all_live(&self) {
        for slot in self.inner.slots.all() {
            let mut st = slot.state.lock().await;
            if !st.detached {
                self.reload_changed_elsewhere(&slot, &mut st).await;
            }
        }
    }

    /// Starts following the committed events (a store with leases).
    pub(super) fn spawn_follower(&self) {
        // Control sent to another replica (a cancel, input) is committed
        // there; its `task` event, announced here by the store's follower
        // (NOTIFY wakes it, the table is the truth), tells the holder.
        let engine = self.clone();
        let mut events = self.inner.store.subscribe_events();
        self.inner.background.spawn_until_shutdown(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match events.recv().await {
                    Ok(e) if e.event.kind == agentd_proto::ext::events::EventKind::Task => {
                        engine.inner.context_waiters.on_task_event(&e.event.data);
                        if let Some(id) = &e.event.task_id {
                            engine.on_task_event(id, &e.event.data).await;
                        }
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => engine.reload_all_live().await,
                    Err(RecvError::Closed) => return,
                }
            }
        });
        // The flushes of a reply streamed on another replica carry no
        // `task` event: the store names the task instead.
        let Some(leases) = self.leases() else { return };
        let mut writes = leases.subscribe_task_writes();
        let engine = self.clone();
        self.inner.background.spawn_until_shutdown(async move {
            use tokio::sync::broadcast::error::RecvError;
            loop {
                match writes.recv().await {
                    Ok(id) if id.is_empty() => engine.reload_streamed_elsewhere().await,
                    Ok(id) => engine.on_task_written(&id).await,
                    Err(RecvError::Lagged(_)) => engine.reload_streamed_elsewhere().await,
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }
}

/// What a stream relays of artifact `new`, given the artifacts it relayed
/// before: nothing when unchanged; the text past the old text as an
/// appended chunk when the artifact is one text part that grew (a streamed
/// reply's flush); else the whole artifact, replacing any old one.
fn artifact_change(
    before: &[agentd_proto::Artifact],
    new: &agentd_proto::Artifact,
) -> Option<(agentd_proto::Artifact, bool)> {
    let Some(old) = before.iter().find(|b| b.artifact_id == new.artifact_id) else {
        return Some((new.clone(), false));
    };
    if old == new {
        return None;
    }
    fn one_text(a: &agentd_proto::Artifact) -> Option<&str> {
        match a.parts.as_slice() {
            [p] => p.as_text(),
            _ => None,
        }
    }
    if let (Some(was), Some(now)) = (one_text(old), one_text(new))
        && let Some(grown) = now.strip_prefix(was)
        && old.name == new.name
    {
        let mut chunk = new.clone();
        chunk.parts = vec![agentd_proto::Part::text(grown)];
        return Some((chunk, true));
    }
    Some((new.clone(), false))
}
