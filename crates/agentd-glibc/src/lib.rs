//! What the `agentd` binary asks of glibc, and what it does not. Linked by
//! the binary alone, on Linux with glibc; the library and its tests never
//! see it.
//!
//! - [`math`]: the C math functions the binary's dependencies call, defined
//!   in the binary so that glibc's `libm.so.6` is not loaded.
//! - [`trim`]: freed heap pages given back to the kernel once the process
//!   holds many more than it uses (after a burst of connections).

// glibc's functions: nothing of this crate exists elsewhere (the binary
// links it only on Linux with glibc).
#![cfg(all(target_os = "linux", target_env = "gnu"))]

pub mod math;
pub mod trim;

pub use trim::{Trimmer, give_back_freed_memory_every, give_back_freed_memory_soon};
