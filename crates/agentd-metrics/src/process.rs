//! Process metrics read from `/proc/self` at each scrape, under the names
//! every Prometheus client library uses (`process_resident_memory_bytes`,
//! `process_cpu_seconds_total`, `process_open_fds`, ...). Written here
//! because `prometheus-client` has no process collector, and the crates
//! that do bring a whole `/proc` parser (or the other Prometheus library)
//! for five numbers. Elsewhere than Linux nothing is reported.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Clock ticks per second of `/proc/<pid>/stat` times: USER_HZ, which the
/// kernel fixes at 100 for user space on every architecture.
const USER_HZ: f64 = 100.0;

#[derive(Debug)]
pub(crate) struct ProcessCollector;

/// What one read of `/proc/self` found; a field it could not read is `None`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Sample {
    pub cpu_seconds: Option<f64>,
    pub rss_bytes: Option<i64>,
    pub virtual_bytes: Option<i64>,
    pub open_fds: Option<i64>,
    pub max_fds: Option<i64>,
    pub threads: Option<i64>,
}

impl Sample {
    pub(crate) fn read() -> Self {
        let stat = std::fs::read_to_string("/proc/self/stat").ok();
        let status = std::fs::read_to_string("/proc/self/status").ok();
        let limits = std::fs::read_to_string("/proc/self/limits").ok();
        let kib = |key: &str| status.as_deref().and_then(|s| status_kib(s, key)).map(|k| k * 1024);
        Self {
            cpu_seconds: stat.as_deref().and_then(cpu_seconds),
            rss_bytes: kib("VmRSS:"),
            virtual_bytes: kib("VmSize:"),
            open_fds: std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as i64),
            max_fds: limits.as_deref().and_then(max_open_files),
            threads: status.as_deref().and_then(|s| field(s, "Threads:")),
        }
    }
}

/// utime + stime of `/proc/self/stat`, in seconds. The fields after the
/// command name (which may hold spaces and parentheses) are counted from
/// its closing parenthesis: utime and stime are fields 14 and 15.
fn cpu_seconds(stat: &str) -> Option<f64> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut f = after.split_whitespace().skip(11);
    let utime: f64 = f.next()?.parse().ok()?;
    let stime: f64 = f.next()?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// A `key: <n> kB` line of `/proc/self/status`.
fn status_kib(status: &str, key: &str) -> Option<i64> {
    field(status, key)
}

fn field(status: &str, key: &str) -> Option<i64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// The soft limit of `Max open files` in `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<i64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..].split_whitespace().next()?.parse().ok()
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = Sample::read();
        if let Some(v) = s.cpu_seconds {
            let c = ConstCounter::new(v);
            c.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                c.metric_type(),
            )?)?;
        }
        let gauges = [
            ("process_resident_memory_bytes", "Resident memory size in bytes", s.rss_bytes),
            ("process_virtual_memory_bytes", "Virtual memory size in bytes", s.virtual_bytes),
            ("process_open_fds", "Number of open file descriptors", s.open_fds),
            ("process_max_fds", "Maximum number of open file descriptors", s.max_fds),
            ("process_threads", "Number of OS threads in the process", s.threads),
        ];
        for (name, help, value) in gauges {
            if let Some(v) = value {
                let g = ConstGauge::new(v);
                g.encode(encoder.encode_descriptor(name, help, None, g.metric_type())?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 8 0 100 1000 50";
        assert_eq!(cpu_seconds(stat), Some(4.0));
    }

    #[test]
    fn limits_and_status_fields_are_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(max_open_files(limits), Some(1024));
        assert_eq!(status_kib("Name:\tagentd\nVmRSS:\t   2048 kB\n", "VmRSS:"), Some(2048));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_read() {
        let s = Sample::read();
        assert!(s.rss_bytes.is_some_and(|b| b > 0), "{s:?}");
        assert!(s.open_fds.is_some_and(|n| n > 0), "{s:?}");
        assert!(s.cpu_seconds.is_some(), "{s:?}");
    }
}
