//! Replaying saved fuzz inputs in the normal test suites (`docs/fuzzing.md`):
//! the one walk over `fuzz/{regressions,seeds}/<target>/` and the one
//! reading of a caught panic, shared by the regression tests of
//! `agentd-proto` and `agentd-server`. Test support, not API: it lives here,
//! in the lowest crate both suites depend on, so that no crate or cargo
//! feature exists for a few lines of test code.

use std::any::Any;
use std::path::{Path, PathBuf};

/// The workspace's `fuzz/` directory, from a crate's manifest directory
/// (`env!("CARGO_MANIFEST_DIR")` of a crate under `crates/`).
pub fn fuzz_dir(manifest_dir: &str) -> PathBuf {
    Path::new(manifest_dir).join("../../fuzz")
}

/// Every saved input of `target`: the files of `regressions/<target>/`,
/// then those of `seeds/<target>/`, each directory sorted by name. A
/// directory that does not exist contributes nothing.
pub fn saved_inputs(fuzz_dir: &Path, target: &str) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for kind in ["regressions", "seeds"] {
        let Ok(entries) = std::fs::read_dir(fuzz_dir.join(kind).join(target)) else { continue };
        let mut files: Vec<PathBuf> = entries.map(|e| e.expect("dir entry").path()).collect();
        files.sort();
        all.extend(files.into_iter().filter(|f| f.is_file()));
    }
    all
}

/// The message of a caught panic (`catch_unwind`'s error), or "" when it
/// carries no text.
pub fn panic_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default()
}

/// Runs `check` on every saved input of `target` and panics naming each
/// input that fails, with its panic message; returns how many ran.
pub fn replay(fuzz_dir: &Path, target: &str, check: impl Fn(&[u8])) -> usize {
    let files = saved_inputs(fuzz_dir, target);
    let mut failed = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).expect("read input");
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&bytes))) {
            failed.push(format!("{}: {}", file.display(), panic_text(panic.as_ref())));
        }
    }
    let ran = files.len();
    assert!(failed.is_empty(), "{} of {ran} {target} inputs fail:\n{}", failed.len(), failed.join("\n"));
    ran
}
