//! Every A2A operation, end to end, on both bindings (JSON-RPC and REST):
//! what a client relies on when it sends, streams, reads, cancels and
//! subscribes. Listing, push configs, the cards and the routes are in
//! `operations/`.

mod list;
mod surface;

use crate::common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const COMPLETED: &str = "TASK_STATE_COMPLETED";
const INPUT_REQUIRED: &str = "TASK_STATE_INPUT_REQUIRED";

/// The concatenated text of an artifact's parts.
fn artifact_text(a: &Value) -> String {
    a["parts"].as_array().into_iter().flatten().filter_map(|p| p["text"].as_str()).collect()
}

fn ids_of(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["messageId"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn blocking_send_returns_the_completed_task_with_its_artifacts() {
    let d = Daemon::start(&[]);
    for b in BINDINGS {
        let r = d.ok(b, "SendMessage", send_params(&uid("m"), "hello world", None)).await;
        assert!(r.get("message").is_none(), "{b:?}: a SendMessageResponse has one member: {r}");
        let t = &r["task"];
        assert_eq!(task_state(t), COMPLETED, "{b:?}: blocking is the default: {t}");
        assert_eq!(artifact_text(&t["artifacts"][0]), "echo: hello world", "{b:?}: {t}");
        let ts = t["status"]["timestamp"].as_str().expect("status.timestamp");
        assert!(ts.len() == 24 && ts.ends_with('Z'), "{b:?}: timestamps are .sssZ: {ts}");

        // No contextId sent: one is generated and carried by the task and its messages.
        let ctx = t["contextId"].as_str().unwrap_or("");
        assert!(!ctx.is_empty(), "{b:?}: a generated contextId is returned: {t}");
        let history = t["history"].as_array().expect("history");
        assert!(history.iter().all(|m| m["contextId"] == ctx && m["taskId"] == t["id"]), "{b:?}: {t}");

        // A client contextId for a new conversation is kept as sent.
        let mine = uid("ctx");
        let mut p = send_params(&uid("m"), "again", None);
        p["message"]["contextId"] = json!(mine);
        let r = d.ok(b, "SendMessage", p).await;
        assert_eq!(r["task"]["contextId"], json!(mine), "{b:?}: {r}");
    }
}

#[tokio::test]
async fn return_immediately_answers_before_the_task_is_done() {
    let d = Daemon::start(&["--agent", "tck"]);
    let run = |b: Binding| {
        let d = &d;
        async move {
            // This scenario works for ~4 s before it completes.
            let mut p = tck("test-resubscribe-message-id");
            p["configuration"] = json!({"returnImmediately": true});
            let started = Instant::now();
            let r = d.ok(b, "SendMessage", p).await;
            assert!(started.elapsed() < Duration::from_secs(3), "{b:?}: took {:?}", started.elapsed());
            let s = task_state(&r["task"]);
            assert!(s == "TASK_STATE_SUBMITTED" || s == "TASK_STATE_WORKING", "{b:?}: {r}");
            let id = r["task"]["id"].as_str().expect("task id");
            d.wait_task(b, id, 20, |t| task_state(t) == COMPLETED).await;
        }
    };
    futures::join!(run(Binding::JsonRpc), run(Binding::Rest));
}

#[tokio::test]
async fn an_agent_may_answer_with_a_direct_message_and_no_task() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let r = d.ok(b, "SendMessage", tck("tck-message-response")).await;
        assert!(r.get("task").is_none(), "{b:?}: {r}");
        let m = &r["message"];
        assert_eq!(m["role"], "ROLE_AGENT", "{b:?}: {r}");
        assert_eq!(m["parts"][0]["text"], "Direct message response", "{b:?}: {r}");
        assert!(m["contextId"].as_str().is_some_and(|c| !c.is_empty()), "{b:?}: contextId returned: {r}");
        assert!(m["messageId"].as_str().is_some_and(|c| !c.is_empty()), "{b:?}: {r}");
    }
    let l = d.ok(Binding::JsonRpc, "ListTasks", json!({})).await;
    assert_eq!(l["totalSize"], 0, "a direct reply creates no task: {l}");
}

#[tokio::test]
async fn history_length_zero_omits_history() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let mut p = tck("tck-complete-task");
        p["configuration"] = json!({"historyLength": 0});
        let r = d.ok(b, "SendMessage", p).await;
        assert!(r["task"].get("history").is_none(), "{b:?}: {r}");
        let id = r["task"]["id"].as_str().expect("id");
        let t = d.ok(b, "GetTask", json!({"id": id, "historyLength": 0})).await;
        assert!(t.get("history").is_none(), "{b:?}: {t}");
        let t = d.ok(b, "GetTask", json!({"id": id})).await;
        assert!(!t["history"].as_array().expect("full history by default").is_empty(), "{b:?}: {t}");
    }
}

#[tokio::test]
async fn a_task_id_follow_up_resumes_an_input_required_task_in_its_context() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let first = tck("tck-input-required");
        let r = d.ok(b, "SendMessage", first.clone()).await;
        let t = &r["task"];
        assert_eq!(task_state(t), INPUT_REQUIRED, "{b:?}: blocking returns at an interruption: {t}");
        assert_eq!(t["status"]["message"]["role"], "ROLE_AGENT", "{b:?}: the question: {t}");
        let (id, ctx) = (t["id"].as_str().expect("id"), t["contextId"].clone());

        // Only the taskId: the contextId is inferred from the task.
        let second = tck_on("tck-complete-task", id);
        let r = d.ok(b, "SendMessage", second.clone()).await;
        let t = &r["task"];
        assert_eq!(t["id"], json!(id), "{b:?}: the same task continues: {t}");
        assert_eq!(t["contextId"], ctx, "{b:?}: {t}");
        assert_eq!(task_state(t), COMPLETED, "{b:?}: {t}");
        let users: Vec<String> = t["history"]
            .as_array()
            .expect("history")
            .iter()
            .filter(|m| m["role"] == "ROLE_USER")
            .map(|m| m["messageId"].as_str().unwrap_or("").to_owned())
            .collect();
        let sent = [&first, &second].map(|p| p["message"]["messageId"].as_str().unwrap_or("").to_owned());
        assert_eq!(users, sent, "{b:?}: {t}");
        assert!(
            t["history"].as_array().expect("history").iter().all(|m| m["contextId"] == ctx),
            "{b:?}: {t}"
        );
    }
}

#[tokio::test]
async fn a_streamed_task_opens_with_the_task_and_closes_at_completion() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let mut s = d.stream(b, "SendStreamingMessage", tck("tck-stream-001")).await;
        assert_eq!(s.sse.status, 200, "{b:?}");
        assert!(s.sse.is_sse(), "{b:?}: content-type {}", s.sse.content_type);
        let events = s.collect().await; // returns only once the stream closed
        let kinds: Vec<&str> = events.iter().map(kind).collect();
        assert_eq!(kinds, ["task", "statusUpdate", "artifactUpdate", "statusUpdate"], "{b:?}: {events:?}");
        let task = &events[0]["task"];
        assert_eq!(task_state(task), "TASK_STATE_SUBMITTED", "{b:?}: {task}");
        assert_eq!(state(&events[1]), Some("TASK_STATE_WORKING"), "{b:?}");
        assert_eq!(artifact_text(&events[2]["artifactUpdate"]["artifact"]), "Stream hello from TCK", "{b:?}");
        assert_eq!(state(&events[3]), Some(COMPLETED), "{b:?}");
        for e in &events[1..] {
            let inner = e.as_object().and_then(|o| o.values().next()).expect("payload");
            assert_eq!(inner["taskId"], task["id"], "{b:?}: {e}");
            assert_eq!(inner["contextId"], task["contextId"], "{b:?}: {e}");
        }
    }
}

#[tokio::test]
async fn a_message_only_stream_is_exactly_one_message() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let mut s = d.stream(b, "SendStreamingMessage", tck("tck-message-response")).await;
        assert!(s.sse.is_sse(), "{b:?}");
        let events = s.collect().await;
        assert_eq!(events.len(), 1, "{b:?}: {events:?}");
        assert_eq!(kind(&events[0]), "message", "{b:?}: {events:?}");
        assert_eq!(events[0]["message"]["role"], "ROLE_AGENT", "{b:?}");
    }
}

#[tokio::test]
async fn get_task_history_length_keeps_the_most_recent_messages_in_order() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let r = d.ok(b, "SendMessage", tck("tck-input-required")).await;
        let id = r["task"]["id"].as_str().expect("id").to_owned();
        for _ in 0..2 {
            let r = d.ok(b, "SendMessage", tck_on("tck-input-required", &id)).await;
            assert_eq!(task_state(&r["task"]), INPUT_REQUIRED, "{b:?}");
        }
        let full = ids_of(&d.ok(b, "GetTask", json!({"id": id})).await["history"]);
        assert_eq!(full.len(), 6, "{b:?}: three questions and three answers: {full:?}");
        for n in [1usize, 2, 5] {
            let t = d.ok(b, "GetTask", json!({"id": id, "historyLength": n})).await;
            assert_eq!(ids_of(&t["history"]), full[full.len() - n..], "{b:?}: historyLength {n}");
        }
        let t = d.ok(b, "GetTask", json!({"id": id, "historyLength": 100})).await;
        assert_eq!(ids_of(&t["history"]), full, "{b:?}");
    }
}

#[tokio::test]
async fn cancel_is_idempotent_and_refused_on_completed_tasks() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let r = d.ok(b, "SendMessage", tck("tck-input-required")).await;
        let id = r["task"]["id"].as_str().expect("id");
        let c = d.ok(b, "CancelTask", json!({"id": id})).await;
        assert_eq!(c["id"], json!(id), "{b:?}: CancelTask returns the bare Task: {c}");
        assert_eq!(task_state(&c), "TASK_STATE_CANCELED", "{b:?}: {c}");
        let again = d.ok(b, "CancelTask", json!({"id": id})).await;
        assert_eq!(again["status"], c["status"], "{b:?}: a second cancel answers the same snapshot");
        let t = d.ok(b, "GetTask", json!({"id": id})).await;
        assert_eq!(task_state(&t), "TASK_STATE_CANCELED", "{b:?}: {t}");

        let done = d.ok(b, "SendMessage", tck("tck-complete-task")).await;
        let e = expect_error(d.op(b, "CancelTask", json!({"id": done["task"]["id"]})).await, -32002);
        assert!(
            e.error["message"].as_str().unwrap_or("").contains("COMPLETED"),
            "{b:?}: says why: {}",
            e.error
        );
    }
}

#[tokio::test]
async fn subscribe_opens_with_the_task_and_follows_it_to_the_end() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let r = d.ok(b, "SendMessage", tck("tck-input-required")).await;
        let id = r["task"]["id"].as_str().expect("id");
        let mut s = d.stream(b, "SubscribeToTask", json!({"id": id})).await;
        assert!(s.sse.is_sse(), "{b:?}: {}", s.sse.content_type);
        let first = s.next().await.expect("first event");
        assert_eq!(first["task"]["id"], json!(id), "{b:?}: the first event is the Task: {first}");
        assert_eq!(task_state(&first["task"]), INPUT_REQUIRED, "{b:?}");
        d.ok(b, "SendMessage", tck_on("tck-complete-task", id)).await;
        let rest = s.collect().await;
        let states: Vec<_> = rest.iter().filter_map(state).collect();
        assert_eq!(states, ["TASK_STATE_WORKING", COMPLETED], "{b:?}: {rest:?}");
    }
}

#[tokio::test]
async fn rest_subscribe_accepts_get_post_and_an_encoded_verb() {
    let d = Daemon::start(&["--agent", "tck"]);
    for (method, verb) in [
        (reqwest::Method::GET, ":subscribe"),
        (reqwest::Method::POST, ":subscribe"),
        (reqwest::Method::POST, "%3Asubscribe"),
    ] {
        let r = d.ok(Binding::Rest, "SendMessage", tck("tck-input-required")).await;
        let id = r["task"]["id"].as_str().expect("id");
        let sse = d.rest_stream(method.clone(), &format!("/tasks/{id}{verb}"), None).await;
        let mut s = Events { binding: Binding::Rest, sse };
        assert!(s.sse.is_sse(), "{method} {verb}: status {} {}", s.sse.status, s.sse.content_type);
        let first = s.next().await.expect("first event");
        assert_eq!(first["task"]["id"], json!(id), "{method} {verb}: {first}");
        d.ok(Binding::Rest, "CancelTask", json!({"id": id})).await;
        let rest = s.collect().await;
        assert_eq!(
            rest.iter().filter_map(state).collect::<Vec<_>>(),
            ["TASK_STATE_CANCELED"],
            "{method} {verb}"
        );
    }
}
