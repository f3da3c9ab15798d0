//! Durable turns (`docs/durability.md`): a turn interrupted by `kill -9`
//! resumes from its step journal after a restart. The evidence is what the
//! `scripted` model received (its recorded requests; with `resume: true`
//! its script goes on across restarts, and a request identical to one it
//! answered gets the same answer), the tasks the daemon holds (a subagent
//! started twice would be a task more), and the streams a client reads. Tools are the official MCP Python SDK's test
//! server (`py__slow`, `py__echo`) and the built-in `spawn_subagent` and
//! `delegate` (to a second real daemon, `durable_turns/adopt.rs`).

mod adopt;
mod uncertain;

use crate::common::*;
use crate::mcp_servers::{HttpServer, skipped};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A daemon process with the scripted model resuming its script across
/// restarts, the Python MCP server as `py`, and `yaml` appended.
struct Durable {
    d: Daemon,
    record: PathBuf,
    config: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
}

/// The daemon logs each tool call it journals as started, and each peer
/// task a delegation journaled or follows again (debug).
const LOG: &str = "info,agentd_runtime::agent_loop=debug,agentd_runtime::delegate=debug";

impl Durable {
    fn start(steps: Value, server: &HttpServer, yaml: &str) -> Durable {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("script.json");
        std::fs::write(&script, serde_json::to_vec(&steps).expect("steps")).expect("script");
        let record = dir.path().join("requests.jsonl");
        let config = dir.path().join("agentd.yaml");
        let yaml = format!(
            "model:\n  kind: scripted\n  script: {}\n  record_to: {}\n  resume: true\n\
             mcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n{yaml}",
            script.display(),
            record.display(),
            server.url(),
        );
        let yaml = match yaml.contains("limits:\n") {
            true => yaml.replacen("limits:\n", "limits:\n  stream_flush_ms: 10\n", 1),
            false => format!("{yaml}\nlimits:\n  stream_flush_ms: 10\n"),
        };
        std::fs::write(&config, yaml).expect("config");
        let data = dir.path().join("data");
        let d = Self::process(&data, &config);
        Durable { d, record, config, data, _dir: dir }
    }

    fn process(data: &std::path::Path, config: &std::path::Path) -> Daemon {
        Daemon::start_with_env(data, &["--config", config.to_str().expect("utf-8")], &[("AGENTD_LOG", LOG)])
    }

    fn kill9_and_restart(&mut self) {
        self.d.kill9();
        self.d = Self::process(&self.data, &self.config);
    }

    fn recorded(&self) -> Vec<Value> {
        scripted::recorded(&self.record)
    }

    async fn wait_calls(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.recorded().len() < n {
            assert!(Instant::now() < deadline, "the model never got call {n}; log:\n{}", self.d.log());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until the daemon journaled the start of `n` tool calls.
    async fn wait_tool_started(&self, n: usize) {
        self.wait_log("tool call started", n).await;
    }

    /// Waits until the daemon's log holds `line` `n` times.
    async fn wait_log(&self, line: &str, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.d.log().matches(line).count() < n {
            assert!(Instant::now() < deadline, "never logged {line:?} {n} time(s); log:\n{}", self.d.log());
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Starts a turn and returns its task id at once.
    async fn send(&self, text: &str) -> String {
        let mut p = send_params(&uid("m"), text, None);
        p["configuration"] = json!({"returnImmediately": true});
        let r = self.d.call("SendMessage", p).await;
        r["task"]["id"].as_str().unwrap_or_else(|| panic!("a task: {r}")).to_owned()
    }

    async fn wait_end(&self, id: &str) -> Value {
        // Generous: the whole suite may load the machine.
        let deadline = Instant::now() + Duration::from_secs(150);
        loop {
            let t = self.d.call("GetTask", json!({"id": id})).await;
            let s = t["status"]["state"].as_str().unwrap_or_default();
            if ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"].contains(&s) {
                return t;
            }
            assert!(Instant::now() < deadline, "task {id} never ended: {t}; log:\n{}", self.d.log());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn reply(task: &Value) -> String {
    task["artifacts"][0]["parts"][0]["text"].as_str().unwrap_or_default().to_owned()
}

fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default().to_owned()
}

/// The reply text a client rebuilds from a stream: the snapshot's
/// artifact, then each update appended (or replacing it).
fn client_view(events: &[Value]) -> String {
    let mut text = String::new();
    for e in events {
        if let Some(t) = e.get("task") {
            text = reply(t);
        } else if let Some(u) = e.get("artifactUpdate") {
            let chunk = u["artifact"]["parts"][0]["text"].as_str().unwrap_or_default();
            if u["append"] == json!(true) {
                text.push_str(chunk);
            } else {
                text = chunk.to_owned();
            }
        }
    }
    text
}

/// Three model calls with two tool calls between them; the first tool
/// call (`py__slow`) is where the kill lands.
fn three_calls() -> Value {
    json!([
        {"deltas": ["Look", "ing."], "tool_calls": [{"name": "py__slow", "arguments": {"seconds": 2}}]},
        {"text": "Still looking.", "tool_calls": [{"name": "py__echo", "arguments": {"text": "x"}}]},
        {"deltas": ["Do", "ne."]}
    ])
}

const THREE_CALLS_REPLY: &str = "Looking.\n\nStill looking.\n\nDone.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_after_the_first_of_three_model_calls_resumes_and_the_model_gets_what_an_uninterrupted_run_sends()
 {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let retry = "durability:\n  retry_tools: [py__slow]\n";
    // The run that is not interrupted.
    let reference = Durable::start(three_calls(), &server, retry);
    let id = reference.send("find it").await;
    let done = reference.wait_end(&id).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let want = reference.recorded();
    assert_eq!(want.len(), 3);

    let mut s = Durable::start(three_calls(), &server, retry);
    let id = s.send("find it").await;
    // A client follows the task from before the kill.
    let mut before = s.d.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    let seen = tokio::spawn(async move {
        let mut out = Vec::new();
        while let Some(f) = before.next().await {
            out.push(payload(&f, true));
        }
        out
    });
    s.wait_tool_started(1).await;
    s.kill9_and_restart();
    let seen_before = seen.await.expect("the first stream");
    assert!(
        !seen_before.iter().any(|e| state(e) == Some("TASK_STATE_COMPLETED")),
        "the kill came before the end: {seen_before:?}"
    );
    // It resubscribes and sees the task finish.
    let mut after = s.d.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    let mut events = Vec::new();
    while let Some(f) = after.next().await {
        events.push(payload(&f, true));
    }
    assert_eq!(events.last().and_then(state), Some("TASK_STATE_COMPLETED"), "{events:?}");
    assert_eq!(client_view(&events), THREE_CALLS_REPLY, "the client's reply has nothing twice: {events:?}");
    let t = s.wait_end(&id).await;
    assert_eq!(reply(&t), THREE_CALLS_REPLY, "{t}");
    assert_eq!(reply(&t), reply(&done), "the artifact of the uninterrupted run");
    let got = s.recorded();
    assert_eq!(got.len(), 3, "exactly three model calls in total: {got:#?}");
    assert_eq!(got[1], want[1], "the second call's input is the uninterrupted run's");
    assert_eq!(got[2], want[2], "the third call's input is the uninterrupted run's");
    assert!(s.d.log().contains("resuming the turn from its journal"), "{}", s.d.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_cut_by_kill_9_is_made_again_when_declared_retry_and_fails_the_turn_otherwise() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    // The same server twice: `idem` declared safe to call again, `once` not.
    let yaml = format!(
        "    - name: idem\n      http: {{url: '{0}'}}\n      timeout_secs: 120\n    - name: once\n      http: {{url: '{0}'}}\n\
         durability:\n  retry_tools: ['idem__*']\n",
        server.url()
    );
    let steps = json!([
        {"text": "A.", "tool_calls": [{"name": "idem__slow", "arguments": {"seconds": 3}}]},
        {"text": "B.", "tool_calls": [{"name": "once__slow", "arguments": {"seconds": 3}}]},
        {"text": "A done."}
    ]);
    let mut s = Durable::start(steps, &server, &yaml);
    let a = s.send("task a").await;
    s.wait_tool_started(1).await;
    let b = s.send("task b").await;
    s.wait_tool_started(2).await;
    s.kill9_and_restart();

    let a = s.wait_end(&a).await;
    assert_eq!(a["status"]["state"], "TASK_STATE_COMPLETED", "the retry tool ran again: {a}");
    assert_eq!(reply(&a), "A.\n\nA done.", "{a}");
    let b = s.wait_end(&b).await;
    assert_eq!(b["status"]["state"], "TASK_STATE_FAILED", "{b}");
    let why = status_text(&b);
    assert!(why.contains("once__slow") && why.contains("unknown"), "the failure names the tool: {why}");
    let calls = s.recorded();
    assert_eq!(calls.len(), 3, "A's two calls and B's one: {calls:#?}");
    let last = calls[2]["messages"].as_array().expect("messages");
    assert_eq!(last.last().expect("a message")["content"], "done", "A's model got the retried call's result");
    let log = s.d.log();
    assert!(log.contains("attempt=2") && log.contains("idem__slow"), "the retry is attempt 2: {log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_a_subagent_works_resumes_that_one_child_and_the_parent_gets_its_answer() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let steps = json!([
        {"tool_calls": [{"name": "spawn_subagent", "arguments": {"instruction": "You help.", "input": "do it"}}]},
        {"deltas": ["child ", "answer"], "delay_ms": 1500},
        {"text": "All done."}
    ]);
    let mut s = Durable::start(steps, &server, "");
    let parent = s.send("delegate it").await;
    s.wait_calls(2).await; // the child's model call is in flight
    s.kill9_and_restart();
    let t = s.wait_end(&parent).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(reply(&t), "All done.", "{t}");
    let all = s.d.call("ListTasks", json!({"pageSize": 50, "includeArtifacts": true})).await;
    assert_eq!(all["totalSize"], 2, "the parent and exactly one child: {all}");
    let child = all["tasks"].as_array().expect("tasks").iter().find(|x| x["id"] != parent.as_str()).cloned();
    let child = child.expect("the child");
    assert_eq!(child["status"]["state"], "TASK_STATE_COMPLETED", "the child resumed too: {child}");
    assert_eq!(reply(&child), "child answer", "its reply once: {child}");
    let calls = s.recorded();
    // The parent's call, the child's (cut by the kill, so made again with
    // the same input), the parent's last.
    assert_eq!(calls.len(), 4, "{calls:#?}");
    assert_eq!(calls[1], calls[2], "the child's cut call was made again, identical");
    let result = calls[3]["messages"].as_array().expect("messages").last().expect("a message").clone();
    assert_eq!(result["content"], "child answer", "the parent got the adopted child's answer: {result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_and_token_limits_count_the_calls_made_before_a_restart() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let slow = json!({"name": "py__slow", "arguments": {"seconds": 2}});
    let echo = json!({"name": "py__echo", "arguments": {"text": "x"}});
    let retry = "durability:\n  retry_tools: [py__slow]\n";
    // Steps: two model calls allowed; the kill comes after the first.
    let steps = json!([{"tool_calls": [slow]}, {"tool_calls": [echo]}, {"text": "never"}]);
    let mut s = Durable::start(steps, &server, &format!("{retry}limits:\n  max_steps: 2\n"));
    let id = s.send("steps").await;
    s.wait_tool_started(1).await;
    s.kill9_and_restart();
    let t = s.wait_end(&id).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_FAILED", "{t}");
    assert!(status_text(&t).contains("limit of 2 model calls"), "{t}");
    assert_eq!(s.recorded().len(), 2, "one call before the kill, one after");

    // Tokens: 60 a call, 100 allowed; a fresh budget would let call 2 pass.
    let usage = json!({"input_tokens": 60, "output_tokens": 0});
    let steps = json!([
        {"tool_calls": [slow], "usage": usage},
        {"text": "over budget", "usage": usage}
    ]);
    let mut s = Durable::start(steps, &server, &format!("{retry}limits:\n  max_tokens: 100\n"));
    let id = s.send("tokens").await;
    s.wait_tool_started(1).await;
    s.kill9_and_restart();
    let t = s.wait_end(&id).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_FAILED", "{t}");
    assert!(status_text(&t).contains("used 120 tokens"), "{t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_of_a_call_cut_by_kill_9_go_with_it_again_and_are_not_counted_twice() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    // A tool nobody has: the loop goes on with the error as the result.
    let wait = |delay: u64| json!({"tool_calls": [{"name": "wait_a_moment"}], "delay_ms": delay});
    let steps = json!([wait(1000), {"deltas": ["a", "b"], "delay_ms": 800, "tool_calls": [{"name": "wait_a_moment"}]}, {"text": "done"}]);
    let mut s = Durable::start(steps, &server, "");
    let id = s.send("go").await;
    s.wait_calls(1).await;
    let reminder = json!({"id": "r1", "body": "Prefer main.", "ttlTurns": 2});
    crate::reminders::inject(&s.d, &id, reminder).await;
    s.wait_calls(2).await; // the call the reminder goes with first
    s.kill9_and_restart();
    let t = s.wait_end(&id).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    let calls = s.recorded();
    assert_eq!(calls.len(), 4, "call 2 was cut and made again: {calls:#?}");
    assert_eq!(calls[1], calls[2], "made again with the same input, its reminder included");
    assert_eq!(crate::reminders::reminder_ids(&calls[2]), ["r1"]);
    assert_eq!(
        crate::reminders::reminder_ids(&calls[3]),
        ["r1"],
        "the cut call did not spend the reminder's second turn"
    );
}

/// Five model calls of a turn, four tool calls between them (two
/// subagents, whose own calls come in between, and two echoes), each call
/// streamed in pieces over time so that kills land in calls and in tools
/// alike. In `resume` mode the model answers by request, so the steps are
/// listed in the order their requests first arrive.
fn five_steps() -> Value {
    let step =
        |w: &str, tool: Value| json!({"deltas": [&w[..2], &w[2..]], "delay_ms": 40, "tool_calls": [tool]});
    let spawn = |input: &str| json!({"name": "spawn_subagent", "arguments": {"instruction": "You help.", "input": input}});
    let echo = |text: &str| json!({"name": "py__echo", "arguments": {"text": text}});
    json!([
        step("One.", spawn("first")),
        {"deltas": ["sub", "one"], "delay_ms": 40},
        step("Two.", echo("2")),
        step("Three.", spawn("second")),
        {"deltas": ["sub", "two"], "delay_ms": 40},
        step("Four.", echo("4")),
        {"deltas": ["Fi", "ve."], "delay_ms": 40}
    ])
}

const FIVE_STEPS_REPLY: &str = "One.\n\nTwo.\n\nThree.\n\nFour.\n\nFive.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_at_random_points_of_five_step_turns_changes_nothing_of_their_outcome() {
    if skipped() {
        return;
    }
    const CYCLES: usize = 20;
    let server = HttpServer::start();
    let mut s = Durable::start(five_steps(), &server, "durability:\n  retry_tools: [py__echo]\n");
    // A small generator: the seed is printed so a failure can be replayed.
    let mut seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("time").as_nanos() as u64
            | 1;
    println!("seed {seed}");
    let mut random_ms = move |max: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % max
    };
    let mut turns = 0;
    let mut kills = 0;
    let mut calls_before = 0;
    while kills < CYCLES {
        let id = s.send("count to five").await;
        turns += 1;
        let mut turn_kills = 0;
        loop {
            // Time is the subject: a random moment of the turn to kill at.
            tokio::time::sleep(Duration::from_millis(random_ms(450))).await;
            let t = s.d.call("GetTask", json!({"id": id})).await;
            if t["status"]["state"] == "TASK_STATE_COMPLETED" || kills == CYCLES {
                break;
            }
            s.kill9_and_restart();
            kills += 1;
            turn_kills += 1;
        }
        let t = s.wait_end(&id).await;
        assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "turn {turns}: {t}");
        assert_eq!(reply(&t), FIVE_STEPS_REPLY, "turn {turns}, {turn_kills} kill(s): {t}");
        // Every request of the turn is one of the seven of an uninterrupted
        // turn (the model answers each once, by content); a request is
        // repeated only when a kill cut its call, never after its answer
        // was recorded.
        let calls = s.recorded();
        let turn_calls = &calls[calls_before..];
        calls_before = calls.len();
        let mut distinct: Vec<&Value> = Vec::new();
        for c in turn_calls {
            if !distinct.contains(&c) {
                distinct.push(c);
            }
        }
        assert_eq!(distinct.len(), 7, "turn {turns}: five calls and one per subagent: {turn_calls:#?}");
        assert!(
            turn_calls.len() - 7 <= turn_kills,
            "turn {turns}: {} calls for {turn_kills} kill(s): a call was made again without a kill cutting it",
            turn_calls.len()
        );
    }
    // Each turn started exactly its two subagents, whatever the kills cut.
    let all = s.d.call("ListTasks", json!({"pageSize": 100})).await;
    assert_eq!(all["totalSize"], json!(turns * 3), "each turn and its two subagents, none twice: {all}");
    println!("{kills} kills over {turns} turns");
}
