//! A daemon with the `scripted`
//! model (its recorded requests are the evidence of what the model got),
//! optionally with five principals, and helpers for command messages.

use crate::common::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const ALICE: &str = "alice-token-0123456789";
pub const BOB: &str = "bob-token-9876543210";
pub const BOT: &str = "bot-token-5555555555";
pub const OPS: &str = "ops-token-abcdefghij";
pub const CAROL: &str = "carol-token-2468024680";

/// The principals and their tokens; each token is read from a file
/// (`file:` references: an in-process daemon has no environment of its own).
const PRINCIPALS: [(&str, &str, &str); 5] = [
    ("user:alice", "user", ALICE),
    ("user:bob", "user", BOB),
    ("user:carol", "user", CAROL),
    ("agent:bot", "agent", BOT),
    ("operator:ops", "operator", OPS),
];

fn tokens_section(dir: &Path) -> String {
    let mut yaml = String::from("auth:\n  tokens:\n");
    for (i, (id, role, token)) in PRINCIPALS.iter().enumerate() {
        let file = dir.join(format!("token-{i}"));
        std::fs::write(&file, token).expect("write token file");
        yaml.push_str(&format!("    - {{id: {id:?}, role: {role}, token: \"file:{}\"}}\n", file.display()));
    }
    yaml
}

pub struct Scripted {
    /// Without tokens: every caller is `operator:local`. With tokens: no
    /// credentials (use `as_token`).
    pub d: Daemon,
    pub record: PathBuf,
    config: PathBuf,
    /// An `agentd serve` process (kill -9, signals) rather than in process.
    process: bool,
    _dir: tempfile::TempDir,
}

impl Scripted {
    pub fn alice(&self) -> Daemon {
        self.d.as_token(Some(ALICE))
    }
    pub fn bob(&self) -> Daemon {
        self.d.as_token(Some(BOB))
    }
    pub fn carol(&self) -> Daemon {
        self.d.as_token(Some(CAROL))
    }
    pub fn bot(&self) -> Daemon {
        self.d.as_token(Some(BOT))
    }
    pub fn ops(&self) -> Daemon {
        self.d.as_token(Some(OPS))
    }
    /// Stops the daemon (SIGTERM) and starts it again on the same data
    /// and config (the script replays from its first step).
    pub fn restart(&mut self) {
        self.d.stop();
        self.d = start(&self.d.data_dir.clone(), &self.config, self.process);
    }
    /// Starts the daemon again on the same data and config after the test
    /// stopped it (in this process).
    pub fn start_again(&mut self) {
        self.d = start(&self.d.data_dir.clone(), &self.config, false);
    }
    /// Kills the daemon (SIGKILL: no shutdown at all) and starts it again
    /// on the same data and config.
    pub fn kill9_and_restart(&mut self) {
        self.d.kill9();
        self.d = start(&self.d.data_dir.clone(), &self.config, self.process);
    }
    /// Every request the model received so far.
    pub fn recorded(&self) -> Vec<Value> {
        recorded(&self.record)
    }
    /// Waits until the model has received `n` requests.
    pub async fn wait_calls(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.recorded().len() < n {
            assert!(Instant::now() < deadline, "the model never got call {n}; log:\n{}", self.d.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A daemon whose model replays `steps`; `yaml` is appended to its config
/// (e.g. `subagents:` or `commands:` sections). With `tokens`, five
/// principals: alice, bob and carol (users), bot (agent), ops (operator).
pub fn scripted(steps: Value, yaml: &str, tokens: bool) -> Scripted {
    scripted_daemon(steps, yaml, tokens, false)
}

/// `scripted` as an `agentd serve` process (kill -9, signals).
pub fn scripted_process(steps: Value, yaml: &str, tokens: bool) -> Scripted {
    scripted_daemon(steps, yaml, tokens, true)
}

/// `scripted` (or `scripted_process`) whose model goes on with its script
/// across restarts (`model.resume`): a resumed turn does not make the
/// calls it journaled again, so the script must not start over.
pub fn scripted_resuming(steps: Value, yaml: &str, tokens: bool, process: bool) -> Scripted {
    scripted_daemon(steps, &format!("{RESUME}{yaml}"), tokens, process)
}

/// Marks a `yaml` whose daemon's scripted model resumes (see above).
const RESUME: &str = "#resume\n";

fn scripted_daemon(steps: Value, yaml: &str, tokens: bool, process: bool) -> Scripted {
    let (resume, yaml) = match yaml.strip_prefix(RESUME) {
        Some(rest) => ("  resume: true\n", rest),
        None => ("", yaml),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("script.json");
    std::fs::write(&script, serde_json::to_vec(&steps).expect("steps")).expect("write script");
    let record = dir.path().join("requests.jsonl");
    // A `limits:` section in `yaml` gets the fast flush interval too.
    let yaml = match yaml.contains("limits:\n") {
        true => yaml.replacen("limits:\n", "limits:\n  stream_flush_ms: 10\n", 1),
        false => format!("limits:\n  stream_flush_ms: 10\n{yaml}"),
    };
    let mut config = format!(
        "model:\n  kind: scripted\n  script: {}\n  record_to: {}\n{resume}{yaml}\n",
        script.display(),
        record.display()
    );
    if tokens {
        config.push_str(&tokens_section(dir.path()));
    }
    let path = dir.path().join("agentd.yaml");
    std::fs::write(&path, config).expect("write config");
    let d = start(&dir.path().join("data"), &path, process);
    Scripted { d, record, config: path, process, _dir: dir }
}

fn start(data: &Path, config: &Path, process: bool) -> Daemon {
    let args = ["--config", config.to_str().expect("utf-8 path")];
    match process {
        true => Daemon::process_in(data, &args),
        false => Daemon::start_in(data, &args),
    }
}

pub fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("recorded request is JSON"))
        .collect()
}

/// SendMessage params carrying the command `{op, ...args}`.
pub fn command(op: &str, args: Value) -> Value {
    let mut cmd = args.as_object().cloned().unwrap_or_default();
    cmd.insert("op".into(), json!(op));
    json!({"message": {"messageId": uid("cmd"), "role": "ROLE_USER", "parts": [{"data": {"agentd": cmd}}]}})
}

/// `command` answered without waiting for the task it starts.
pub fn command_now(op: &str, args: Value) -> Value {
    let mut p = command(op, args);
    p["configuration"] = json!({"returnImmediately": true});
    p
}

/// The result of a read op: the one DataPart of the direct agent Message.
pub fn data(result: &Value) -> Value {
    let m = result.get("message").unwrap_or_else(|| panic!("a read op answers with a Message: {result}"));
    assert_eq!(m["role"], "ROLE_AGENT", "{result}");
    let parts = m["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 1, "one DataPart: {result}");
    parts[0].get("data").cloned().unwrap_or_else(|| panic!("a DataPart: {result}"))
}

/// The task an op that starts work answered with.
pub fn task(result: &Value) -> Value {
    result.get("task").cloned().unwrap_or_else(|| panic!("answered with a Task: {result}"))
}

/// Runs a read op and returns its data (panics on an error).
pub async fn read_op(d: &Daemon, b: Binding, op: &str, args: Value) -> Value {
    data(&d.ok(b, "SendMessage", command(op, args)).await)
}

/// Asserts a PERMISSION_DENIED refusal naming `op` and `role`.
pub fn expect_permission_denied(r: Result<Value, WireError>, op: &str, role: &str) {
    let e = match r {
        Ok(v) => panic!("expected PERMISSION_DENIED for {op}, got {v}"),
        Err(e) => e,
    };
    match e.binding {
        Binding::JsonRpc => assert_eq!(e.error["code"], -31403, "{}", e.error),
        Binding::Rest => {
            assert_eq!(e.http, 403, "{}", e.error);
            assert_eq!(e.error["status"], "PERMISSION_DENIED", "{}", e.error);
        }
    }
    assert_eq!(e.reason().as_deref(), Some("PERMISSION_DENIED"), "{}", e.error);
    let msg = e.error["message"].as_str().unwrap_or("");
    assert!(msg.contains(op) && msg.contains(role), "the message names the op and the role: {msg}");
}

/// Polls `subagent.status` until `done(status)` holds.
pub async fn wait_status(d: &Daemon, b: Binding, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = read_op(d, b, "subagent.status", json!({"id": id})).await;
        if done(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "{b:?}: subagent {id} never got there: {s}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
