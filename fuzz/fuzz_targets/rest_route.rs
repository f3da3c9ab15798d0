//! `METHOD\npath?query\nextension-header…` → `match_route`, query parsing,
//! `A2A-Version` and `A2A-Extensions` parsing (`agentd_server::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    agentd_server::fuzzing::check_rest_input(data);
});
