//! One task's events, fanned out to the streams that follow it.
//!
//! The events are kept in a tokio broadcast channel (order, capacity, and
//! the cut-off of a stream that falls behind), but a stream does not wait
//! in the channel: it waits on its own bell, which a publish rings. Waiting
//! in the channel, every stream of the task would be woken by the send
//! itself, all at once: thousands of tasks pushed onto one worker overflow
//! its local run queue into the runtime's global one, and whatever is woken
//! next from outside the runtime (the store's answer to the task's next
//! commit, say) runs only after all of them. The bells of a task with many
//! streams are rung a slice at a time by a task that yields between slices,
//! so the streams share the workers with everything else; a stream rung
//! late reads every event published meanwhile in one go.

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use tokio::sync::{Notify, broadcast};

/// How many bells are rung before the ringer lets the woken streams run:
/// half of a tokio worker's local run queue (256), so that a slice never
/// overflows it.
const RING_SLICE: usize = 128;

/// A stream's side: the events, and the bell rung when there may be more.
pub struct Subscription<T> {
    pub rx: broadcast::Receiver<T>,
    pub bell: Arc<Notify>,
}

pub struct Fanout<T> {
    /// Made by the first subscriber: a channel holds `capacity` events
    /// from its creation, and most tasks never get a stream.
    tx: OnceLock<broadcast::Sender<T>>,
    capacity: usize,
    bells: Mutex<Bells>,
}

#[derive(Default)]
struct Bells {
    /// One per subscription; those of dropped subscriptions are pruned.
    all: Vec<Weak<Notify>>,
    /// How many were left by the last pruning: the next one is due when
    /// twice as many are held, so that subscribing and dropping streams
    /// without a publish cannot grow the list without bound.
    kept: usize,
}

impl Bells {
    fn prune(&mut self) {
        self.all.retain(|b| b.strong_count() > 0);
        self.kept = self.all.len();
    }
}

impl<T: Clone + Send + 'static> Fanout<T> {
    pub fn new(capacity: usize) -> Self {
        Self { tx: OnceLock::new(), capacity, bells: Mutex::default() }
    }

    /// A subscription to the events published from now on.
    pub fn subscribe(&self) -> Subscription<T> {
        let bell = Arc::new(Notify::new());
        // Under the bells' lock, as a publish sends and takes the bells: a
        // subscription that can read an event has its bell rung for it.
        let mut bells = self.bells.lock().unwrap_or_else(PoisonError::into_inner);
        let rx = self.tx.get_or_init(|| broadcast::channel(self.capacity).0).subscribe();
        if bells.all.len() >= 2 * bells.kept.max(16) {
            bells.prune();
        }
        bells.all.push(Arc::downgrade(&bell));
        Subscription { rx, bell }
    }

    /// Publishes `ev` to the current subscriptions; with none, it reaches
    /// nobody (as a channel without receivers).
    pub fn publish(&self, ev: T) {
        let Some(tx) = self.tx.get() else { return };
        let mut bells = self.bells.lock().unwrap_or_else(PoisonError::into_inner);
        if tx.send(ev).is_err() {
            return; // no receiver left
        }
        bells.prune();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) if bells.all.len() > RING_SLICE => {
                // Not on `Background`: the ringer holds only weak bells and
                // ends after its last slice; a shutdown has nothing to wait
                // for in it.
                #[allow(clippy::disallowed_methods)]
                rt.spawn(ring_in_slices(bells.all.clone()));
            }
            // A few: rung here (a ring only marks a stream to be run).
            _ => ring_all(&bells.all),
        }
    }

    /// How many subscriptions are open.
    pub fn receiver_count(&self) -> usize {
        self.tx.get().map_or(0, broadcast::Sender::receiver_count)
    }
}

impl<T> Drop for Fanout<T> {
    /// The channel closes first, then every bell rings: a woken stream
    /// reads that the task's events are over.
    fn drop(&mut self) {
        drop(self.tx.take());
        let bells = self.bells.get_mut().unwrap_or_else(PoisonError::into_inner);
        ring_all(&bells.all);
    }
}

fn ring_all(bells: &[Weak<Notify>]) {
    for b in bells {
        if let Some(b) = b.upgrade() {
            b.notify_one();
        }
    }
}

async fn ring_in_slices(bells: Vec<Weak<Notify>>) {
    for (i, slice) in bells.chunks(RING_SLICE).enumerate() {
        if i > 0 {
            // Behind the streams just woken, and whatever else waits.
            tokio::task::yield_now().await;
        }
        ring_all(slice);
    }
}

impl<T> Subscription<T>
where
    T: Clone,
{
    /// A subscription to nothing: its events are over before it starts.
    pub fn closed() -> Self {
        let (_, rx) = broadcast::channel(1);
        Subscription { rx, bell: Arc::new(Notify::new()) }
    }

    /// The next event; `Err` when the channel closed or this subscription
    /// fell more than the capacity behind (as `broadcast::Receiver::recv`).
    pub async fn recv(&mut self) -> Result<T, broadcast::error::RecvError> {
        use broadcast::error::{RecvError, TryRecvError};
        loop {
            match self.rx.try_recv() {
                Ok(ev) => return Ok(ev),
                Err(TryRecvError::Empty) => self.bell.notified().await,
                Err(TryRecvError::Closed) => return Err(RecvError::Closed),
                Err(TryRecvError::Lagged(n)) => return Err(RecvError::Lagged(n)),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests spawn the streams they wait on
mod tests {
    use super::*;
    use broadcast::error::RecvError;
    use std::time::Duration;

    /// The next event of `s`; a stream never rung fails the test instead
    /// of hanging it.
    async fn next(s: &mut Subscription<u32>) -> Result<u32, RecvError> {
        tokio::time::timeout(Duration::from_secs(20), s.recv()).await.expect("the stream was rung")
    }

    #[tokio::test]
    async fn every_stream_of_a_task_with_many_gets_each_event_in_order() {
        let f = Fanout::<u32>::new(8);
        let mut subs: Vec<_> = (0..3 * RING_SLICE + 5).map(|_| f.subscribe()).collect();
        f.publish(1);
        f.publish(2);
        for s in &mut subs {
            assert_eq!((next(s).await, next(s).await), (Ok(1), Ok(2)));
        }
        // A stream that waits is rung for the next event.
        let mut last = subs.pop().expect("a subscription");
        let waiting = tokio::spawn(async move { next(&mut last).await });
        tokio::task::yield_now().await;
        f.publish(3);
        assert_eq!(waiting.await.expect("the waiting stream"), Ok(3));
    }

    #[tokio::test]
    async fn a_stream_behind_by_more_than_the_capacity_is_told_so() {
        let f = Fanout::<u32>::new(2);
        let mut s = f.subscribe();
        for n in 0..5 {
            f.publish(n);
        }
        assert_eq!(next(&mut s).await, Err(RecvError::Lagged(3)));
        assert_eq!(next(&mut s).await, Ok(3));
    }

    #[tokio::test]
    async fn dropping_the_fanout_ends_its_waiting_streams() {
        let f = Fanout::<u32>::new(4);
        let mut s = f.subscribe();
        let waiting = tokio::spawn(async move { next(&mut s).await });
        tokio::task::yield_now().await;
        drop(f);
        assert_eq!(waiting.await.expect("the waiting stream"), Err(RecvError::Closed));
    }

    #[test]
    fn streams_that_come_and_go_without_events_leave_no_bells_behind() {
        let f = Fanout::<u32>::new(4);
        let kept = f.subscribe();
        for _ in 0..1_000 {
            drop(f.subscribe());
        }
        let held = f.bells.lock().expect("bells").all.len();
        assert!(held <= 32, "{held} bells held for 1 stream");
        assert_eq!(f.receiver_count(), 1);
        drop(kept);
    }
}
