//! Bytes → `Task`, `Message`, `Part`, `StreamResponse`, `AgentCard`,
//! `TaskPushNotificationConfig` (and the other wire types), each decoded
//! and round-tripped (`agentd_proto::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    agentd_proto::fuzzing::check_wire_roundtrip(data);
});
