//! Cross-replica event latency: two replicas of one PostgreSQL store, the
//! tasks run on the first (`--url`), clients on both. Per round: a task
//! that waits for input (`tck-input-required-…`) on the first replica, a
//! SubscribeToTask stream on each replica (each has its snapshot before
//! the clock starts), then the message that completes it, sent to the
//! first. Besides, one events feed (`agentd.events/SubscribeToEvents`) on
//! each replica for the whole run.
//!
//! Measured, on one machine clock: for each terminal event, its arrival
//! on the second replica's stream minus its arrival on the first's; for
//! each feed event (by seq), its arrival on the second replica's feed
//! minus the first's; and from the completing message's answer on the
//! first replica to the terminal event on the second (stream and feed).
//! Differences can be negative (the second replica was first): they are
//! reported as signed milliseconds.

use crate::load::{contains, post, task_field};
use crate::stats::{self, r3};
use crate::{Target, XreplicaArgs, client};
use agentd_client::{Client, jsonrpc};
use agentd_proto::ext::events;
use agentd_proto::jsonrpc::methods;
use anyhow::{Context, anyhow, bail};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bound on any one wait inside a round.
const ROUND_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a feed event arrived: by seq, its task id (for `task` events
/// whose task is terminal) and when.
type Arrivals = Arc<Mutex<HashMap<u64, (Option<String>, Instant)>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A client whose requests have no overall deadline (a feed lasts the run).
fn stream_client(t: &Target) -> anyhow::Result<Client> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(t.timeout_secs))
        .build()
        .context("cannot build the HTTP client")?;
    let url = reqwest::Url::parse(&t.rpc_url()).with_context(|| format!("{} is not a URL", t.rpc_url()))?;
    Ok(Client::new(http, url))
}

/// Reads a feed until `stop`, recording each event's arrival; returns once
/// its `hello` came (the feed is live).
async fn open_feed(client: Client, arrivals: Arrivals, stop: Arc<tokio::sync::Notify>) -> anyhow::Result<()> {
    let client = client.with_extensions(&[events::URI]).map_err(|e| anyhow!("{e}"))?;
    let mut feed =
        client.stream::<Value>(events::METHOD, &json!({})).await.map_err(|e| anyhow!("feed: {e}"))?;
    match feed.next().await {
        Ok(Some(f)) if f.get("hello").is_some() => {}
        other => bail!("the feed did not open with hello: {other:?}"),
    }
    tokio::spawn(async move {
        loop {
            let frame = tokio::select! {
                f = feed.next() => f,
                () = stop.notified() => return,
            };
            let now = Instant::now();
            let Ok(Some(frame)) = frame else { return };
            let Some(e) = frame.get("event") else { continue };
            let Some(seq) = e.get("seq").and_then(Value::as_u64) else { continue };
            let terminal = e["kind"] == "task"
                && e.pointer("/data/status/state") == Some(&json!("TASK_STATE_COMPLETED"));
            let task =
                terminal.then(|| e.pointer("/data/id").and_then(Value::as_str).map(str::to_owned)).flatten();
            lock(&arrivals).insert(seq, (task, now));
        }
    });
    Ok(())
}

/// A SubscribeToTask stream: ready once its snapshot came; then the time
/// its COMPLETED status arrived.
async fn subscribe(
    client: Client,
    task_id: String,
    ready: tokio::sync::oneshot::Sender<()>,
) -> Result<Instant, String> {
    let mut events = client
        .stream::<Value>(methods::SUBSCRIBE_TO_TASK, &json!({"id": task_id}))
        .await
        .map_err(|e| format!("subscribe: {e}"))?;
    match events.next().await {
        Ok(Some(_)) => {
            let _ = ready.send(());
        }
        other => return Err(format!("no snapshot: {other:?}")),
    }
    loop {
        match events.next().await {
            Ok(Some(ev)) => {
                let now = Instant::now();
                let state =
                    ev.pointer("/statusUpdate/status/state").or_else(|| ev.pointer("/task/status/state"));
                if state == Some(&json!("TASK_STATE_COMPLETED")) {
                    return Ok(now);
                }
            }
            Ok(None) => return Err("the stream ended before COMPLETED".into()),
            Err(e) => return Err(format!("stream: {e}")),
        }
    }
}

/// One round's times.
struct Round {
    task_id: String,
    /// The completing message's answer on the first replica.
    acked: Instant,
    on_first: Instant,
    on_second: Instant,
}

async fn round(first: &Client, streams: [&Client; 2], n: usize) -> anyhow::Result<Round> {
    let msg = jsonrpc::request(
        1,
        methods::SEND_MESSAGE,
        &json!({"message": {
        "messageId": format!("tck-input-required-xreplica-{n}"), "role": "ROLE_USER", "parts": [{"text": "wait"}]}}),
    );
    let body = post(first, msg.to_string().into_bytes()).await.map_err(|e| anyhow!("create: {e}"))?;
    if !contains(&body, b"TASK_STATE_INPUT_REQUIRED") {
        bail!("the task is not INPUT_REQUIRED: {}", String::from_utf8_lossy(&body));
    }
    let task_id = task_field(&body, "id").context("no result.task.id")?;
    let context_id = task_field(&body, "contextId").context("no result.task.contextId")?;
    let mut subs = Vec::new();
    for c in streams {
        let (ready, is_ready) = tokio::sync::oneshot::channel();
        subs.push(tokio::spawn(subscribe(c.clone(), task_id.clone(), ready)));
        tokio::time::timeout(ROUND_TIMEOUT, is_ready)
            .await
            .map_err(|_| anyhow!("no snapshot within {ROUND_TIMEOUT:?}"))?
            .map_err(|_| anyhow!("a subscription failed before its snapshot"))?;
    }
    let done = jsonrpc::request(
        2,
        methods::SEND_MESSAGE,
        &json!({"message": {
        "messageId": format!("tck-complete-task-xreplica-{n}"), "role": "ROLE_USER", "parts": [{"text": "go"}],
        "taskId": task_id, "contextId": context_id}}),
    );
    let body = post(first, done.to_string().into_bytes()).await.map_err(|e| anyhow!("complete: {e}"))?;
    let acked = Instant::now();
    if contains(&body, b"\"error\"") || !contains(&body, b"TASK_STATE_COMPLETED") {
        bail!("the completing message did not complete the task: {}", String::from_utf8_lossy(&body));
    }
    let mut at = Vec::new();
    for s in subs {
        let t = tokio::time::timeout(ROUND_TIMEOUT, s)
            .await
            .map_err(|_| anyhow!("a stream saw no COMPLETED within {ROUND_TIMEOUT:?}"))?
            .context("subscriber panicked")?
            .map_err(|e| anyhow!("{e}"))?;
        at.push(t);
    }
    Ok(Round { task_id, acked, on_first: at[0], on_second: at[1] })
}

/// `b - a` in signed microseconds.
fn diff_us(a: Instant, b: Instant) -> i64 {
    if b >= a { b.duration_since(a).as_micros() as i64 } else { -(a.duration_since(b).as_micros() as i64) }
}

/// p50, p90, p99, max and mean of signed microseconds, in milliseconds.
fn put_signed(o: &mut Map<String, Value>, prefix: &str, mut us: Vec<i64>) {
    us.sort_unstable();
    o.insert(format!("{prefix}n"), json!(us.len()));
    if us.is_empty() {
        return;
    }
    let pick = |p: f64| {
        let rank = ((p / 100.0) * us.len() as f64).ceil() as usize;
        us[rank.clamp(1, us.len()) - 1] as f64 / 1000.0
    };
    o.insert(format!("{prefix}p50_ms"), r3(pick(50.0)));
    o.insert(format!("{prefix}p90_ms"), r3(pick(90.0)));
    o.insert(format!("{prefix}p99_ms"), r3(pick(99.0)));
    o.insert(format!("{prefix}max_ms"), r3(us[us.len() - 1] as f64 / 1000.0));
    o.insert(format!("{prefix}mean_ms"), r3(us.iter().sum::<i64>() as f64 / us.len() as f64 / 1000.0));
}

pub async fn run(a: &XreplicaArgs) -> anyhow::Result<()> {
    let t = &a.target;
    if a.rounds == 0 || a.concurrency == 0 {
        bail!("--rounds and --concurrency must be at least 1");
    }
    let mut second = t.clone();
    second.url = a.second.clone();
    let first = client(t, a.concurrency * 2 + 2, Duration::from_secs(t.timeout_secs))?;
    let (s1, s2) = (stream_client(t)?, stream_client(&second)?);
    let stop = Arc::new(tokio::sync::Notify::new());
    let (feed1, feed2): (Arrivals, Arrivals) = (Arc::default(), Arc::default());
    open_feed(s1.clone(), feed1.clone(), stop.clone()).await.context("the first replica's feed")?;
    open_feed(s2.clone(), feed2.clone(), stop.clone()).await.context("the second replica's feed")?;

    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let total = a.rounds + a.warmup_rounds;
    let mut workers = Vec::new();
    for _ in 0..a.concurrency {
        let (first, s1, s2, next) = (first.clone(), s1.clone(), s2.clone(), next.clone());
        let warmup = a.warmup_rounds;
        workers.push(tokio::spawn(async move {
            let mut out = Vec::new();
            let mut errors = Vec::new();
            loop {
                let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if n >= total {
                    return (out, errors);
                }
                match round(&first, [&s1, &s2], n).await {
                    Ok(r) if n >= warmup => out.push(r),
                    Ok(_) => {}
                    Err(e) => errors.push(format!("{e:#}")),
                }
            }
        }));
    }
    let (mut rounds, mut errors) = (Vec::new(), Vec::new());
    for w in workers {
        let (r, e) = w.await.context("a worker panicked")?;
        rounds.extend(r);
        errors.extend(e);
    }
    // The feeds' last events may still be on their way.
    let deadline = Instant::now() + ROUND_TIMEOUT;
    let want: std::collections::HashSet<&str> = rounds.iter().map(|r| r.task_id.as_str()).collect();
    loop {
        let seen = |f: &Arrivals| {
            lock(f).values().filter(|(t, _)| t.as_deref().is_some_and(|t| want.contains(t))).count()
        };
        if (seen(&feed1) >= want.len() && seen(&feed2) >= want.len()) || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.notify_waiters();

    let mut o = Map::new();
    o.insert("scenario".into(), json!("xreplica"));
    o.insert("label".into(), json!(t.label));
    o.insert("first".into(), json!(t.url));
    o.insert("second".into(), json!(a.second));
    o.insert("rounds".into(), json!(a.rounds));
    o.insert("concurrency".into(), json!(a.concurrency));
    o.insert("loadavg_1m".into(), stats::loadavg());
    o.insert("ts".into(), json!(stats::unix_secs()));
    o.insert("ok_rounds".into(), json!(rounds.len()));
    o.insert("errors".into(), json!(errors.len()));
    if let Some(e) = errors.first() {
        o.insert("first_error".into(), json!(e));
    }
    // Streams: the terminal event on the second replica minus on the first.
    put_signed(&mut o, "stream_", rounds.iter().map(|r| diff_us(r.on_first, r.on_second)).collect());
    put_signed(&mut o, "ack_to_stream2_", rounds.iter().map(|r| diff_us(r.acked, r.on_second)).collect());
    put_signed(&mut o, "ack_to_stream1_", rounds.iter().map(|r| diff_us(r.acked, r.on_first)).collect());
    // Feeds: every event both feeds carried, by seq.
    let (f1, f2) = (lock(&feed1), lock(&feed2));
    let feed: Vec<i64> =
        f1.iter().filter_map(|(seq, (_, at1))| f2.get(seq).map(|(_, at2)| diff_us(*at1, *at2))).collect();
    put_signed(&mut o, "feed_", feed);
    let completed_on_second: HashMap<&str, Instant> =
        f2.values().filter_map(|(t, at)| Some((t.as_deref()?, *at))).collect();
    put_signed(
        &mut o,
        "ack_to_feed2_",
        rounds
            .iter()
            .filter_map(|r| Some(diff_us(r.acked, *completed_on_second.get(r.task_id.as_str())?)))
            .collect(),
    );
    drop((f1, f2));
    stats::emit(o);
    Ok(())
}
