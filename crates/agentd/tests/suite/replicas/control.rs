//! Any replica serves any task: a task running on r1 is read, listed,
//! subscribed to and canceled on r2; steering input, a reminder and a
//! cancel sent to r3 are committed there and reach the run on r1 (the
//! `task` event of the change, announced to r1 by the store, is its
//! wake-up; the row is the truth).

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_running_on_r1_is_read_listed_subscribed_and_canceled_on_r2() {
    let idle = json!([]);
    let Some(rs) = Replicas::start([json!([{"text": "slow", "delay_ms": 60_000}]), idle.clone(), idle]).await
    else {
        return;
    };
    let id = start_turn(&rs.r[0].d, "take your time").await;
    rs.r[0].wait_calls(1).await;
    let got = rs.r[1].d.call("GetTask", json!({"id": id})).await;
    assert_eq!(got["status"]["state"], "TASK_STATE_WORKING", "{got}");
    assert_eq!(got["history"][0]["parts"][0]["text"], "take your time", "{got}");
    let listed = rs.r[1].d.call("ListTasks", json!({"pageSize": 10})).await;
    assert_eq!(listed["tasks"][0]["id"], json!(id), "{listed}");
    // Operators see who holds what from any replica; every replica is ready.
    let status = scripted::data(&rs.r[2].d.call("SendMessage", scripted::command("status", json!({}))).await);
    let replica = &status["replica"];
    assert_eq!(replica["id"], "r3", "{status}");
    let lease =
        replica["leases"].as_array().expect("leases").iter().find(|l| l["resource"] == format!("task:{id}"));
    let lease = lease.unwrap_or_else(|| panic!("the task's lease is listed: {status}"));
    assert_eq!((lease["holder"].as_str(), lease["epoch"].as_u64()), (Some("r1"), Some(1)), "{status}");
    let seen: Vec<&str> =
        replica["replicas"].as_array().expect("replicas").iter().filter_map(|r| r["id"].as_str()).collect();
    assert!(seen.contains(&"r1"), "{status}");
    for r in &rs.r {
        let answer = reqwest::get(format!("{}/readyz", r.d.url)).await.expect("readyz");
        let code = answer.status().as_u16();
        let ready: Value = answer.json().await.expect("readyz body");
        assert_eq!((code, &ready["checks"]["store"]["ok"]), (200, &json!(true)), "{ready}");
    }
    let mut stream = rs.r[1].d.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    let first = stream.next().await.expect("a first event");
    assert_eq!(payload(&first, true)["task"]["id"], json!(id), "{first}");
    let canceled = rs.r[1].d.call("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
    let mut last = None;
    while let Some(f) = stream.next().await {
        last = Some(payload(&f, true));
    }
    assert_eq!(last.as_ref().and_then(state), Some("TASK_STATE_CANCELED"), "{last:?}");
    // The run on r1 stops: r1 reloads the task and leaves it canceled.
    rs.r[0].wait_log(&["the task changed on another replica"]).await;
    let on_r1 = rs.r[0].d.call("GetTask", json!({"id": id})).await;
    assert_eq!(on_r1["status"]["state"], "TASK_STATE_CANCELED", "{on_r1}");
    assert!(rs.r[1].recorded().is_empty() && rs.r[2].recorded().is_empty(), "only r1 ran the turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_a_reminder_and_a_cancel_sent_to_r3_reach_the_turn_running_on_r1() {
    let idle = json!([]);
    let r1 = json!([tool_step("c1", 3_000), {"text": "Heard you."}, {"text": "slow", "delay_ms": 60_000}]);
    let Some(rs) = Replicas::start([r1, idle.clone(), idle]).await else { return };
    let id = start_turn(&rs.r[0].d, "start").await;
    rs.r[0].wait_calls(1).await;
    // A stream on r2 follows the turn running on r1 to its end.
    let mut stream = rs.r[1].d.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    let followed = tokio::spawn(async move {
        let mut out = Vec::new();
        while let Some(f) = stream.next().await {
            out.push(payload(&f, true));
        }
        out
    });
    // While r1's first model call runs, r3 takes input (a blocking
    // SendMessage: answered when the turn on r1 ends) and a reminder.
    let r3 = rs.r[2].d.as_token(None);
    let steer_params = send_params(&uniq("m"), "also check the cache", Some(&id));
    let steer = tokio::spawn(async move { r3.call("SendMessage", steer_params).await });
    let reminder = json!({"id": "rem-1", "body": "Mind the quota.", "ttlTurns": 1});
    let params = json!({"taskId": id, "reminder": reminder});
    let injected = rs.r[2].d.call("InjectTaskReminder", params).await;
    assert!(injected.get("code").is_none(), "{injected}");
    let answered =
        tokio::time::timeout(Duration::from_secs(30), steer).await.expect("answered").expect("call");
    assert_eq!(answered["task"]["id"], json!(id), "{answered}");
    assert_eq!(
        answered["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "r3 answers with the end on r1: {answered}"
    );
    assert_eq!(reply(&answered["task"]), "Heard you.", "{answered}");
    let (done, _) = wait_end(&rs.r[2].d, &id, Duration::from_secs(30)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let seen = tokio::time::timeout(Duration::from_secs(30), followed).await.expect("ended").expect("stream");
    assert_eq!(seen.last().and_then(state), Some("TASK_STATE_COMPLETED"), "the stream on r2: {seen:?}");
    assert_eq!(
        streamed_reply(&seen).0,
        "Heard you.",
        "the reply made on r1 reached the stream on r2: {seen:?}"
    );
    let calls = rs.r[0].recorded();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    let second = calls[1].to_string();
    assert!(second.contains("also check the cache"), "the steering input reached r1's model: {second}");
    assert!(second.contains("Mind the quota."), "the reminder reached r1's model: {second}");
    assert!(rs.r[2].recorded().is_empty(), "r3 ran nothing");

    // A cancel sent to r3 stops the next turn on r1.
    let id = start_turn(&rs.r[0].d, "again").await;
    rs.r[0].wait_calls(3).await;
    let canceled = rs.r[2].d.call("CancelTask", json!({"id": id})).await;
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED", "{canceled}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while rs.r[0].d.log().matches("the task changed on another replica").count() < 2 {
        assert!(Instant::now() < deadline, "r1 never heard of the cancel; log:\n{}", rs.r[0].d.log());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let on_r1 = rs.r[0].d.call("GetTask", json!({"id": id})).await;
    assert_eq!(on_r1["status"]["state"], "TASK_STATE_CANCELED", "{on_r1}");
    assert_eq!(rs.r[0].recorded().len(), 3, "no model call after the cancel");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_streamed_on_r1_reaches_a_stream_on_r2_piece_by_piece() {
    let idle = json!([]);
    // Pieces far enough apart for r1 to flush each one on its own.
    let r1 = json!([{"deltas": ["The ", "answer ", "comes ", "in ", "pieces."], "delay_ms": 300}]);
    let Some(rs) = Replicas::start([r1, idle.clone(), idle]).await else { return };
    let id = start_turn(&rs.r[0].d, "tell me").await;
    let mut stream = rs.r[1].d.rpc_stream("SubscribeToTask", json!({"id": id})).await;
    let followed = async {
        let mut seen = Vec::new();
        while let Some(f) = stream.next().await {
            seen.push(payload(&f, true));
        }
        seen
    };
    let seen = tokio::time::timeout(Duration::from_secs(30), followed).await.expect("the stream ended");
    assert_eq!(seen.last().and_then(state), Some("TASK_STATE_COMPLETED"), "{seen:?}");
    let (text, updates) = streamed_reply(&seen);
    assert_eq!(text, "The answer comes in pieces.", "the stream on r2 spells the reply: {seen:?}");
    // Not the whole reply once at the end: each flush of r1 as it came.
    assert!(updates >= 3, "the reply reached r2 in pieces as r1 flushed them: {seen:?}");
    assert!(rs.r[1].recorded().is_empty() && rs.r[2].recorded().is_empty(), "only r1 ran the turn");
}
