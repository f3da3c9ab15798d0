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
    fn own_rss_is_readable() {
        let (rss, hwm) = proc_rss(std::process::id()).expect("/proc/self/status");
        assert!(rss > 0 && hwm >= rss);
    }
}
