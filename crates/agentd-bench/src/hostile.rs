//! Hostile-client scenarios (issue: denial of service):
//!
//! - `conns`: one peer (127.0.0.1) opens idle sockets, as many as it can up
//!   to `--sockets`, and holds them; meanwhile a new client from another
//!   address (127.0.0.2) fetches the card on a fresh connection each time.
//!   Reports how many sockets the server still holds open at the end of
//!   the hold and how the other client fared.
//! - `bigbody`: SendMessage bodies just under the body limit: one alone
//!   (peak RSS growth against its size), then `-c` at once while other
//!   clients run GetTask (their latency, the server's peak RSS).

use crate::stats::{self, put_rss, put_summary, r3};
use crate::{Target, client};
use agentd_client::{Client, jsonrpc};
use agentd_proto::jsonrpc::methods;
use anyhow::Context;
use clap::Args;
use serde_json::{Map, Value, json};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpSocket;

#[derive(Args, Debug)]
pub struct ConnsArgs {
    #[command(flatten)]
    pub target: Target,
    /// Idle sockets the one peer tries to open.
    #[arg(long, default_value_t = 3000)]
    pub sockets: usize,
    /// Seconds the sockets are held (and the other client probes).
    #[arg(long, default_value_t = 15)]
    pub hold_secs: u64,
    /// Source address of the hostile peer.
    #[arg(long, default_value = "127.0.0.1")]
    pub from: IpAddr,
    /// Source address of the other client.
    #[arg(long, default_value = "127.0.0.2")]
    pub probe_from: IpAddr,
}

#[derive(Args, Debug)]
pub struct BigBodyArgs {
    #[command(flatten)]
    pub target: Target,
    /// `numbers` (a DataPart array of small numbers: most values per byte)
    /// or `strings` (long strings: most bytes).
    #[arg(long, default_value = "numbers")]
    pub shape: String,
    /// Body size to aim just under (the default body limit is 4 MiB).
    #[arg(long, default_value_t = 4 * 1024 * 1024 - 4096)]
    pub bytes: usize,
    /// Big requests at once in the concurrent phase.
    #[arg(short = 'c', long, default_value_t = 32)]
    pub concurrency: usize,
    /// GetTask clients running during the concurrent phase.
    #[arg(long, default_value_t = 4)]
    pub probes: usize,
}

fn addr(t: &Target) -> anyhow::Result<SocketAddr> {
    let hostport = t.url.trim_start_matches("http://").split('/').next().unwrap_or("");
    let hostport = hostport.replace("localhost", "127.0.0.1");
    hostport.parse().with_context(|| format!("{hostport:?} is not an address"))
}

/// `conns`: idle sockets from one peer against a new client from another.
pub async fn conns(a: &ConnsArgs) -> anyhow::Result<()> {
    let server = addr(&a.target)?;
    let open = Arc::new(AtomicU64::new(0));
    let closed_by_server = Arc::new(AtomicU64::new(0));
    let (mut connected, mut connect_errors) = (0u64, 0u64);
    let started = Instant::now();
    // All at once: past a full accept backlog a connect waits for its
    // timeout, and one after the other that would take an hour.
    let mut connects = Vec::with_capacity(a.sockets);
    for _ in 0..a.sockets {
        let from = a.from;
        connects.push(tokio::spawn(async move {
            let sock = TcpSocket::new_v4().and_then(|s| s.bind(SocketAddr::new(from, 0)).map(|()| s)).ok()?;
            tokio::time::timeout(Duration::from_secs(2), sock.connect(server)).await.ok()?.ok()
        }));
    }
    let mut holders = Vec::with_capacity(a.sockets);
    for c in connects {
        let Some(mut stream) = c.await.ok().flatten() else {
            connect_errors += 1;
            continue;
        };
        connected += 1;
        open.fetch_add(1, Ordering::Relaxed);
        let (open, closed) = (open.clone(), closed_by_server.clone());
        holders.push(tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            open.fetch_sub(1, Ordering::Relaxed);
            closed.fetch_add(1, Ordering::Relaxed);
        }));
    }
    let connect_s = started.elapsed().as_secs_f64();

    // The other client: a fresh connection per request, from its own address.
    let probe = reqwest::Client::builder()
        .no_proxy()
        .local_address(a.probe_from)
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(2))
        .build()
        .context("probe client")?;
    let card = format!("{}/.well-known/agent-card.json", a.target.url.trim_end_matches('/'));
    let (mut ok, mut errors, mut lat) = (0u64, 0u64, Vec::new());
    let end = Instant::now() + Duration::from_secs(a.hold_secs);
    while Instant::now() < end {
        let t0 = Instant::now();
        let answered = match probe.get(&card).send().await {
            Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
            Err(_) => false,
        };
        if answered {
            ok += 1;
            lat.push(u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX));
        } else {
            errors += 1;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut o = Map::new();
    o.insert("scenario".into(), json!("conns"));
    o.insert("label".into(), json!(a.target.label));
    o.insert("sockets".into(), json!(a.sockets));
    o.insert("hold_s".into(), json!(a.hold_secs));
    o.insert("connected".into(), json!(connected));
    o.insert("connect_errors".into(), json!(connect_errors));
    o.insert("connect_s".into(), r3(connect_s));
    o.insert("held_at_end".into(), json!(open.load(Ordering::Relaxed)));
    o.insert("closed_by_server".into(), json!(closed_by_server.load(Ordering::Relaxed)));
    o.insert("probe_ok".into(), json!(ok));
    o.insert("probe_errors".into(), json!(errors));
    put_summary(&mut o, "probe_", &stats::summarize(lat));
    put_rss(&mut o, a.target.pid);
    o.insert("loadavg_1m".into(), stats::loadavg());
    o.insert("ts".into(), json!(stats::unix_secs()));
    for h in holders {
        h.abort();
    }
    stats::emit(o);
    Ok(())
}

/// A SendMessage body of about `bytes` whose DataPart has `shape`.
pub fn big_body(shape: &str, bytes: usize, n: usize) -> anyhow::Result<Vec<u8>> {
    let room = bytes.saturating_sub(256);
    let data = match shape {
        // "0," per number.
        "numbers" => json!(vec![0u8; room / 2]),
        // 64 strings, each one 64th of the room (less quotes and commas).
        "strings" => json!(vec!["s".repeat(room / 64 - 3); 64]),
        other => anyhow::bail!("unknown shape {other:?}: numbers or strings"),
    };
    let body = jsonrpc::request(
        1,
        methods::SEND_MESSAGE,
        &json!({"message": {
        "messageId": format!("tck-complete-task-big-{n}"), "role": "ROLE_USER",
        "parts": [{"text": "big"}, {"data": data}]}}),
    );
    Ok(serde_json::to_vec(&body)?)
}

fn hwm_kib(pid: Option<u32>) -> Option<u64> {
    pid.and_then(stats::proc_rss).map(|(_, hwm)| hwm)
}

/// How one big request ended: answered 200 (a task or a refusal), or not.
async fn send_big(client: &Client, body: Vec<u8>) -> &'static str {
    match crate::load::post(client, body).await {
        Ok(b) if crate::load::contains(&b, b"\"error\"") => "refused",
        Ok(_) => "ok",
        Err(_) => "failed",
    }
}

/// `bigbody`: one max-size request alone, then `-c` at once beside GetTask clients.
pub async fn bigbody(a: &BigBodyArgs) -> anyhow::Result<()> {
    let t = &a.target;
    let http = client(t, a.concurrency + a.probes, Duration::from_secs(t.timeout_secs.max(120)))?;
    // A task for the GetTask clients.
    let created = crate::load::post(&http, crate::load::SEND_BODY.as_bytes().to_vec())
        .await
        .map_err(|e| anyhow::anyhow!("creating a task: {e}"))?;
    let id = crate::load::task_field(&created, "id").context("no task id")?;
    let get = jsonrpc::request(1, methods::GET_TASK, &json!({"id": id})).to_string();

    let body = big_body(&a.shape, a.bytes, 0)?;
    let size = body.len();
    let before = hwm_kib(t.pid);
    let one = send_big(&http, body).await;
    let after_one = hwm_kib(t.pid);

    // Built first: the concurrent phase times the server, not this client.
    let bodies =
        (1..=a.concurrency).map(|n| big_body(&a.shape, a.bytes, n)).collect::<anyhow::Result<Vec<_>>>()?;
    let stop = Arc::new(AtomicBool::new(false));
    let mut probes = Vec::new();
    for _ in 0..a.probes {
        let (http, get, stop) = (http.clone(), get.clone(), stop.clone());
        probes.push(tokio::spawn(async move {
            let (mut lat, mut errors) = (Vec::new(), 0u64);
            while !stop.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                match crate::load::post(&http, get.clone().into_bytes()).await {
                    Ok(b) if crate::load::contains(&b, b"\"result\"") => {
                        lat.push(u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX));
                    }
                    _ => errors += 1,
                }
            }
            (lat, errors)
        }));
    }
    let started = Instant::now();
    let mut bigs = Vec::new();
    for body in bodies {
        let http = http.clone();
        bigs.push(tokio::spawn(async move { send_big(&http, body).await }));
    }
    let mut outcomes: Map<String, Value> = Map::new();
    for b in bigs {
        let k = b.await.context("big request task")?;
        let n = outcomes.get(k).and_then(Value::as_u64).unwrap_or(0);
        outcomes.insert(k.into(), json!(n + 1));
    }
    let wall = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (mut lat, mut probe_errors) = (Vec::new(), 0u64);
    for p in probes {
        let (l, e) = p.await.context("probe task")?;
        lat.extend(l);
        probe_errors += e;
    }
    let mut o = Map::new();
    o.insert("scenario".into(), json!("bigbody"));
    o.insert("label".into(), json!(t.label));
    o.insert("shape".into(), json!(a.shape));
    o.insert("body_bytes".into(), json!(size));
    o.insert("one".into(), json!(one));
    if let (Some(b), Some(a1)) = (before, after_one) {
        let grown = a1.saturating_sub(b) as f64 * 1024.0;
        o.insert("one_growth_mib".into(), r3(grown / 1048576.0));
        o.insert("one_growth_x_body".into(), r3(grown / size as f64));
    }
    o.insert("concurrency".into(), json!(a.concurrency));
    o.insert("outcomes".into(), Value::Object(outcomes));
    o.insert("wall_s".into(), r3(wall));
    o.insert("probe_errors".into(), json!(probe_errors));
    put_summary(&mut o, "get_", &stats::summarize(lat));
    put_rss(&mut o, t.pid);
    o.insert("loadavg_1m".into(), stats::loadavg());
    o.insert("ts".into(), json!(stats::unix_secs()));
    stats::emit(o);
    Ok(())
}
