//! The daemon on PostgreSQL (`store.url`, `docs/scaling.md`): an `agentd
//! serve` process on a database of the test binary's own cluster
//! (`agentd_store::testing::postgres`), the password by reference, serves
//! SendMessage, GetTask and ListTasks from it, and after `kill -9` a daemon
//! started on another, empty data directory finds every task there; the
//! events feed replays then goes live without gap or duplicate.

use crate::common::*;
use agentd_store::testing::postgres;
use serde_json::{Value, json};

const TCK: &[&str] = &["--agent", "tck"];

fn send(prefix: &str, text: &str, task_id: Option<&str>) -> Value {
    let mut m = user_msg(&uniq(prefix), text);
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    json!({"message": m})
}

#[tokio::test]
async fn the_daemon_serves_from_postgres_and_a_restart_finds_its_tasks() {
    let Some(cluster) = postgres::cluster() else { return };
    let url = cluster.url(&cluster.create_database().await);
    let secrets = tempfile::tempdir().expect("tempdir");
    let password_file = secrets.path().join("db-password");
    std::fs::write(&password_file, cluster.password()).expect("write the password file");
    let reference = format!("file:{}", password_file.display());
    let env = [("AGENTD_STORE_PASSWORD", reference.as_str())];
    let args: Vec<&str> = TCK.iter().copied().chain(["--store", url.as_str()]).collect();

    let first_dir = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::start_with_env(first_dir.path(), &args, &env);
    let done = d.call("SendMessage", send("tck-complete-task", "hello", None)).await;
    assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let done_id = done["task"]["id"].as_str().expect("id").to_owned();
    let waiting = d.call("SendMessage", send("tck-input-required", "start", None)).await;
    assert_eq!(waiting["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{waiting}");
    let waiting_id = waiting["task"]["id"].as_str().expect("id").to_owned();
    let got = d.call("GetTask", json!({"id": done_id})).await;
    assert_eq!(got["id"], json!(done_id), "{got}");
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED", "{got}");
    let list = d.call("ListTasks", json!({"pageSize": 10})).await;
    assert_eq!(list["totalSize"], 2, "{list}");
    let waiting_before = d.call("GetTask", json!({"id": waiting_id})).await;
    assert!(!first_dir.path().join("agentd.db").exists(), "no SQLite file: the state is in PostgreSQL");
    let log = d.log();
    assert!(log.contains("store: PostgreSQL"), "the log names the store; log:\n{log}");
    assert!(!log.contains(cluster.password()), "the password is never logged; log:\n{log}");

    d.kill9();
    // Another, empty data directory: what the daemon finds comes from the database.
    let second_dir = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_with_env(second_dir.path(), &args, &env);
    assert_eq!(d.call("GetTask", json!({"id": done_id})).await, got, "the finished task after kill -9");
    assert_eq!(d.call("GetTask", json!({"id": waiting_id})).await, waiting_before, "the waiting task");
    assert_eq!(d.call("ListTasks", json!({"pageSize": 10})).await, list, "ListTasks after kill -9");
    let resumed = d.call("SendMessage", send("tck-complete-task", "the answer", Some(&waiting_id))).await;
    assert_eq!(
        resumed["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "resumed after restart: {resumed}"
    );
}

/// The events feed on PostgreSQL (a daemon in this process, its store in
/// the config file): replay then live under concurrent writes, every seq
/// once, in order.
#[tokio::test]
async fn the_events_feed_on_postgres_has_no_gap_and_no_duplicate() {
    let Some((d, _dir)) = tck_on_a_new_database("").await else { return };
    crate::events::replay_then_live_on(d).await;
}

/// A daemon in this process (`--agent tck`) on a new database of the
/// cluster, its store in the config file with `extra` after it, and the
/// directory holding the config and the password file; `None` without a
/// cluster.
async fn tck_on_a_new_database(extra: &str) -> Option<(Daemon, tempfile::TempDir)> {
    let cluster = postgres::cluster()?;
    let url = cluster.url(&cluster.create_database().await);
    let dir = tempfile::tempdir().expect("tempdir");
    let password_file = dir.path().join("db-password");
    std::fs::write(&password_file, cluster.password()).expect("write the password file");
    let config = write_config(
        dir.path(),
        &format!("store:\n  url: {url}\n  password: file:{}\n{extra}", password_file.display()),
    );
    let config = config.to_str().expect("utf-8 path").to_owned();
    Some((Daemon::start(&["--agent", "tck", "--config", &config]), dir))
}

/// A store URL agentd does not know, or one holding a password, stops the
/// daemon at start with an error naming the key; nothing is served.
#[tokio::test]
async fn a_bad_store_url_stops_the_daemon_naming_the_key() {
    for (url, says) in [
        ("mysql://agentd@127.0.0.1/agentd", "store.url"),
        ("postgres://agentd:hunter2@127.0.0.1:9/agentd", "store.password"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
            .args(["serve", "--listen", "127.0.0.1:0", "--store", url, "--data-dir"])
            .arg(dir.path())
            .output()
            .expect("run agentd");
        assert!(!out.status.success(), "{url}: the daemon must not start");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{url}: the error names {says}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{url}: the password is not shown: {stderr}");
    }
}

/// A run gives its task's lease and its conversation's back when it ends,
/// whether its task completed within the commit that answered or waits for
/// input: a replica holds no lease of work it no longer runs. Given back,
/// not left to lapse: the deadline is shorter than the ttl (a held lease
/// is renewed for as long as the process lives).
#[tokio::test]
async fn a_run_that_ended_holds_no_lease() {
    let Some((d, _dir)) = tck_on_a_new_database("replicas:\n  lease_ttl_ms: 30000\n").await else { return };
    let done = d.call("SendMessage", send("tck-complete-task", "hello", None)).await;
    assert_eq!(done["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let waiting = d.call("SendMessage", send("tck-input-required", "start", None)).await;
    assert_eq!(waiting["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{waiting}");
    // The leases go after the answers: wait for it, with a deadline.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let status = scripted::data(&d.call("SendMessage", scripted::command("status", json!({}))).await);
        let leases = status["replica"]["leases"].as_array().expect("leases").clone();
        let held: Vec<&Value> = leases
            .iter()
            .filter(|l| l["resource"].as_str().is_some_and(|r| !r.starts_with("outbox")))
            .collect();
        if held.is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "leases still held after the runs ended: {held:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
