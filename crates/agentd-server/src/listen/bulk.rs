//! Connections that were open at once, closed in bulk (a burst of streams
//! ended and its clients went away).
//!
//! What each held (16 KiB of HTTP buffers, the most of it) is then free,
//! and the binary gives those pages back to the kernel at once instead of
//! at its next periodic check: on glibc's malloc the next burst of
//! connections would otherwise reuse them fully resident, where fresh
//! pages are resident only where written. The library only tells; what to
//! do is the hook's. (Streams that end on connections kept open free a few
//! KiB each, mostly between live buffers: giving those back was measured
//! to lower nothing.)

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Closes, net of opens, below the most open since the last signal, that
/// make a bulk close.
pub(super) const BULK_CLOSE: usize = 1024;

static ON_BULK_CLOSE: OnceLock<fn()> = OnceLock::new();

/// Calls `hook` each time the connections open on a listener have fallen
/// by [`BULK_CLOSE`] from the most that were open since the last call. The
/// first hook set stays; it is called on the thread that drops the
/// connection, so it must only signal.
pub fn when_connections_close_in_bulk(hook: fn()) {
    let _ = ON_BULK_CLOSE.set(hook);
}

/// Counts the connections open and the most open since the last bulk
/// close.
#[derive(Default, Debug)]
pub(super) struct BulkCloses {
    open: AtomicUsize,
    most: AtomicUsize,
}

impl BulkCloses {
    pub(super) fn opened(&self) {
        let open = self.open.fetch_add(1, Ordering::Relaxed) + 1;
        self.most.fetch_max(open, Ordering::Relaxed);
    }

    /// Counts a close, and calls the hook if it completes a bulk close.
    pub(super) fn closed(&self) {
        if self.completes_a_bulk_close()
            && let Some(hook) = ON_BULK_CLOSE.get()
        {
            hook();
        }
    }

    /// Counts a close: whether it completes a bulk close (the next is then
    /// counted from here).
    fn completes_a_bulk_close(&self) -> bool {
        let open = self.open.fetch_sub(1, Ordering::Relaxed).saturating_sub(1);
        let most = self.most.load(Ordering::Relaxed);
        // Of closes racing past the mark, the one that moves it signals.
        most >= open + BULK_CLOSE
            && self.most.compare_exchange(most, open, Ordering::Relaxed, Ordering::Relaxed).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulk_close_is_told_once_per_1024_closes_below_the_most_open() {
        let c = BulkCloses::default();
        (0..BULK_CLOSE + 100).for_each(|_| c.opened());
        let told = |k: usize| (0..k).filter(|_| c.completes_a_bulk_close()).count();
        assert_eq!(told(BULK_CLOSE - 1), 0, "not yet a bulk close");
        assert_eq!(told(1), 1, "the 1,024th close below the most open");
        assert_eq!(told(100), 0, "the rest are counted from there");
        // What comes and goes without falling 1,024 below the most open is
        // never a bulk close.
        for _ in 0..10 * BULK_CLOSE {
            c.opened();
            assert!(!c.completes_a_bulk_close(), "churn is not a bulk close");
        }
        (0..2 * BULK_CLOSE).for_each(|_| c.opened());
        assert_eq!(told(2 * BULK_CLOSE), 2, "2,048 closes at once are two bulk closes");
    }
}
