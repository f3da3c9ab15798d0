//! Turns of one conversation run one at a time, in the order they were
//! admitted. Admission is synchronous (under the task's lock, right after
//! its commit, or for a new task whose creation is committed with its first
//! change, right after its creation in an idle context), so the order is the
//! commit order; each run then waits for the run admitted before it in the
//! same context.

use dashmap::DashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::oneshot;

#[derive(Default)]
pub struct Conversations {
    /// Per context: the ticket of the last admitted run and the signal it
    /// will send when done.
    tails: DashMap<String, (u64, oneshot::Receiver<()>)>,
    tickets: AtomicU64,
}

/// A run's place in its conversation.
pub struct Admission {
    context_id: String,
    ticket: u64,
    previous: Option<oneshot::Receiver<()>>,
    done: Option<oneshot::Sender<()>>,
}

impl Conversations {
    pub fn admit(&self, context_id: &str) -> Admission {
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        let (done, rx) = oneshot::channel();
        let previous = self.tails.insert(context_id.to_owned(), (ticket, rx)).map(|(_, rx)| rx);
        Admission { context_id: context_id.to_owned(), ticket, previous, done: Some(done) }
    }

    /// Ends a run: wakes the next one and forgets the context when no run
    /// follows. A run released before its turn came (cancelled while it
    /// waited, or run by another replica) waits here for the run before it
    /// first: the next one must not start while that one still runs.
    pub async fn release(&self, mut a: Admission) {
        a.wait_turn().await;
        if let Some(done) = a.done.take() {
            let _ = done.send(());
        }
        self.tails.remove_if(&a.context_id, |_, (ticket, _)| *ticket == a.ticket);
    }

    /// Whether a run admitted to `context_id` now would start at once (no
    /// run of that context is admitted and unreleased).
    pub fn is_idle(&self, context_id: &str) -> bool {
        !self.tails.contains_key(context_id)
    }

    /// Contexts with a run admitted and not yet released.
    pub fn len(&self) -> usize {
        self.tails.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tails.is_empty()
    }
}

impl Admission {
    /// Waits until the previous run of the conversation has ended.
    /// Cancel-safe: a wait given up (a `select!` that the run's
    /// cancellation won) leaves the turn still to be waited for.
    pub async fn wait_turn(&mut self) {
        if let Some(prev) = self.previous.as_mut() {
            // An error means the previous run's admission was dropped: its
            // run is over either way.
            let _ = prev.await;
            self.previous = None;
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "the test plays concurrent runs")]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    // Paused time: the sleeps below stagger the runs deterministically.
    #[tokio::test(start_paused = true)]
    async fn runs_of_a_context_take_turns_in_admission_order() {
        let conv = Arc::new(Conversations::default());
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for i in 0..5 {
            let mut a = conv.admit("c");
            let (conv, log) = (conv.clone(), log.clone());
            handles.push(tokio::spawn(async move {
                // Later admissions sleep less: without the queue they would finish first.
                tokio::time::sleep(std::time::Duration::from_millis(50 - i * 10)).await;
                a.wait_turn().await;
                log.lock().unwrap().push(i);
                conv.release(a).await;
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        assert_eq!(*log.lock().unwrap(), vec![0, 1, 2, 3, 4]);
        assert!(conv.is_empty(), "a context with no run left is forgotten");
    }

    #[tokio::test]
    async fn other_contexts_do_not_wait() {
        let conv = Conversations::default();
        let _held = conv.admit("a");
        let mut b = conv.admit("b");
        tokio::time::timeout(std::time::Duration::from_secs(1), b.wait_turn()).await.unwrap();
        conv.release(b).await;
        assert_eq!(conv.len(), 1);
    }

    /// With the clock paused, a timeout fires only once nothing else can
    /// run: a wait that times out is one that nothing would end.
    async fn still_waits(a: &mut Admission) -> bool {
        tokio::time::timeout(std::time::Duration::from_secs(1), a.wait_turn()).await.is_err()
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_released_before_its_turn_keeps_the_next_one_waiting_for_the_one_before() {
        let conv = Arc::new(Conversations::default());
        let first = conv.admit("c");
        let second = conv.admit("c");
        let mut third = conv.admit("c");
        // The second is cancelled while it waits: its release waits for the first.
        let gone = tokio::spawn({
            let conv = conv.clone();
            async move { conv.release(second).await }
        });
        assert!(still_waits(&mut third).await, "the third run started while the first still ran");
        assert!(still_waits(&mut third).await, "a wait given up keeps the turn to wait for");
        conv.release(first).await;
        assert!(!still_waits(&mut third).await, "the third run's turn comes once the first ended");
        gone.await.unwrap();
        conv.release(third).await;
        assert!(conv.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_context_whose_last_admission_was_released_before_its_turn_is_not_idle_yet() {
        let conv = Arc::new(Conversations::default());
        let first = conv.admit("c");
        let second = conv.admit("c");
        let gone = tokio::spawn({
            let conv = conv.clone();
            async move { conv.release(second).await }
        });
        tokio::task::yield_now().await;
        assert!(!conv.is_idle("c"), "a run admitted now would start beside the first");
        let mut next = conv.admit("c");
        assert!(still_waits(&mut next).await, "a run admitted later started while the first still ran");
        conv.release(first).await;
        assert!(!still_waits(&mut next).await);
        gone.await.unwrap();
        conv.release(next).await;
        assert!(conv.is_empty());
    }
}
