//! Freed heap pages given back to the kernel.
//!
//! glibc's malloc returns memory to the kernel only from the top of a heap.
//! After a burst (10,000 streams opened and closed, say) the freed chunks
//! sit between chunks still in use, and the process keeps them resident
//! for good: 240 MiB an hour after the last stream closed, where the daemon
//! uses a tenth of that. `malloc_trim(0)` walks every arena's free chunks
//! and tells the kernel it may drop the whole pages inside them
//! (`MADV_DONTNEED`); the memory stays the allocator's, and a page used
//! again is a fresh zero page.
//!
//! Trimming costs a walk of the free chunks and a system call for each
//! run of free pages, and a page given back costs a fault when it is used
//! again. So the daemon trims only when its resident memory exceeds what
//! malloc says is in use by a slack, checked every few seconds: a process
//! that keeps what it uses never trims. The slack grows with the heap (a
//! quarter of what is in use, if that is more than the least slack given),
//! so a large heap with the ordinary spread of free chunks between live
//! ones is not trimmed again and again.

use std::time::Duration;

/// Gives freed heap pages back to the kernel if the process's resident
/// memory exceeds the heap bytes in use by more than `least_slack` or a
/// quarter of those bytes, whichever is more; returns how many bytes of
/// resident memory that released, or `None` if it did not trim (or could
/// not read its own resident size).
pub fn give_back_freed_memory(least_slack: usize) -> Option<usize> {
    let before = resident_bytes()?;
    // SAFETY: mallinfo2 only reads the allocator's statistics.
    let info = unsafe { libc::mallinfo2() };
    // Chunks handed out from the arenas, and those mmapped on their own.
    let in_use = info.uordblks.saturating_add(info.hblkhd);
    if before <= in_use.saturating_add(least_slack.max(in_use / 4)) {
        return None;
    }
    // SAFETY: malloc_trim(0) releases only pages of free chunks; what is
    // in use is untouched.
    unsafe { libc::malloc_trim(0) };
    Some(before.saturating_sub(resident_bytes()?))
}

/// Starts a thread of its own (`agentd-trim`) that calls
/// [`give_back_freed_memory`] every `period`. A thread rather than a task
/// on the async runtime: a trim after a large burst walks a large heap,
/// which a runtime worker should not wait for.
pub fn give_back_freed_memory_every(period: Duration, least_slack: usize) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("agentd-trim".into())
        // It calls two glibc functions and reads one small file.
        .stack_size(64 * 1024)
        .spawn(move || {
            loop {
                std::thread::sleep(period);
                if let Some(released) = give_back_freed_memory(least_slack) {
                    tracing::debug!(released_bytes = released, "freed heap pages given back to the kernel");
                }
            }
        })
        .map(drop)
}

/// This process's resident set size in bytes (`/proc/self/statm`, in pages).
fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages.checked_mul(usize::try_from(page).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    /// A burst of 64 MiB allocated, written and freed behind a chunk still
    /// in use stays resident until trimmed; trimmed, it is given back, and
    /// a second call finds nothing to give back.
    #[test]
    fn memory_freed_behind_a_live_chunk_is_given_back_once() {
        let start = resident_bytes().expect("statm");
        let mut burst: Vec<Vec<u8>> = (0..4096).map(|_| vec![1u8; 16 * 1024]).collect();
        // Allocated after the burst: its chunk keeps the freed ones from
        // joining the top of the heap, which glibc would trim by itself.
        let live = vec![2u8; 1024];
        let full = resident_bytes().expect("statm");
        assert!(full >= start + 60 * MIB, "the burst is resident: {start} → {full}");
        burst.clear();
        burst.shrink_to_fit();
        let freed = resident_bytes().expect("statm");
        assert!(freed >= start + 60 * MIB, "glibc keeps what was freed resident: {start} → {freed}");

        let released = give_back_freed_memory(16 * MIB).expect("a trim: far more resident than in use");
        let after = resident_bytes().expect("statm");
        assert!(released >= 56 * MIB, "released {released} bytes");
        assert!(after + 56 * MIB <= freed, "resident {freed} → {after}");
        assert_eq!(give_back_freed_memory(16 * MIB), None, "nothing is left to give back");
        assert_eq!(live[0], 2);
    }
}
