//! Replays, on the stable toolchain, every saved input of the `rest_route`
//! and `send_message` fuzz targets (`fuzz/regressions/<target>/`, see
//! docs/fuzzing.md) and their checked-in seeds through the checks the
//! targets run (`agentd_server::fuzzing`).

use agentd_proto::fuzzing::replay::{fuzz_dir, panic_text, replay, saved_inputs};
use agentd_server::fuzzing::send::{Script, SendHarness};
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

// The daemon the fuzz target runs, from the target's own source.
#[path = "../../../../fuzz/fuzz_targets/send_message_daemon.rs"]
mod send_message_daemon;

#[test]
fn rest_route_inputs_hold() {
    let fuzz = fuzz_dir(env!("CARGO_MANIFEST_DIR"));
    let ran = replay(&fuzz, "rest_route", agentd_server::fuzzing::check_rest_input);
    assert!(ran >= 5, "the seed set is missing: only {ran} inputs");
}

/// The name of the threads of the runtime the scripts run on.
const RUNTIME: &str = "send-message-replay";

/// Counts every panic on this test's thread and its runtime's threads, in a
/// spawned task or not. Only those: the suite's other tests run side by
/// side in this process, and their panics are theirs.
fn count_panics() -> Arc<AtomicUsize> {
    let panics = Arc::new(AtomicUsize::new(0));
    let test_thread = std::thread::current().name().map(str::to_owned);
    let hook = std::panic::take_hook();
    let count = panics.clone();
    std::panic::set_hook(Box::new(move |info| {
        let name = std::thread::current().name().map(str::to_owned);
        if name.as_deref() == Some(RUNTIME) || name == test_thread {
            count.fetch_add(1, Ordering::SeqCst);
        }
        hook(info);
    }));
    panics
}

#[test]
fn send_message_scripts_hold() {
    let panics = count_panics();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name(RUNTIME)
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let fuzz = fuzz_dir(env!("CARGO_MANIFEST_DIR"));
    let files: Vec<_> = saved_inputs(&fuzz, "send_message")
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
        .collect();
    let failed = rt.block_on(async {
        let harness = SendHarness::new(send_message_daemon::engine(dir.path()));
        let mut failed = Vec::new();
        for file in &files {
            let bytes = std::fs::read(file).expect("read input");
            let script: Script = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{} is not a send_message script: {e}", file.display()));
            if let Err(panic) = AssertUnwindSafe(harness.run(&script)).catch_unwind().await {
                failed.push(format!("{}: {}", file.display(), panic_text(panic.as_ref())));
            }
        }
        failed
    });
    let ran = files.len();
    assert!(failed.is_empty(), "{} of {ran} send_message scripts fail:\n{}", failed.len(), failed.join("\n"));
    assert!(ran >= 5, "the seed set is missing: only {ran} scripts");
    // A run's panic is caught by tokio and would pass unseen otherwise.
    assert_eq!(panics.load(Ordering::SeqCst), 0, "a task panicked while the scripts ran (see the output)");
}
