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
    assert_eq!(claimed.len(), 1, "one replica delivers the outbox: {claimed:?}");
}
