//! Replays, on the stable toolchain, every saved fuzz input of the JSON-RPC
//! and wire-type targets (`fuzz/regressions/`: one minimal input per bug
//! found, see docs/fuzzing.md) and the checked-in seeds (`fuzz/seeds/`)
//! through the very checks the fuzz targets run (`agentd_proto::fuzzing`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs `check` on every file of `fuzz/{regressions,seeds}/<target>/` and
/// names every input that fails; returns how many inputs ran.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let mut ran = 0;
    let mut failed = Vec::new();
    for kind in ["regressions", "seeds"] {
        let dir = fuzz_dir().join(kind).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = entries.map(|e| e.expect("dir entry").path()).collect();
        files.sort();
        for file in files.into_iter().filter(|f| f.is_file()) {
            let bytes = std::fs::read(&file).expect("read input");
            ran += 1;
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(&bytes))) {
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failed.push(format!("{}: {why}", file.display()));
            }
        }
    }
    assert!(failed.is_empty(), "{} of {ran} {target} inputs fail:\n{}", failed.len(), failed.join("\n"));
    ran
}

#[test]
fn jsonrpc_request_inputs_hold() {
    let n = replay("jsonrpc_request", agentd_proto::fuzzing::check_jsonrpc_roundtrip);
    assert!(n >= 10, "the seed set is missing: only {n} inputs");
}

#[test]
fn wire_types_inputs_hold() {
    let n = replay("wire_types", agentd_proto::fuzzing::check_wire_roundtrip);
    assert!(n >= 10, "the seed set is missing: only {n} inputs");
}
