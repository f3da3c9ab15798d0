//! Push deliveries with several replicas: one replica at a time holds the
//! outbox lease and delivers every replica's queued rows (woken by the
//! `task` events the store announces), so a task's pushes go out wherever
//! it ran.

use super::*;
use crate::common::receiver::Receiver;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_of_tasks_run_on_every_replica_go_out_from_the_one_outbox_holder() {
    let done = || json!([{"text": "Done."}]);
    let Some(rs) = Replicas::start([done(), done(), done()]).await else { return };
    let mut receiver = Receiver::start(0).await;
    let mut ids = Vec::new();
    for r in &rs.r {
        let mut p = send_params(&uniq("m"), "hello", None);
        p["configuration"] = json!({"taskPushNotificationConfig": {"url": receiver.url()}});
        let t = r.d.call("SendMessage", p).await;
        assert_eq!(t["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
        ids.push(t["task"]["id"].as_str().expect("id").to_owned());
    }
    let mut completed: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ids.iter().all(|id| completed.contains(id)) {
        let left = deadline.saturating_duration_since(Instant::now());
        let hit = receiver.next("a COMPLETED push of each task", left).await;
        let u = &hit.body["statusUpdate"];
        if u["status"]["state"] == "TASK_STATE_COMPLETED" {
            let id = u["taskId"].as_str().expect("taskId").to_owned();
            assert!(!completed.contains(&id), "{id} pushed twice");
            completed.push(id);
        }
    }
    let claimed: Vec<usize> =
        (0..3).filter(|&i| rs.r[i].d.log().contains("outbox lease claimed: this replica delivers")).collect();
    let leases = |i: usize| -> Vec<String> {
        rs.r[i]
            .d
            .log()
            .lines()
            .filter(|l| l.contains("lease") || l.contains("renew"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        claimed.len(),
        1,
        "one replica delivers the outbox: {claimed:?}; their lease lines: {:#?}",
        claimed.iter().map(|&i| leases(i)).collect::<Vec<_>>()
    );
}

/// A turn whose one model call streams its reply in two pieces ten
/// seconds apart: the first piece is committed at once as the task's
/// artifact, the task's only change until the turn ends (no status change,
/// no event in the feed).
fn two_pieces() -> Value {
    json!([{"deltas": ["Half of it.", " The rest."], "delay_ms": 10_000}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_push_queued_on_another_replica_goes_out_before_the_task_changes_again() {
    let Some(rs) = Replicas::start([two_pieces(), two_pieces(), two_pieces()]).await else { return };
    let mut receiver = Receiver::start(0).await;
    // The outbox lease is claimed at start, by one replica.
    let deadline = Instant::now() + Duration::from_secs(30);
    let holder = loop {
        if let Some(i) =
            (0..3).find(|&i| rs.r[i].d.log().contains("outbox lease claimed: this replica delivers"))
        {
            break i;
        }
        assert!(Instant::now() < deadline, "no replica claimed the outbox lease");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let other = (holder + 1) % 3;
    let mut p = send_params(&uniq("m"), "hello", None);
    p["configuration"] =
        json!({"taskPushNotificationConfig": {"url": receiver.url()}, "returnImmediately": true});
    let t = rs.r[other].d.call("SendMessage", p).await;
    let id = t["task"]["id"].as_str().unwrap_or_else(|| panic!("a task: {t}")).to_owned();
    // The holder delivered the WORKING push and waits (its idle poll is a
    // minute); only a wake-up by the artifact's commit delivers that push
    // before the turn's end, ten seconds later, commits a status again.
    let deadline = Instant::now() + Duration::from_secs(50);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let hit = receiver.next("the push of the reply's first piece", left).await;
        let a = &hit.body["artifactUpdate"];
        if a["taskId"] == id.as_str() {
            assert_eq!(a["artifact"]["parts"][0]["text"], "Half of it.", "{:?}", hit.body);
            break;
        }
    }
    let t = rs.r[other].d.call("GetTask", json!({"id": id})).await;
    assert_eq!(t["status"]["state"], "TASK_STATE_WORKING", "pushed only once the turn ended: {t}");
}
