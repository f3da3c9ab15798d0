//! Replays, on the stable toolchain, every saved fuzz input of the JSON-RPC
//! and wire-type targets (`fuzz/regressions/`: one minimal input per bug
//! found, see docs/fuzzing.md) and the checked-in seeds (`fuzz/seeds/`)
//! through the very checks the fuzz targets run (`agentd_proto::fuzzing`).

use agentd_proto::fuzzing::replay::{fuzz_dir, replay};

fn replay_target(target: &str, check: fn(&[u8])) -> usize {
    replay(&fuzz_dir(env!("CARGO_MANIFEST_DIR")), target, check)
}

#[test]
fn jsonrpc_request_inputs_hold() {
    let n = replay_target("jsonrpc_request", agentd_proto::fuzzing::check_jsonrpc_roundtrip);
    assert!(n >= 10, "the seed set is missing: only {n} inputs");
}

#[test]
fn wire_types_inputs_hold() {
    let n = replay_target("wire_types", agentd_proto::fuzzing::check_wire_roundtrip);
    assert!(n >= 10, "the seed set is missing: only {n} inputs");
}
