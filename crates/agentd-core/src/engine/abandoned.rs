//! A commit whose awaiting future was dropped: a client that left while its
//! request committed (hyper drops the request's future), a turn's deadline
//! cutting a tool call short. The store's writer does not stop with the
//! future, so the change may be committed while the slot, which adopts a
//! change only once the store says it is in, still holds the version
//! before it: every later commit would then be refused as not the next
//! version, and the task could not change again, not even fail.
//!
//! So a commit marks the slot while it is in the store's hands
//! (`SlotState::commit_in_doubt`); a guard that is dropped while it is
//! marked has the slot read the task from the store, and the next commit
//! does so first if the guard's reading has not happened yet.

use super::Engine;
use crate::error::Error;
use crate::slots::{Slot, SlotState};
use std::sync::Arc;

/// Held across a commit's await; dropped before the outcome is back, it has
/// the slot settled from the store in the background (the lock is taken
/// then, once the dropped future has let go of it).
pub(super) struct InDoubtGuard<'a> {
    engine: &'a Engine,
    slot: &'a Arc<Slot>,
    armed: bool,
}

impl<'a> InDoubtGuard<'a> {
    pub(super) fn new(engine: &'a Engine, slot: &'a Arc<Slot>) -> Self {
        Self { engine, slot, armed: true }
    }

    /// The outcome is back and the slot knows it.
    pub(super) fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for InDoubtGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let (engine, slot) = (self.engine.clone(), self.slot.clone());
        self.engine.inner.background.spawn_on(
            async move {
                let mut st = slot.state.lock().await;
                if !st.commit_in_doubt || st.detached {
                    return; // a later commit settled it first
                }
                if let Err(e) = engine.settle_abandoned_commit(&slot, &mut st).await {
                    tracing::warn!(task = %st.record.id(), error = %e, "cannot read a task whose commit was abandoned; its next commit reads it again");
                    return;
                }
                if !st.detached && !st.running && st.pending.is_none() && slot.followers() == 0 {
                    // Nothing else would take it out of memory.
                    st.detached = true;
                    engine.inner.slots.remove(st.record.id());
                }
            },
            &rt,
        );
    }
}

impl Engine {
    /// Reads the task of a slot whose last commit was abandoned and makes
    /// what the store holds the slot's record: the abandoned change if it
    /// went in (its streams and run are told, as of another replica's
    /// change), the record as it was if not. Clears the mark; on a store
    /// error the mark stays and nothing changed.
    pub(super) async fn settle_abandoned_commit(
        &self,
        slot: &Arc<Slot>,
        st: &mut SlotState,
    ) -> Result<(), Error> {
        // Its own caller may leave too: then the guard settles it.
        let guard = InDoubtGuard::new(self, slot);
        let settled = self.settle_from_store(slot, st).await;
        guard.disarm();
        settled
    }

    async fn settle_from_store(&self, slot: &Arc<Slot>, st: &mut SlotState) -> Result<(), Error> {
        // The store's writer may not have reached the abandoned batch yet:
        // an empty commit, queued behind it, is answered once it is written
        // (SQLite's one writer takes batches in order). On a store replicas
        // share, a change read too early is a conflict the next commit
        // reads the task again after, as for another replica's change.
        self.inner.store.commit(crate::store::Batch::default()).await.map_err(super::store_failed)?;
        let stored = self.inner.store.get_task(st.record.id()).await.map_err(super::store_failed)?;
        st.commit_in_doubt = false;
        let owed = st.owed_input.take();
        let Some(stored) = stored else {
            // A creation that did not go in: it is still pending.
            if let Some(owed) = owed {
                st.running = owed.was_running;
            }
            return Ok(());
        };
        // A pending creation is committed with the first change, as the
        // same version: its being stored at all says it went in.
        let created = st.pending.take().is_some();
        if created {
            st.claim = None;
        }
        if !created && stored.version <= st.record.version {
            // The change did not go in: neither did its input, if it was a
            // SendMessage's.
            if let Some(owed) = owed {
                st.running = owed.was_running;
            }
            return Ok(());
        }
        tracing::info!(task = %stored.id(), version = stored.version, "a commit whose caller left went in; the task's slot reads it");
        let held = self.inner.leasing.held.contains_key(stored.id());
        self.adopt_stored(slot, st, stored);
        if let Some(owed) = owed.filter(|_| !st.detached) {
            // The input went in with it: the reading above took it for
            // another replica's input, as steering; it goes where its
            // SendMessage would have put it.
            st.steering.retain(|m| m.message_id != owed.input.message_id);
            self.give_input(st, owed);
        }
        let rec = &st.record;
        if rec.state().is_terminal() {
            self.inner.task_agents.remove(rec.id());
            self.forget_child(rec);
            if !held {
                self.notify_ended(rec.id(), rec.state());
            }
        }
        Ok(())
    }
}
