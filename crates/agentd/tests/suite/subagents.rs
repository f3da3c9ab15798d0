//! Subagents end to end (`docs/commands.md#subagents`): spawned by the
//! model's `spawn_subagent` tool (its answer goes back to the parent's
//! model), owned like their parent, canceled with their parent (CancelTask
//! and `subagent.kill`), refused past `subagents.max_live` and `max_depth`,
//! stopped at `max_tokens`, and found by handle after a restart. The real daemon with the `scripted` model: script steps are
//! consumed in call order, parent and children alike.

use crate::common::scripted::*;
use crate::common::*;
use serde_json::{Value, json};

fn spawn_call(id: &str, args: Value) -> Value {
    json!({"tool_calls": [{"id": id, "name": "spawn_subagent", "arguments": args}]})
}

/// A step that takes long enough to be canceled while it runs.
fn slow() -> Value {
    json!({"text": "late", "deltas": ["late"], "delay_ms": 30000})
}

fn ids(page: &Value) -> Vec<String> {
    page["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_subagent_spawned_by_the_model_answers_its_parent() {
    let args = json!({"instruction": "You are a researcher.", "input": "Find X.", "name": "researcher"});
    let steps =
        json!([spawn_call("c1", args), {"text": "X is 42."}, {"text": "The researcher says: X is 42."}]);
    let s = scripted(steps, "", true);
    let (alice, bob) = (s.alice(), s.bob());
    let r = alice
        .ok(Binding::JsonRpc, "SendMessage", json!({"message": user_msg("m1", "Ask a researcher.")}))
        .await;
    let parent = task(&r);
    assert_eq!(task_state(&parent), "TASK_STATE_COMPLETED", "{parent}");
    assert_eq!(parent["status"]["message"]["parts"][0]["text"], "The researcher says: X is 42.");
    let parent_id = parent["id"].as_str().unwrap().to_owned();

    // Call order: parent, child, parent again with the child's answer.
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[0]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "spawn_subagent"), "offered");
    let child_msgs = reqs[1]["messages"].as_array().unwrap();
    assert_eq!(child_msgs[0], json!({"role": "system", "content": "You are a researcher."}));
    assert_eq!(
        child_msgs[1],
        json!({"role": "user", "content": "Find X."}),
        "its own context: no parent history"
    );
    assert_eq!(child_msgs.len(), 2);
    let last = reqs[2]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last, json!({"role": "tool", "tool_call_id": "c1", "content": "X is 42."}));

    for b in BINDINGS {
        // The child is alice's (the parent's owner), linked to its parent.
        let mine = ids(&alice.ok(b, "ListTasks", json!({})).await);
        assert_eq!(mine.len(), 2, "{mine:?}");
        let child = mine.iter().find(|id| **id != parent_id).unwrap();
        let st = read_op(&alice, b, "subagent.status", json!({"id": child})).await;
        assert_eq!(st["handle"], format!("researcher-{child}"));
        assert_eq!(st["parent"], parent_id.as_str());
        assert_eq!(st["command"], Value::Null, "the model, not a command, started it");
        assert_eq!(st["state"], "TASK_STATE_COMPLETED");
        assert_ne!(st["contextId"], parent["contextId"], "a subagent has its own conversation");
        assert_eq!(st["lastMessage"]["parts"][0]["text"], "X is 42.");
        assert!(ids(&bob.ok(b, "ListTasks", json!({})).await).is_empty(), "bob sees none of it");
        expect_error(
            bob.op(b, "SendMessage", command("subagent.status", json!({"id": child}))).await,
            -32001,
        );
        // The parent is a turn, not a subagent.
        expect_error(
            alice.op(b, "SendMessage", command("subagent.status", json!({"id": parent_id}))).await,
            -32001,
        );
    }
}

#[tokio::test]
async fn cancelling_a_turn_cancels_the_subagent_its_model_spawned() {
    let call = spawn_call("c1", json!({"instruction": "Work slowly.", "input": "go"}));
    let s = scripted(json!([call, slow(), call, slow()]), "", true);
    let alice = s.alice();
    let mut seen: Vec<String> = Vec::new();
    for (i, b) in BINDINGS.into_iter().enumerate() {
        let mut p = json!({"message": user_msg(&uid("m"), "delegate")});
        p["configuration"] = json!({"returnImmediately": true});
        let parent = task(&alice.ok(b, "SendMessage", p).await)["id"].as_str().unwrap().to_owned();
        s.wait_calls(2 * i + 2).await; // the child's model call is running
        seen.push(parent.clone());
        let child = ids(&alice.ok(b, "ListTasks", json!({})).await)
            .into_iter()
            .find(|id| !seen.contains(id))
            .unwrap();
        seen.push(child.clone());
        assert_eq!(task_state(&alice.ok(b, "GetTask", json!({"id": child})).await), "TASK_STATE_WORKING");

        let canceled = alice.ok(b, "CancelTask", json!({"id": parent})).await;
        assert_eq!(task_state(&canceled), "TASK_STATE_CANCELED");
        let t = alice.wait_task(b, &child, 10, |t| task_state(t) == "TASK_STATE_CANCELED").await;
        let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
        assert!(why.contains("parent") && why.contains(&parent), "the status message says why: {why}");
    }
    // The cascade runs off the cancel's commit: the places free up shortly.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while read_op(&s.ops(), Binding::JsonRpc, "status", json!({})).await["subagents"]["live"] != 0 {
        assert!(std::time::Instant::now() < deadline, "canceled subagents are not counted as live");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn killing_a_subagent_cancels_the_subagents_below_it() {
    let call = spawn_call("c1", json!({"instruction": "Dig.", "input": "go", "name": "inner"}));
    let s = scripted(json!([call, slow(), call, slow()]), "", false);
    let d = &s.d;
    for (i, b) in BINDINGS.into_iter().enumerate() {
        let args = json!({"instruction": "Delegate.", "input": "go", "name": "outer"});
        let outer = task(&d.ok(b, "SendMessage", command_now("subagent.spawn", args)).await);
        let outer_id = outer["id"].as_str().unwrap().to_owned();
        s.wait_calls(2 * i + 2).await;
        let st = wait_status(d, b, &outer_id, |s| !s["liveChildren"].as_array().unwrap().is_empty()).await;
        let inner = st["liveChildren"][0].clone();
        let inner_id = inner["taskId"].as_str().unwrap().to_owned();
        assert!(inner["handle"].as_str().unwrap().starts_with("inner-"), "{inner}");
        let inner_st = read_op(d, b, "subagent.status", json!({"id": inner["handle"]})).await;
        assert_eq!(inner_st["parent"], outer_id.as_str());
        assert_eq!(inner_st["state"], "TASK_STATE_WORKING");

        let killed = read_op(d, b, "subagent.kill", json!({"id": st["handle"]})).await;
        assert_eq!(killed["state"], "TASK_STATE_CANCELED", "{killed}");
        assert_eq!(killed["canceled"], json!([outer_id, inner_id]), "the subagent, then those below it");
        let t = d.wait_task(b, &inner_id, 10, |t| task_state(t) == "TASK_STATE_CANCELED").await;
        let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
        assert!(why.contains("parent") && why.contains(&outer_id), "the status message says why: {why}");
        assert_eq!(read_op(d, b, "status", json!({})).await["subagents"]["live"], 0, "their places are free");
        // Killing again: nothing left to cancel.
        let again = read_op(d, b, "subagent.kill", json!({"id": outer_id})).await;
        assert_eq!(again["canceled"], json!([]));
    }
}

#[tokio::test]
async fn limits_are_refused_with_clear_errors() {
    let nest = spawn_call("c1", json!({"instruction": "Go deeper.", "input": "go"}));
    let costly = json!({"text": "a long answer", "usage": {"input_tokens": 5000, "output_tokens": 10}});
    let steps = json!([slow(), nest, {"text": "I could not go deeper."}, {"text": "next"}, costly]);
    let s = scripted(steps, "subagents:\n  max_live: 1\n  max_depth: 1\n  max_tokens: 2000\n", false);
    let d = &s.d;
    let args = json!({"instruction": "Wait.", "input": "go"});
    let first =
        task(&d.ok(Binding::JsonRpc, "SendMessage", command_now("subagent.spawn", args.clone())).await);
    s.wait_calls(1).await;
    for b in BINDINGS {
        let e = expect_error(d.op(b, "SendMessage", command("subagent.spawn", args.clone())).await, -32004);
        let msg = e.error["message"].as_str().unwrap();
        assert!(msg.contains("subagents.max_live"), "names the limit: {msg}");
    }
    let killed = read_op(d, Binding::Rest, "subagent.kill", json!({"id": first["id"]})).await;
    assert_eq!(killed["state"], "TASK_STATE_CANCELED");

    // Depth: a subagent (depth 1) whose model tries to spawn one more.
    let r = task(&d.ok(Binding::Rest, "SendMessage", command("subagent.spawn", args)).await);
    assert_eq!(task_state(&r), "TASK_STATE_COMPLETED", "a refused tool call does not fail the turn: {r}");
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 3, "the refused spawn never reached the model");
    let tool = reqs[2]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(tool["role"], "tool");
    let content = tool["content"].as_str().unwrap();
    assert!(content.starts_with("error: ") && content.contains("subagents.max_depth"), "{content}");

    // A subagent that finished frees its place at once: the next spawn,
    // right after the answer, is not refused.
    let args = json!({"instruction": "Again.", "input": "go"});
    let next = task(&d.ok(Binding::JsonRpc, "SendMessage", command("subagent.spawn", args)).await);
    assert_eq!(task_state(&next), "TASK_STATE_COMPLETED", "{next}");

    // Tokens: a subagent's turn stops at subagents.max_tokens.
    let args = json!({"instruction": "Ramble.", "input": "go"});
    let t = task(&d.ok(Binding::JsonRpc, "SendMessage", command("subagent.spawn", args)).await);
    assert_eq!(task_state(&t), "TASK_STATE_FAILED", "{t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.contains("over its limit of 2000") && why.contains("subagents.max_tokens"), "{why}");
}

#[tokio::test]
async fn a_parent_waiting_on_a_subagent_still_stops_at_its_deadline() {
    let args = json!({"instruction": "Take forever.", "input": "go"});
    let s = scripted(json!([spawn_call("c1", args), slow()]), "limits:\n  deadline_secs: 2\n", false);
    let d = &s.d;
    let started = std::time::Instant::now();
    let r = d.ok(Binding::JsonRpc, "SendMessage", json!({"message": user_msg("m1", "Delegate this.")})).await;
    let parent = task(&r);
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "the wait was not bounded");
    assert_eq!(task_state(&parent), "TASK_STATE_FAILED", "{parent}");
    let why = parent["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(
        why.contains("deadline of 2 s") && why.contains("spawn_subagent"),
        "names the limit and the tool: {why}"
    );
    // The child does not outlive its failed parent.
    let parent_id = parent["id"].as_str().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let page = d.ok(Binding::JsonRpc, "ListTasks", json!({})).await;
        let child = page["tasks"].as_array().unwrap().iter().find(|t| t["id"] != parent_id).cloned();
        let state = child.as_ref().map(|c| task_state(c).to_owned()).unwrap_or_default();
        if state == "TASK_STATE_CANCELED" || state == "TASK_STATE_FAILED" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the subagent kept running: {child:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_handle_still_resolves_after_a_restart() {
    let mut s = scripted(json!([{"text": "kept"}]), "", false);
    let args = json!({"instruction": "Answer.", "input": "go", "name": "keeper"});
    let id = task(&s.d.ok(Binding::JsonRpc, "SendMessage", command("subagent.spawn", args)).await)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.restart();
    for b in BINDINGS {
        let st = read_op(&s.d, b, "subagent.status", json!({"id": format!("keeper-{id}")})).await;
        assert_eq!(st["taskId"], id.as_str());
        assert_eq!(st["state"], "TASK_STATE_COMPLETED");
        assert_eq!(st["command"], "subagent.spawn", "the link and command are stored with the task");
        assert_eq!(st["lastMessage"]["parts"][0]["text"], "kept");
    }
}
