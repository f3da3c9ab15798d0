//! Structure-aware: `arbitrary` builds a few SendMessage requests (text,
//! data, raw and url parts, commands, nested metadata, reminders in
//! metadata, inline push configs, references to earlier answers), and
//! `agentd_server::fuzzing::send` sends them through the real router to a
//! real engine on SQLite running the default agent loop.
//!
//! An input that is a script in JSON (the checked-in seeds and regressions,
//! `fuzz/{seeds,regressions}/send_message/*.json`) is run as it is, so a
//! saved script reproduces here exactly as in the stable replay. With
//! `AGENTD_FUZZ_PRINT_SCRIPT=1`, each input is printed as its script first
//! (to turn a crash artifact into a regression script).
#![no_main]

mod send_message_daemon;
mod send_message_input;

use agentd_server::fuzzing::send::{Script, SendHarness};
use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use send_message_input::Input;
use std::cell::RefCell;

/// A fresh daemon after this many inputs keeps the database small.
const INPUTS_PER_DAEMON: u32 = 20_000;

struct Daemon {
    runtime: tokio::runtime::Runtime,
    harness: SendHarness,
    runs: u32,
    _dir: tempfile::TempDir,
}

impl Daemon {
    fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
        let engine = runtime.block_on(async { send_message_daemon::engine(dir.path()) });
        Self { runtime, harness: SendHarness::new(engine), runs: 0, _dir: dir }
    }
}

thread_local! {
    static DAEMON: RefCell<Option<Daemon>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    let script = match serde_json::from_slice::<Script>(data) {
        Ok(script) => script,
        Err(_) => match Input::arbitrary_take_rest(Unstructured::new(data)) {
            Ok(input) => input.script(),
            Err(_) => return,
        },
    };
    if std::env::var_os("AGENTD_FUZZ_PRINT_SCRIPT").is_some() {
        eprintln!("{}", serde_json::to_string(&script).unwrap_or_default());
    }
    DAEMON.with(|d| {
        let mut d = d.borrow_mut();
        if d.as_ref().is_none_or(|d| d.runs >= INPUTS_PER_DAEMON) {
            *d = None; // the old daemon (and its runtime) goes first
            *d = Some(Daemon::start());
        }
        let daemon = d.as_mut().expect("daemon");
        daemon.runs += 1;
        daemon.runtime.block_on(daemon.harness.run(&script));
    });
});
