//! `agentd`: the daemon (`agentd serve`) and A2A client verbs for a running
//! daemon (`agentd send`, `agentd tasks …`). Data goes to stdout,
//! diagnostics to stderr.

use std::process::ExitCode;

/// pow, exp2, log and log2 defined in the binary: glibc's libm is not loaded.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
use agentd_glibc as _;

/// The bench build (`--features count-allocs`): every allocation counted.
#[cfg(feature = "count-allocs")]
#[global_allocator]
static ALLOCATOR: agentd_alloc_count::Counting = agentd_alloc_count::Counting;

/// The `jemalloc` build: jemalloc instead of the system allocator.
#[cfg(all(feature = "jemalloc", not(feature = "count-allocs")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "jemalloc", feature = "count-allocs"))]
compile_error!("`count-allocs` counts the system allocator's calls: build it without `jemalloc`");

#[tokio::main]
async fn main() -> ExitCode {
    #[cfg(feature = "count-allocs")]
    report_allocations_on_sigusr1();
    let args = agentd::cli::parse();
    #[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "jemalloc")))]
    if matches!(args.command, Some(agentd::cli::Command::Serve(_))) {
        give_back_freed_memory();
    }
    // Boxed: the future of a whole daemon's life is large, and on the main
    // thread's stack each of the moves `block_on` makes of it would stay
    // resident.
    match Box::pin(agentd::cli::run(args)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentd: {e:#}");
            ExitCode::from(agentd::cli::exit::code_of(&e))
        }
    }
}

/// On each SIGUSR1, one line on stderr with the allocation totals so far;
/// the bench reads it before and after a fixed number of requests.
#[cfg(feature = "count-allocs")]
fn report_allocations_on_sigusr1() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut usr1) = signal(SignalKind::user_defined1()) else {
        eprintln!("agentd: count-allocs: cannot listen for SIGUSR1");
        return;
    };
    #[allow(clippy::disallowed_methods, reason = "the bench build's reporter lives as long as the process")]
    tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            eprintln!(
                "agentd-allocations: {} bytes {}",
                agentd_alloc_count::allocations(),
                agentd_alloc_count::bytes()
            );
        }
    });
}

/// A daemon on glibc's malloc gives freed heap pages back to the kernel
/// when its anonymous memory exceeds what it uses by 16 MiB (or a quarter,
/// if that is more) beyond what the last trim left (`agentd_glibc::trim`):
/// checked every 10 s, and 100 ms after 1,024 connections that were open at
/// once closed (`agentd_server::when_connections_close_in_bulk`), so that
/// the next burst of connections starts on fresh pages.
#[cfg(all(target_os = "linux", target_env = "gnu", not(feature = "jemalloc")))]
fn give_back_freed_memory() {
    use std::time::Duration;
    match agentd_glibc::give_back_freed_memory_every(
        Duration::from_secs(10),
        Duration::from_millis(100),
        16 << 20,
    ) {
        Ok(()) => agentd_server::when_connections_close_in_bulk(agentd_glibc::give_back_freed_memory_soon),
        Err(e) => {
            eprintln!("agentd: freed memory is not given back to the kernel: cannot start its thread: {e}")
        }
    }
}
