//! Turns of one conversation run one at a time across replicas: a turn
//! sent to r2 waits for the context's turn running on r1 (its lease,
//! `context:<id>`), and its model gets that turn's reply; when r1 dies
//! (kill -9) the waiting turn goes on after the lease expired, and r1's
//! turn is adopted and finished, never alongside it.

use super::*;

/// A message of a new turn in `context_id`.
fn turn_params(context_id: &str, text: &str, answer_at_once: bool) -> Value {
    let mut p = send_params(&uniq("m"), text, None);
    p["message"]["contextId"] = json!(context_id);
    if answer_at_once {
        p["configuration"] = json!({"returnImmediately": true});
    }
    p
}

/// Every model call the replicas made, with the text their script
/// answered it with (replica i's call k got `scripts[i][k]`).
fn calls_and_replies(rs: &Replicas, scripts: &[Value; 3]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (r, script) in rs.r.iter().zip(scripts) {
        for (k, request) in r.recorded().iter().enumerate() {
            let answer = script[k]["text"].as_str().unwrap_or_default().to_owned();
            out.push((request.to_string(), answer));
        }
    }
    out
}

/// Two model calls of one conversation that did not overlap: one of them
/// was made after the other's reply was committed, and its input holds it.
fn assert_one_after_the_other(calls: &[(String, String)]) {
    assert_eq!(calls.len(), 2, "two model calls: {calls:#?}");
    let (a, b) = (&calls[0], &calls[1]);
    let b_saw_a = b.0.contains(&a.1);
    let a_saw_b = a.0.contains(&b.1);
    assert!(b_saw_a != a_saw_b, "exactly one turn ran after the other and got its reply: {calls:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_turns_of_one_context_sent_at_once_to_r1_and_r2_run_one_after_the_other() {
    let scripts = [
        json!([{"text": "Answer made on r1.", "delay_ms": 1_500}]),
        json!([{"text": "Answer made on r2.", "delay_ms": 1_500}]),
        json!([]),
    ];
    let Some(rs) = Replicas::start(scripts.clone()).await else { return };
    let context = uniq("ctx");
    let (r1, r2) = (rs.r[0].d.as_token(None), rs.r[1].d.as_token(None));
    let (p1, p2) =
        (turn_params(&context, "first words", false), turn_params(&context, "second words", false));
    let sent1 = tokio::spawn(async move { r1.call("SendMessage", p1).await });
    let sent2 = tokio::spawn(async move { r2.call("SendMessage", p2).await });
    for sent in [sent1, sent2] {
        let answered =
            tokio::time::timeout(Duration::from_secs(30), sent).await.expect("answered").expect("call");
        assert_eq!(answered["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answered}");
        assert_eq!(answered["task"]["contextId"], json!(context), "{answered}");
    }
    let calls = calls_and_replies(&rs, &scripts);
    assert_one_after_the_other(&calls);
    // The later turn's model got the earlier turn's message too.
    let later = calls.iter().find(|(req, _)| req.contains("Answer made on")).expect("the later call");
    assert!(later.0.contains("first words") && later.0.contains("second words"), "{later:#?}");
    let logs = format!("{}{}", rs.r[0].d.log(), rs.r[1].d.log());
    assert!(logs.contains("waiting for the conversation's turn on another replica"), "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_waiting_for_a_killed_replicas_turn_goes_on_once_its_lease_expired() {
    let adopter = |r: &str| json!([{"text": format!("{r} answer one."), "delay_ms": 500}, {"text": format!("{r} answer two."), "delay_ms": 500}]);
    let scripts = [json!([{"text": "never", "delay_ms": 60_000}]), adopter("r2"), adopter("r3")];
    let Some(mut rs) = Replicas::start(scripts.clone()).await else { return };
    let context = uniq("ctx");
    let first = rs.r[0].d.call("SendMessage", turn_params(&context, "first words", true)).await;
    let first = first["task"]["id"].as_str().expect("a task").to_owned();
    rs.r[0].wait_calls(1).await;
    let second = rs.r[1].d.call("SendMessage", turn_params(&context, "second words", true)).await;
    let second = second["task"]["id"].as_str().expect("a task").to_owned();
    rs.r[1].wait_log(&["waiting for the conversation's turn on another replica"]).await;
    assert!(rs.r[1].recorded().is_empty(), "the turn on r2 waits for r1's");
    rs.r[0].d.kill9();
    for id in [&second, &first] {
        let (done, _) = wait_end(&rs.r[1].d, id, Duration::from_secs(30)).await;
        assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    }
    // r1's turn was adopted (one model call) and r2's ran (one): one
    // after the other.
    let calls: Vec<_> = calls_and_replies(&rs, &scripts).into_iter().filter(|(_, a)| a != "never").collect();
    assert_one_after_the_other(&calls);
}
