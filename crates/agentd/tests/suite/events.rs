//! The events feed end to end (`agentd.events/SubscribeToEvents`): refused
//! unless activated, strict params, hello/event/goodbye frames valid
//! against the published schema, a durable log that survives restarts,
//! retention with resync, replay then live without gap or duplicate under
//! concurrent writes, per-principal visibility, and the CLI verb.

use crate::common::annotations::URI as ANNOTATIONS;
use crate::common::feed::*;
use crate::common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// Whether `e` is the `task` event of `id` reaching `state`.
fn task_in(e: &Value, id: &str, state: &str) -> bool {
    e["kind"] == "task" && e["data"]["id"] == id && e["data"]["status"]["state"] == state
}

async fn send(d: &Daemon, prefix: &str) -> String {
    d.call("SendMessage", tck(prefix)).await["task"]["id"].as_str().expect("task id").to_owned()
}

#[tokio::test]
async fn the_feed_is_refused_unless_activated_and_its_params_are_strict() {
    let d = Daemon::start(&["--agent", "tck"]);
    let (h, r) = d.rpc_with(METHOD, json!({}), &[]).await;
    assert_rpc_error(&r, -32601, Some("EXTENSION_NOT_ACTIVATED"));
    assert_eq!(h.get("a2a-extensions"), None);
    let (_, r) = d.rpc_with(METHOD, json!({}), &[("A2A-Extensions", ANNOTATIONS)]).await;
    assert_rpc_error(&r, -32601, Some("EXTENSION_NOT_ACTIVATED"));
    for (params, field) in [
        (json!({"fromseq": 1}), "fromseq"),
        (json!({"fromSeq": -1}), "fromSeq"),
        (json!({"fromSeq": "3"}), "fromSeq"),
        (json!({"kinds": ["task", "bogus"]}), "kinds[1]"),
        (json!({"kinds": "task"}), "kinds"),
    ] {
        let (h, r) = d.rpc_with(METHOD, params.clone(), &[("A2A-Extensions", EVENTS)]).await;
        assert_rpc_error(&r, -32602, Some("INVALID_PARAMS"));
        let named =
            r["error"]["data"].as_array().expect("details").iter().any(|d| {
                d["fieldViolations"].as_array().is_some_and(|v| v.iter().any(|v| v["field"] == field))
            });
        assert!(named, "{params}: the error names {field}: {r}");
        assert_eq!(h.get("a2a-extensions").and_then(|v| v.to_str().ok()), Some(EVENTS));
    }
}

#[tokio::test]
async fn live_events_replay_and_annotations_only_when_both_are_activated() {
    let d = Daemon::start(&["--agent", "tck"]);
    let (h, mut live) = feed_with(&d, json!({}), EVENTS).await;
    assert_eq!(
        h.get("a2a-extensions").and_then(|v| v.to_str().ok()),
        Some(EVENTS),
        "only the feed is echoed"
    );
    let hello = live.hello().await;
    assert_eq!(
        (hello["resume"].clone(), hello["resync"].clone(), hello["version"].clone()),
        (json!(false), json!(false), json!(1))
    );
    let start = seq(&hello);
    assert!(start >= 1, "the daemon's start is an event: {hello}");

    let id = send(&d, "tck-complete-task").await;
    let got = live.until(|e| e["kind"] == "conversation" && e["data"]["taskId"] == id).await;
    let seqs: Vec<u64> = got.iter().map(seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]) && seqs[0] > start,
        "strictly increasing after hello: {seqs:?}"
    );
    let turn = got.iter().find(|e| e["kind"] == "conversation").expect("a conversation turn event");
    assert_eq!(turn["data"]["event"], "turn");
    assert_eq!(turn["data"]["taskId"], id);
    let states: Vec<&str> = got
        .iter()
        .filter(|e| e["kind"] == "task")
        .map(|e| e["data"]["status"]["state"].as_str().unwrap_or(""))
        .collect();
    // Created and completed in one commit: one `task` event, as committed.
    assert_eq!(states, ["TASK_STATE_COMPLETED"], "{got:?}");
    for e in got.iter().filter(|e| e["kind"] == "task") {
        assert!(e["data"].get("metadata").is_none(), "no annotations without activating them: {e}");
        assert!(e["data"].get("artifacts").is_none(), "task events leave artifacts out: {e}");
    }

    // Replay from where the live feed started, with annotations too.
    let both = format!("{EVENTS}, {ANNOTATIONS}");
    let (h, mut replay) = feed_with(&d, json!({"fromSeq": start}), &both).await;
    let echoed = h.get("a2a-extensions").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert!(echoed.contains(EVENTS) && echoed.contains(ANNOTATIONS), "both echoed: {echoed}");
    let hello = replay.hello().await;
    assert_eq!((hello["resume"].clone(), hello["resync"].clone()), (json!(true), json!(false)));
    let again = replay.until(|e| e["kind"] == "conversation" && e["data"]["taskId"] == id).await;
    assert_eq!(again.iter().map(seq).collect::<Vec<_>>(), seqs, "the replay is the same events");
    for e in again.iter().filter(|e| e["kind"] == "task") {
        let a = &e["data"]["metadata"][ANNOTATIONS];
        assert_eq!(a["link"]["id"], id, "task events carry annotations when both are activated: {e}");
        assert!(a["statusHistory"].as_array().is_some_and(|h| !h.is_empty()), "{e}");
    }

    // Kinds filter.
    let mut only = feed(&d, json!({"fromSeq": start, "kinds": ["conversation"]})).await;
    only.hello().await;
    let first = only.event().await;
    assert_eq!(first["kind"], "conversation");
    assert_eq!(seq(&first), seq(turn));
}

#[tokio::test]
async fn each_principal_sees_only_its_own_tasks_events_and_operators_see_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let principals::Principals { d: _daemon, alice, bob, ops } = principals::start(dir.path(), "");
    let bobs = send(&bob, "tck-complete-task").await;
    let alices = send(&alice, "tck-complete-task").await;
    let mut a = feed(&alice, json!({"fromSeq": 0})).await;
    a.hello().await;
    let seen = a.until(|e| task_in(e, &alices, "TASK_STATE_COMPLETED")).await;
    assert_eq!(seen[0]["kind"], "lifecycle", "lifecycle events are for everyone: {:?}", seen[0]);
    assert!(!Value::Array(seen.clone()).to_string().contains(&bobs), "alice never sees bob's task: {seen:?}");
    let mut b = feed(&bob, json!({"fromSeq": 0})).await;
    b.hello().await;
    let seen = b.until(|e| task_in(e, &bobs, "TASK_STATE_COMPLETED")).await;
    assert!(!Value::Array(seen).to_string().contains(&alices));
    // Nothing of alice's follows bob's last event either.
    let alice_later = send(&alice, "tck-complete-task").await;
    let mut b2 = feed(&bob, json!({"fromSeq": 0, "kinds": ["task", "conversation"]})).await;
    b2.hello().await;
    let mut o = feed(&ops, json!({"fromSeq": 0})).await;
    o.hello().await;
    let all = o.until(|e| task_in(e, &alice_later, "TASK_STATE_COMPLETED")).await;
    let text = Value::Array(all).to_string();
    assert!(text.contains(&bobs) && text.contains(&alices), "operators see every task's events");
    let bob_last = send(&bob, "tck-complete-task").await;
    let seen = b2.until(|e| task_in(e, &bob_last, "TASK_STATE_COMPLETED")).await;
    assert!(!Value::Array(seen).to_string().contains(&alice_later), "bob's feed skips alice's events");
}

#[tokio::test]
async fn goodbye_at_shutdown_and_a_reconnect_after_restart_continues_without_resync() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::process_in(dir.path(), &["--agent", "tck"]);
    let mut f = feed(&d, json!({"fromSeq": 0})).await;
    f.hello().await;
    let id = send(&d, "tck-complete-task").await;
    f.until(|e| task_in(e, &id, "TASK_STATE_COMPLETED")).await;
    let _ = std::process::Command::new("kill").arg("-TERM").arg(d.pid().to_string()).status();
    let stopping = f.until(|e| e["kind"] == "lifecycle").await;
    assert_eq!(stopping.last().expect("event")["data"]["event"], "stopping");
    let bye = f.frame().await.expect("goodbye");
    let goodbye = bye.get("goodbye").cloned().unwrap_or_else(|| panic!("expected goodbye: {bye}"));
    assert_eq!(goodbye["reason"], "shutdown");
    assert_eq!(
        goodbye["seq"],
        stopping.last().expect("event")["seq"],
        "goodbye names the last seq delivered"
    );
    assert!(f.frame().await.is_none(), "the stream ends after goodbye");
    assert_eq!(d.stop().code(), Some(0));

    let d = Daemon::start_in(dir.path(), &["--agent", "tck"]);
    let from = seq(&goodbye);
    let mut f = feed(&d, json!({"fromSeq": from})).await;
    let hello = f.hello().await;
    assert_eq!((hello["resume"].clone(), hello["resync"].clone()), (json!(true), json!(false)), "{hello}");
    let next = f.event().await;
    assert_eq!(seq(&next), from + 1, "seqs continue across the restart, nothing missed");
    assert_eq!((next["kind"].clone(), next["data"]["event"].clone()), (json!("lifecycle"), json!("started")));
    let id = send(&d, "tck-complete-task").await;
    f.until(|e| task_in(e, &id, "TASK_STATE_COMPLETED")).await;
}

#[tokio::test]
async fn a_from_seq_behind_retention_or_ahead_of_the_log_asks_for_resync() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = write_config(dir.path(), "events:\n  retain_count: 3\n  prune_interval_ms: 20\n");
    let args = ["--agent", "tck", "--config", conf.to_str().expect("utf-8")];
    let d = Daemon::start_in(&dir.path().join("data"), &args);
    for _ in 0..3 {
        send(&d, "tck-complete-task").await;
    }
    // The prune loop removes seq 1 within a few intervals: from then on, a
    // feed from seq 1 is told to resync.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (mut f, hello) = loop {
        let mut f = feed(&d, json!({"fromSeq": 1})).await;
        let hello = f.hello().await;
        if hello["resync"] == true || std::time::Instant::now() > deadline {
            break (f, hello);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!((hello["resync"].clone(), hello["resume"].clone()), (json!(true), json!(false)), "{hello}");
    let head = seq(&hello);
    // After a resync the feed goes on live.
    let id = send(&d, "tck-complete-task").await;
    let got = f.until(|e| task_in(e, &id, "TASK_STATE_COMPLETED")).await;
    assert!(got.iter().all(|e| seq(e) > head));

    let mut ahead = feed(&d, json!({"fromSeq": 1_000_000})).await;
    assert_eq!(ahead.hello().await["resync"], true, "a seq this log never assigned");
    let mut recent = feed(&d, json!({"fromSeq": head})).await;
    let h = recent.hello().await;
    assert_eq!(
        (h["resync"].clone(), h["resume"].clone()),
        (json!(false), json!(true)),
        "a retained position resumes"
    );
    assert_eq!(seq(&recent.event().await), head + 1);
}

#[tokio::test]
async fn replay_then_live_has_no_gap_and_no_duplicate_under_concurrent_writes() {
    replay_then_live_on(Daemon::start(&["--agent", "tck"])).await;
}

/// Feeds opened while writers run replay, then go live: every seq once, in
/// order (on SQLite here, on PostgreSQL in `postgres.rs`). `d` runs `tck`.
pub async fn replay_then_live_on(d: Daemon) {
    let d = std::sync::Arc::new(d);
    const WRITERS: usize = 4;
    const EACH: usize = 40;
    // How many tasks the writers have completed so far.
    let (sent, mut completed) = tokio::sync::watch::channel(0usize);
    let sent = std::sync::Arc::new(sent);
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let (d, sent) = (d.clone(), sent.clone());
        writers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..EACH {
                ids.push(send(&d, "tck-complete-task").await);
                sent.send_modify(|n| *n += 1);
            }
            ids
        }));
    }
    // Open feeds from the beginning while the writers run: each replays,
    // then goes live in the middle of the writes.
    let within = Duration::from_secs(30);
    let mut after = async |n: usize| {
        let reached = tokio::time::timeout(within, completed.wait_for(|done| *done >= n)).await;
        assert!(reached.is_ok_and(|r| r.is_ok()), "the writers never completed {n} tasks");
    };
    after(WRITERS).await;
    let mut early = feed(&d, json!({"fromSeq": 0})).await;
    let early_head = seq(&early.hello().await);
    after(WRITERS * EACH / 2).await;
    let mut late = feed(&d, json!({"fromSeq": 0})).await;
    let late_head = seq(&late.hello().await);
    let mut ids = Vec::new();
    for w in writers {
        ids.extend(w.await.expect("writer"));
    }
    let mut last_seqs = Vec::new();
    for f in [&mut early, &mut late] {
        let mut pending: std::collections::HashSet<String> = ids.iter().cloned().collect();
        let mut expected = 1;
        while !pending.is_empty() {
            let e = f.event().await;
            assert_eq!(seq(&e), expected, "an operator's feed is every seq, once, in order");
            expected += 1;
            if e["kind"] == "task" && e["data"]["status"]["state"] == "TASK_STATE_COMPLETED" {
                pending.remove(e["data"]["id"].as_str().unwrap_or(""));
            }
        }
        last_seqs.push(expected - 1);
    }
    // Both feeds crossed the seam: they opened before the last event.
    assert!(early_head < last_seqs[0] && late_head < last_seqs[1], "{early_head} {late_head} {last_seqs:?}");
}

#[tokio::test]
async fn the_events_verb_tails_the_feed_until_goodbye() {
    let d = Daemon::process(&["--agent", "tck"]);
    let id = send(&d, "tck-complete-task").await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentd"))
        .args(["events", "--url", &d.url, "--from-seq", "0", "--kinds", "task,lifecycle"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn agentd events");
    let stdout = child.stdout.take().expect("stdout");
    let (caught_up, is_caught_up) = std::sync::mpsc::channel();
    let done = id.clone();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut lines = Vec::new();
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.contains(&done) && line.contains("TASK_STATE_COMPLETED") {
                let _ = caught_up.send(());
            }
            lines.push(line);
        }
        lines
    });
    // Once it printed the completed task, stop the daemon: the verb ends on
    // goodbye.
    let printed = tokio::task::spawn_blocking(move || is_caught_up.recv_timeout(Duration::from_secs(10)));
    printed.await.expect("waiter").expect("agentd events printed the completed task");
    let _ = std::process::Command::new("kill").arg("-TERM").arg(d.pid().to_string()).status();
    let status = child.wait().expect("wait");
    let lines = reader.join().expect("reader");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err).expect("stderr");
    assert!(status.success(), "agentd events failed: {err}");
    assert!(lines.iter().any(|l| l.contains(&id) && l.contains("TASK_STATE_COMPLETED")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("lifecycle")), "{lines:?}");
    assert!(!lines.iter().any(|l| l.contains("conversation")), "--kinds filters: {lines:?}");
    assert!(err.contains("--from-seq"), "the goodbye says where to resume: {err}");
}

fn command(op: &str, args: Value) -> Value {
    let mut cmd = args.as_object().cloned().unwrap_or_default();
    cmd.insert("op".into(), json!(op));
    json!({"message": {"messageId": uid("cmd"), "role": "ROLE_USER", "parts": [{"data": {"agentd": cmd}}]}})
}

#[tokio::test]
async fn subagents_and_closed_conversations_are_events_and_a_subagent_is_annotated() {
    let d = Daemon::start(&[]);
    let mut f = feed_with(&d, json!({"kinds": ["subagent", "conversation"]}), EVENTS).await.1;
    f.hello().await;
    let spawn = command("subagent.spawn", json!({"instruction": "Help.", "input": "go", "name": "helper"}));
    let (_, r) = d.op_with(Binding::JsonRpc, "SendMessage", spawn, &[("A2A-Extensions", ANNOTATIONS)]).await;
    let task = r.expect("spawn")["task"].clone();
    let a = &task["metadata"][ANNOTATIONS];
    assert_eq!(a["link"]["kind"], "subagent", "{task}");
    assert_eq!(a["command"], "subagent.spawn");
    let handle = a["link"]["id"].as_str().expect("handle").to_owned();
    assert!(handle.starts_with("helper"), "{a}");
    let id = task["id"].as_str().expect("id").to_owned();
    let got = f.until(|e| e["kind"] == "subagent" && e["data"]["event"] == "ended").await;
    let started = got.iter().find(|e| e["data"]["event"] == "started").expect("a started event");
    assert_eq!(
        (started["data"]["handle"].clone(), started["data"]["taskId"].clone()),
        (json!(handle), json!(id))
    );
    let ended = got.last().expect("ended");
    assert_eq!(ended["data"]["taskId"], id);
    assert!(ended["data"]["state"].as_str().is_some_and(|s| s != "TASK_STATE_WORKING"), "{ended}");

    let ctx = uid("ctx");
    let mut turn = send_params(&uid("m"), "hello", None);
    turn["message"]["contextId"] = json!(ctx);
    d.call("SendMessage", turn).await;
    d.call("SendMessage", command("conversation.close", json!({"contextId": ctx}))).await;
    let got = f.until(|e| e["kind"] == "conversation" && e["data"]["event"] == "closed").await;
    assert_eq!(got.last().expect("closed")["data"]["contextId"], ctx);
    assert!(got.iter().any(|e| e["data"]["event"] == "turn" && e["data"]["contextId"] == ctx), "{got:?}");
}

/// The `task` events of `id` in a replay of the whole log, up to its completion.
async fn replayed_task_events(d: &Daemon, id: &str) -> Vec<Value> {
    let mut f = feed(d, json!({"fromSeq": 0, "kinds": ["task"]})).await;
    f.hello().await;
    let all = f.until(|e| task_in(e, id, "TASK_STATE_COMPLETED")).await;
    all.into_iter().filter(|e| e["data"]["id"] == id).collect()
}

/// A task's earlier `task` events replay as they were committed after the
/// task moved on, also after kill -9: each shows its own version's state
/// and history, not the task's newest.
#[tokio::test]
async fn earlier_task_events_replay_their_own_version_after_the_task_moved_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::process_in(dir.path(), &["--agent", "tck"]);
    let id = send(&d, "tck-input-required").await;
    d.call("SendMessage", tck_on("tck-complete-task", &id)).await;
    let before = replayed_task_events(&d, &id).await;
    let first = &before[0]["data"];
    assert_eq!(
        first["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "the creation as committed: {before:?}"
    );
    let history = |e: &Value| e["history"].as_array().map_or(0, Vec::len);
    let last = &before.last().expect("the completion")["data"];
    assert!(history(first) < history(last), "the first event keeps its shorter history: {before:?}");
    d.kill9();
    let d = Daemon::start_in(dir.path(), &["--agent", "tck"]);
    assert_eq!(replayed_task_events(&d, &id).await, before, "the same events after kill -9");
}

#[tokio::test]
async fn acknowledged_changes_have_their_events_after_kill_9() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::process_in(dir.path(), &["--agent", "tck"]);
    let id = send(&d, "tck-complete-task").await;
    d.kill9();
    let d = Daemon::start_in(dir.path(), &["--agent", "tck"]);
    let mut f = feed(&d, json!({"fromSeq": 0, "kinds": ["task"]})).await;
    f.hello().await;
    let got = f.until(|e| task_in(e, &id, "TASK_STATE_COMPLETED")).await;
    assert_eq!(got[0]["data"]["id"], id, "the task's first event is its creation: {got:?}");
    assert_eq!(got[0]["data"]["status"]["state"], "TASK_STATE_COMPLETED", "created completed, in one commit");
}

#[tokio::test]
async fn reminder_lifecycle_events_are_in_the_feed() {
    let d = Daemon::start(&["--agent", "tck"]);
    let mut f = feed(&d, json!({"kinds": ["reminder"]})).await;
    f.hello().await;
    let id = send(&d, "tck-input-required").await;
    let inject = |rid: &str| json!({"taskId": id, "reminder": {"id": rid, "body": "Prefer main.", "dedupeKey": "branch"}});
    d.call("InjectTaskReminder", inject("older")).await;
    let r = d.call("InjectTaskReminder", inject("newer")).await;
    assert_eq!(r["displaced"], json!(["older"]), "{r}");
    let e = f.event().await;
    assert_eq!(e["kind"], "reminder");
    assert_eq!(
        e["data"],
        json!({"taskId": id, "event": "deduped", "reminderId": "older", "displacedBy": "newer"}),
        "{e}"
    );
}
