//! Replays, on the stable toolchain, every saved input of the `rest_route`
//! fuzz target (`fuzz/regressions/rest_route/`, see docs/fuzzing.md) and
//! its checked-in seeds through the check the target runs
//! (`agentd_server::fuzzing::check_rest_input`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

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
