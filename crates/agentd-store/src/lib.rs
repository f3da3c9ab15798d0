//! Store backends for the engine's `Store` port (`agentd_core::store`):
//!
//! * [`SqliteStore`], the default: one SQLite file in WAL mode, a single
//!   writer thread that group-commits queued batches in one transaction, and
//!   a pool of read-only connections for reads.
//! * [`MemoryStore`], for unit tests: the same contract under one lock.
//!
//! Both backends pass the one shared [`conformance`] suite, which any other
//! backend can run too.

mod codec;
pub mod conformance;
mod event_log;
mod memory;
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;

pub use memory::MemoryStore;
pub use sqlite::{SqliteOptions, SqliteStore};
