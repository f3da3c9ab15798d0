//! Crash durability: `kill -9` and a restart on the same data directory
//! lose no acknowledged task or push config, leave nothing WORKING, keep
//! waiting tasks resumable; a graceful SIGTERM exits with status 0.

use crate::common::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const TCK: &[&str] = &["--agent", "tck", "--push-allow-private"];

fn send(id_prefix: &str, text: &str, task_id: Option<&str>) -> Value {
    let mut m = user_msg(&uniq(id_prefix), text);
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    json!({"message": m})
}

/// Everything the daemon tells about a task: GetTask and its push configs.
async fn snapshot(d: &Daemon, id: &str) -> (Value, Value) {
    let task = d.call("GetTask", json!({"id": id})).await;
    let configs = d.call("ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
    (task, configs)
}

#[tokio::test]
async fn acknowledged_tasks_and_push_configs_survive_kill_9() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::process_in(tmp.path(), TCK);
    let mut ids = Vec::new();
    // Plain tasks.
    for i in 0..40 {
        let r = d.call("SendMessage", send("tck-complete-task", &format!("task {i}"), None)).await;
        ids.push(r["task"]["id"].as_str().expect("id").to_owned());
    }
    // Tasks with artifacts of every kind, chunked included.
    for prefix in
        ["tck-artifact-text", "tck-artifact-data", "tck-artifact-file", "tck-stream-artifact-chunked"]
    {
        let r = d.call("SendMessage", send(prefix, "make something", None)).await;
        assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
        assert!(r["task"]["artifacts"].as_array().is_some_and(|a| !a.is_empty()), "{r}");
        ids.push(r["task"]["id"].as_str().expect("id").to_owned());
    }
    // Multi-message history: a question, an answer, the final reply.
    for _ in 0..3 {
        let r = d.call("SendMessage", send("tck-input-required", "start", None)).await;
        let id = r["task"]["id"].as_str().expect("id").to_owned();
        let r = d.call("SendMessage", send("tck-complete-task", "the answer", Some(&id))).await;
        assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
        assert!(r["task"]["history"].as_array().is_some_and(|h| h.len() >= 4), "{r}");
        ids.push(id);
    }
    // Push configs (on a waiting task and on finished ones; the URLs are
    // never reached since those tasks have no further events).
    let waiting = d.call("SendMessage", send("tck-input-required", "wait", None)).await;
    let waiting = waiting["task"]["id"].as_str().expect("id").to_owned();
    ids.push(waiting.clone());
    for (i, task) in [&waiting, &ids[0], &ids[1]].into_iter().enumerate() {
        for j in 0..2 {
            let mut cfg = json!({
                "taskId": task,
                "url": format!("http://127.0.0.1:9/hook/{i}/{j}"),
                "token": format!("tok-{i}-{j}"),
                "authentication": {"scheme": "Bearer", "credentials": format!("cred-{i}-{j}")},
            });
            if j == 1 {
                cfg["id"] = json!(format!("cfg-{i}"));
            }
            let created = d.call("CreateTaskPushNotificationConfig", cfg).await;
            assert!(created["id"].as_str().is_some_and(|s| !s.is_empty()), "{created}");
        }
    }
    let mut before = BTreeMap::new();
    for id in &ids {
        before.insert(id.clone(), snapshot(&d, id).await);
    }
    let list_before = d.call("ListTasks", json!({"pageSize": 100, "includeArtifacts": true})).await;

    d.kill9();
    let d = Daemon::process_in(tmp.path(), TCK);
    for (id, want) in &before {
        let got = snapshot(&d, id).await;
        assert_eq!(&got.0, &want.0, "task {id} is identical after kill -9");
        assert_eq!(&got.1, &want.1, "push configs of task {id} are identical after kill -9");
    }
    let list_after = d.call("ListTasks", json!({"pageSize": 100, "includeArtifacts": true})).await;
    assert_eq!(list_after, list_before, "ListTasks is identical after kill -9");
    assert_eq!(list_after["totalSize"], json!(ids.len()));
}

#[tokio::test]
async fn a_task_working_at_kill_9_is_failed_with_a_reason_after_restart() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::process_in(tmp.path(), TCK);
    let r = d
        .call(
            "SendMessage",
            json!({"message": user_msg(&uniq("test-resubscribe-message-id"), "work"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    // The agent works for 4 s: kill it while it does.
    wait_for_state(&d, &id, "TASK_STATE_WORKING", Duration::from_secs(3)).await;
    d.kill9();
    let d = Daemon::process_in(tmp.path(), TCK);
    let t = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_FAILED", "never left WORKING: {t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(why.contains("restarted"), "the status message says why: {t}");
    assert_eq!(t["status"]["message"]["role"], "ROLE_AGENT", "{t}");
    // It stays failed: recovery is over before the daemon listens, so
    // nothing resumes it later.
    let log = d.log();
    let (recovered, listening) = (log.find("marked failed"), log.find("listening on"));
    assert!(recovered.is_some() && recovered < listening, "recovery ends before serving; log:\n{log}");
    let again = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(again["status"], t["status"]);
    let list = d.call("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
    assert_eq!(list["totalSize"], 0, "no task is WORKING after recovery: {list}");
}

#[tokio::test]
async fn a_waiting_task_survives_kill_9_and_can_be_subscribed_and_resumed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::process_in(tmp.path(), TCK);
    let r = d.call("SendMessage", send("tck-input-required", "start", None)).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let before = d.call("GetTask", json!({"id": id})).await;
    d.kill9();

    let d = Daemon::process_in(tmp.path(), TCK);
    let after = d.call("GetTask", json!({"id": id})).await;
    assert_eq!(after, before, "the waiting task is unchanged");
    assert_eq!(after["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let mut s = d.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    assert!(s.is_sse(), "a waiting task can be subscribed to after a restart");
    let first = payload(&s.next().await.expect("snapshot"), true);
    assert_eq!(state(&first), Some("TASK_STATE_INPUT_REQUIRED"), "{first}");
    assert!(s.stays_open_for(Duration::from_millis(300)).await);
    let r = d.call("SendMessage", send("tck-complete-task", "answer", Some(&id))).await;
    assert_eq!(r["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    let rest: Vec<Value> = s.collect().await.iter().map(|f| payload(f, true)).collect();
    let states: Vec<&str> = rest.iter().filter_map(state).collect();
    assert_eq!(states, ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"], "{rest:?}");
}

/// One acknowledged SendMessage: the task it named and the state it reported.
type Ack = (String, String);

/// Sends messages in a loop until `stop`; returns what was acknowledged
/// with HTTP 200 and a complete JSON-RPC result.
async fn load(http: reqwest::Client, url: String, stop: Arc<AtomicBool>, worker: usize) -> Vec<Ack> {
    let mut acks = Vec::new();
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let prefix = if n % 3 == 0 { "tck-artifact-text" } else { "tck-complete-task" };
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage",
            "params": send(prefix, &format!("load {worker}/{n}"), None)});
        let Ok(r) = http.post(&url).header("A2A-Version", "1.0").json(&body).send().await else { break };
        if r.status() != 200 {
            break;
        }
        let Ok(v) = r.json::<Value>().await else { break };
        let task = &v["result"]["task"];
        let (Some(id), Some(st)) = (task["id"].as_str(), task["status"]["state"].as_str()) else {
            panic!("a 200 answer without a task: {v}");
        };
        acks.push((id.to_owned(), st.to_owned()));
    }
    acks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_send_survives_kill_9_under_load() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::process_in(tmp.path(), TCK);
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..6 {
        workers.push(tokio::spawn(load(reqwest::Client::new(), d.jsonrpc_url(), stop.clone(), w)));
    }
    // Kill once traffic is flowing, in the middle of it.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let l = d.call("ListTasks", json!({"pageSize": 1})).await;
        if l["totalSize"].as_i64().unwrap_or(0) >= 150 || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    d.kill9();
    stop.store(true, Ordering::Relaxed);
    let mut acks = Vec::new();
    for w in workers {
        acks.extend(w.await.expect("load worker"));
    }
    eprintln!("{} sends acknowledged before the kill", acks.len());
    assert!(acks.len() >= 20, "the load produced acknowledged sends: {}", acks.len());

    let d = Daemon::process_in(tmp.path(), TCK);
    for (id, acked_state) in &acks {
        let r = d.rpc("GetTask", json!({"id": id})).await;
        assert!(r.get("error").is_none(), "acknowledged task {id} is lost after kill -9: {r}");
        assert_eq!(
            r["result"]["status"]["state"],
            acked_state.as_str(),
            "task {id} keeps its acknowledged state"
        );
    }
    let working = d.call("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
    assert_eq!(working["totalSize"], 0, "{working}");
    let submitted = d.call("ListTasks", json!({"status": "TASK_STATE_SUBMITTED"})).await;
    assert_eq!(submitted["totalSize"], 0, "{submitted}");
}

#[tokio::test]
async fn sigterm_exits_zero_and_keeps_everything() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::process_in(tmp.path(), TCK);
    let r = d.call("SendMessage", send("tck-artifact-text", "x", None)).await;
    let id = r["task"]["id"].as_str().expect("id").to_owned();
    let before = d.call("GetTask", json!({"id": id})).await;
    let status = d.stop();
    assert!(status.success(), "SIGTERM exits with status 0: {status:?}; log:\n{}", d.log());
    assert_eq!(status.code(), Some(0));
    let d = Daemon::process_in(tmp.path(), TCK);
    assert_eq!(d.call("GetTask", json!({"id": id})).await, before);
}

/// A second `agentd serve` on the same data directory, run to its end
/// (killed if it is still running at the deadline): (exit status, stderr).
fn second_daemon(dir: &std::path::Path, config: &std::path::Path) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .arg("--config")
        .arg(config)
        .env("AGENTD_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the second agentd");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child.stderr.take().expect("stderr").read_to_string(&mut err).expect("read stderr");
    (status, err)
}

#[tokio::test]
async fn a_second_daemon_on_the_same_data_directory_is_refused_and_the_first_is_unharmed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = tmp.path().join("script.json");
    std::fs::write(&script, r#"[{"deltas": ["slow ", "answer"], "delay_ms": 1500}]"#).expect("script");
    let config =
        write_config(tmp.path(), &format!("model:\n  kind: scripted\n  script: {}\n", script.display()));
    let data = tmp.path().join("data");
    let first = Daemon::process_in(&data, &["--config", config.to_str().expect("utf-8")]);
    let mut p = send_params(&uniq("m"), "work", None);
    p["configuration"] = json!({"returnImmediately": true});
    let id = first.call("SendMessage", p).await["task"]["id"].as_str().expect("id").to_owned();

    let (status, err) = second_daemon(&data, &config);
    assert!(status.is_some(), "a second daemon started on the same data directory; its log:\n{err}");
    assert_ne!(status, Some(0), "refused, so not a success: {err}");
    assert!(
        err.contains("in use") && err.contains(&format!("pid {}", first.pid())),
        "the refusal names the holder's pid ({}): {err}",
        first.pid()
    );
    assert!(!err.contains("listening on"), "it never served: {err}");

    // The first daemon's running task goes on to its end, never failed.
    let done = wait_for_state(&first, &id, "TASK_STATE_COMPLETED", Duration::from_secs(20)).await;
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "slow answer", "{done}");
    let mut events = crate::common::feed::feed(&first, json!({"fromSeq": 0})).await;
    events.hello().await;
    let seen = events
        .until(|e| {
            e["kind"] == "task"
                && e["data"]["id"] == id.as_str()
                && e["data"]["status"]["state"] == "TASK_STATE_COMPLETED"
        })
        .await;
    let started = seen.iter().filter(|e| e["kind"] == "lifecycle" && e["data"]["event"] == "started").count();
    assert_eq!(started, 1, "only the first daemon ever started: {seen:?}");
    assert!(
        !seen.iter().any(|e| e["kind"] == "task" && e["data"]["status"]["state"] == "TASK_STATE_FAILED"),
        "no task was failed by a second recovery: {seen:?}"
    );
}

/// A SIGTERM while the scripted model is in the middle of a turn (the
/// turn takes `deltas × delay_ms`), with `grace` seconds of grace. The
/// task is followed by a REST stream opened before the signal. Returns the
/// daemon (stopped, with its exit status checked to be 0), the task id and
/// the stream's last frame.
async fn sigterm_during_a_turn(delay_ms: u64, grace: u64) -> (scripted::Scripted, String, Value) {
    let slow = json!({"deltas": ["one ", "two ", "three"], "delay_ms": delay_ms});
    let yaml = format!("shutdown:\n  grace_secs: {grace}\n");
    let mut s = scripted::scripted_process(json!([slow]), &yaml, false);
    let mut p = send_params("m1", "long work", None);
    p["configuration"] = json!({"returnImmediately": true});
    let id = s.d.call("SendMessage", p).await["task"]["id"].as_str().expect("id").to_owned();
    let stream =
        s.d.http
            .post(s.d.rest_url(&format!("/tasks/{id}:subscribe")))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .expect("subscribe");
    let (tx, first) = tokio::sync::oneshot::channel();
    let reader = tokio::spawn(read_to_end(stream, Duration::from_secs(30), tx));
    first.await.expect("the stream is open");
    s.wait_calls(1).await;
    let placeholder = s.d.as_token(None);
    let d = std::mem::replace(&mut s.d, placeholder);
    let (status, d) = tokio::task::spawn_blocking(move || {
        let mut d = d;
        (d.stop(), d)
    })
    .await
    .expect("stop");
    assert_eq!(status.code(), Some(0), "a drained daemon exits 0: {status:?}; log:\n{}", d.log());
    let (text, clean) = reader.await.expect("reader");
    assert!(clean, "the stream ended cleanly: {text:?}");
    let last = text.lines().filter_map(|l| l.strip_prefix("data:")).next_back().expect("frames");
    let last: Value = serde_json::from_str(last.trim()).expect("a JSON frame");
    s.d = d;
    (s, id, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_running_turn_finish_within_the_grace() {
    // Three seconds of turn, thirty of grace.
    let (mut s, id, last) = sigterm_during_a_turn(1000, 30).await;
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "the stream's final frame: {last}"
    );
    s.start_again();
    let t = s.d.call("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    let text = t["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(text, "one two three", "the whole reply: {t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_past_the_grace_leaves_the_turn_to_resume_at_the_next_start() {
    // Three seconds of turn, one of grace: the stop interrupts it.
    let (mut s, id, last) = sigterm_during_a_turn(1000, 1).await;
    assert_ne!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_FAILED",
        "a stop does not fail a turn that can resume: {last}"
    );
    s.start_again();
    // The turn's model call is made again: three more seconds, longer on
    // a machine the whole suite loads.
    let t = wait_for_state(&s.d, &id, "TASK_STATE_COMPLETED", Duration::from_secs(60)).await;
    let text = t["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(text, "one two three", "the whole reply, nothing of it twice: {t}");
    let history = t["history"].to_string();
    assert!(!history.contains("agentd was stopped"), "no stop status was written: {t}");
}
