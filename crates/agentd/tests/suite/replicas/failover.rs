//! Failover: the replica running a multi-step turn dies (kill -9) or
//! stalls past its lease (SIGSTOP); another replica adopts the turn within
//! ttl + 2 s, resumes it from its step journal (the model call already
//! made is not made again) and finishes it once; a stalled holder that
//! wakes up writes nothing more.

use super::*;

/// r1's turn: a tool step, then a model call that is still running when
/// r1 dies. The adopters answer that call after `adopter_ms`.
fn scripts(second_call_ms: u64, adopter_ms: u64) -> [Value; 3] {
    let adopter = json!([{"text": "Adopted.", "delay_ms": adopter_ms}]);
    [
        json!([tool_step("c1", 0), {"text": "r1 finished it.", "delay_ms": second_call_ms}]),
        adopter.clone(),
        adopter,
    ]
}

/// The requests the adopters' models got: one, the turn's second model
/// call, rebuilt from the journal (with the first call's tool result).
/// An adopter whose own run was stopped on its lease (a loaded machine
/// stalled it past the deadline) leaves the turn to be adopted again, and
/// that adoption makes the call again: one more adoption and at most one
/// more call per such stop, never one without it.
fn assert_adopted_once(rs: &Replicas) {
    let adopted: Vec<Value> = rs.r[1..].iter().flat_map(Replica::recorded).collect();
    let adopters_logs = format!("{}{}", rs.r[1].d.log(), rs.r[2].d.log());
    let stops = adopters_logs.matches("lease lost; the run stops here").count()
        + adopters_logs.matches("the run stopped when its lease's deadline passed").count();
    let adoptions = adopters_logs.matches("adopting a task whose lease expired").count();
    assert_eq!(adoptions, 1 + stops, "one adoption, and one more per stopped adopter: {adopters_logs}");
    assert!(
        !adopted.is_empty() && adopted.len() <= adoptions,
        "one adopter made one model call ({stops} adopters' runs stopped): {adopted:#?}"
    );
    for call in &adopted {
        assert_eq!(tool_results(call).len(), 1, "the journaled tool result: {call:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_replica_running_a_turn_moves_it_to_another_replica_within_ttl_plus_2_s() {
    let Some(mut rs) = Replicas::start(scripts(60_000, 0)).await else { return };
    let id = start_turn(&rs.r[0].d, "find it").await;
    rs.r[0].wait_calls(2).await;
    rs.r[0].d.kill9();
    let killed = Instant::now();
    let (done, ended) = wait_end(&rs.r[1].d, &id, Duration::from_secs(30)).await;
    let took = ended - killed;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert!(reply(&done).ends_with("Adopted."), "the adopter's answer: {done}");
    assert!(took <= TTL + Duration::from_secs(2), "adopted and finished {took:?} after the kill");
    assert_adopted_once(&rs);
    // Every replica sees the same finished task.
    assert_eq!(rs.r[2].d.call("GetTask", json!({"id": id})).await, done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_stopped_past_its_lease_is_fenced_off_when_it_wakes_and_the_adopter_finishes() {
    // r1's second call ends 2.5 s after it began: by the time r1 runs
    // again, its answer is ready to be written, on a lease it lost. The
    // adopter's call takes 3 s: r1 wakes while the adopter works.
    let Some(rs) = Replicas::start(scripts(2_500, 3_000)).await else { return };
    let id = start_turn(&rs.r[0].d, "find it").await;
    rs.r[0].wait_calls(2).await;
    let pid = rs.r[0].d.pid().to_string();
    let signal = |sig: &str| {
        let ok = std::process::Command::new("kill").args([sig, &pid]).status().expect("kill").success();
        assert!(ok, "kill {sig} {pid}");
    };
    signal("-STOP");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !rs.r[1..].iter().any(|r| r.recorded().len() == 1) {
        assert!(Instant::now() < deadline, "nobody adopted the turn");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    signal("-CONT");
    // Awake, r1 learns it lost the lease: its late write is refused, or
    // its renewal finds the lease taken first and stops the run.
    let log = rs.r[0].wait_log(&["the write is refused", "lease lost"]).await;
    let (done, _) = wait_end(&rs.r[1].d, &id, Duration::from_secs(30)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(reply(&done), "Adopted.", "nothing of r1's answer reached the store: {done}; r1:\n{log}");
    assert_eq!(rs.r[0].recorded().len(), 2, "r1 made no model call after waking");
    assert_adopted_once(&rs);
    let again = rs.r[0].d.call("GetTask", json!({"id": id})).await;
    assert_eq!(again["status"], done["status"], "r1 reads the adopter's result too");
}
