//! Store backends for the engine's `Store` port (`agentd_core::store`):
//!
//! * [`SqliteStore`], the default: one SQLite file in WAL mode, a single
//!   writer thread that group-commits queued batches in one transaction, and
//!   a pool of read-only connections for reads.
//! * [`PostgresStore`]: a PostgreSQL database, one transaction per batch,
//!   committed events announced in seq order whichever process wrote them.
//! * [`MemoryStore`], for unit tests: the same contract under one lock.
//!
//! Every backend passes the one shared [`conformance`] suite, which any other
//! backend can run too.

mod codec;
pub mod conformance;
mod event_log;
mod memory;
mod postgres;
mod sqlite;
#[cfg(feature = "testing")]
pub mod testing;

pub use memory::MemoryStore;
pub use postgres::{PostgresOptions, PostgresStore};
pub use sqlite::{SqliteOptions, SqliteStore};
