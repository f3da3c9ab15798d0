//! Closed-loop load: C workers, each with one request in flight on its own
//! keep-alive connection, for a warm-up and then a timed window (or for a
//! fixed total count). A response counts only when it is HTTP 200, carries
//! `TASK_STATE_COMPLETED` and has no `"error"` member.

use crate::stats::{self, Meter, Spent, put_rss, put_spent, put_summary, r3};
use crate::{LoadArgs, Target, client};
use agentd_client::{Client, ClientError, jsonrpc};
use agentd_proto::jsonrpc::methods;
use anyhow::{Context, bail};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The bench's SendMessage: the body of `bench/wrk-post.lua`, byte for byte.
pub const SEND_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"tck-complete-task-bench","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;

const COMPLETED: &[u8] = b"TASK_STATE_COMPLETED";
const ERROR_MEMBER: &[u8] = b"\"error\"";

/// What a load run measured.
struct Outcome {
    ok: u64,
    errors: BTreeMap<String, u64>,
    latencies_us: Vec<u64>,
    /// The window the rate is computed over.
    window: Duration,
    /// What the server spent, read at the start and the end of the window.
    spent: Option<(Spent, Spent)>,
}

/// Reads the meter off the runtime's worker threads.
pub async fn read_meter(meter: &Meter) -> Spent {
    let meter = meter.clone();
    tokio::task::spawn_blocking(move || meter.read()).await.unwrap_or_default()
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// One JSON-RPC POST of a prepared body; `Ok(body)` when the answer is HTTP 200.
pub async fn post(client: &Client, body: Vec<u8>) -> Result<Vec<u8>, String> {
    match client.post_raw(body).await {
        Ok((200, bytes)) => Ok(bytes),
        Ok((status, _)) => Err(format!("http {status}")),
        Err(ClientError::Transport(e) | ClientError::BrokenOff(e)) if e.is_timeout() => Err("timeout".into()),
        Err(ClientError::Transport(e)) if e.is_connect() => Err("connect".into()),
        Err(_) => Err("transport".into()),
    }
}

fn check_completed(body: &[u8]) -> Result<(), String> {
    if contains(body, ERROR_MEMBER) {
        Err("error member".into())
    } else if !contains(body, COMPLETED) {
        Err("not COMPLETED".into())
    } else {
        Ok(())
    }
}

/// xorshift64*: random task picks without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

async fn run_load(
    client: &Client,
    spec: &LoadArgs,
    bodies: Arc<Vec<Vec<u8>>>,
    meter: Option<Meter>,
) -> anyhow::Result<Outcome> {
    if spec.concurrency == 0 || bodies.is_empty() {
        bail!("concurrency and the request set must not be empty");
    }
    let start = Instant::now();
    let (measure_from, end) = match spec.count {
        Some(_) => (start, start + Duration::from_secs(600)),
        None => {
            let from = start + Duration::from_secs(spec.warmup);
            (from, from + Duration::from_secs(spec.duration))
        }
    };
    // Fixed count: the whole run; timed: a reading at each edge of the window.
    let count_start = match (&meter, spec.count) {
        (Some(m), Some(_)) => Some(read_meter(m).await),
        _ => None,
    };
    let window_meter = match (meter.clone(), spec.count) {
        (Some(m), None) => Some(tokio::spawn(async move {
            tokio::time::sleep_until(measure_from.into()).await;
            let a = read_meter(&m).await;
            tokio::time::sleep_until(end.into()).await;
            (a, read_meter(&m).await)
        })),
        _ => None,
    };
    let issued = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::with_capacity(spec.concurrency);
    for w in 0..spec.concurrency {
        let (client, bodies, issued) = (client.clone(), bodies.clone(), issued.clone());
        let count = spec.count;
        workers.push(tokio::spawn(async move {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((w as u64 + 1) << 17));
            let mut lat = Vec::with_capacity(4096);
            let mut ok = 0u64;
            let mut errors: BTreeMap<String, u64> = BTreeMap::new();
            loop {
                if Instant::now() >= end {
                    break;
                }
                if let Some(n) = count
                    && issued.fetch_add(1, Ordering::Relaxed) >= n
                {
                    break;
                }
                let body = if bodies.len() == 1 {
                    bodies[0].clone()
                } else {
                    bodies[(rng.next() % bodies.len() as u64) as usize].clone()
                };
                let t0 = Instant::now();
                let res = post(&client, body).await.and_then(|b| check_completed(&b));
                let t1 = Instant::now();
                if t0 < measure_from || t1 > end {
                    continue;
                }
                match res {
                    Ok(()) => {
                        ok += 1;
                        lat.push(u64::try_from((t1 - t0).as_micros()).unwrap_or(u64::MAX));
                    }
                    Err(kind) => *errors.entry(kind).or_default() += 1,
                }
            }
            (ok, errors, lat)
        }));
    }
    let mut out = Outcome {
        ok: 0,
        errors: BTreeMap::new(),
        latencies_us: Vec::new(),
        window: Duration::ZERO,
        spent: None,
    };
    for w in workers {
        let (ok, errors, lat) = w.await.context("worker panicked")?;
        out.ok += ok;
        for (k, v) in errors {
            *out.errors.entry(k).or_default() += v;
        }
        out.latencies_us.extend(lat);
    }
    out.window = match spec.count {
        Some(_) => start.elapsed(),
        None => end - measure_from,
    };
    if let (Some(a), Some(m)) = (count_start, &meter) {
        out.spent = Some((a, read_meter(m).await));
    }
    if let Some(w) = window_meter {
        out.spent = Some(w.await.context("meter panicked")?);
    }
    Ok(out)
}

fn header(scenario: &str, t: &Target, spec: &LoadArgs) -> Map<String, Value> {
    let mut o = Map::new();
    o.insert("scenario".into(), json!(scenario));
    o.insert("label".into(), json!(t.label));
    o.insert("url".into(), json!(t.rpc_url()));
    o.insert("concurrency".into(), json!(spec.concurrency));
    match spec.count {
        Some(n) => o.insert("count".into(), json!(n)),
        None => {
            o.insert("warmup_s".into(), json!(spec.warmup));
            o.insert("duration_s".into(), json!(spec.duration))
        }
    };
    o.insert("threads".into(), json!(t.threads));
    o.insert("loadavg_1m".into(), stats::loadavg());
    o.insert("ts".into(), json!(stats::unix_secs()));
    o
}

fn finish(mut o: Map<String, Value>, out: Outcome, pid: Option<u32>) {
    let errors: u64 = out.errors.values().sum();
    let s = stats::summarize(out.latencies_us);
    let secs = out.window.as_secs_f64().max(1e-9);
    o.insert("ok".into(), json!(out.ok));
    o.insert("errors".into(), json!(errors));
    if !out.errors.is_empty() {
        o.insert("error_kinds".into(), json!(out.errors));
    }
    o.insert("window_s".into(), r3(secs));
    o.insert("rps".into(), json!((out.ok as f64 / secs).round()));
    put_summary(&mut o, "", &s);
    if let Some((a, b)) = out.spent {
        put_spent(&mut o, "request", a, b, out.ok);
    }
    put_rss(&mut o, pid);
    stats::emit(o);
}

/// `send`: blocking SendMessage that completes at once.
pub async fn send(t: &Target, spec: &LoadArgs) -> anyhow::Result<()> {
    let client = client(t, spec.concurrency, Duration::from_secs(t.timeout_secs))?;
    let bodies = Arc::new(vec![SEND_BODY.as_bytes().to_vec()]);
    let o = header("send", t, spec);
    let out = run_load(&client, spec, bodies, t.meter()).await?;
    finish(o, out, t.pid);
    Ok(())
}

/// Extracts `result.task.<field>` from a SendMessage answer.
pub fn task_field(body: &[u8], field: &str) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.pointer(&format!("/result/task/{field}"))?.as_str().map(str::to_owned)
}

/// Creates `n` completed tasks with `concurrency` workers; returns their ids.
async fn create_tasks(client: &Client, n: usize, concurrency: usize) -> anyhow::Result<Vec<String>> {
    let next = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    for _ in 0..concurrency.max(1) {
        let (client, next) = (client.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < n as u64 {
                let body = post(&client, SEND_BODY.as_bytes().to_vec()).await?;
                check_completed(&body)?;
                ids.push(task_field(&body, "id").ok_or("no result.task.id")?);
            }
            Ok::<_, String>(ids)
        }));
    }
    let mut ids = Vec::with_capacity(n);
    for w in workers {
        ids.extend(w.await.context("worker panicked")?.map_err(|e| anyhow::anyhow!("creating tasks: {e}"))?);
    }
    Ok(ids)
}

/// `get`: N tasks first, then GetTask on random ids.
pub async fn get(t: &Target, spec: &LoadArgs, tasks: usize) -> anyhow::Result<()> {
    let client = client(t, spec.concurrency, Duration::from_secs(t.timeout_secs))?;
    let created = Instant::now();
    let ids = create_tasks(&client, tasks.max(1), spec.concurrency).await?;
    let create_secs = created.elapsed().as_secs_f64();
    let bodies: Vec<Vec<u8>> = ids
        .iter()
        .map(|id| jsonrpc::request(1, methods::GET_TASK, &json!({"id": id})).to_string().into_bytes())
        .collect();
    let mut o = header("get", t, spec);
    o.insert("tasks".into(), json!(ids.len()));
    o.insert("create_s".into(), r3(create_secs));
    let out = run_load(&client, spec, Arc::new(bodies), t.meter()).await?;
    finish(o, out, t.pid);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_matches_post_lua() {
        let v: Value = serde_json::from_str(SEND_BODY).unwrap();
        assert_eq!(v["params"]["message"]["messageId"], "tck-complete-task-bench");
        assert_eq!(v["method"], "SendMessage");
    }

    #[test]
    fn completed_check() {
        assert!(
            check_completed(br#"{"result":{"task":{"status":{"state":"TASK_STATE_COMPLETED"}}}}"#).is_ok()
        );
        assert!(check_completed(br#"{"result":{"task":{"status":{"state":"TASK_STATE_FAILED"}}}}"#).is_err());
        assert!(check_completed(br#"{"error":{"code":-32603},"x":"TASK_STATE_COMPLETED"}"#).is_err());
    }

    #[test]
    fn task_field_reads_the_id() {
        let b = br#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1"}}}"#;
        assert_eq!(task_field(b, "id").as_deref(), Some("t1"));
        assert_eq!(task_field(b, "contextId").as_deref(), Some("c1"));
        assert_eq!(task_field(b"{}", "id"), None);
    }
}
