//! A counting global allocator over the system one, for the bench build of
//! `agentd` (feature `count-allocs`): `bench/run.sh` reads the count before
//! and after a fixed number of requests to state allocations per request.
//!
//! Hand-written rather than a crate (`dhat`, `stats_alloc`): it is a few
//! lines, needs nothing else, and adds one relaxed atomic increment per
//! allocation to the system allocator, so the build measured stays the build
//! deployed in every other respect. Deallocations are not counted: the
//! figure is how often the hot path asks for memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting every allocation (and reallocation).
pub struct Counting;

fn count(size: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(size as u64, Ordering::Relaxed);
}

// SAFETY: every call is forwarded unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counters are atomics and never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        // SAFETY: `ptr` and `layout` come from this allocator, i.e. from `System`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations (and reallocations) since the process started.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Bytes asked for by those allocations.
pub fn bytes() -> u64 {
    BYTES.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static COUNTING: Counting = Counting;

    #[test]
    fn every_allocation_is_counted() {
        let before = allocations();
        let boxes: Vec<Box<u64>> = (0..100).map(Box::new).collect();
        let after = allocations();
        // 100 boxes and at least the vector's own buffer; other test threads may add more.
        assert!(after - before >= 101, "counted {}", after - before);
        assert!(bytes() >= 100 * 8);
        drop(boxes);
    }
}
