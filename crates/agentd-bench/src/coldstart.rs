//! Cold start (exec → first HTTP 200 on the agent card) and idle RSS (VmRSS
//! a fixed time after that first 200). Plain blocking std code: a minimal
//! HTTP/1.1 GET over a fresh TCP connection every 250 µs, so the probe
//! itself costs next to nothing next to the server it waits for.

use crate::stats::{self, proc_rss, r3};
use crate::{ColdstartArgs, WaitArgs};
use anyhow::{Context, bail};
use serde_json::{Map, json};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CARD_PATH: &str = "/.well-known/agent-card.json";
const POLL: Duration = Duration::from_micros(250);

fn addr_of(url: &str) -> anyhow::Result<SocketAddr> {
    let rest = url.strip_prefix("http://").context("http:// URL expected")?;
    let authority = rest.split('/').next().unwrap_or("");
    let authority = if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") };
    authority
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {authority}"))?
        .next()
        .with_context(|| format!("no address for {authority}"))
}

/// One GET of the card; true on HTTP 200.
fn card_ok(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.set_nodelay(true);
    let req = format!("GET {CARD_PATH} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    let mut got = 0;
    while got < head.len() {
        match s.read(&mut head[got..]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got += n,
        }
    }
    &head == b"HTTP/1.1 200"
}

/// Polls until the card answers 200 or `timeout` passes.
fn poll_card(addr: SocketAddr, timeout: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < timeout {
        if card_ok(addr) {
            return Some(t0.elapsed());
        }
        std::thread::sleep(POLL);
    }
    None
}

/// `wait`: exits 0 once the card answers, 1 after the timeout.
pub fn wait(a: &WaitArgs) -> anyhow::Result<()> {
    let addr = addr_of(&a.url)?;
    match poll_card(addr, Duration::from_secs(a.timeout_secs)) {
        Some(d) => {
            eprintln!("{} answered after {:.1} ms", a.url, d.as_secs_f64() * 1000.0);
            Ok(())
        }
        None => bail!("{} did not answer within {} s", a.url, a.timeout_secs),
    }
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

pub fn run(a: &ColdstartArgs) -> anyhow::Result<()> {
    let addr = addr_of(&a.url)?;
    if card_ok(addr) {
        bail!("something already answers on {}; stop it first", a.url);
    }
    let (mut starts, mut idles, mut hwms) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..a.runs {
        let args: Vec<String> = a.command.iter().map(|s| s.replace("{run}", &run.to_string())).collect();
        let (program, rest) = args.split_first().context("no command given")?;
        let (out, err) = match &a.log {
            Some(path) => {
                let f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
                (Stdio::from(f.try_clone()?), Stdio::from(f))
            }
            None => (Stdio::null(), Stdio::null()),
        };
        let t0 = Instant::now();
        let mut child = Command::new(program)
            .args(rest)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("cannot exec {program}"))?;
        let waited = poll_card(addr, Duration::from_secs(a.timeout_secs));
        let started = waited.map(|_| t0.elapsed());
        let rss = if started.is_some() {
            std::thread::sleep(Duration::from_millis(a.idle_ms));
            proc_rss(child.id())
        } else {
            None
        };
        let _ = child.kill();
        let _ = child.wait();
        let Some(started) = started else {
            bail!("run {run}: {} did not answer within {} s", a.url, a.timeout_secs);
        };
        let (rss, hwm) =
            rss.context("cannot read /proc/PID/status (did the server exec another process?)")?;
        eprintln!(
            "  {} run {run}: cold start {:.2} ms, idle VmRSS {:.1} MiB (VmHWM {:.1} MiB)",
            a.label,
            started.as_secs_f64() * 1000.0,
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
        starts.push(started.as_secs_f64() * 1000.0);
        idles.push(rss as f64 / 1024.0);
        hwms.push(hwm as f64 / 1024.0);
        // The port must be free again before the next start.
        let freed = Instant::now();
        while card_ok(addr) && freed.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let mut o = Map::new();
    o.insert("scenario".into(), json!("coldstart"));
    o.insert("label".into(), json!(a.label));
    o.insert("runs".into(), json!(a.runs));
    o.insert("loadavg_1m".into(), stats::loadavg());
    o.insert("ts".into(), json!(stats::unix_secs()));
    o.insert("coldstart_ms_all".into(), json!(starts.iter().map(|&v| r3(v)).collect::<Vec<_>>()));
    o.insert("coldstart_ms".into(), r3(median(&mut starts)));
    o.insert("coldstart_min_ms".into(), r3(starts.first().copied().unwrap_or(0.0)));
    o.insert("idle_rss_mib".into(), r3(median(&mut idles)));
    o.insert("idle_hwm_mib".into(), r3(median(&mut hwms)));
    stats::emit(o);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn addresses() {
        assert_eq!(addr_of("http://127.0.0.1:9/x").unwrap(), "127.0.0.1:9".parse().unwrap());
        assert_eq!(addr_of("http://127.0.0.1").unwrap().port(), 80);
    }
}
