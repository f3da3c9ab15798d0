//! Conversations as a whole (the `conversation.*` commands): the turns of a
//! context a principal may see, and closing a context.

use super::Engine;
use crate::error::{Error, FieldPath};
use crate::principal::Principal;
use crate::record::TaskRecord;
use crate::store::{Batch, ClosedContext};
use agentd_proto::Timestamp;

impl Engine {
    /// The turns of `context_id` the principal may see, oldest first. A
    /// context with none is not found (InvalidParams on `field`), whether
    /// it does not exist or belongs to someone else.
    pub async fn context_turns(
        &self,
        p: &Principal,
        context_id: &str,
        field: &FieldPath,
    ) -> Result<Vec<TaskRecord>, Error> {
        let tasks = self.inner.store.context_tasks(context_id).await?;
        let mut visible = Vec::with_capacity(tasks.len());
        for stored in tasks.into_iter().filter(|r| p.can_see(&r.owner)) {
            // A live task may have moved on since this read; a terminal one cannot.
            let rec = match stored.state().is_terminal() {
                true => stored,
                false => self.record(stored.id()).await?.unwrap_or(stored),
            };
            visible.push(rec);
        }
        if visible.is_empty() {
            return Err(Error::invalid(
                field.clone(),
                format!("no conversation {context_id:?} is visible to you"),
            ));
        }
        Ok(visible)
    }

    /// Whether `conversation.close` closed this context.
    pub fn context_closed(&self, context_id: &str) -> bool {
        self.inner.closed_contexts.contains(context_id)
    }

    /// Closes a conversation: later turns in it are refused, and its live
    /// turns the principal may see are canceled (with `why` as their status
    /// message). Returns the ids of the turns canceled.
    pub async fn close_context(
        &self,
        p: &Principal,
        context_id: &str,
        field: &FieldPath,
        why: &str,
    ) -> Result<Vec<String>, Error> {
        let turns = self.context_turns(p, context_id, field).await?;
        // Closed first (durably, then in memory): a turn sent while the live
        // ones are being canceled is refused rather than started.
        let closed = ClosedContext {
            context_id: context_id.to_owned(),
            closed_by: p.id.clone(),
            closed_ms: Timestamp::now().millis(),
        };
        // The `conversation` event is committed with the closing: a crash
        // cannot leave one without the other.
        let owner = turns.first().map_or(p.id.as_str(), |t| t.owner.as_str());
        let events = vec![super::emit::context_closed(context_id, owner)];
        let batch = Batch { closed_contexts: vec![closed], events, ..Batch::default() };
        self.inner.store.commit(batch).await?;
        self.inner.closed_contexts.insert(context_id.to_owned());
        let mut canceled = Vec::new();
        for t in turns.iter().filter(|t| !t.state().is_terminal()) {
            match self.cancel_because(p, t.id(), why).await {
                Ok(_) => canceled.push(t.id().to_owned()),
                // Ended on its own meanwhile.
                Err(Error::NotCancelable { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(canceled)
    }
}
