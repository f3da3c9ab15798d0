//! Replays, on the stable toolchain, every saved input of the `rest_route`
//! and `send_message` fuzz targets (`fuzz/regressions/<target>/`, see
//! docs/fuzzing.md) and their checked-in seeds through the checks the
//! targets run (`agentd_server::fuzzing`).

use agentd_server::fuzzing::send::{Script, SendHarness};
use futures::FutureExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

// The daemon the fuzz target runs, from the target's own source.
#[path = "../../../fuzz/fuzz_targets/send_message_daemon.rs"]
mod send_message_daemon;

#[test]
fn rest_route_inputs_hold() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut ran = 0;
    let mut failed = Vec::new();
    for kind in ["regressions", "seeds"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join("rest_route")) else { continue };
        let mut files: Vec<PathBuf> = entries.map(|e| e.expect("dir entry").path()).collect();
        files.sort();
        for file in files.into_iter().filter(|f| f.is_file()) {
            let bytes = std::fs::read(&file).expect("read input");
            ran += 1;
            let run = catch_unwind(AssertUnwindSafe(|| agentd_server::fuzzing::check_rest_input(&bytes)));
            if let Err(panic) = run {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failed.push(format!("{}: {why}", file.display()));
            }
        }
    }
    assert!(failed.is_empty(), "{} of {ran} rest_route inputs fail:\n{}", failed.len(), failed.join("\n"));
    assert!(ran >= 5, "the seed set is missing: only {ran} inputs");
}

/// Every panic in this process, in a spawned task or not.
static PANICS: AtomicUsize = AtomicUsize::new(0);

#[tokio::test]
async fn send_message_scripts_hold() {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        hook(info);
    }));
    let dir = tempfile::tempdir().expect("tempdir");
    let harness = SendHarness::new(send_message_daemon::engine(dir.path()));
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut ran = 0;
    let mut failed = Vec::new();
    for kind in ["regressions", "seeds"] {
        let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join("send_message")) else { continue };
        let mut files: Vec<PathBuf> = entries.map(|e| e.expect("dir entry").path()).collect();
        files.sort();
        for file in files.into_iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
            let bytes = std::fs::read(&file).expect("read input");
            let script: Script = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{} is not a send_message script: {e}", file.display()));
            ran += 1;
            if let Err(panic) = AssertUnwindSafe(harness.run(&script)).catch_unwind().await {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failed.push(format!("{}: {why}", file.display()));
            }
        }
    }
    assert!(failed.is_empty(), "{} of {ran} send_message scripts fail:\n{}", failed.len(), failed.join("\n"));
    assert!(ran >= 5, "the seed set is missing: only {ran} scripts");
    // A run's panic is caught by tokio and would pass unseen otherwise.
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "a task panicked while the scripts ran (see the output)");
}
