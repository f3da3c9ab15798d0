//! Turns of one conversation one at a time across replicas
//! (`docs/scaling.md`). Inside one process the runs of a context take
//! turns in admission order (`conversations.rs`); on a store several
//! replicas share, a run also holds the context's lease,
//! `context:<context id>`, from before its agent starts to after it ends,
//! so a turn sent to another replica waits for it. The waiter claims the
//! lease again when a `task` event of that context arrives (another
//! replica committed a change of it: its turn may have ended) and on a
//! bounded poll (ttl/3 at most), which also covers a holder that died: its
//! lease expires by the database clock like any other and the waiter takes
//! it. The lease is renewed, given up on a graceful stop and reported to
//! operators with the others.
//!
//! On a store without leases (SQLite, memory) nothing here runs.

use super::{Engine, Runtime};
use dashmap::DashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The first wait between two claims of a context's lease; it doubles up
/// to the poll interval.
const FIRST_RETRY: Duration = Duration::from_millis(20);

/// The lease resource of a conversation's turns.
pub(crate) fn context_resource(context_id: &str) -> String {
    format!("context:{context_id}")
}

/// The runs of this replica waiting for a context's lease, by context id:
/// each is woken when another replica commits a change of that context.
#[derive(Default)]
pub(super) struct ContextWaiters {
    waiting: DashMap<String, (Arc<Notify>, usize)>,
}

impl ContextWaiters {
    fn enter(&self, context_id: &str) -> Arc<Notify> {
        let mut entry = self.waiting.entry(context_id.to_owned()).or_insert_with(|| (Arc::default(), 0));
        entry.1 += 1;
        entry.0.clone()
    }

    fn leave(&self, context_id: &str) {
        self.waiting.remove_if_mut(context_id, |_, (_, n)| {
            *n -= 1;
            *n == 0
        });
    }

    /// A `task` event committed by any replica: wakes the runs waiting for
    /// its context. Reads the event only while some run waits.
    pub(super) fn on_task_event(&self, task: &crate::EventJson) {
        if self.waiting.is_empty() {
            return;
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct ContextOf {
            #[serde(default)]
            context_id: String,
        }
        let Ok(of) = serde_json::from_str::<ContextOf>(task.as_str()) else { return };
        if let Some(entry) = self.waiting.get(&of.context_id) {
            entry.0.notify_waiters();
        }
    }
}

impl Engine {
    /// Waits until this replica holds the lease of `context_id`'s turns
    /// (at once without leases). False when `cancel` fired first.
    pub(super) async fn take_context_turn(&self, context_id: &str, cancel: &CancellationToken) -> bool {
        if self.leases().is_none() {
            return true;
        }
        let runtime = Runtime::new(self.annotating(false));
        let resource = context_resource(context_id);
        let waiters = &self.inner.context_waiters;
        let wake = waiters.enter(context_id);
        let most = self.inner.config.replica.poll_interval.max(FIRST_RETRY);
        let mut retry = FIRST_RETRY;
        let mut told = false;
        let taken = loop {
            // Armed before the claim: an event between the two still wakes.
            let woken = wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if runtime.hold(&resource).await {
                break true;
            }
            if !told {
                tracing::info!(
                    context = context_id,
                    "waiting for the conversation's turn on another replica"
                );
                told = true;
            }
            tokio::select! {
                () = cancel.cancelled() => break false,
                () = &mut woken => retry = FIRST_RETRY,
                () = tokio::time::sleep(retry) => retry = (retry * 2).min(most),
            }
        };
        waiters.leave(context_id);
        taken
    }

    /// Gives up the lease of `context_id`'s turns (this run ended).
    pub(super) async fn end_context_turn(&self, context_id: &str) {
        if self.leases().is_some() {
            Runtime::new(self.annotating(false)).let_go(&context_resource(context_id)).await;
        }
    }
}
