//! Chaos: three replicas on one database take 300 tasks sent to random
//! replicas by concurrent clients (blocking turns and turns answered at
//! once and run on, a quarter with a push config to a receiver this test
//! runs) while the test kill -9s a random replica now and then and starts
//! it again. Every operation and fault goes into a history (JSON lines; its
//! path is in every failure message, and the file is kept then), checked
//! afterwards through the A2A API and the models' recorded requests: no
//! acknowledged write lost, no step of a turn made twice by one holder (a
//! lease epoch: one replica process, whose log shows it claimed the task's
//! lease once), no stuck task, every push delivered at least once. `AGENTD_CHAOS_SEED` replays a run's random choices.

use super::*;
use crate::common::receiver::Receiver;
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const TASKS: usize = 300;
const CLIENTS: usize = 12;
/// A random replica is killed when this many sends were acknowledged, and
/// started again `DOWN_FOR` acknowledged sends later.
const KILL_AT: [usize; 3] = [50, 130, 210];
const DOWN_FOR: usize = 25;
/// Every task ends within this after the last kill: a dead replica's
/// work is adopted within ttl + a poll interval, then runs a few steps;
/// the rest is room for a loaded machine.
const ENDED_WITHIN: Duration = Duration::from_secs(15);
const NAMES: [&str; 3] = ["r1", "r2", "r3"];
const TERMINAL: [&str; 3] = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"];

/// The script of one replica process: tool steps (a turn that gets one
/// goes on: a multi-step turn) and answers. Concurrent turns take steps in
/// turn, so a turn has one step or several. Three steps in eight are tool
/// steps, spread by a hash of the step's index: with steps alternating, a
/// turn whose calls came every second (fourth, ...) step, in lockstep with
/// others, got tool steps only and ran into `limits.max_steps` (here no
/// run of tool steps at any such stride up to 8 is longer than 7). Tool call
/// ids are unique to the process.
fn script(name: &str, generation: usize) -> Value {
    let step = |k: usize| match (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61 {
        0..=2 => json!({"tool_calls": [{"id": format!("{name}.{generation}.{k}"), "name": "wait_a_moment"}],
                        "delay_ms": 40}),
        _ => json!({"text": "Done.", "deltas": ["Done."], "delay_ms": 40}),
    };
    Value::Array((0..1000).map(step).collect())
}

/// The history: one JSON line per operation or fault, with its time. A
/// thread of its own writes the file, so that a slow disk stalls no client.
struct History {
    path: PathBuf,
    entries: Mutex<Vec<Value>>,
    lines: Mutex<std::sync::mpsc::Sender<String>>,
    t0: Instant,
}

impl History {
    fn create() -> History {
        let path = std::env::temp_dir().join(format!("{}.jsonl", uniq("agentd-chaos-history")));
        let mut file = std::fs::File::create(&path).expect("create the history");
        let (lines, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in rx {
                let _ = writeln!(file, "{line}");
            }
        });
        History { path, entries: Mutex::default(), lines: Mutex::new(lines), t0: Instant::now() }
    }

    fn record(&self, mut entry: Value) {
        entry["atMs"] = json!(self.t0.elapsed().as_millis() as u64);
        let _ = self.lines.lock().unwrap().send(entry.to_string());
        self.entries.lock().unwrap().push(entry);
    }

    fn entries(&self) -> Vec<Value> {
        self.entries.lock().unwrap().clone()
    }

    /// Panics with `what` and where the history is, written whole first.
    fn fail(&self, what: String) -> ! {
        let lines: Vec<String> = self.entries().iter().map(|e| format!("{e}\n")).collect();
        let _ = std::fs::write(&self.path, lines.concat());
        panic!("{what}\n(history: {})", self.path.display())
    }
}

/// Where each replica answers now, and its process's generation; `None`
/// while it is down.
type Live = Arc<Mutex<Vec<Option<(String, usize)>>>>;

/// A JSON-RPC call: the whole response, or why none came.
async fn rpc(http: &reqwest::Client, url: &str, method: &str, params: &Value) -> Result<Value, String> {
    let body = agentd_client::jsonrpc::request(1, method, params);
    let sent = http.post(format!("{url}/a2a/jsonrpc")).header("A2A-Version", "1.0").json(&body).send();
    let answer = sent.await.map_err(|e| e.to_string())?;
    answer.json().await.map_err(|e| e.to_string())
}

struct Clients {
    next: AtomicUsize,
    acked: AtomicUsize,
    live: Live,
    hook: String,
    history: Arc<History>,
}

/// One client: sends task after task to a random live replica.
async fn client(c: Arc<Clients>, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client");
    loop {
        let n = c.next.fetch_add(1, Ordering::SeqCst);
        if n >= TASKS {
            return;
        }
        let up: Vec<(usize, String, usize)> = {
            let live = c.live.lock().unwrap();
            live.iter().enumerate().filter_map(|(i, r)| r.clone().map(|(u, g)| (i, u, g))).collect()
        };
        let (r, url, generation) = up[rng.usize(..up.len())].clone();
        let (blocking, push) = (rng.bool(), rng.usize(..4) == 0);
        let message_id = format!("chaos-{n}");
        let mut params = send_params(&message_id, &format!("chaos task {n}"), None);
        params["configuration"] = json!({"returnImmediately": !blocking});
        if push {
            params["configuration"]["taskPushNotificationConfig"] = json!({"url": c.hook});
        }
        let mut entry = json!({"op": "send", "n": n, "replica": r, "generation": generation,
                               "blocking": blocking, "push": push, "messageId": message_id});
        match rpc(&http, &url, "SendMessage", &params).await {
            Ok(answer) if answer["result"]["task"]["id"].is_string() => {
                entry["ack"] = json!(true);
                entry["task"] = answer["result"]["task"]["id"].clone();
                entry["state"] = answer["result"]["task"]["status"]["state"].clone();
            }
            Ok(answer) => entry["answer"] = answer,
            Err(e) => entry["error"] = json!(e),
        }
        let acked = entry["ack"] == true;
        c.history.record(entry);
        if acked {
            c.acked.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A `name=value` field of a log line.
fn log_field(line: &str, name: &str) -> Option<String> {
    let after = line.rsplit(&format!(" {name}=")).next().filter(|a| a.len() < line.len())?;
    Some(after.split_whitespace().next()?.trim_matches('"').to_owned())
}

/// The task leases a replica process's log says it claimed: task id →
/// epochs.
fn claims(log: &str) -> HashMap<String, Vec<u64>> {
    let mut claimed: HashMap<String, Vec<u64>> = HashMap::new();
    for line in log.lines().filter(|l| l.contains("lease claimed")) {
        if let (Some(task), Some(epoch)) =
            (log_field(line, "task"), log_field(line, "epoch").and_then(|e| e.parse().ok()))
        {
            claimed.entry(task).or_default().push(epoch);
        }
    }
    claimed
}

/// How many times a replica process's log says it lost a task's lease (a
/// process starved past its lease's expiry stops the run; it may claim the
/// task again later, under a new epoch).
fn losses(log: &str) -> HashMap<String, usize> {
    let mut lost: HashMap<String, usize> = HashMap::new();
    let a_loss = |l: &&str| l.contains("lease lost") || l.contains("lease's deadline passed");
    for line in log.lines().filter(a_loss) {
        if let Some(task) = log_field(line, "task") {
            *lost.entry(task).or_default() += 1;
        }
    }
    lost
}

/// Waits until `n` sends were acknowledged.
async fn acked(c: &Clients, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(40);
    while c.acked.load(Ordering::SeqCst) < n {
        if Instant::now() > deadline {
            c.history
                .fail(format!("only {} sends acknowledged, waiting for {n}", c.acked.load(Ordering::SeqCst)));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The tasks the replica at `url` lists, and those not ended.
async fn list_tasks(http: &reqwest::Client, url: &str, history: &History) -> (Vec<Value>, Vec<Value>) {
    let (mut listed, mut running) = (Vec::new(), Vec::new());
    let mut token = String::new();
    loop {
        let mut params = json!({"pageSize": 100});
        if !token.is_empty() {
            params["pageToken"] = json!(token);
        }
        let got = rpc(http, url, "ListTasks", &params).await.unwrap_or_else(|e| history.fail(e));
        let tasks =
            got["result"]["tasks"].as_array().unwrap_or_else(|| history.fail(format!("ListTasks: {got}")));
        listed.extend(tasks.iter().cloned());
        let ended = |t: &&Value| TERMINAL.contains(&t["status"]["state"].as_str().unwrap_or_default());
        running.extend(tasks.iter().filter(|t| !ended(t)).cloned());
        token = got["result"]["nextPageToken"].as_str().unwrap_or_default().to_owned();
        if token.is_empty() {
            return (listed, running);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_take_300_tasks_through_kill_9s_losing_none_running_none_twice_leaving_none_stuck() {
    let Some(mut rs) = Replicas::start(NAMES.map(|n| script(n, 0))).await else { return };
    let seed = match std::env::var("AGENTD_CHAOS_SEED") {
        Ok(s) => s.parse().expect("AGENTD_CHAOS_SEED is a number"),
        Err(_) => fastrand::u64(..),
    };
    let history = Arc::new(History::create());
    history.record(
        json!({"op": "start", "seed": seed, "urls": rs.r.iter().map(|r| &r.d.url).collect::<Vec<_>>()}),
    );
    let mut receiver = Receiver::start(0).await;
    // Every push the receiver got: task id → the states pushed.
    let pushed: Arc<Mutex<HashMap<String, Vec<String>>>> = Arc::default();
    let hook = receiver.url();
    let pushes = pushed.clone();
    let collector = tokio::spawn(async move {
        while let Some(hit) = receiver.next_within(Duration::from_secs(3600)).await {
            let u = &hit.body["statusUpdate"];
            if let (Some(id), Some(s)) = (u["taskId"].as_str(), u["status"]["state"].as_str()) {
                pushes.lock().unwrap().entry(id.to_owned()).or_default().push(s.to_owned());
            }
        }
    });
    let live: Live = Arc::new(Mutex::new(rs.r.iter().map(|r| Some((r.d.url.clone(), 0))).collect()));
    let c = Arc::new(Clients {
        next: AtomicUsize::new(0),
        acked: AtomicUsize::new(0),
        live: live.clone(),
        hook,
        history: history.clone(),
    });
    let clients: Vec<_> =
        (0..CLIENTS as u64).map(|i| tokio::spawn(client(c.clone(), seed.wrapping_add(i + 1)))).collect();

    // Faults, at counts of acknowledged sends.
    let mut rng = fastrand::Rng::with_seed(seed);
    // Per replica, how many model calls its model had recorded at each kill:
    // the recorded calls of each process (generation).
    let mut killed_at: [Vec<usize>; 3] = Default::default();
    // Per replica, each process's log (its reader may still be appending).
    let mut logs: [Vec<Arc<Mutex<String>>>; 3] = Default::default();
    let mut last_kill = Instant::now();
    for at in KILL_AT {
        acked(&c, at).await;
        let i = rng.usize(..3);
        live.lock().unwrap()[i] = None;
        rs.r[i].d.kill9();
        last_kill = Instant::now();
        let calls = rs.r[i].recorded().len();
        let generation = killed_at[i].len();
        killed_at[i].push(calls);
        logs[i].push(rs.r[i].d.log.clone());
        history.record(json!({"op": "kill", "replica": i, "generation": generation, "modelCalls": calls}));
        acked(&c, at + DOWN_FOR).await;
        tokio::task::block_in_place(|| rs.r[i].restart(&script(NAMES[i], generation + 1)));
        live.lock().unwrap()[i] = Some((rs.r[i].d.url.clone(), generation + 1));
        history.record(json!({"op": "restart", "replica": i, "generation": generation + 1}));
    }
    for cl in clients {
        match tokio::time::timeout(Duration::from_secs(60), cl).await {
            Ok(ended) => ended.expect("a client"),
            Err(_) => history.fail("the clients did not end within 60 s".into()),
        }
    }
    let entries = history.entries();
    let sends: Vec<&Value> = entries.iter().filter(|e| e["op"] == "send").collect();
    let acks: Vec<&Value> = sends.iter().copied().filter(|e| e["ack"] == true).collect();
    let killed: HashSet<(u64, u64)> = entries
        .iter()
        .filter(|e| e["op"] == "kill")
        .map(|e| (e["replica"].as_u64().unwrap_or(9), e["generation"].as_u64().unwrap_or(9)))
        .collect();

    // A send went unanswered only where the replica was killed, and no
    // replica refused one.
    for s in sends.iter().filter(|e| e["ack"] != true) {
        let process = (s["replica"].as_u64().unwrap_or(9), s["generation"].as_u64().unwrap_or(9));
        if s.get("error").is_none() || !killed.contains(&process) {
            history.fail(format!("a send failed on a replica that was not killed: {s}"));
        }
    }

    // No acknowledged write lost, no stuck task: each acknowledged task
    // holds its message and ends COMPLETED (later than or what was
    // acknowledged) within a bound.
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("client");
    let url = rs.r[0].d.url.clone();
    let mut done: HashMap<String, Value> = HashMap::new();
    for a in &acks {
        let id = a["task"].as_str().expect("id");
        let task = loop {
            let got =
                rpc(&http, &url, "GetTask", &json!({"id": id})).await.unwrap_or_else(|e| history.fail(e));
            let task = got["result"].clone();
            if task.is_null() {
                history.fail(format!("an acknowledged task is lost: {a}; GetTask: {got}"));
            }
            if TERMINAL.contains(&task["status"]["state"].as_str().unwrap_or_default()) {
                break task;
            }
            if last_kill.elapsed() > ENDED_WITHIN {
                history.fail(format!("task {id} is stuck {ENDED_WITHIN:?} after the last kill: {task}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        if task["status"]["state"] != "TASK_STATE_COMPLETED"
            || task["history"][0]["messageId"] != a["messageId"]
        {
            history.fail(format!("acknowledged {a}, now: {task}"));
        }
        done.insert(id.to_owned(), task);
    }

    // Every task any replica has ended, also those of sends left unanswered
    // (created on a replica killed before it claimed them: adopted a ttl
    // after their last change).
    let tasks = loop {
        let (listed, running) = list_tasks(&http, &url, &history).await;
        if running.is_empty() {
            break listed;
        }
        if last_kill.elapsed() > ENDED_WITHIN {
            history.fail(format!("stuck {ENDED_WITHIN:?} after the last kill: {running:#?}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let all_ended = last_kill.elapsed();
    let listed = tasks.len();
    if listed < acks.len() || listed > sends.len() {
        history.fail(format!("{listed} tasks listed for {} sends, {} acknowledged", sends.len(), acks.len()));
    }

    // No step of a turn made twice by one process (a lease epoch), nor by
    // two unless the first was killed: who made each model call, by task
    // and step (the tool results the request carries).
    let mut made: HashMap<(String, usize), Vec<(usize, usize)>> = HashMap::new();
    for (i, r) in rs.r.iter().enumerate() {
        for (line, request) in r.recorded().iter().enumerate() {
            let generation = killed_at[i].iter().filter(|&&calls| line >= calls).count();
            let messages = request["messages"].as_array().expect("messages");
            let user = messages.iter().find(|m| m["role"] == "user").expect("the user's message");
            let task = user["content"].as_str().unwrap_or_default().to_owned();
            made.entry((task, tool_results(request).len())).or_default().push((i, generation));
        }
    }
    for ((task, step), by) in &made {
        let processes: HashSet<&(usize, usize)> = by.iter().collect();
        let survivors = by.iter().filter(|(i, g)| !killed.contains(&(*i as u64, *g as u64))).count();
        if processes.len() < by.len() || survivors > 1 {
            history.fail(format!("{task}, step {step}: made by (replica, generation) {by:?}"));
        }
    }
    let again = made.values().filter(|by| by.len() > 1).count();

    // Each of those processes held the task's lease: its log says it
    // claimed it, once (one epoch), or again after each time it logged
    // losing it.
    for (i, r) in rs.r.iter().enumerate() {
        logs[i].push(r.d.log.clone());
    }
    let claimed: Vec<Vec<HashMap<String, Vec<u64>>>> =
        logs.iter().map(|l| l.iter().map(|log| claims(&log.lock().unwrap())).collect()).collect();
    let lost: Vec<Vec<HashMap<String, usize>>> =
        logs.iter().map(|l| l.iter().map(|log| losses(&log.lock().unwrap())).collect()).collect();
    let ids: HashMap<&str, &str> = tasks
        .iter()
        .filter_map(|t| Some((t["history"][0]["parts"][0]["text"].as_str()?, t["id"].as_str()?)))
        .collect();
    let mut epochs: HashMap<&str, usize> = HashMap::new();
    for process in claimed.iter().flatten() {
        for (id, e) in process {
            *epochs.entry(id.as_str()).or_default() += e.len();
        }
    }
    let adopted = epochs.values().filter(|&&n| n > 1).count();
    for ((task, step), by) in &made {
        let Some(id) = ids.get(task.as_str()) else {
            // A blocking send's new task is committed with its run's first
            // change (ARCHITECTURE.md, the one exception): a process killed
            // between its first model call and that commit leaves no task,
            // and no answer. Only that: a first step, by killed processes
            // alone, for a send nobody acknowledged.
            let n = task.strip_prefix("chaos task ").and_then(|n| n.parse::<u64>().ok());
            let acked = sends.iter().any(|s| s["n"].as_u64() == n && s["ack"] == true);
            let all_killed = by.iter().all(|&(i, g)| killed.contains(&(i as u64, g as u64)));
            if n.is_none() || acked || !all_killed || *step > 0 {
                history.fail(format!("{task} is not listed (step {step}, made by {by:?})"));
            }
            continue;
        };
        for &(i, g) in by {
            // One claim, and one more at most after each loss the process
            // logged (a loss can be logged twice: the deadline passing,
            // then the renewal's refusal).
            let epochs = claimed[i][g].get(*id);
            let lost_here = lost[i][g].get(*id).copied().unwrap_or(0);
            if !epochs.is_some_and(|e| (1..=1 + lost_here).contains(&e.len())) {
                history
                    .fail(format!("{task} ({id}), step {step}: replica {i} process {g} claimed {epochs:?}"));
            }
        }
    }

    // Every push delivered at least once: the receiver saw each pushed
    // task's end.
    let want: Vec<&str> =
        acks.iter().filter(|a| a["push"] == true).filter_map(|a| a["task"].as_str()).collect();
    let deadline = Instant::now() + TTL + Duration::from_secs(20);
    for id in &want {
        let end = done[*id]["status"]["state"].as_str().unwrap_or_default().to_owned();
        while !pushed.lock().unwrap().get(*id).is_some_and(|s| s.contains(&end)) {
            if Instant::now() > deadline {
                let seen = pushed.lock().unwrap().get(*id).cloned();
                history.fail(format!("no {end} push of {id}; pushed: {seen:?}"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    collector.abort();
    eprintln!(
        "chaos (seed {seed}): {} sends, {} acknowledged, {listed} tasks, {} kills, {} pushed tasks, \
         {adopted} tasks run under several epochs, {again} steps made again after a kill; all ended {all_ended:?} after the last kill",
        sends.len(),
        acks.len(),
        killed.len(),
        want.len(),
    );
    let _ = std::fs::remove_file(&history.path);
}
