//! Fan-out: per round, a task that waits for input (`tck-input-required-…`),
//! S SubscribeToTask SSE streams on it (each has received its first event,
//! the task snapshot, before the clock starts), then the message that
//! completes it (`tck-complete-task-…`). Measured: the time from sending
//! that message until every stream has delivered the terminal event.

use crate::load::read_meter;
use crate::load::{contains, post, task_field};
use crate::stats::{self, put_rss, put_spent, put_summary};
use crate::{FanoutArgs, client, client_from};
use agentd_client::{Client, jsonrpc};
use agentd_proto::jsonrpc::methods;
use anyhow::{Context, anyhow, bail};
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const TERMINAL: [&str; 4] =
    ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"];
/// Bound on any one wait inside a round.
const ROUND_TIMEOUT: Duration = Duration::from_secs(30);

/// The state a StreamResponse reports, if any.
fn event_state(result: &Value) -> Option<String> {
    let s = result.pointer("/statusUpdate/status/state").or_else(|| result.pointer("/task/status/state"))?;
    s.as_str().map(str::to_owned)
}

/// What one subscriber saw.
struct Seen {
    /// Events after the snapshot.
    events: u64,
    /// When the terminal event arrived, and its state.
    terminal: Option<(Instant, String)>,
}

async fn subscriber(
    client: Client,
    task_id: String,
    ready: mpsc::Sender<Result<(), String>>,
) -> Result<Seen, String> {
    let fail = |why: String| {
        let ready = ready.clone();
        async move {
            let _ = ready.send(Err(why.clone())).await;
            Err::<Seen, String>(why)
        }
    };
    let mut events = match client.stream::<Value>(methods::SUBSCRIBE_TO_TASK, &json!({"id": task_id})).await {
        Ok(events) => events,
        Err(e) => return fail(format!("subscribe: {e}")).await,
    };
    let mut seen = Seen { events: 0, terminal: None };
    let mut got_snapshot = false;
    loop {
        let event = match events.next().await {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(e) if !got_snapshot => return fail(format!("stream: {e}")).await,
            Err(e) => return Err(format!("stream: {e}")),
        };
        let now = Instant::now();
        if !got_snapshot {
            got_snapshot = true;
            let _ = ready.send(Ok(())).await;
            continue;
        }
        seen.events += 1;
        if let Some(state) = event_state(&event)
            && TERMINAL.contains(&state.as_str())
        {
            seen.terminal = Some((now, state));
            break;
        }
    }
    if !got_snapshot {
        return fail("the stream ended before its first event".into()).await;
    }
    Ok(seen)
}

/// The result of one round.
struct Round {
    /// Completing message sent → last subscriber's terminal event (µs).
    all_us: u64,
    /// Per subscriber: completing message sent → its terminal event (µs).
    each_us: Vec<u64>,
    /// Latency of the completing SendMessage itself (µs).
    send_us: u64,
    events: u64,
}

/// `client` sends the messages; subscriber `i` streams through `streams[i % len]`.
async fn round(client: &Client, streams: &[Client], subscribers: usize, n: usize) -> anyhow::Result<Round> {
    let msg = jsonrpc::request(
        1,
        methods::SEND_MESSAGE,
        &json!({"message": {
        "messageId": format!("tck-input-required-fanout-{n}"), "role": "ROLE_USER", "parts": [{"text": "wait"}]}}),
    );
    let body = post(client, msg.to_string().into_bytes()).await.map_err(|e| anyhow!("create: {e}"))?;
    if !contains(&body, b"TASK_STATE_INPUT_REQUIRED") {
        bail!("the task is not INPUT_REQUIRED: {}", String::from_utf8_lossy(&body));
    }
    let task_id = task_field(&body, "id").context("no result.task.id")?;
    let context_id = task_field(&body, "contextId").context("no result.task.contextId")?;

    let (ready_tx, mut ready_rx) = mpsc::channel(subscribers.max(1));
    let mut subs = Vec::with_capacity(subscribers);
    for i in 0..subscribers {
        let via = streams[i % streams.len()].clone();
        subs.push(tokio::spawn(subscriber(via, task_id.clone(), ready_tx.clone())));
    }
    drop(ready_tx);
    for _ in 0..subscribers {
        match tokio::time::timeout(ROUND_TIMEOUT, ready_rx.recv()).await {
            Ok(Some(Ok(()))) => {}
            Ok(Some(Err(e))) => bail!("a subscriber failed: {e}"),
            Ok(None) => bail!("subscribers ended before they were ready"),
            Err(_) => bail!("subscribers not ready after {ROUND_TIMEOUT:?}"),
        }
    }

    let done = jsonrpc::request(
        2,
        methods::SEND_MESSAGE,
        &json!({"message": {
        "messageId": format!("tck-complete-task-fanout-{n}"), "role": "ROLE_USER", "parts": [{"text": "go"}],
        "taskId": task_id, "contextId": context_id}}),
    );
    let t0 = Instant::now();
    let body = post(client, done.to_string().into_bytes()).await.map_err(|e| anyhow!("complete: {e}"))?;
    let send_us = t0.elapsed().as_micros() as u64;
    if contains(&body, b"\"error\"") || !contains(&body, b"TASK_STATE_COMPLETED") {
        bail!("the completing message did not complete the task: {}", String::from_utf8_lossy(&body));
    }
    let mut r = Round { all_us: 0, each_us: Vec::with_capacity(subscribers), send_us, events: 0 };
    for s in subs {
        let seen = tokio::time::timeout(ROUND_TIMEOUT, s)
            .await
            .map_err(|_| anyhow!("a subscriber saw no terminal event within {ROUND_TIMEOUT:?}"))?
            .context("subscriber panicked")?
            .map_err(|e| anyhow!("subscriber: {e}"))?;
        let (at, state) = seen.terminal.context("a stream ended without a terminal event")?;
        if state != "TASK_STATE_COMPLETED" {
            bail!("a stream ended in {state}");
        }
        let us = at.saturating_duration_since(t0).as_micros() as u64;
        r.all_us = r.all_us.max(us);
        r.each_us.push(us);
        r.events += seen.events;
    }
    Ok(r)
}

pub async fn run(a: &FanoutArgs) -> anyhow::Result<()> {
    let t = &a.target;
    if a.subscribers == 0 || a.rounds == 0 {
        bail!("--subscribers and --rounds must be at least 1");
    }
    let timeout = Duration::from_secs(t.timeout_secs);
    let client = client(t, a.subscribers + 2, timeout)?;
    let streams: Vec<Client> = if a.source_addrs <= 1 {
        vec![client.clone()]
    } else {
        let per = a.subscribers.div_ceil(usize::from(a.source_addrs)) + 1;
        (0..a.source_addrs)
            .map(|i| {
                let source = std::net::Ipv4Addr::new(127, 0, 0, 2u8.saturating_add(i));
                client_from(t, per, timeout, Some(source.into()))
            })
            .collect::<anyhow::Result<_>>()?
    };
    let url = t.rpc_url();
    let mut o = Map::new();
    o.insert("scenario".into(), json!("fanout"));
    o.insert("label".into(), json!(t.label));
    o.insert("url".into(), json!(url));
    o.insert("subscribers".into(), json!(a.subscribers));
    o.insert("rounds".into(), json!(a.rounds));
    o.insert("source_addrs".into(), json!(a.source_addrs.max(1)));
    o.insert("threads".into(), json!(t.threads));
    o.insert("loadavg_1m".into(), stats::loadavg());
    o.insert("ts".into(), json!(stats::unix_secs()));
    for n in 0..a.warmup_rounds {
        round(&client, &streams, a.subscribers, n).await.context("warm-up round")?;
    }
    let meter = t.meter();
    let before = match &meter {
        Some(m) => Some(read_meter(m).await),
        None => None,
    };
    let (mut all, mut each, mut send) = (Vec::new(), Vec::new(), Vec::new());
    let mut events = 0u64;
    let mut failed = 0u64;
    let mut first_error = None;
    for n in 0..a.rounds {
        match round(&client, &streams, a.subscribers, a.warmup_rounds + n).await {
            Ok(r) => {
                all.push(r.all_us);
                each.extend(r.each_us);
                send.push(r.send_us);
                events += r.events;
            }
            Err(e) => {
                failed += 1;
                first_error.get_or_insert_with(|| format!("{e:#}"));
            }
        }
    }
    if let (Some(m), Some(a)) = (&meter, before) {
        // Per event delivered to a stream (the round's setup included).
        put_spent(&mut o, "event", a, read_meter(m).await, events);
    }
    let busy_s: f64 = all.iter().map(|&us| us as f64 / 1e6).sum();
    o.insert("ok_rounds".into(), json!(all.len()));
    o.insert("errors".into(), json!(failed));
    if let Some(e) = first_error {
        o.insert("first_error".into(), json!(e));
    }
    o.insert("events".into(), json!(events));
    o.insert("events_per_s".into(), json!(if busy_s > 0.0 { (events as f64 / busy_s).round() } else { 0.0 }));
    put_summary(&mut o, "", &stats::summarize(all));
    put_summary(&mut o, "each_", &stats::summarize(each));
    put_summary(&mut o, "send_", &stats::summarize(send));
    put_rss(&mut o, t.pid);
    stats::emit(o);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_read_from_both_event_kinds() {
        let su = json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}});
        assert_eq!(event_state(&su).as_deref(), Some("TASK_STATE_COMPLETED"));
        let t = json!({"task": {"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}});
        assert_eq!(event_state(&t).as_deref(), Some("TASK_STATE_INPUT_REQUIRED"));
        assert_eq!(event_state(&json!({"message": {}})), None);
    }
}
