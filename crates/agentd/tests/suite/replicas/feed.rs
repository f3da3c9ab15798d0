//! The events feed across replicas: a client follows it on r2 while turns
//! run on r1, drops it, and resumes on r3 with the last seq it saw: every
//! seq once, in order, no gap.

use super::*;
use crate::common::feed::{feed, seq};

fn completed(id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |e| {
        e["kind"] == "task" && e["data"]["id"] == id && e["data"]["status"]["state"] == "TASK_STATE_COMPLETED"
    }
}

async fn turn(d: &Daemon) -> String {
    let t = d.call("SendMessage", send_params(&uniq("m"), "hi", None)).await;
    assert_eq!(t["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    t["task"]["id"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_read_on_r2_and_resumed_on_r3_with_its_last_seq_misses_nothing_and_repeats_nothing() {
    let answers = json!([{"text": "a"}, {"text": "b"}, {"text": "c"}, {"text": "d"}]);
    let Some(rs) = Replicas::start([answers, json!([]), json!([])]).await else { return };
    let mut on_r2 = feed(&rs.r[1].d, json!({"fromSeq": 0})).await;
    on_r2.hello().await;
    turn(&rs.r[0].d).await;
    let second = turn(&rs.r[0].d).await;
    let first_half = on_r2.until(completed(&second)).await;
    drop(on_r2);
    let last = seq(first_half.last().expect("events"));
    turn(&rs.r[0].d).await;
    let fourth = turn(&rs.r[0].d).await;
    let mut on_r3 = feed(&rs.r[2].d, json!({"fromSeq": last})).await;
    on_r3.hello().await;
    let second_half = on_r3.until(completed(&fourth)).await;
    let seqs: Vec<u64> = first_half.iter().chain(&second_half).map(seq).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "every seq once, in order: {seqs:?}");
    assert_eq!(seqs[0], 1, "from the first event: {seqs:?}");
    let turns = |events: &[Value]| events.iter().filter(|e| e["kind"] == "conversation").count();
    assert_eq!((turns(&first_half), turns(&second_half)), (2, 2), "each turn's event once");
}
