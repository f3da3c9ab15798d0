//! The one conformance suite every `Store` backend must pass. Each check is
//! a plain async function taking a fresh, empty `&dyn Store` and asserting
//! with a message that names the broken rule.
//!
//! Run it either with [`run_all`] in one test, or with one `#[tokio::test]`
//! per check via [`conformance_tests!`](crate::conformance_tests):
//!
//! ```text
//! agentd_store::conformance_tests!(|| ((), agentd_store::MemoryStore::new()));
//! agentd_store::conformance_tests!(async || async { Some(((), open_store().await)) });
//! ```
//!
//! The factory returns `(guard, store)`; the guard (e.g. a temp dir) is
//! dropped after the store.

pub mod build;
pub mod events;
pub mod journal;
pub mod lookup;
pub mod push;
pub mod reminders;
pub mod tasks;
pub mod versions;

use agentd_core::Store;
use std::future::Future;
use std::pin::Pin;

/// A check, as a function pointer.
pub type Check = for<'a> fn(&'a dyn Store) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

macro_rules! define_checks {
    ($d:tt $($module:ident :: $name:ident),* $(,)?) => {
        pub use self::{$($module::$name),*};

        /// Every check with its name, in a stable order.
        pub const CHECKS: &[(&str, Check)] = &[$((stringify!($name), |s| Box::pin($module::$name(s)))),*];

        /// Defines one `#[tokio::test]` per conformance check. The argument
        /// is a factory `Fn() -> (Guard, S)` with `S: Store`, called once per
        /// check. The calling crate needs `tokio` (macros, rt).
        #[macro_export]
        ///
        /// `conformance_tests!(async make)` takes a factory returning a
        /// future of `Option<(Guard, S)>` instead, for a backend that
        /// connects asynchronously; `None` skips the check (a server the
        /// machine does not have; the factory says so).
        macro_rules! conformance_tests {
            (async $d make:expr) => {
                $(
                    #[tokio::test]
                    async fn $name() {
                        let Some((guard, store)) = ($d make)().await else { return };
                        $d crate::conformance::$name(&store).await;
                        drop(store);
                        drop(guard);
                    }
                )*
            };
            ($d make:expr) => {
                $(
                    #[tokio::test]
                    async fn $name() {
                        let (guard, store) = ($d make)();
                        $d crate::conformance::$name(&store).await;
                        drop(store);
                        drop(guard);
                    }
                )*
            };
        }
    };
}

define_checks!($
    tasks::empty_batch,
    tasks::roundtrip_full_record,
    tasks::text_of_a_task,
    tasks::meta_roundtrip,
    tasks::recommit_replaces,
    tasks::list_order,
    tasks::paginate_shared_timestamp,
    tasks::total_ignores_cursor,
    tasks::page_bytes_bound,
    tasks::list_filters,
    lookup::tasks_in_states,
    lookup::metas_in_state,
    lookup::context_foreign,
    lookup::context_tasks,
    lookup::closed_contexts,
    push::push_config_crud,
    push::outbox_fan_out,
    push::outbox_due_retry_done,
    push::outbox_deleted_config,
    push::outbox_bridge_rows,
    push::outbox_owners_take_turns,
    push::outbox_wakes_the_worker,
    reminders::reminders_roundtrip_and_order,
    events::events_append_and_read,
    events::events_announced_in_order,
    events::events_retention_by_count,
    events::events_retention_by_age,
    events::events_retention_in_steps,
    versions::versions_count_commits,
    versions::stale_write_refuses_its_whole_batch,
    versions::create_of_an_existing_id_is_refused,
    versions::versions_within_one_batch,
    versions::concurrent_writers_exactly_one_wins,
    journal::journal_roundtrip_and_order,
    journal::journal_entry_written_twice_refuses_its_batch,
    journal::journal_removed_when_its_task_ends,
);

/// Runs every check, each against a fresh store from `make`.
pub async fn run_all<G, S: Store>(make: impl Fn() -> (G, S)) {
    for (name, check) in CHECKS {
        tracing::info!(check = name, "store conformance");
        let (guard, store) = make();
        check(&store).await;
        drop(store);
        drop(guard);
    }
}
