//! The daemon's background work. Every task the daemon spawns (runs of
//! turns, observers, gate timers, the events-feed writer, eviction, the
//! push worker, the prune loop, connections) is registered on one
//! [`TaskTracker`] and can be told to stop with one [`CancellationToken`],
//! so a shutdown knows when everything has ended. `tokio::spawn` itself is
//! refused by clippy (`clippy.toml`): spawning goes through here.

use std::future::Future;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

#[derive(Clone, Debug, Default)]
pub struct Background {
    tracker: TaskTracker,
    shutdown: CancellationToken,
}

impl Background {
    pub fn new() -> Self {
        Self::default()
    }

    /// Spawns `task`, tracked. It ends by itself: it watches
    /// [`Background::shutdown`] (or a token derived from it) where it has
    /// something to finish first.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(task)
    }

    /// `spawn` on the runtime `handle` (from code that may run outside a
    /// runtime context, such as a `Drop`).
    pub fn spawn_on<F>(&self, task: F, handle: &tokio::runtime::Handle) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn_on(task, handle)
    }

    /// Spawns `task`, tracked, and drops it at shutdown: for loops with
    /// nothing to finish (timers, retention, probes).
    pub fn spawn_until_shutdown<F>(&self, task: F) -> JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let shutdown = self.shutdown.clone();
        self.tracker.spawn(async move {
            tokio::select! {
                () = shutdown.cancelled() => {}
                () = task => {}
            }
        })
    }

    /// Fires when the background work is told to stop.
    pub fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Tells every task to stop and waits up to `within` for all of them
    /// to end; false when some were still running then.
    pub async fn stop(&self, within: Duration) -> bool {
        self.shutdown.cancel();
        self.tracker.close();
        tokio::time::timeout(within, self.tracker.wait()).await.is_ok()
    }

    /// How many tracked tasks have not ended yet.
    pub fn len(&self) -> usize {
        self.tracker.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tracker.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn stop_waits_for_tracked_tasks_and_drops_loops() {
        let bg = Background::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let finishing = bg.spawn({
            let shutdown = bg.shutdown().clone();
            async move {
                shutdown.cancelled().await;
                let _ = tx.send(());
            }
        });
        bg.spawn_until_shutdown(std::future::pending());
        assert_eq!(bg.len(), 2);
        assert!(bg.stop(Duration::from_secs(1)).await, "both end once told");
        assert!(rx.await.is_ok(), "the task saw the shutdown and finished its work");
        assert!(finishing.is_finished());
        assert!(bg.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn stop_gives_up_after_its_bound() {
        let bg = Background::new();
        bg.spawn(std::future::pending::<()>());
        assert!(!bg.stop(Duration::from_secs(5)).await, "a task that ignores the token is reported");
    }
}
