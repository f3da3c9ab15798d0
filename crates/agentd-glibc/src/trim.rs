//! Freed heap pages given back to the kernel.
//!
//! glibc's malloc returns memory to the kernel only from the top of a heap.
//! After a burst (10,000 streams opened and closed, say) the freed chunks
//! sit between chunks still in use, and the process keeps them resident
//! for as long as it runs: 220 MiB, where the daemon uses a few tens of
//! MiB. `malloc_trim(0)` walks every arena's free chunks and tells the
//! kernel it may drop the whole pages inside them (`MADV_DONTNEED`); the
//! memory stays the allocator's, and a page used again is a fresh zero
//! page.
//!
//! A trim walks the free chunks under each arena's lock and makes a system
//! call for each run of free pages, and a page given back costs a fault
//! when it is used again. So a [`Trimmer`] trims only when the process's
//! anonymous resident memory (not its code or other files' pages) exceeds
//! what malloc says is in use by more than a slack *and* by more than it
//! did after the last trim: what a trim could not give back (pages shared
//! by free and live chunks, thread stacks) does not set off another. The
//! slack grows with the heap (a quarter of what is in use, if that is more
//! than the least slack given), so a large heap with the ordinary spread of
//! free chunks between live ones is left alone.
//!
//! The thread checks every period, and soon after it is asked to
//! ([`give_back_freed_memory_soon`]: the binary asks when many connections
//! have closed at once), at most once per settling time: an ask costs one
//! check (a small file read and malloc's statistics), never a trim by
//! itself.

use std::io::Read;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Decides when to trim, and trims.
#[derive(Debug)]
pub struct Trimmer {
    least_slack: usize,
    /// Anonymous resident bytes beyond those in use that the last trim left.
    left_by_last_trim: usize,
}

impl Trimmer {
    pub fn new(least_slack: usize) -> Self {
        Trimmer { least_slack, left_by_last_trim: 0 }
    }

    /// Gives freed heap pages back to the kernel if there are enough to be
    /// worth it; returns how many bytes of resident memory that released,
    /// or `None` if it did not trim (or could not read its own memory).
    pub fn give_back_freed_memory(&mut self) -> Option<usize> {
        let before = anonymous_resident_bytes()?;
        // SAFETY: mallinfo2 only reads the allocator's statistics.
        let info = unsafe { libc::mallinfo2() };
        // Chunks handed out from the arenas, and those mmapped on their own.
        let in_use = info.uordblks.saturating_add(info.hblkhd);
        let slack = self.least_slack.max(in_use / 4);
        if before.saturating_sub(in_use) <= self.left_by_last_trim.saturating_add(slack) {
            return None;
        }
        // SAFETY: malloc_trim(0) releases only pages of free chunks; what is
        // in use is untouched.
        unsafe { libc::malloc_trim(0) };
        let after = anonymous_resident_bytes()?;
        self.left_by_last_trim = after.saturating_sub(in_use);
        Some(before.saturating_sub(after))
    }
}

/// Starts a thread of its own (`agentd-trim`) that runs a [`Trimmer`] every
/// `period`, and `settle` after [`give_back_freed_memory_soon`] was called
/// (at most once per `settle`). A thread rather than a task on the async
/// runtime, so the runtime's timers and queues do not carry it; while it
/// walks an arena, threads allocating from that arena wait for the lock
/// either way.
pub fn give_back_freed_memory_every(
    period: Duration,
    settle: Duration,
    least_slack: usize,
) -> std::io::Result<()> {
    let mut trimmer = Trimmer::new(least_slack);
    std::thread::Builder::new()
        .name("agentd-trim".into())
        // It calls two glibc functions and reads one small file.
        .stack_size(64 * 1024)
        .spawn(move || {
            loop {
                let cause = SOON.wait(Instant::now() + period);
                if cause == Cause::Asked {
                    // Let the burst that asked finish freeing.
                    std::thread::sleep(settle);
                }
                if let Some(released) = trimmer.give_back_freed_memory().filter(|&n| n > 0) {
                    tracing::debug!(
                        released_bytes = released,
                        cause = cause.as_str(),
                        "freed heap pages given back to the kernel"
                    );
                }
            }
        })
        .map(drop)
}

/// Asks the thread [`give_back_freed_memory_every`] started to check now
/// rather than at its next period: much was just freed (a burst of
/// connections closed). Cheap, and safe to call from any thread at any
/// rate: asks made before the thread looks are one ask.
pub fn give_back_freed_memory_soon() {
    SOON.ask();
}

static SOON: Asks = Asks::new();

/// Why the trim thread checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    Period,
    Asked,
}

impl Cause {
    fn as_str(self) -> &'static str {
        match self {
            Cause::Period => "period",
            Cause::Asked => "asked",
        }
    }
}

/// Asks to check, kept until the thread waits for them.
struct Asks {
    asked: Mutex<bool>,
    wake: Condvar,
}

impl Asks {
    const fn new() -> Self {
        Asks { asked: Mutex::new(false), wake: Condvar::new() }
    }

    fn ask(&self) {
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_one();
    }

    /// Waits for an ask or for `until`, whichever is first; an ask made
    /// since the last wait returns at once.
    fn wait(&self, until: Instant) -> Cause {
        let mut asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if std::mem::take(&mut *asked) {
                return Cause::Asked;
            }
            let Some(left) = until.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
                return Cause::Period;
            };
            asked = self.wake.wait_timeout(asked, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
}

/// This process's anonymous resident memory in bytes: resident pages less
/// the file-backed and shared ones (`/proc/self/statm`'s second and third
/// fields), read into a buffer on the stack so that the check allocates
/// nothing.
fn anonymous_resident_bytes() -> Option<usize> {
    let mut buf = [0u8; 256];
    let mut file = std::fs::File::open("/proc/self/statm").ok()?;
    let n = file.read(&mut buf).ok()?;
    let mut fields = std::str::from_utf8(&buf[..n]).ok()?.split_whitespace().skip(1);
    let resident: usize = fields.next()?.parse().ok()?;
    let shared: usize = fields.next()?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    resident.saturating_sub(shared).checked_mul(usize::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    /// The tests read the whole process's memory: one at a time.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn an_ask_wakes_the_wait_once_and_without_one_it_lasts_its_period() {
        let asks = Asks::new();
        let far = Instant::now() + Duration::from_secs(3600);
        asks.ask();
        asks.ask();
        assert_eq!(asks.wait(far), Cause::Asked, "an ask made before the wait");
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(asks.wait(soon), Cause::Period, "two asks were one");
        assert!(Instant::now() >= soon, "the period was waited out");
        std::thread::scope(|s| {
            s.spawn(|| asks.ask());
            assert_eq!(asks.wait(far), Cause::Asked, "an ask from another thread wakes the wait");
        });
    }

    /// A burst of 64 MiB allocated, written and freed behind a chunk still
    /// in use stays resident until trimmed; trimmed, it is given back, and
    /// the next check finds nothing worth a trim.
    #[test]
    fn memory_freed_behind_a_live_chunk_is_given_back_once() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let mut trimmer = Trimmer::new(16 * MIB);
        let start = anonymous_resident_bytes().expect("statm");
        let mut burst: Vec<Vec<u8>> = (0..4096).map(|_| vec![1u8; 16 * 1024]).collect();
        // Allocated after the burst: its chunk keeps the freed ones from
        // joining the top of the heap, which glibc would trim by itself.
        let live = vec![2u8; 1024];
        let full = anonymous_resident_bytes().expect("statm");
        assert!(full >= start + 60 * MIB, "the burst is resident: {start} → {full}");
        burst.clear();
        burst.shrink_to_fit();
        let freed = anonymous_resident_bytes().expect("statm");
        assert!(freed >= start + 60 * MIB, "glibc keeps what was freed resident: {start} → {freed}");

        let released = trimmer.give_back_freed_memory().expect("a trim: far more resident than in use");
        let after = anonymous_resident_bytes().expect("statm");
        assert!(released >= 56 * MIB, "released {released} bytes");
        assert!(after + 56 * MIB <= freed, "resident {freed} → {after}");
        assert_eq!(trimmer.give_back_freed_memory(), None, "nothing is left to give back");
        assert_eq!(live[0], 2);
    }

    /// Memory a trim cannot give back (here, live chunks spread over every
    /// page) does not set off a trim at each check: only growth past what
    /// the last trim left does.
    #[test]
    fn what_a_trim_cannot_give_back_does_not_set_off_another() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let mut trimmer = Trimmer::new(16 * MIB);
        // Three of every four 256-byte chunks freed: every page keeps a
        // live one, so nothing of the 48 MiB freed can go back.
        let mut chunks: Vec<Option<Box<[u8; 256]>>> =
            (0..256 * 1024).map(|_| Some(Box::new([3u8; 256]))).collect();
        for (i, c) in chunks.iter_mut().enumerate() {
            if i % 4 != 0 {
                *c = None;
            }
        }
        let first = trimmer.give_back_freed_memory();
        let released = first.expect("the first check trims: 48 MiB free beyond what is in use");
        assert!(released < 16 * MIB, "pages holding live chunks stay: released {released}");
        assert_eq!(trimmer.give_back_freed_memory(), None, "no second trim of what could not go back");
        assert!(chunks.iter().step_by(4).all(|c| c.as_ref().is_some_and(|b| b[0] == 3)));
    }
}
