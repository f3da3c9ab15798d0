//! Bytes → `parse_request`, then the params decoded as every core method's
//! request and round-tripped; and the lent reader must agree with the
//! `Value` reader (`agentd_proto::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    agentd_proto::fuzzing::check_jsonrpc_roundtrip(data);
});
