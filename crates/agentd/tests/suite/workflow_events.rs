//! A run in the events feed (`docs/ext/events/README.md`): `run`, `step`
//! and `gate` events in the order things happened, each valid against the
//! published schema, seen by the run's owner and operators and by nobody
//! else.

use crate::common::feed::{Feed, feed};
use crate::common::workflow::*;
use crate::common::*;
use serde_json::{Value, json};

const REVIEW_AFTER_PREP: &str = r#"
steps:
  prep: {kind: assign, values: {n: 1}}
  ask:
    kind: human
    depends_on: prep
    question: "Ship it?"
    schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
    to: "@human/approver"
  done: {kind: finish, depends_on: ask, output: "{{steps.ask.output.ok}}"}
"#;

const QUICK: &str = r#"
steps:
  done: {kind: finish, output: 1}
"#;

const RUN_KINDS: &str = r#"{"fromSeq": 0, "kinds": ["run", "step", "gate"]}"#;

async fn run_feed(d: &Daemon) -> Feed {
    let mut f = feed(d, serde_json::from_str(RUN_KINDS).unwrap()).await;
    f.hello().await;
    f
}

/// `run:<state>`, `step:<step>:<status>` or `gate:<step>:<action>`.
fn label(e: &Value) -> String {
    let d = &e["data"];
    let s = |k: &str| d[k].as_str().unwrap_or("?").to_owned();
    match e["kind"].as_str() {
        Some("run") => format!("run:{}", s("state")),
        Some("step") => format!("step:{}:{}", s("step"), s("status")),
        Some("gate") => format!("gate:{}:{}", s("step"), s("action")),
        other => panic!("only run, step and gate events were asked for: {other:?} {e}"),
    }
}

fn completed(e: &Value, task_id: &str) -> bool {
    e["kind"] == "run" && e["data"]["taskId"] == task_id && e["data"]["state"] == "completed"
}

#[tokio::test]
async fn a_run_is_in_its_owners_and_operators_feeds_in_order_and_in_no_one_elses() {
    let (s, _doc) =
        daemon(Some(&doc(&[("review", REVIEW_AFTER_PREP), ("quick", QUICK)], "operator")), json!([]), true);
    let (alice, bob, ops) = (s.alice(), s.bob(), s.ops());
    let (mut a, mut b, mut o) = (run_feed(&alice).await, run_feed(&bob).await, run_feed(&ops).await);

    let t = run(&alice, "review", json!({})).await;
    let task_id = id(&t);
    let run_id = status(&alice, &task_id).await["runId"].as_str().expect("runId").to_owned();
    answer(&ops, &task_id, json!({"data": {"ok": true}})).await.unwrap();
    wait_state(&alice, &task_id, "TASK_STATE_COMPLETED", 20).await;

    let want = [
        "run:started",
        "step:prep:running",
        "step:prep:done",
        // A gate's step starts when the gate opens, a finish step is done
        // in the commit that ends the run: neither has a `running` event.
        "gate:ask:opened",
        "gate:ask:answered",
        "step:ask:done",
        "step:done:done",
        "run:completed",
    ];
    for (who, f) in [("alice, the owner", &mut a), ("ops, an operator", &mut o)] {
        let events = f.until(|e| completed(e, &task_id)).await;
        let labels: Vec<String> = events.iter().map(label).collect();
        assert_eq!(labels, want, "{who}: {events:#?}");
        for e in &events {
            assert_eq!((&e["data"]["taskId"], &e["data"]["runId"]), (&json!(task_id), &json!(run_id)), "{e}");
        }
        let run = &events[0]["data"];
        assert_eq!(run["workflow"], "review", "{run}");
        let step = &events[1]["data"];
        assert_eq!(step["kind"], "assign", "{step}");
        let gate = &events[3]["data"];
        assert_eq!(gate["channel"], "@channel/ops", "the addressed human's channel as written: {gate}");
    }

    // Bob's own run comes after alice's in the log: his feed reaches it
    // without a trace of alice's run.
    let mine = id(&run(&bob, "quick", json!({})).await);
    let events = b.until(|e| completed(e, &mine)).await;
    let text = Value::Array(events.clone()).to_string();
    assert!(!text.contains(&task_id) && !text.contains(&run_id), "bob sees alice's run: {events:#?}");
    assert_eq!(
        events.iter().map(label).collect::<Vec<_>>(),
        ["run:started", "step:done:done", "run:completed"]
    );
}

#[tokio::test]
async fn a_canceled_run_ends_its_events_with_run_canceled() {
    let (s, _doc) = daemon(Some(&doc(&[("review", REVIEW_AFTER_PREP)], "operator")), json!([]), true);
    let alice = s.alice();
    let mut f = run_feed(&alice).await;
    let task_id = id(&run(&alice, "review", json!({})).await);
    alice.call("CancelTask", json!({"id": task_id})).await;
    let events = f.until(|e| e["kind"] == "run" && e["data"]["state"] != "started").await;
    let labels: Vec<String> = events.iter().map(label).collect();
    assert_eq!(
        labels,
        ["run:started", "step:prep:running", "step:prep:done", "gate:ask:opened", "run:canceled"],
        "{events:#?}"
    );
    assert_eq!(events[4]["data"]["workflow"], "review");
    assert_eq!(events[4]["data"]["taskId"], task_id);
}
