//! A gate announced on its channel (`docs/bridges.md`): the webhook
//! receiver, a real server on 127.0.0.1, gets the signed announcement when
//! the gate opens, again flagged as an escalation after `escalate_after`,
//! and not again when the daemon restarts with the gate still open.

use crate::common::receiver::{Hit, Receiver};
use crate::common::scripted::*;
use crate::common::workflow::*;
use crate::common::*;
use agentd_server::bridges::sign::{SIGNATURE_HEADER, SigningKey, TIMESTAMP_HEADER, verify};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const SECRET: &str = "bridge-secret-31c7";

const ESCALATING: &str = r#"
steps:
  ask: {kind: human, question: "Anyone?", to: "@human/approver", escalate_after: 300ms}
  done: {kind: finish, depends_on: ask}
"#;

/// A daemon whose `ops` channel posts to `rx`, signed with [`SECRET`]
/// (kept in a file of the returned directory).
fn bridged(rx: &Receiver, process: bool) -> (Scripted, tempfile::TempDir, tempfile::TempDir) {
    let document = doc(&[("gated", REVIEW), ("escalating", ESCALATING)], "operator").replace(
        "::!channel{name=ops kind=webhook}",
        &format!("::!channel{{name=ops kind=webhook target={}}}", rx.url()),
    );
    let secrets = tempfile::tempdir().expect("tempdir");
    let secret = secrets.path().join("ops-secret");
    std::fs::write(&secret, SECRET).expect("write secret");
    let config =
        format!("push:\n  allow_private: true\nbridges:\n  secrets:\n    ops: file:{}\n", secret.display());
    let (s, dir) = daemon_of(Some(&document), json!([]), false, &config, process);
    (s, dir, secrets)
}

fn header(hit: &Hit, name: &str) -> String {
    hit.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// Checks the signature over the body as received.
fn assert_signed(hit: &Hit) {
    let (ts, sig) = (header(hit, TIMESTAMP_HEADER), header(hit, SIGNATURE_HEADER));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let key = SigningKey::new(SECRET);
    verify(&key, &ts, &sig, hit.raw.as_bytes(), now, 300)
        .unwrap_or_else(|e| panic!("bad signature: {e}: {hit:?}"));
    let other = SigningKey::new("another-secret");
    assert!(
        verify(&other, &ts, &sig, hit.raw.as_bytes(), now, 300).is_err(),
        "the signature depends on the secret"
    );
}

/// Polls `workflow.status` until the bridge has taken the gate.
async fn wait_announced(s: &Scripted, task_id: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let st = status(&s.d, task_id).await;
        if st["gate"]["announced"] == true {
            return;
        }
        assert!(Instant::now() < deadline, "the gate was never recorded as announced: {st}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn an_open_gate_is_announced_once_signed_and_not_again_after_restarts() {
    let mut rx = Receiver::start(0).await;
    let (mut s, _doc, _secret) = bridged(&rx, true);
    let t = run(&s.d, "gated", json!({"what": "v2"})).await;
    assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{t}");
    let task_id = id(&t);
    let run_id = status(&s.d, &task_id).await["runId"].as_str().expect("runId").to_owned();

    let hit = rx.next("the announcement", Duration::from_secs(20)).await;
    assert_eq!(header(&hit, "content-type"), "application/json", "{hit:?}");
    assert_signed(&hit);
    assert_eq!(
        hit.body,
        json!({
            "taskId": task_id,
            "runId": run_id,
            "question": "Ship v2?",
            "askSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            "channel": "@channel/ops",
            "target": rx.url(),
            "answerHint": format!("agentd answer {task_id} '<answer as JSON>'"),
            "escalation": false,
        })
    );

    // Restarts with the gate open, clean and not: the gate was announced.
    wait_announced(&s, &task_id).await;
    s.restart();
    s.kill9_and_restart();
    // A second run's announcement comes after anything the restarts sent.
    let later = id(&run(&s.d, "gated", json!({"what": "v3"})).await);
    let hit = rx.next("the second run's announcement", Duration::from_secs(20)).await;
    assert_eq!(hit.body["taskId"], later, "the first gate was announced again: {:?}", hit.body);
    assert!(rx.next_within(Duration::from_millis(300)).await.is_none(), "nothing else was announced");

    answer(&s.d, &task_id, json!({"data": {"ok": true}})).await.unwrap();
    wait_state(&s.d, &task_id, "TASK_STATE_COMPLETED", 20).await;
}

#[tokio::test]
async fn escalate_after_announces_the_gate_again_as_an_escalation() {
    let mut rx = Receiver::start(0).await;
    let (s, _doc, _secret) = bridged(&rx, false);
    let task_id = id(&run(&s.d, "escalating", json!({})).await);
    let first = rx.next("the announcement", Duration::from_secs(20)).await;
    assert_eq!(
        (first.body["taskId"].clone(), first.body["escalation"].clone()),
        (json!(task_id), json!(false))
    );
    assert_eq!(first.body["askSchema"], Value::Null, "a gate without a schema: {:?}", first.body);
    let again = rx.next("the escalation", Duration::from_secs(20)).await;
    assert_signed(&again);
    assert_eq!(again.body["escalation"], true, "{:?}", again.body);
    let mut same = again.body.clone();
    same["escalation"] = json!(false);
    assert_eq!(same, first.body, "the same announcement, flagged");
    let st = status(&s.d, &task_id).await;
    assert_eq!(
        (st["state"].clone(), st["gate"]["escalated"].clone()),
        (json!("TASK_STATE_INPUT_REQUIRED"), json!(true))
    );
}

#[tokio::test]
async fn the_gate_names_its_channel_as_the_document_writes_it_on_the_wire_in_the_feed_and_the_bridge() {
    let mut rx = Receiver::start(0).await;
    let (s, _doc, _secret) = bridged(&rx, false);
    let mut feed = crate::common::feed::feed(&s.d, json!({"fromSeq": 0})).await;
    feed.hello().await;
    let task_id = id(&run(&s.d, "gated", json!({"what": "v2"})).await);
    // The document: `::!human{name=approver … channel=@channel/ops}`.
    let written = "@channel/ops";

    let activate = [("A2A-Extensions", crate::common::annotations::URI)];
    let (_, got) = s.d.op_with(Binding::JsonRpc, "GetTask", json!({"id": task_id}), &activate).await;
    let got = got.unwrap_or_else(|e| panic!("GetTask: {}", e.error));
    assert_eq!(
        got["metadata"][crate::common::annotations::URI]["askChannel"],
        written,
        "the annotations: {got}"
    );
    let opened = feed.until(|e| e["kind"] == "gate" && e["data"]["taskId"] == task_id.as_str()).await;
    let gate = &opened.last().expect("the gate event")["data"];
    assert_eq!(gate["channel"], written, "the feed's gate event: {gate}");
    let hit = rx.next("the announcement", Duration::from_secs(20)).await;
    assert_eq!(hit.body["channel"], written, "the bridge body: {:?}", hit.body);
}
