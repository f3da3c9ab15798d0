//! Reminders end to end (`docs/reminders.md`): the real daemon with the
//! `scripted` model, whose recorded requests (a JSON line per model call)
//! are the evidence of what the model was given. Delivery, ttl and the
//! history/prefix guarantee are here; dedupe and idempotency, refusals and
//! authorization, propagation, the compatibility path, durability, role
//! hints, gRPC streams, push, the card, the CLI, the docs' worked example
//! and a run waiting at its gate are in `reminders/`.

mod dedupe;
mod docs;
mod durability;
mod grpc;
mod propagation;
mod refusals;
mod role_hints;
mod surface;
mod workflow;

use crate::common::scripted::*;
use crate::common::*;
use serde_json::{Value, json};

pub const URI: &str = "https://agentd.dev/a2a/ext/reminders";

/// A model step that asks for a tool nobody has (the loop goes on with
/// the error as the result), after `delay_ms`.
pub fn tool_step(call_id: &str, delay_ms: u64) -> Value {
    json!({"tool_calls": [{"id": call_id, "name": "wait_a_moment"}], "delay_ms": delay_ms})
}

/// A daemon (config `yaml` appended) whose model takes a 1.5 s tool step,
/// then answers: a turn that is WORKING long enough to get reminders.
pub fn slow_turn(yaml: &str) -> Scripted {
    scripted(json!([tool_step("c1", 1500), {"text": "done"}]), yaml, false)
}

/// Starts a turn without waiting for it to end; its task id.
pub async fn start_turn(d: &Daemon) -> String {
    let params = json!({"message": user_msg("m1", "go"), "configuration": {"returnImmediately": true}});
    d.call("SendMessage", params).await["task"]["id"].as_str().unwrap().to_owned()
}

/// The reminder ids rendered in a recorded model request, in order.
pub fn reminder_ids(req: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in req["messages"].as_array().unwrap() {
        let content = m["content"].as_str().unwrap_or("");
        for block in content.split("<system-reminder ").skip(1) {
            let id = block.split("id=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or("");
            out.push(id.to_owned());
        }
    }
    out
}

/// The messages of a recorded request without the trailing reminder block.
pub fn without_reminders(req: &Value) -> Vec<Value> {
    let mut msgs = req["messages"].as_array().unwrap().clone();
    if msgs.last().is_some_and(|m| m["content"].as_str().unwrap_or("").starts_with("<system-reminder ")) {
        msgs.pop();
    }
    msgs
}

/// Opens a JSON-RPC stream, with the reminders extension activated or not.
pub async fn stream(d: &Daemon, method: &str, params: Value, activate: bool) -> SseStream {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut rb = d.http.post(d.jsonrpc_url()).header("A2A-Version", "1.0").json(&body);
    if activate {
        rb = rb.header("A2A-Extensions", URI);
    }
    if let Some(t) = &d.token {
        rb = rb.bearer_auth(t);
    }
    let r = rb.send().await.expect("stream");
    let echoed = r.headers().get("a2a-extensions").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    assert_eq!(echoed == URI, activate, "the activation is echoed exactly when requested: {echoed:?}");
    SseStream::new(r)
}

/// Asserts `value` is valid against `#/$defs/{def}` of the extension's
/// schema bundle: every payload the tests observe on the wire is checked,
/// so a member added without the schema fails them.
pub fn assert_schema(def: &str, value: &Value) {
    let mut schema = agentd_proto::ext::reminders::schema_bundle();
    schema["$ref"] = json!(format!("#/$defs/{def}"));
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator.iter_errors(value).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{def} off the schema: {value}: {errors:?}");
}

/// The reminder event payloads among stream frames (JSON-RPC framing), in
/// order, each checked against the schema.
pub fn reminder_events(frames: &[Value]) -> Vec<Value> {
    let events: Vec<Value> =
        frames.iter().filter_map(|f| f["result"]["statusUpdate"]["metadata"].get(URI).cloned()).collect();
    for e in &events {
        assert_schema("ReminderEvent", e);
    }
    events
}

/// Injects a reminder with JSON-RPC; returns the result.
pub async fn inject(d: &Daemon, task_id: &str, reminder: Value) -> Value {
    let params = json!({"taskId": task_id, "reminder": reminder});
    assert_schema("InjectTaskReminderRequest", &params);
    let result = d.ok(Binding::JsonRpc, "InjectTaskReminder", params).await;
    assert_schema("InjectTaskReminderResponse", &result);
    result
}

#[tokio::test]
async fn a_reminder_reaches_the_next_model_calls_for_its_ttl_then_expires() {
    // Task A runs with no reminder, task B the same script with one: the
    // comparison is the evidence that the prefix and history are untouched.
    let steps = || vec![tool_step("c1", 0), tool_step("c2", 0), tool_step("c3", 0), json!({"text": "done"})];
    let mut all = steps();
    let mut b_steps = steps();
    b_steps[0]["delay_ms"] = json!(1500); // B's first call is in flight when the reminder arrives
    all.extend(b_steps);
    let s = scripted(Value::Array(all), "", false);
    let d = &s.d;
    let a = d.call("SendMessage", json!({"message": user_msg("ma", "Work in steps.")})).await;
    assert_eq!(a["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{a}");

    let mut watched =
        stream(d, "SendStreamingMessage", json!({"message": user_msg("mb", "Work in steps.")}), true).await;
    let first = watched.next().await.expect("the task snapshot");
    let b_id = first["result"]["task"]["id"].as_str().expect("task first").to_owned();
    let mut unactivated = stream(d, "SubscribeToTask", json!({"id": b_id}), false).await;
    s.wait_calls(5).await; // B's first model call is in flight
    let r = inject(
        d,
        &b_id,
        json!({"id": "rem-1", "body": "The upstream PR merged; rebase first.", "ttlTurns": 2}),
    )
    .await;
    assert_eq!(r["reminderId"], "rem-1");
    assert_eq!(r["displaced"], json!([]));
    assert!(r["acceptedAt"].as_str().is_some_and(|t| t.ends_with('Z')), "{r}");

    let frames = watched.collect().await;
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 8);
    let (a_reqs, b_reqs) = reqs.split_at(4);
    let seen: Vec<Vec<String>> = b_reqs.iter().map(reminder_ids).collect();
    assert_eq!(
        seen,
        [vec![], vec!["rem-1".to_owned()], vec!["rem-1".to_owned()], vec![]],
        "not before, then ttl 2"
    );
    let block = b_reqs[1]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        block,
        json!({"role": "user", "content": "<system-reminder source=\"operator:local\" id=\"rem-1\">The upstream PR merged; rebase first.</system-reminder>"}),
        "one framed block after the conversation, in the user slot"
    );
    for (i, (a_req, b_req)) in a_reqs.iter().zip(b_reqs).enumerate() {
        assert_eq!(
            without_reminders(b_req),
            a_req["messages"].as_array().unwrap().clone(),
            "call {i}: the system prompt and the history are byte-identical with and without reminders"
        );
    }

    let events = reminder_events(&frames);
    assert_eq!(
        events,
        [
            json!({"event": "emitted", "reminderId": "rem-1", "turn": 2, "remainingTurns": 1}),
            json!({"event": "emitted", "reminderId": "rem-1", "turn": 3, "remainingTurns": 0}),
            json!({"event": "expired", "reminderId": "rem-1"}),
        ]
    );
    for f in frames.iter().filter(|f| f["result"]["statusUpdate"]["metadata"].get(URI).is_some()) {
        assert_eq!(
            f["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING",
            "state unchanged: {f}"
        );
    }
    let last = frames.last().unwrap();
    assert_eq!(last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED", "{last}");

    let plain = unactivated.collect().await;
    assert!(reminder_events(&plain).is_empty(), "no reminder events without activation: {plain:?}");
    assert!(plain.iter().all(|f| !f.to_string().contains(URI)), "{plain:?}");

    let a_task = d.call("GetTask", json!({"id": a["task"]["id"]})).await;
    let b_task = d.call("GetTask", json!({"id": b_id})).await;
    let texts = |t: &Value| -> Vec<Value> {
        t["history"].as_array().unwrap().iter().map(|m| json!([m["role"], m["parts"]])).collect()
    };
    assert_eq!(texts(&b_task), texts(&a_task), "the reminder never enters Task.history");
    assert!(!b_task.to_string().contains("rebase first"), "{b_task}");
}
