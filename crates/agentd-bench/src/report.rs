//! `report`: reads the JSON lines of any number of runs and prints markdown
//! tables: medians over repeated runs per (scenario, server, concurrency),
//! side by side, with agentd/ref and agentd/floor ratios and the targets the
//! reference figures set (docs/benchmarks.md).
//!
//! Labels with a meaning here: `floor` (`bench/floor`), `ref` (Python SDK
//! reference peer), `rustsdk` (the official Rust SDK server, in-memory
//! store), `agentd`, `agentd-normal` (AGENTD_STORE_SYNC=normal) and
//! `agentd-existing` (cold start on an existing data directory). Runs that
//! carry an allocation count (the `count-allocs` build) form kinds of their
//! own (`send-allocs`, `get-allocs`).

use anyhow::Context;
use clap::Args;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// JSON-lines files written by send/get/fanout/coldstart.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

const ORDER: [&str; 7] =
    ["floor", "ref", "rustsdk", "agentd-base", "agentd", "agentd-existing", "agentd-normal"];

/// Runs grouped by (kind, label, level); kind is send, send-count, get, fanout, coldstart.
type Groups = BTreeMap<(String, String, u64), Vec<Value>>;

fn kind(v: &Value) -> String {
    let s = v["scenario"].as_str().unwrap_or("?");
    if let Some(shape) = v["shape"].as_str() {
        format!("{s}-{shape}")
    } else if v.get("allocations").is_some() {
        format!("{s}-allocs")
    } else if v.get("count").is_some() {
        format!("{s}-count")
    } else {
        s.to_owned()
    }
}

fn level(v: &Value) -> u64 {
    v.get("concurrency").or_else(|| v.get("subscribers")).and_then(Value::as_u64).unwrap_or(0)
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    Some(if xs.len() % 2 == 1 { xs[m] } else { (xs[m - 1] + xs[m]) / 2.0 })
}

struct Data {
    groups: Groups,
}

impl Data {
    fn runs(&self, kind: &str, label: &str, level: u64) -> Option<&Vec<Value>> {
        self.groups.get(&(kind.to_owned(), label.to_owned(), level))
    }
    /// Median of `field` over the runs of a group.
    fn med(&self, kind: &str, label: &str, level: u64, field: &str) -> Option<f64> {
        median(self.runs(kind, label, level)?.iter().filter_map(|v| v[field].as_f64()).collect())
    }
    fn n(&self, kind: &str, label: &str, level: u64) -> usize {
        self.runs(kind, label, level).map_or(0, Vec::len)
    }
    fn errors(&self, kind: &str, label: &str, level: u64) -> u64 {
        self.runs(kind, label, level).map_or(0, |r| r.iter().filter_map(|v| v["errors"].as_u64()).sum())
    }
    fn labels(&self, kind: &str) -> Vec<String> {
        let found: BTreeSet<&String> = self.groups.keys().filter(|k| k.0 == kind).map(|k| &k.1).collect();
        let mut out: Vec<String> =
            ORDER.iter().filter(|l| found.iter().any(|f| f == *l)).map(|s| (*s).to_owned()).collect();
        out.extend(found.into_iter().filter(|f| !ORDER.contains(&f.as_str())).cloned());
        out
    }
    fn levels(&self, kind: &str) -> Vec<u64> {
        let set: BTreeSet<u64> = self.groups.keys().filter(|k| k.0 == kind).map(|k| k.2).collect();
        set.into_iter().collect()
    }
    /// Any level of a group (for kinds run at one level only).
    fn only_level(&self, kind: &str, label: &str) -> Option<u64> {
        self.groups.keys().find(|k| k.0 == kind && k.1 == label).map(|k| k.2)
    }
}

fn num(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        Some(x) if x >= 100.0 => group_thousands(x.round() as u64),
        Some(x) if x >= 10.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.2}"),
    }
}

/// A count (medians of counts may be x.5; shown rounded).
fn int(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| group_thousands(x.round() as u64))
}

fn group_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => {
            let r = a / b;
            if r >= 10.0 { format!("{r:.0}×") } else { format!("{r:.2}×") }
        }
        _ => "–".into(),
    }
}

fn pct(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.0}%", 100.0 * a / b),
        _ => "–".into(),
    }
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "–",
    }
}

fn display(label: &str) -> String {
    match label {
        "floor" => "floor (bench/floor)".into(),
        "ref" => "Python SDK ref".into(),
        "rustsdk" => "Rust SDK (a2a-server-lf)".into(),
        "agentd-normal" => "agentd (sync=normal)".into(),
        "agentd-existing" => "agentd (existing data dir)".into(),
        "agentd-base" => "agentd (base build)".into(),
        other => other.into(),
    }
}

pub fn run(a: &ReportArgs) -> anyhow::Result<()> {
    let mut groups = Groups::new();
    let mut loads = Vec::new();
    for f in &a.files {
        let text = std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
        for line in text.lines().filter(|l| l.trim_start().starts_with('{')) {
            let v: Value =
                serde_json::from_str(line).with_context(|| format!("bad JSON line in {}", f.display()))?;
            if let Some(l) = v["loadavg_1m"].as_f64() {
                loads.push(l);
            }
            let label = v["label"].as_str().unwrap_or("?").to_owned();
            groups.entry((kind(&v), label, level(&v))).or_default().push(v);
        }
    }
    let d = Data { groups };
    print!("{}", render(&d, &loads));
    Ok(())
}

fn render(d: &Data, loads: &[f64]) -> String {
    let mut s = String::new();
    if let (Some(lo), Some(hi)) =
        (loads.iter().copied().reduce(f64::min), loads.iter().copied().reduce(f64::max))
    {
        let _ = writeln!(s, "1-minute load average during the runs: {lo:.2} – {hi:.2}\n");
    }
    send_tables(d, &mut s, "send", "SendMessage (blocking, completes at once), agentd-bench");
    send_tables(
        d,
        &mut s,
        "send-wrk",
        "Cross-check: the same SendMessage driven by wrk 4.1 (bodies not checked)",
    );
    memory_table(d, &mut s);
    get_table(d, &mut s);
    fanout_table(d, &mut s);
    allocs_table(d, &mut s);
    conns_table(d, &mut s);
    bigbody_table(d, &mut s);
    targets(d, &mut s);
    goals(d, &mut s);
    s
}

fn allocs_table(d: &Data, s: &mut String) {
    let kinds = ["send-allocs", "get-allocs"];
    if kinds.iter().all(|k| d.labels(k).is_empty()) {
        return;
    }
    let _ = writeln!(s, "### Allocations per request (the `count-allocs` build, fixed count, c=16)\n");
    let _ = writeln!(s, "| request | server | requests | allocations | per request | CPU µs/req | req/s |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|");
    for k in kinds {
        for l in ["agentd-base", "agentd"] {
            let what = if k == "send-allocs" { "SendMessage" } else { "GetTask" };
            let Some(lv) = d.only_level(k, l) else {
                if l == "agentd-base" {
                    let _ =
                        writeln!(s, "| {what} | {} | n/a (not a count-allocs build) | | | | |", display(l));
                }
                continue;
            };
            let m = |f: &str| d.med(k, l, lv, f);
            let _ = writeln!(
                s,
                "| {what} | {} | {} | {} | {} | {} | {} |",
                display(l),
                int(m("ok")),
                int(m("allocations")),
                num(m("allocs_per_request")),
                num(m("cpu_us_per_request")),
                num(m("rps")),
            );
        }
    }
    s.push('\n');
}

/// The goals of the durable path: agentd against the official Rust SDK's
/// in-memory server and the floor, in this run.
fn goals(d: &Data, s: &mut String) {
    let rps = |l: &str, c: u64| d.med("send", l, c, "rps");
    let cell = |kind: &str, l: &str, f: &str| d.only_level(kind, l).and_then(|c| d.med(kind, l, c, f));
    let x = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let mut rows: Vec<(String, String, Option<bool>)> = Vec::new();
    for (c, min) in [(1, 0.5), (16, 1.5), (64, 1.5)] {
        let r = x(rps("agentd", c), rps("rustsdk", c));
        rows.push((
            format!("SendMessage c={c} ≥ {min}× the Rust SDK"),
            r.map_or("–".into(), |r| format!("{r:.2}×")),
            r.map(|r| r >= min),
        ));
    }
    let f = x(rps("agentd", 64), rps("floor", 64));
    rows.push((
        "SendMessage c=64 ≥ 30% of the floor".into(),
        f.map_or("–".into(), |f| format!("{:.1}%", 100.0 * f)),
        f.map(|f| f >= 0.3),
    ));
    let p99 = d.med("send", "agentd", 64, "p99_ms");
    rows.push(("p99 at c=64 < 10 ms".into(), format!("{} ms", num(p99)), p99.map(|p| p < 10.0)));
    let g = x(d.med("get", "agentd", 64, "rps"), rps("floor", 64));
    rows.push((
        "GetTask c=64 ≥ 50% of the floor (its SendMessage c=64: it answers any POST alike)".into(),
        g.map_or("–".into(), |g| format!("{:.1}%", 100.0 * g)),
        g.map(|g| g >= 0.5),
    ));
    let idle = cell("coldstart", "agentd", "idle_rss_mib");
    rows.push(("idle RSS < 8 MiB".into(), format!("{} MiB", num(idle)), idle.map(|v| v < 8.0)));
    let hwm = cell("send-count", "agentd", "hwm_mib");
    let count = cell("send-count", "agentd", "count");
    rows.push((
        format!("RSS after {} tasks < 20 MiB", int(count)),
        format!("{} MiB", num(hwm)),
        hwm.map(|v| v < 20.0),
    ));
    let cold = cell("coldstart", "agentd-existing", "coldstart_ms");
    rows.push((
        "cold start on an existing data dir < 10 ms".into(),
        format!("{} ms", num(cold)),
        cold.map(|v| v < 10.0),
    ));
    if let Some(big) = d
        .levels("fanout")
        .into_iter()
        .filter(|&l| d.n("fanout", "agentd", l) > 0)
        .max()
        .filter(|&l| l >= 1000)
    {
        let hwm = d.med("fanout", "agentd", big, "hwm_mib");
        let p99 = d.med("fanout", "agentd", big, "p99_ms");
        rows.push((
            format!("{} streams under 200 MiB", group_thousands(big)),
            format!("{} MiB", num(hwm)),
            hwm.map(|v| v < 200.0),
        ));
        rows.push((
            format!("one event to all {} streams, p99 < 50 ms", group_thousands(big)),
            format!("{} ms", num(p99)),
            p99.map(|v| v < 50.0),
        ));
    }
    let _ = writeln!(
        s,
        "### agentd against the goals of the durable path (against the Rust SDK and the floor, this run)\n"
    );
    let _ = writeln!(s, "| goal | agentd | verdict |");
    let _ = writeln!(s, "|---|---:|---|");
    for (goal, got, ok) in rows {
        let _ = writeln!(s, "| {goal} | {got} | {} |", verdict(ok));
    }
    s.push('\n');
}

fn conns_table(d: &Data, s: &mut String) {
    let labels = d.labels("conns");
    if labels.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "### Connection exhaustion: one peer opens idle sockets; a new client from another address fetches the card, median of runs\n"
    );
    let _ = writeln!(
        s,
        "| server | sockets tried | connected | held at the end of the hold | closed by the server | other client ok / failed | its p50 / p99 ms |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|");
    for l in labels {
        let Some(lv) = d.only_level("conns", &l) else { continue };
        let m = |f: &str| d.med("conns", &l, lv, f);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} / {} | {} / {} |",
            display(&l),
            int(m("sockets")),
            int(m("connected")),
            int(m("held_at_end")),
            int(m("closed_by_server")),
            int(m("probe_ok")),
            int(m("probe_errors")),
            num(m("probe_p50_ms")),
            num(m("probe_p99_ms")),
        );
    }
    let _ = writeln!(s);
}

fn bigbody_table(d: &Data, s: &mut String) {
    let kinds: BTreeSet<String> =
        d.groups.keys().filter(|k| k.0.starts_with("bigbody-")).map(|k| k.0.clone()).collect();
    if kinds.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "### Max-size bodies: one alone, then C at once beside 4 GetTask clients, median of runs\n"
    );
    let _ = writeln!(
        s,
        "| body | server | bytes | one: answer | one: peak RSS growth MiB (× body) | C | C: ok / refused / failed | C: wall s | peak RSS MiB | GetTask p50 / p99 / max ms |"
    );
    let _ = writeln!(s, "|---|---|---:|---|---:|---:|---|---:|---:|---:|");
    for k in kinds {
        for l in d.labels(&k) {
            let Some(lv) = d.only_level(&k, &l) else { continue };
            let runs = d.runs(&k, &l, lv).map(Vec::as_slice).unwrap_or(&[]);
            let m = |f: &str| d.med(&k, &l, lv, f);
            let outcome =
                |o: &str| median(runs.iter().map(|v| v["outcomes"][o].as_f64().unwrap_or(0.0)).collect());
            let one = runs.first().and_then(|v| v["one"].as_str()).unwrap_or("–");
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} ({}) | {} | {} / {} / {} | {} | {} | {} / {} / {} |",
                k.trim_start_matches("bigbody-"),
                display(&l),
                int(m("body_bytes")),
                one,
                num(m("one_growth_mib")),
                num(m("one_growth_x_body")),
                lv,
                int(outcome("ok")),
                int(outcome("refused")),
                int(outcome("failed")),
                num(m("wall_s")),
                num(m("hwm_mib")),
                num(m("get_p50_ms")),
                num(m("get_p99_ms")),
                num(m("get_max_ms")),
            );
        }
    }
    let _ = writeln!(s);
}

fn send_tables(d: &Data, s: &mut String, kind: &str, title: &str) {
    let labels = d.labels(kind);
    if labels.is_empty() {
        return;
    }
    let _ = writeln!(s, "### {title}: req/s, median of runs\n");
    let mut head = String::from("| c |");
    let mut rule = String::from("|---|");
    for l in &labels {
        let _ = write!(head, " {} |", display(l));
        rule.push_str("---:|");
    }
    head.push_str(" agentd/ref | agentd/Rust SDK | agentd/floor |");
    rule.push_str("---:|---:|---:|");
    let _ = writeln!(s, "{head}\n{rule}");
    for c in d.levels(kind) {
        let mut row = format!("| {c} |");
        for l in &labels {
            let errs = d.errors(kind, l, c);
            let mark = if errs > 0 { format!(" ({errs} err)") } else { String::new() };
            let _ = write!(row, " {}{mark} |", num(d.med(kind, l, c, "rps")));
        }
        let ag = d.med(kind, "agentd", c, "rps");
        let _ = writeln!(
            row,
            " {} | {} | {} |",
            ratio(ag, d.med(kind, "ref", c, "rps")),
            ratio(ag, d.med(kind, "rustsdk", c, "rps")),
            pct(ag, d.med(kind, "floor", c, "rps"))
        );
        s.push_str(&row);
    }
    let _ = writeln!(s, "\n### {title}: latency p50 / p99 ms (max), median of runs\n");
    let mut head = String::from("| c |");
    let mut rule = String::from("|---|");
    for l in &labels {
        let _ = write!(head, " {} |", display(l));
        rule.push_str("---:|");
    }
    let _ = writeln!(s, "{head}\n{rule}");
    for c in d.levels(kind) {
        let mut row = format!("| {c} |");
        for l in &labels {
            let max = d.med(kind, l, c, "max_ms").map(|m| format!(" ({})", num(Some(m)))).unwrap_or_default();
            let _ = write!(
                row,
                " {} / {}{max} |",
                num(d.med(kind, l, c, "p50_ms")),
                num(d.med(kind, l, c, "p99_ms")),
            );
        }
        let _ = writeln!(s, "{row}");
    }
    if labels
        .iter()
        .any(|l| d.levels(kind).into_iter().any(|c| d.med(kind, l, c, "cpu_us_per_request").is_some()))
    {
        let _ = writeln!(
            s,
            "\n### {title}: server CPU µs per request (utime + stime over the window), median of runs\n"
        );
        let mut head = String::from("| c |");
        let mut rule = String::from("|---|");
        for l in &labels {
            let _ = write!(head, " {} |", display(l));
            rule.push_str("---:|");
        }
        let _ = writeln!(s, "{head} agentd/Rust SDK |\n{rule}---:|");
        for c in d.levels(kind) {
            let mut row = format!("| {c} |");
            for l in &labels {
                let _ = write!(row, " {} |", num(d.med(kind, l, c, "cpu_us_per_request")));
            }
            let _ = writeln!(
                s,
                "{row} {} |",
                ratio(
                    d.med(kind, "agentd", c, "cpu_us_per_request"),
                    d.med(kind, "rustsdk", c, "cpu_us_per_request")
                )
            );
        }
    }
    let runs: BTreeSet<usize> = labels
        .iter()
        .flat_map(|l| d.levels(kind).into_iter().map(move |c| (l, c)))
        .map(|(l, c)| d.n(kind, l, c))
        .collect();
    let _ = writeln!(s, "\n(runs per cell: {runs:?})\n");
}

fn memory_table(d: &Data, s: &mut String) {
    let mut labels = d.labels("coldstart");
    for l in d.labels("send-count") {
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    if labels.is_empty() {
        return;
    }
    let count = labels
        .iter()
        .find_map(|l| d.only_level("send-count", l).and_then(|c| d.med("send-count", l, c, "count")))
        .map_or("N".into(), |n| group_thousands(n as u64));
    let _ = writeln!(s, "### Memory and start-up, median of runs (RSS and cold start: lower is better)\n");
    let _ = writeln!(
        s,
        "| server | idle RSS MiB | peak RSS (VmHWM) after {count} SendMessage at c=16, MiB | that run's req/s | cold start ms |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|");
    let cell =
        |kind: &str, l: &str, field: &str| d.only_level(kind, l).and_then(|c| d.med(kind, l, c, field));
    for l in &labels {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            display(l),
            num(cell("coldstart", l, "idle_rss_mib")),
            num(cell("send-count", l, "hwm_mib")),
            num(cell("send-count", l, "rps")),
            num(cell("coldstart", l, "coldstart_ms")),
        );
    }
    let _ = writeln!(
        s,
        "| agentd/ref | {} | {} | {} | {} |",
        ratio(cell("coldstart", "agentd", "idle_rss_mib"), cell("coldstart", "ref", "idle_rss_mib")),
        ratio(cell("send-count", "agentd", "hwm_mib"), cell("send-count", "ref", "hwm_mib")),
        ratio(cell("send-count", "agentd", "rps"), cell("send-count", "ref", "rps")),
        ratio(cell("coldstart", "agentd", "coldstart_ms"), cell("coldstart", "ref", "coldstart_ms")),
    );
    let _ = writeln!(
        s,
        "| agentd/Rust SDK | {} | {} | {} | {} |",
        ratio(cell("coldstart", "agentd", "idle_rss_mib"), cell("coldstart", "rustsdk", "idle_rss_mib")),
        ratio(cell("send-count", "agentd", "hwm_mib"), cell("send-count", "rustsdk", "hwm_mib")),
        ratio(cell("send-count", "agentd", "rps"), cell("send-count", "rustsdk", "rps")),
        ratio(cell("coldstart", "agentd", "coldstart_ms"), cell("coldstart", "rustsdk", "coldstart_ms")),
    );
    let _ = writeln!(
        s,
        "| agentd/floor | {} | {} | {} | {} |\n",
        ratio(cell("coldstart", "agentd", "idle_rss_mib"), cell("coldstart", "floor", "idle_rss_mib")),
        ratio(cell("send-count", "agentd", "hwm_mib"), cell("send-count", "floor", "hwm_mib")),
        ratio(cell("send-count", "agentd", "rps"), cell("send-count", "floor", "rps")),
        ratio(cell("coldstart", "agentd", "coldstart_ms"), cell("coldstart", "floor", "coldstart_ms")),
    );
}

fn get_table(d: &Data, s: &mut String) {
    let labels = d.labels("get");
    if labels.is_empty() {
        return;
    }
    let _ = writeln!(s, "### GetTask on random ids of stored tasks, median of runs\n");
    let _ = writeln!(s, "| c | server | tasks | req/s | p50 ms | p99 ms | max ms | CPU µs/req | errors |");
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for c in d.levels("get") {
        for l in &labels {
            if d.n("get", l, c) == 0 {
                continue;
            }
            let _ = writeln!(
                s,
                "| {c} | {} | {} | {} | {} | {} | {} | {} | {} |",
                display(l),
                int(d.med("get", l, c, "tasks")),
                num(d.med("get", l, c, "rps")),
                num(d.med("get", l, c, "p50_ms")),
                num(d.med("get", l, c, "p99_ms")),
                num(d.med("get", l, c, "max_ms")),
                num(d.med("get", l, c, "cpu_us_per_request")),
                d.errors("get", l, c)
            );
        }
        for (other, name) in [("ref", "agentd/ref"), ("rustsdk", "agentd/Rust SDK")] {
            let r = |f: &str| ratio(d.med("get", "agentd", c, f), d.med("get", other, c, f));
            let _ = writeln!(
                s,
                "| {c} | **{name}** | | {} | {} | {} | | {} | |",
                r("rps"),
                r("p50_ms"),
                r("p99_ms"),
                r("cpu_us_per_request")
            );
        }
    }
    s.push('\n');
}

fn fanout_table(d: &Data, s: &mut String) {
    let labels = d.labels("fanout");
    if labels.is_empty() {
        return;
    }
    let _ =
        writeln!(s, "### Fan-out: S SubscribeToTask streams, completing message → terminal event on all S\n");
    let _ = writeln!(
        s,
        "| S | server | ok rounds | all-S p50 ms | all-S p99 ms | per-stream p50 ms | events/s | completing send p50 ms | peak RSS MiB | CPU µs/event | errors |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for sub in d.levels("fanout") {
        for l in &labels {
            if d.n("fanout", l, sub) == 0 {
                continue;
            }
            let _ = writeln!(
                s,
                "| {sub} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                display(l),
                int(d.med("fanout", l, sub, "ok_rounds")),
                num(d.med("fanout", l, sub, "p50_ms")),
                num(d.med("fanout", l, sub, "p99_ms")),
                num(d.med("fanout", l, sub, "each_p50_ms")),
                num(d.med("fanout", l, sub, "events_per_s")),
                num(d.med("fanout", l, sub, "send_p50_ms")),
                num(d.med("fanout", l, sub, "hwm_mib")),
                num(d.med("fanout", l, sub, "cpu_us_per_event")),
                d.errors("fanout", l, sub)
            );
            if let Some(e) =
                d.runs("fanout", l, sub).and_then(|r| r.iter().find_map(|v| v["first_error"].as_str()))
            {
                let _ = writeln!(
                    s,
                    "| | ↳ first error: {} | | | | | | | | | |",
                    e.replace('|', "/").chars().take(160).collect::<String>()
                );
            }
        }
        for (other, name) in [("ref", "agentd/ref"), ("rustsdk", "agentd/Rust SDK")] {
            let r = |f: &str| ratio(d.med("fanout", "agentd", sub, f), d.med("fanout", other, sub, f));
            let _ = writeln!(
                s,
                "| {sub} | **{name}** | | {} | {} | {} | {} | | {} | {} | |",
                r("p50_ms"),
                r("p99_ms"),
                r("each_p50_ms"),
                r("events_per_s"),
                r("hwm_mib"),
                r("cpu_us_per_event"),
            );
        }
    }
    s.push('\n');
}

fn targets(d: &Data, s: &mut String) {
    let cell =
        |kind: &str, l: &str, field: &str| d.only_level(kind, l).and_then(|c| d.med(kind, l, c, field));
    let c64 = |l: &str, f: &str| d.med("send", l, 64, f);
    let share = match (c64("agentd", "rps"), c64("floor", "rps")) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let p99 = c64("agentd", "p99_ms");
    let hwm = cell("send-count", "agentd", "hwm_mib");
    let idle = cell("coldstart", "agentd", "idle_rss_mib");
    let cold = cell("coldstart", "agentd", "coldstart_ms");
    let _ = writeln!(s, "### agentd against the targets of the reference figures (docs/benchmarks.md)\n");
    let _ = writeln!(s, "| target | agentd | verdict |");
    let _ = writeln!(s, "|---|---:|---|");
    let _ = writeln!(
        s,
        "| c=64 throughput ≥ 35% of the floor (same run) | {} | {} |",
        share.map_or("–".into(), |x| format!("{:.1}%", 100.0 * x)),
        verdict(share.map(|x| x >= 0.35))
    );
    let _ = writeln!(s, "| c=64 p99 < 10 ms | {} ms | {} |", num(p99), verdict(p99.map(|x| x < 10.0)));
    let _ = writeln!(
        s,
        "| RSS after 20k tasks < 20 MiB | {} MiB | {} |",
        num(hwm),
        verdict(hwm.map(|x| x < 20.0))
    );
    let _ = writeln!(s, "| idle RSS < 8 MiB | {} MiB | {} |", num(idle), verdict(idle.map(|x| x < 8.0)));
    let _ = writeln!(
        s,
        "| cold start < 10 ms (fresh data dir) | {} ms | {} |",
        num(cold),
        verdict(cold.map(|x| x < 10.0))
    );
    if let Some(c) = cell("coldstart", "agentd-existing", "coldstart_ms") {
        let _ = writeln!(
            s,
            "| cold start < 10 ms (existing data dir) | {} ms | {} |",
            num(Some(c)),
            verdict(Some(c < 10.0))
        );
    }
    let wrk = |l: &str, f: &str| d.med("send-wrk", l, 64, f);
    if let (Some(a), Some(f), Some(p)) = (wrk("agentd", "rps"), wrk("floor", "rps"), wrk("agentd", "p99_ms"))
    {
        let x = a / f;
        let _ = writeln!(
            s,
            "| (wrk) c=64 throughput ≥ 35% of the floor | {:.1}% | {} |",
            100.0 * x,
            verdict(Some(x >= 0.35))
        );
        let _ = writeln!(s, "| (wrk) c=64 p99 < 10 ms | {} ms | {} |", num(Some(p)), verdict(Some(p < 10.0)));
    }
    let normal = (c64("agentd-normal", "rps"), c64("agentd-normal", "p99_ms"), c64("floor", "rps"));
    if let (Some(r), Some(p), Some(f)) = normal {
        let _ = writeln!(
            s,
            "| (sync=normal) c=64 share of floor / p99 | {:.1}% / {} ms | for comparison |",
            100.0 * r / f,
            num(Some(p))
        );
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn data(lines: &[Value]) -> Data {
        let mut groups = Groups::new();
        for v in lines {
            groups
                .entry((kind(v), v["label"].as_str().unwrap().to_owned(), level(v)))
                .or_default()
                .push(v.clone());
        }
        Data { groups }
    }

    #[test]
    fn medians_ratios_and_targets() {
        let d = data(&[
            json!({"scenario": "send", "label": "floor", "concurrency": 64, "rps": 1000.0, "p99_ms": 1.0, "errors": 0}),
            json!({"scenario": "send", "label": "agentd", "concurrency": 64, "rps": 400.0, "p99_ms": 5.0, "errors": 0}),
            json!({"scenario": "send", "label": "agentd", "concurrency": 64, "rps": 500.0, "p99_ms": 7.0, "errors": 0}),
            json!({"scenario": "send", "label": "ref", "concurrency": 64, "rps": 45.0, "p99_ms": 200.0, "errors": 0}),
            json!({"scenario": "send", "label": "agentd", "count": 20000, "concurrency": 16, "hwm_mib": 12.0, "rps": 1.0}),
            json!({"scenario": "coldstart", "label": "agentd", "idle_rss_mib": 6.0, "coldstart_ms": 4.0}),
        ]);
        assert_eq!(d.med("send", "agentd", 64, "rps"), Some(450.0));
        let out = render(&d, &[1.0, 2.0]);
        assert!(out.contains("| 64 | 1,000 | 45.0 | 450 | 10× | – | 45% |"), "{out}");
        assert!(out.contains("| c=64 throughput ≥ 35% of the floor (same run) | 45.0% | met |"), "{out}");
        assert!(out.contains("| RSS after 20k tasks < 20 MiB | 12.0 MiB | met |"), "{out}");
        assert!(out.contains("load average during the runs: 1.00 – 2.00"), "{out}");
    }

    #[test]
    fn goals_against_the_rust_sdk_and_allocations() {
        let d = data(&[
            json!({"scenario": "send", "label": "floor", "concurrency": 64, "rps": 1000.0, "errors": 0}),
            json!({"scenario": "send", "label": "rustsdk", "concurrency": 64, "rps": 200.0, "cpu_us_per_request": 50.0, "errors": 0}),
            json!({"scenario": "send", "label": "agentd", "concurrency": 64, "rps": 400.0, "p99_ms": 12.0, "cpu_us_per_request": 100.0, "errors": 0}),
            json!({"scenario": "send", "label": "rustsdk", "concurrency": 1, "rps": 100.0, "errors": 0}),
            json!({"scenario": "send", "label": "agentd", "concurrency": 1, "rps": 40.0, "errors": 0}),
            json!({"scenario": "send", "label": "agentd", "count": 500, "concurrency": 16, "ok": 500, "allocations": 60000, "allocs_per_request": 120.0}),
            json!({"scenario": "fanout", "label": "agentd", "subscribers": 10000, "hwm_mib": 150.0, "p99_ms": 70.0}),
        ]);
        let out = render(&d, &[]);
        assert!(out.contains("| SendMessage c=64 ≥ 1.5× the Rust SDK | 2.00× | met |"), "{out}");
        assert!(out.contains("| SendMessage c=1 ≥ 0.5× the Rust SDK | 0.40× | **missed** |"), "{out}");
        assert!(out.contains("| SendMessage c=64 ≥ 30% of the floor | 40.0% | met |"), "{out}");
        assert!(out.contains("| p99 at c=64 < 10 ms | 12.0 ms | **missed** |"), "{out}");
        assert!(out.contains("| 10,000 streams under 200 MiB | 150 MiB | met |"), "{out}");
        assert!(
            out.contains("| one event to all 10,000 streams, p99 < 50 ms | 70.0 ms | **missed** |"),
            "{out}"
        );
        assert!(out.contains("| 64 | – | 50.0 | 100 | 2.00× |"), "CPU table: {out}");
        assert!(out.contains("| SendMessage | agentd | 500 | 60,000 | 120 |"), "{out}");
        assert!(out.contains("| SendMessage | agentd (base build) | n/a"), "{out}");
        // The count-allocs run is not the peak-RSS run.
        assert_eq!(d.n("send-count", "agentd", 16), 0);
    }

    #[test]
    fn thousands() {
        assert_eq!(group_thousands(86696), "86,696");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(1_000_000), "1,000,000");
    }
}
