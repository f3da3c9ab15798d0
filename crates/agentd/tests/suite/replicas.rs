//! Several replicas on one PostgreSQL database (`docs/scaling.md`): three
//! `agentd serve` processes sharing a database of the test binary's own
//! cluster, each with its own `scripted` model (its recorded requests show
//! which replica made which model call) and a lease ttl of 2 s. Every test
//! waits for what it needs with a deadline; none sleeps to synchronise.

mod approvals;
mod chaos;
mod control;
mod failover;
mod failover_time;
mod feed;
mod gates;
mod outbox;
mod partition;
mod serial;

use crate::common::*;
use agentd_store::testing::postgres;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The lease ttl of the replicas under test.
pub const TTL: Duration = Duration::from_millis(2000);

/// One replica: its daemon process and its model's recorded requests.
pub struct Replica {
    pub d: Daemon,
    pub record: PathBuf,
    /// Its model's script, data directory and `serve` arguments: what
    /// starting it again takes.
    script: PathBuf,
    data: PathBuf,
    args: Vec<String>,
}

impl Replica {
    fn spawn(data: &Path, args: &[String]) -> Daemon {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Daemon::start_with_env(data, &args, &[("AGENTD_LOG", "info,agentd_core=debug")])
    }

    /// Starts the replica again (after `d.kill9()`) on its data and config,
    /// its model replaying `script` from its first step.
    pub fn restart(&mut self, script: &Value) {
        std::fs::write(&self.script, serde_json::to_vec(script).expect("script")).expect("script");
        self.d = Replica::spawn(&self.data, &self.args);
    }

    pub fn recorded(&self) -> Vec<Value> {
        scripted::recorded(&self.record)
    }

    /// Waits until this replica's model received `n` requests.
    pub async fn wait_calls(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.recorded().len() < n {
            assert!(Instant::now() < deadline, "the model never got call {n}; log:\n{}", self.d.log());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until this replica's log has a line containing one of `any`.
    pub async fn wait_log(&self, any: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log = self.d.log();
            if any.iter().any(|s| log.contains(s)) {
                return log;
            }
            assert!(Instant::now() < deadline, "no line with any of {any:?}; log:\n{log}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Three replicas on one new database; replica i runs `scripts[i]`.
pub struct Replicas {
    pub r: Vec<Replica>,
    _dir: tempfile::TempDir,
}

impl Replicas {
    /// `None` when no PostgreSQL server binaries exist (the test is skipped).
    pub async fn start(scripts: [Value; 3]) -> Option<Replicas> {
        Self::start_via(scripts, None).await
    }

    /// `start`, r1 reaching the database through a proxy on `r1_port`.
    pub async fn start_via(scripts: [Value; 3], r1_port: Option<u16>) -> Option<Replicas> {
        Self::start_with(scripts, r1_port, None).await
    }

    /// `start_via`, every replica serving the instruction document `doc`.
    pub async fn start_with(
        scripts: [Value; 3],
        r1_port: Option<u16>,
        doc: Option<&str>,
    ) -> Option<Replicas> {
        Self::start_configured(scripts, r1_port, doc, TTL, "").await
    }

    /// `start_with`, the replicas' lease ttl being `ttl`.
    pub async fn start_ttl(
        scripts: [Value; 3],
        r1_port: Option<u16>,
        doc: Option<&str>,
        ttl: Duration,
    ) -> Option<Replicas> {
        Self::start_configured(scripts, r1_port, doc, ttl, "").await
    }

    /// `start_with`, the lease ttl being `ttl` and `extra` appended to
    /// every replica's config.
    pub async fn start_configured(
        scripts: [Value; 3],
        r1_port: Option<u16>,
        doc: Option<&str>,
        ttl: Duration,
        extra: &str,
    ) -> Option<Replicas> {
        let cluster = postgres::cluster()?;
        let url = cluster.url(&cluster.create_database().await);
        let direct_port = format!(":{}/", cluster.port());
        let dir = tempfile::tempdir().expect("tempdir");
        let password = dir.path().join("db-password");
        std::fs::write(&password, cluster.password()).expect("write the password file");
        let instruction = match doc {
            Some(text) => {
                let path = dir.path().join("agent.md");
                std::fs::write(&path, text).expect("write the document");
                format!("instruction: {}\n", path.display())
            }
            None => String::new(),
        };
        let mut r = Vec::new();
        for (i, script) in scripts.into_iter().enumerate() {
            let name = format!("r{}", i + 1);
            let url = match r1_port {
                Some(port) if i == 0 => url.replacen(&direct_port, &format!(":{port}/"), 1),
                _ => url.clone(),
            };
            let script_file = dir.path().join(format!("{name}-script.json"));
            std::fs::write(&script_file, serde_json::to_vec(&script).expect("script")).expect("script");
            let record = dir.path().join(format!("{name}-requests.jsonl"));
            std::fs::create_dir_all(dir.path().join(&name)).expect("replica dir");
            let config = write_config(
                &dir.path().join(&name),
                &format!(
                    "{instruction}store:\n  url: {url}\n  password: file:{}\n\
                     replicas:\n  lease_ttl_ms: {}\n\
                     model:\n  kind: scripted\n  script: {}\n  record_to: {}\n\
                     limits:\n  stream_flush_ms: 10\n\
                     push:\n  allow_private: true\n{extra}",
                    password.display(),
                    ttl.as_millis(),
                    script_file.display(),
                    record.display(),
                ),
            );
            let data = dir.path().join(&name).join("data");
            let config = config.to_str().expect("utf-8");
            let args = ["--config", config, "--replica-id", &name].map(str::to_owned).to_vec();
            let d = Replica::spawn(&data, &args);
            r.push(Replica { d, record, script: script_file, data, args });
        }
        Some(Replicas { r, _dir: dir })
    }
}

/// The PostgreSQL port (for a proxy in front of it), if a cluster exists.
pub fn database_port() -> Option<u16> {
    postgres::cluster().map(|c| c.port())
}

/// Starts a turn on `d` without waiting for it; its task id.
pub async fn start_turn(d: &Daemon, text: &str) -> String {
    let mut p = send_params(&uniq("m"), text, None);
    p["configuration"] = json!({"returnImmediately": true});
    let r = d.call("SendMessage", p).await;
    r["task"]["id"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_owned()
}

/// A model step asking for a tool nobody has (the turn goes on with the
/// error as its result): one step of a multi-step turn.
pub fn tool_step(call_id: &str, delay_ms: u64) -> Value {
    json!({"tool_calls": [{"id": call_id, "name": "wait_a_moment"}], "delay_ms": delay_ms})
}

/// Polls GetTask on `d` until the task is terminal; the task and when.
pub async fn wait_end(d: &Daemon, id: &str, within: Duration) -> (Value, Instant) {
    let deadline = Instant::now() + within;
    loop {
        let t = d.call("GetTask", json!({"id": id})).await;
        let s = t["status"]["state"].as_str().unwrap_or_default();
        if ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"].contains(&s) {
            return (t, Instant::now());
        }
        assert!(Instant::now() < deadline, "task {id} never ended: {t}; log:\n{}", d.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The reply text a stream's events spell (payloads in order): the first
/// artifact's text in a `task` snapshot, then each update's, appended or
/// replacing; and how many updates carried text.
pub fn streamed_reply(events: &[Value]) -> (String, usize) {
    let (mut text, mut updates) = (String::new(), 0);
    for e in events {
        if let Some(t) = e["task"]["artifacts"][0]["parts"][0]["text"].as_str() {
            text = t.to_owned();
        }
        if let Some(t) = e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str() {
            updates += 1;
            if e["artifactUpdate"]["append"] == json!(true) {
                text.push_str(t);
            } else {
                text = t.to_owned();
            }
        }
    }
    (text, updates)
}

/// The reply text of a task (its one artifact's text).
pub fn reply(task: &Value) -> String {
    task["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or_default().to_owned()
}
