//! Bridge configuration at daemon start: channels come from the instruction
//! document, signing secrets from `bridges.secrets` by reference. (Delivery
//! itself is tested in agentd-server's `tests/suite/bridges.rs`.)

use crate::common::*;

const DOC: &str = "# Agent\n\nYou help.\n\n\
::!channel{name=ops kind=webhook target=http://127.0.0.1:9/hook}\n\
::!channel{name=mail kind=email target=ops@example.com}\n";

const SECRET: &str = "sign-me-9b1f";

#[test]
fn secrets_are_resolved_at_start_and_undeliverable_channels_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let doc = dir.path().join("agent.md");
    std::fs::write(&doc, DOC).unwrap();
    let cfg = write_config(dir.path(), "bridges:\n  secrets:\n    ops: env:OPS_SECRET\n");
    let args = ["--instruction", doc.to_str().unwrap(), "--config", cfg.to_str().unwrap()];

    let d = Daemon::start_with_env(&dir.path().join("data"), &args, &[("OPS_SECRET", SECRET)]);
    let log = d.log();
    assert!(log.contains("channel \"mail\" has kind \"email\""), "{log}");
    assert!(!log.contains(SECRET), "the secret reached the log");
    drop(d);

    // An unresolvable secret stops the daemon before it serves.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data2"))
        .args(args)
        .env_remove("OPS_SECRET")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bridges.secrets.ops") && err.contains("OPS_SECRET is not set"), "{err}");
}
