//! `agentd-bench`: a bounded load generator for A2A 1.0 JSON-RPC servers
//! (agentd, the Python SDK reference peer, the floor, `bench/floor`).
//!
//! Scenarios: `send` (blocking SendMessage that completes at once), `get`
//! (GetTask on random ids of tasks created first), `fanout` (S concurrent
//! SubscribeToTask streams on an INPUT_REQUIRED task, then the message that
//! completes it), `xreplica` (the latency of events from one replica to
//! another on a shared PostgreSQL store), `coldstart` (exec a server, poll its card), `wait` (poll a
//! card until it answers), the hostile-client scenarios `conns` (idle
//! sockets from one peer) and `bigbody` (max-size bodies), and `report`
//! (tables and ratios from JSON lines).
//!
//! Every run prints one JSON line on stdout and a human table on stderr.
//! Every loop is bounded by a count or a deadline, and only loopback
//! targets are accepted.

#![allow(clippy::disallowed_methods, reason = "a load generator, not the daemon: it spawns its clients")]

mod coldstart;
mod fanout;
mod hostile;
mod load;
mod report;
mod stats;
mod xreplica;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "agentd-bench",
    version,
    about = "Load generator for A2A 1.0 JSON-RPC servers (loopback only)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Blocking SendMessage (`tck-complete-task-bench`, the body of wrk/post.lua).
    Send(SendArgs),
    /// Creates N tasks, then GetTask on random ids.
    Get(GetArgs),
    /// K rounds: an INPUT_REQUIRED task, S SubscribeToTask streams, then the
    /// completing message; time until every stream saw the terminal event.
    Fanout(FanoutArgs),
    /// Two replicas of one store: tasks run on `--url`, SubscribeToTask
    /// streams and the events feed on both; how much later each event
    /// reaches the `--second` replica's clients.
    Xreplica(XreplicaArgs),
    /// Execs a server and times exec → first 200 on its agent card, then
    /// reads its idle RSS; `{run}` in the command is replaced by the run number.
    Coldstart(ColdstartArgs),
    /// Polls the agent card until it answers 200 (or the timeout passes).
    Wait(WaitArgs),
    /// One peer holds as many idle sockets as it can; another client
    /// fetches the card meanwhile.
    Conns(hostile::ConnsArgs),
    /// Max-size SendMessage bodies, one alone and many at once, beside
    /// GetTask clients.
    Bigbody(hostile::BigBodyArgs),
    /// Reads JSON lines written by the other subcommands; prints markdown tables.
    Report(report::ReportArgs),
}

/// Where to send requests and how to label the results.
#[derive(Args, Debug, Clone)]
pub struct Target {
    /// Base URL of the server (loopback only).
    #[arg(long, default_value = "http://127.0.0.1:7420")]
    pub url: String,
    /// Path of the JSON-RPC endpoint under the base URL (`/` for the Python reference peer).
    #[arg(long, default_value = "/a2a/jsonrpc")]
    pub rpc_path: String,
    /// Name of the server in the results (e.g. agentd, ref, floor).
    #[arg(long, default_value = "server")]
    pub label: String,
    /// Server process id: VmRSS and VmHWM are read from /proc/PID/status after the run.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Worker threads of the load generator's runtime (wrk -t2 equivalent).
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 10)]
    pub timeout_secs: u64,
    /// The server's stderr log, when it is an `agentd --features
    /// count-allocs` build: the run sends it SIGUSR1 at the start and end of
    /// the timed window and reads the allocation counts it writes there
    /// (needs `--pid`).
    #[arg(long)]
    pub alloc_log: Option<std::path::PathBuf>,
}

impl Target {
    /// What reads the server's CPU time (and allocations), when `--pid` was given.
    pub fn meter(&self) -> Option<stats::Meter> {
        self.pid.map(|pid| stats::Meter { pid, alloc_log: self.alloc_log.clone() })
    }

    pub fn rpc_url(&self) -> String {
        let base = self.url.trim_end_matches('/');
        let path = if self.rpc_path.starts_with('/') {
            self.rpc_path.clone()
        } else {
            format!("/{}", self.rpc_path)
        };
        format!("{base}{path}")
    }
}

#[derive(Args, Debug, Clone)]
pub struct LoadArgs {
    /// Concurrent connections (one request in flight on each).
    #[arg(short = 'c', long, default_value_t = 16)]
    pub concurrency: usize,
    /// Timed seconds (after the warm-up).
    #[arg(short = 'd', long, default_value_t = 20)]
    pub duration: u64,
    /// Warm-up seconds (requests sent, not counted).
    #[arg(long, default_value_t = 2)]
    pub warmup: u64,
    /// Fixed-count mode: stop after this many requests in total (no warm-up;
    /// the duration becomes a cap of 600 s). Used for the peak-RSS runs.
    #[arg(long)]
    pub count: Option<u64>,
}

#[derive(Args, Debug)]
struct SendArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    load: LoadArgs,
}

#[derive(Args, Debug)]
struct GetArgs {
    #[command(flatten)]
    target: Target,
    #[command(flatten)]
    load: LoadArgs,
    /// Tasks created before the timed GetTask phase.
    #[arg(long, default_value_t = 1000)]
    tasks: usize,
}

#[derive(Args, Debug)]
pub struct FanoutArgs {
    #[command(flatten)]
    pub target: Target,
    /// Concurrent SubscribeToTask streams per round.
    #[arg(short = 's', long, default_value_t = 32)]
    pub subscribers: usize,
    /// Timed rounds.
    #[arg(short = 'k', long, default_value_t = 50)]
    pub rounds: usize,
    /// Rounds run first and not counted.
    #[arg(long, default_value_t = 2)]
    pub warmup_rounds: usize,
    /// Spread the streams over this many loopback source addresses
    /// (127.0.0.2, 127.0.0.3, …), so that a server's per-address connection
    /// cap does not bound the count; 1: the system's choice (127.0.0.1).
    #[arg(long, default_value_t = 1)]
    pub source_addrs: u8,
}

#[derive(Args, Debug)]
pub struct XreplicaArgs {
    /// Where the tasks run (and the first replica's clients).
    #[command(flatten)]
    pub target: Target,
    /// Base URL of the second replica (loopback only).
    #[arg(long)]
    pub second: String,
    /// Timed rounds (one task each).
    #[arg(short = 'k', long, default_value_t = 2000)]
    pub rounds: usize,
    /// Rounds in flight at once.
    #[arg(short = 'c', long, default_value_t = 4)]
    pub concurrency: usize,
    /// Rounds run first and not counted.
    #[arg(long, default_value_t = 20)]
    pub warmup_rounds: usize,
}

#[derive(Args, Debug)]
pub struct ColdstartArgs {
    /// Base URL the started server will listen on (loopback only).
    #[arg(long)]
    pub url: String,
    /// Name of the server in the results.
    #[arg(long, default_value = "server")]
    pub label: String,
    /// Number of starts.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Milliseconds after the first 200 at which VmRSS is read (idle RSS).
    #[arg(long, default_value_t = 1000)]
    pub idle_ms: u64,
    /// Give up on a start after this many seconds.
    #[arg(long, default_value_t = 30)]
    pub timeout_secs: u64,
    /// Append the server's stdout/stderr here (default: discarded).
    #[arg(long)]
    pub log: Option<std::path::PathBuf>,
    /// The server command and its arguments.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Args, Debug)]
pub struct WaitArgs {
    /// Base URL of the server (loopback only).
    #[arg(long)]
    pub url: String,
    #[arg(long, default_value_t = 60)]
    pub timeout_secs: u64,
}

/// Refuses anything but a loopback target.
pub fn check_loopback(url: &str) -> anyhow::Result<()> {
    let rest = url.strip_prefix("http://").context("only plain http:// loopback URLs are accepted")?;
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => authority,
    };
    if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") {
        bail!("refusing target {url:?}: agentd-bench only talks to 127.0.0.1 / localhost / [::1]");
    }
    Ok(())
}

fn runtime(threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .enable_all()
        .build()
        .context("cannot build the tokio runtime")
}

/// A JSON-RPC client of the target over keep-alive HTTP/1.1 whose idle
/// pool holds `pool` connections.
pub fn client(t: &Target, pool: usize, timeout: Duration) -> anyhow::Result<agentd_client::Client> {
    client_from(t, pool, timeout, None)
}

/// The same, its connections bound to `source` (a loopback address).
pub fn client_from(
    t: &Target,
    pool: usize,
    timeout: Duration,
    source: Option<std::net::IpAddr>,
) -> anyhow::Result<agentd_client::Client> {
    let http = reqwest::Client::builder()
        .local_address(source)
        .no_proxy()
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(pool)
        .pool_idle_timeout(Duration::from_secs(90))
        .timeout(timeout)
        .build()
        .context("cannot build the HTTP client")?;
    let url = reqwest::Url::parse(&t.rpc_url()).with_context(|| format!("{} is not a URL", t.rpc_url()))?;
    Ok(agentd_client::Client::new(http, url))
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Send(a) => {
            check_loopback(&a.target.url)?;
            runtime(a.target.threads)?.block_on(load::send(&a.target, &a.load))
        }
        Command::Get(a) => {
            check_loopback(&a.target.url)?;
            runtime(a.target.threads)?.block_on(load::get(&a.target, &a.load, a.tasks))
        }
        Command::Fanout(a) => {
            check_loopback(&a.target.url)?;
            runtime(a.target.threads)?.block_on(fanout::run(&a))
        }
        Command::Xreplica(a) => {
            check_loopback(&a.target.url)?;
            check_loopback(&a.second)?;
            runtime(a.target.threads)?.block_on(xreplica::run(&a))
        }
        Command::Coldstart(a) => {
            check_loopback(&a.url)?;
            coldstart::run(&a)
        }
        Command::Wait(a) => {
            check_loopback(&a.url)?;
            coldstart::wait(&a)
        }
        Command::Conns(a) => {
            check_loopback(&a.target.url)?;
            runtime(a.target.threads)?.block_on(hostile::conns(&a))
        }
        Command::Bigbody(a) => {
            check_loopback(&a.target.url)?;
            runtime(a.target.threads)?.block_on(hostile::bigbody(&a))
        }
        Command::Report(a) => report::run(&a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_targets_pass() {
        assert!(check_loopback("http://127.0.0.1:7420").is_ok());
        assert!(check_loopback("http://localhost:1/x").is_ok());
        assert!(check_loopback("http://[::1]:80").is_ok());
        assert!(check_loopback("http://10.0.0.1:7420").is_err());
        assert!(check_loopback("http://127.0.0.1.evil.com:80").is_err());
        assert!(check_loopback("https://127.0.0.1:443").is_err());
    }

    #[test]
    fn rpc_url_joins_base_and_path() {
        let t = Target {
            url: "http://127.0.0.1:1/".into(),
            rpc_path: "/".into(),
            label: "x".into(),
            pid: None,
            threads: 1,
            timeout_secs: 1,
            alloc_log: None,
        };
        assert_eq!(t.rpc_url(), "http://127.0.0.1:1/");
        let t = Target { rpc_path: "a2a/jsonrpc".into(), ..t };
        assert_eq!(t.rpc_url(), "http://127.0.0.1:1/a2a/jsonrpc");
    }
}
