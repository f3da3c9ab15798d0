//! Failover time, measured (not run in CI: `--ignored`): the replica
//! running a turn is killed with -9, again and again; the time from the
//! kill to the adopter's first model call for the turn (the lease expired,
//! a poll found it, the turn resumed from its journal) is printed, with
//! its spread. `AGENTD_FAILOVER_KILLS` kills (default 20), at a lease ttl
//! of `AGENTD_FAILOVER_TTL_MS` (default the tests' 2 s; the daemon's
//! default is 10 s), polls every ttl/3.

use super::*;

/// A script whose every call lasts a minute: a turn runs until killed or
/// canceled.
fn slow() -> Value {
    Value::Array((0..100).map(|_| json!({"text": "slow", "delay_ms": 60_000})).collect())
}

/// The index of a replica other than `holder` whose model got a request
/// with `marker`.
fn adopter(rs: &Replicas, holder: usize, marker: &str) -> Option<usize> {
    (0..3)
        .filter(|&i| i != holder)
        .find(|&i| rs.r[i].recorded().iter().any(|r| r.to_string().contains(marker)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it with --ignored --nocapture"]
async fn failover_time_from_kill_9_to_adoption() {
    let kills: usize = std::env::var("AGENTD_FAILOVER_KILLS").ok().and_then(|n| n.parse().ok()).unwrap_or(20);
    assert!(kills > 0, "AGENTD_FAILOVER_KILLS is at least 1");
    let ttl = match std::env::var("AGENTD_FAILOVER_TTL_MS") {
        Ok(ms) => {
            Duration::from_millis(ms.parse().expect("AGENTD_FAILOVER_TTL_MS is a number of milliseconds"))
        }
        Err(_) => TTL,
    };
    assert!(ttl >= Duration::from_millis(300), "AGENTD_FAILOVER_TTL_MS is at least 300");
    // A turn is adopted within ttl + a poll; wait up to three times that.
    let patience = Duration::from_secs(30).max(ttl * 3);
    let Some(mut rs) = Replicas::start_ttl([slow(), slow(), slow()], None, None, ttl).await else { return };
    let mut took = Vec::new();
    for k in 0..kills {
        let holder = k % 3;
        let marker = format!("failover round {k}");
        let id = start_turn(&rs.r[holder].d, &marker).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        while !rs.r[holder].recorded().iter().any(|r| r.to_string().contains(&marker)) {
            assert!(
                Instant::now() < deadline,
                "the holder never called its model; log:\n{}",
                rs.r[holder].d.log()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        rs.r[holder].d.kill9();
        let killed = Instant::now();
        let adopted = loop {
            if let Some(i) = adopter(&rs, holder, &marker) {
                break i;
            }
            assert!(killed.elapsed() < patience, "round {k}: nobody adopted the turn");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        took.push(killed.elapsed());
        let canceled = rs.r[adopted].d.call("CancelTask", json!({"id": id})).await;
        assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
        tokio::task::block_in_place(|| rs.r[holder].restart(&slow()));
    }
    took.sort();
    let ms = |d: Duration| d.as_millis();
    let mean = took.iter().sum::<Duration>() / took.len().max(1) as u32;
    eprintln!(
        "failover (ttl {ttl:?}, poll ttl/3 = {:?}), kill -9 to the adopter's model call over {kills} kills: \
         min {} ms, p50 {} ms, p90 {} ms, mean {} ms, max {} ms; all: {:?}",
        ttl / 3,
        ms(took[0]),
        ms(took[took.len() / 2]),
        ms(took[took.len() * 9 / 10]),
        ms(mean),
        ms(took[took.len() - 1]),
        took.iter().map(|d| d.as_millis()).collect::<Vec<_>>(),
    );
}
