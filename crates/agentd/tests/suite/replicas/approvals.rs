//! A tool call's approval answered on a replica that does not run the
//! turn: the turn on r1 waits on the approval of an MCP call (the `ask`
//! policy, as in `mcp_approvals.rs`); the answer sent to r2 is committed
//! there and reaches the waiting call on r1 (the change's `task` event),
//! which runs the tool once; a denial sent to r2 is seen by r1 too, and
//! the tool does not run.

use super::*;
use crate::common::receiver::Receiver;
use crate::common::workflow::{answer, doc};
use crate::mcp_servers::{HttpServer, skipped};

const WRITE: &str = "py__write_note";

/// How often the server's `write_note` ran.
async fn calls(server: &HttpServer) -> u64 {
    let url = format!("http://127.0.0.1:{}/calls", server.port);
    let counts: Value = reqwest::get(&url).await.expect("GET /calls").json().await.expect("JSON counts");
    counts["write_note"].as_u64().unwrap_or(0)
}

/// Polls GetTask on `d` until the task waits for input.
async fn wait_asking(d: &Daemon, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = d.call("GetTask", json!({"id": id})).await;
        if t["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" {
            return t;
        }
        assert!(Instant::now() < deadline, "task {id} never asked: {t}; log:\n{}", d.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_answered_on_r2_reaches_the_call_waiting_on_r1_which_runs_once_and_a_denial_too() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let rx = Receiver::start(0).await;
    let document = doc(&[], "user:carol").replace(
        "::!channel{name=ops kind=webhook}",
        &format!("::!channel{{name=ops kind=webhook target={}}}", rx.url()),
    );
    let call = |i: u32| json!({"tool_calls": [{"id": format!("c{i}"), "name": WRITE, "arguments": {"text": format!("note {i}")}}]});
    let r1 = json!([call(0), {"text": "Written."}, call(1), {"text": "Not written."}]);
    let mcp = format!(
        "mcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n      policy: {{human: '@human/approver'}}\n",
        server.url()
    );
    let idle = json!([]);
    let Some(rs) =
        Replicas::start_configured([r1, idle.clone(), idle], None, Some(&document), TTL, &mcp).await
    else {
        return;
    };

    // Approved on r2: the call on r1 runs, once, and the turn ends there.
    let id = start_turn(&rs.r[0].d, "write a note").await;
    let asking = wait_asking(&rs.r[1].d, &id).await;
    let question = asking["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(question.contains(WRITE), "{asking}");
    assert_eq!(calls(&server).await, 0, "nothing runs before the answer");
    let answered = answer(&rs.r[1].d, &id, json!({"data": {"approve": true}})).await.expect("answered on r2");
    assert!(answered.get("code").is_none(), "{answered}");
    let (done, _) = wait_end(&rs.r[1].d, &id, Duration::from_secs(30)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(reply(&done), "Written.", "{done}");
    assert_eq!(calls(&server).await, 1, "the approved call ran once");
    let made = rs.r[0].recorded();
    assert_eq!(made.len(), 2, "r1's model made both calls of the turn: {made:#?}");
    let second = made[1].to_string();
    assert!(second.contains("note 0") && !second.contains("denied"), "the tool's result: {second}");
    // (The request is JSON: the answer's text would be escaped in it.)
    assert!(!second.contains(r#"{\"approve\""#), "the answer is no input of the model: {second}");

    // Denied on r2: r1's call does not run and its model is told.
    let id = start_turn(&rs.r[0].d, "write another").await;
    wait_asking(&rs.r[1].d, &id).await;
    let no = json!({"data": {"approve": false, "note": "not this one"}});
    answer(&rs.r[1].d, &id, no).await.expect("answered on r2");
    let (done, _) = wait_end(&rs.r[1].d, &id, Duration::from_secs(30)).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(calls(&server).await, 1, "the denied call did not run");
    let made = rs.r[0].recorded();
    assert_eq!(made.len(), 4, "{made:#?}");
    let after_denial = made[3].to_string();
    assert!(after_denial.contains("not this one"), "the denial reached r1's model: {after_denial}");
    assert!(!after_denial.contains(r#"{\"approve\""#), "the answer is no input of the model: {after_denial}");
    assert!(rs.r[1].recorded().is_empty() && rs.r[2].recorded().is_empty(), "only r1 ran the turns");
}
