//! Percentiles from a sorted Vec, /proc readings, and result output.

use serde_json::{Map, Value, json};

/// Latency summary in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

/// Nearest-rank percentile of sorted samples (`p` in 0..=100).
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Summarizes samples given in microseconds.
pub fn summarize(mut us: Vec<u64>) -> Summary {
    us.sort_unstable();
    let ms = |v: u64| v as f64 / 1000.0;
    let n = us.len();
    if n == 0 {
        return Summary::default();
    }
    let sum: u128 = us.iter().map(|&v| u128::from(v)).sum();
    Summary {
        n,
        p50: ms(percentile(&us, 50.0)),
        p90: ms(percentile(&us, 90.0)),
        p99: ms(percentile(&us, 99.0)),
        max: ms(us[n - 1]),
        mean: sum as f64 / n as f64 / 1000.0,
    }
}

/// VmRSS and VmHWM of a process, in KiB.
pub fn proc_rss(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// CPU time the process has used so far (user + system), in clock ticks:
/// fields 14 and 15 of `/proc/PID/stat`, counted after the `)` that closes
/// the command name (which may itself hold spaces).
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    // After the name: state is field 3, so utime (14) is the 12th from here.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux when unknown).
pub fn ticks_per_sec() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or(100)
}

/// What the server has spent at one instant: CPU ticks, and with
/// `--alloc-log` its allocation count.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spent {
    pub cpu_ticks: Option<u64>,
    pub allocations: Option<u64>,
}

/// How to read what a server spends: its pid, and the log of a
/// `count-allocs` build (its stderr) to read allocation counts from.
#[derive(Clone, Debug)]
pub struct Meter {
    pub pid: u32,
    pub alloc_log: Option<std::path::PathBuf>,
}

const ALLOC_LINE: &str = "agentd-allocations: ";

/// The allocation counts the log holds so far, in order.
fn alloc_lines(log: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.find(ALLOC_LINE).map(|i| &l[i + ALLOC_LINE.len()..]))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect()
}

impl Meter {
    /// Reads the CPU ticks and, with an allocation log, sends SIGUSR1 and
    /// waits (at most 5 s) for the line it makes the server write.
    /// Blocking: call it from `spawn_blocking` inside a runtime.
    pub fn read(&self) -> Spent {
        let cpu_ticks = cpu_ticks(self.pid);
        let allocations = self.alloc_log.as_deref().and_then(|log| {
            let seen = alloc_lines(log).len();
            let sent = std::process::Command::new("kill")
                .args(["-USR1", &self.pid.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if !sent {
                return None;
            }
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while std::time::Instant::now() < deadline {
                let lines = alloc_lines(log);
                if lines.len() > seen {
                    return lines.last().copied();
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            None
        });
        Spent { cpu_ticks, allocations }
    }
}

/// Adds `cpu_us_per_<unit>` and `allocs_per_<unit>` for what the server
/// spent between `a` and `b` over `n` units (requests, rounds).
pub fn put_spent(obj: &mut Map<String, Value>, unit: &str, a: Spent, b: Spent, n: u64) {
    if n == 0 {
        return;
    }
    if let (Some(x), Some(y)) = (a.cpu_ticks, b.cpu_ticks) {
        let us = y.saturating_sub(x) as f64 * 1e6 / ticks_per_sec() as f64;
        obj.insert("cpu_s".into(), r3(us / 1e6));
        obj.insert(format!("cpu_us_per_{unit}"), json!((10.0 * us / n as f64).round() / 10.0));
    }
    if let (Some(x), Some(y)) = (a.allocations, b.allocations) {
        obj.insert("allocations".into(), json!(y.saturating_sub(x)));
        obj.insert(
            format!("allocs_per_{unit}"),
            json!((10.0 * y.saturating_sub(x) as f64 / n as f64).round() / 10.0),
        );
    }
}

/// The 1-minute load average at the time of the run.
pub fn loadavg() -> Value {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()))
        .map_or(Value::Null, |v| json!(v))
}

pub fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Rounds to 3 decimals for readable JSON.
pub fn r3(v: f64) -> Value {
    json!((v * 1000.0).round() / 1000.0)
}

/// Adds the latency summary under `prefix` (`p50_ms`, …).
pub fn put_summary(obj: &mut Map<String, Value>, prefix: &str, s: &Summary) {
    obj.insert(format!("{prefix}p50_ms"), r3(s.p50));
    obj.insert(format!("{prefix}p90_ms"), r3(s.p90));
    obj.insert(format!("{prefix}p99_ms"), r3(s.p99));
    obj.insert(format!("{prefix}max_ms"), r3(s.max));
    obj.insert(format!("{prefix}mean_ms"), r3(s.mean));
}

/// Adds VmRSS/VmHWM of `pid` (MiB) when a pid was given.
pub fn put_rss(obj: &mut Map<String, Value>, pid: Option<u32>) {
    if let Some((rss, hwm)) = pid.and_then(proc_rss) {
        obj.insert("rss_mib".into(), r3(rss as f64 / 1024.0));
        obj.insert("hwm_mib".into(), r3(hwm as f64 / 1024.0));
    }
}

/// Prints the JSON line (stdout) and a two-column table (stderr).
pub fn emit(obj: Map<String, Value>) {
    let v = Value::Object(obj);
    println!("{v}");
    let Value::Object(o) = &v else { return };
    let width = o.keys().map(String::len).max().unwrap_or(0);
    for (k, val) in o {
        let shown = match val {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        eprintln!("  {k:<width$}  {shown}");
    }
    eprintln!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&[7], 99.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn summary_is_in_milliseconds() {
        let s = summarize(vec![3000, 1000, 2000]);
        assert_eq!(s.n, 3);
        assert!((s.p50 - 2.0).abs() < 1e-9);
        assert!((s.max - 3.0).abs() < 1e-9);
        assert!((s.mean - 2.0).abs() < 1e-9);
    }

    #[test]
    fn own_cpu_time_grows_with_work() {
        let before = cpu_ticks(std::process::id()).expect("/proc/self/stat");
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < std::time::Duration::from_millis(100) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = cpu_ticks(std::process::id()).unwrap();
        assert!(after > before, "{before} -> {after} ticks after 100 ms of spinning");
    }

    #[test]
    fn spent_per_unit() {
        let mut o = Map::new();
        let a = Spent { cpu_ticks: Some(100), allocations: Some(1_000) };
        let b = Spent { cpu_ticks: Some(100 + ticks_per_sec()), allocations: Some(51_000) };
        put_spent(&mut o, "request", a, b, 1000);
        assert_eq!(o["cpu_us_per_request"], json!(1000.0));
        assert_eq!(o["allocs_per_request"], json!(50.0));
        assert_eq!(o["allocations"], json!(50_000));
    }

    #[test]
    fn allocation_lines_are_read_from_a_log() {
        let dir = std::env::temp_dir().join(format!("agentd-bench-alloc-{}", std::process::id()));
        std::fs::write(
            &dir,
            "INFO x\nagentd-allocations: 12 bytes 300\nnoise\nagentd-allocations: 40 bytes 900\n",
        )
        .unwrap();
        assert_eq!(alloc_lines(&dir), vec![12, 40]);
        std::fs::remove_file(&dir).unwrap();
    }

    #[test]
    fn own_rss_is_readable() {
        let (rss, hwm) = proc_rss(std::process::id()).expect("/proc/self/status");
        assert!(rss > 0 && hwm >= rss);
    }
}
