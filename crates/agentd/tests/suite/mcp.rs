//! MCP tools in the agent loop, end to end: the daemon is configured with
//! real MCP servers written by others (the official MCP Python SDK's, over
//! HTTP and stdio: `agentd-mcp/tests/suite/servers.rs`), the `scripted`
//! model calls their tools, and its recorded requests show what it was
//! offered and what it got back; each call is a `tool` event that only the
//! task's owner and operators see.

use crate::common::feed::*;
use crate::common::scripted::*;
use crate::common::*;
use crate::mcp_servers::{HttpServer, everything, python, server_script, skipped};
use serde_json::{Value, json};

fn offered(request: &Value) -> Vec<String> {
    request["tools"].as_array().map_or_else(Vec::new, |t| {
        t.iter().map(|t| t["name"].as_str().unwrap_or_default().to_owned()).collect()
    })
}

fn completed(result: &Value) -> String {
    let t = &result["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    t["id"].as_str().expect("task id").to_owned()
}

#[tokio::test]
async fn mcp_tool_results_reach_the_next_model_call_and_each_call_is_a_tool_event_of_its_task() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let steps = json!([
        {"tool_calls": [
            {"id": "c1", "name": "py__echo", "arguments": {"text": "hello"}},
            {"id": "c2", "name": "py__fail", "arguments": {"reason": "on purpose"}},
            {"id": "c3", "name": "py__delete_everything", "arguments": {}}
        ]},
        {"text": "done"},
        {"text": "bob's answer"}
    ]);
    let yaml = format!(
        "mcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n      tools: {{deny: ['delete_*']}}\n",
        server.url()
    );
    let s = scripted(steps, &yaml, true);
    let alices =
        completed(&s.alice().call("SendMessage", send_params(&uid("m"), "use the tools", None)).await);

    let reqs = s.recorded();
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    let tools = offered(&reqs[0]);
    assert!(tools.contains(&"py__echo".to_owned()) && tools.contains(&"py__add".to_owned()), "{tools:?}");
    assert!(tools.contains(&"spawn_subagent".to_owned()), "built-in tools stay: {tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("py__delete")), "a denied tool is not offered: {tools:?}");
    let results = tool_results(&reqs[1]);
    assert_eq!(results[0], "echo: hello", "{results:?}");
    assert!(
        results[1].starts_with("error: the tool reported an error") && results[1].contains("on purpose"),
        "{results:?}"
    );
    assert!(
        results[2].contains("no tool named \"py__delete_everything\" on offer"),
        "a tool the model was not offered is not called: {results:?}"
    );

    // Alice's feed: one tool event per call made (the refused one made none).
    let mut alice = feed(&s.alice(), json!({"fromSeq": 0, "kinds": ["tool", "task"]})).await;
    alice.hello().await;
    let seen = alice
        .until(|e| {
            e["kind"] == "task"
                && e["data"]["id"] == alices
                && e["data"]["status"]["state"] == "TASK_STATE_COMPLETED"
        })
        .await;
    let tool_events: Vec<&Value> = seen.iter().filter(|e| e["kind"] == "tool").map(|e| &e["data"]).collect();
    assert_eq!(tool_events.len(), 2, "{tool_events:?}");
    let echo = tool_events[0];
    assert_eq!(
        (&echo["taskId"], &echo["server"], &echo["tool"], &echo["name"], &echo["outcome"]),
        (&json!(alices), &json!("py"), &json!("echo"), &json!("py__echo"), &json!("ok"))
    );
    assert_eq!(echo["arguments"], json!({"text": "hello"}));
    assert_eq!(echo["result"], "echo: hello");
    assert!(echo["durationMs"].is_u64(), "{echo}");
    assert_eq!(tool_events[1]["outcome"], "error", "{}", tool_events[1]);

    // Operators see them; bob, who does not own the task, does not.
    let mut ops = feed(&s.ops(), json!({"fromSeq": 0, "kinds": ["tool"]})).await;
    ops.hello().await;
    assert_eq!(ops.event().await["data"]["taskId"], alices);
    let bobs = completed(&s.bob().call("SendMessage", send_params(&uid("m"), "hi", None)).await);
    let mut bob = feed(&s.bob(), json!({"fromSeq": 0, "kinds": ["tool", "task"]})).await;
    bob.hello().await;
    let seen = bob
        .until(|e| {
            e["kind"] == "task"
                && e["data"]["id"] == bobs
                && e["data"]["status"]["state"] == "TASK_STATE_COMPLETED"
        })
        .await;
    assert!(seen.iter().all(|e| e["kind"] != "tool"), "bob sees no tool event of alice's task: {seen:?}");
}

#[tokio::test]
async fn a_server_down_at_start_or_dying_mid_call_gives_the_model_an_error_and_the_turn_goes_on() {
    if skipped() {
        return;
    }
    // A port nothing listens on any more.
    let dead = HttpServer::start().stop();
    let args = serde_json::to_string(&[server_script(), "stdio".into()]).expect("args");
    let steps = json!([
        {"tool_calls": [
            {"id": "c1", "name": "down__echo", "arguments": {"text": "x"}},
            {"id": "c2", "name": "py__crash", "arguments": {}},
            {"id": "c3", "name": "py__echo", "arguments": {"text": "again"}}
        ]},
        {"text": "done"}
    ]);
    let yaml = format!(
        "mcp:\n  servers:\n    - name: down\n      http: {{url: 'http://127.0.0.1:{dead}/mcp'}}\n    - name: py\n      stdio: {{command: '{}', args: {args}}}\n      policy: {{tools: {{crash: allow}}}}\n",
        python()
    );
    let s = scripted(steps, &yaml, true);
    completed(&s.alice().call("SendMessage", send_params(&uid("m"), "go", None)).await);
    let reqs = s.recorded();
    let tools = offered(&reqs[0]);
    assert!(tools.contains(&"py__echo".to_owned()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("down__")),
        "a server that is down offers nothing: {tools:?}"
    );
    let results = tool_results(&reqs[1]);
    assert!(results[0].contains("no tool named \"down__echo\" on offer"), "{results:?}");
    assert!(results[1].contains("the MCP server py failed during the call of crash"), "{results:?}");
    assert_eq!(results[2], "echo: again", "the stdio server was started again: {results:?}");
    let log = s.d.log();
    assert!(log.contains("MCP server connection failed") && log.contains("down"), "the log says why:\n{log}");
    // A connection is one short line at INFO: name, server, version, tools;
    // the server's whole initialize result only at DEBUG.
    let connected =
        log.lines().find(|l| l.contains("MCP server py connected: ")).unwrap_or_else(|| panic!("{log}"));
    assert!(
        connected.contains(" INFO ") && connected.contains("tools=") && connected.contains("version="),
        "{connected}"
    );
    assert!(connected.len() < 400, "one short line: {connected}");
    assert!(
        !log.contains("Service initialized") && !log.contains("InitializeResult"),
        "no debug dump at INFO:\n{log}"
    );
}

#[tokio::test]
async fn a_tool_call_past_the_turns_deadline_fails_the_turn_and_the_conversation_goes_on() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let steps = json!([
        {"text": "Waiting.", "tool_calls": [{"name": "py__slow", "arguments": {"seconds": 30}}]},
        {"text": "next turn"}
    ]);
    let yaml = format!(
        "limits:\n  deadline_secs: 1\nmcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n      \
         policy: {{tools: {{slow: allow}}}}\n",
        server.url()
    );
    let s = scripted(steps, &yaml, true);
    let alice = s.alice();
    let started = std::time::Instant::now();
    let r = alice.call("SendMessage", send_params(&uid("m"), "go", None)).await;
    let t = &r["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_FAILED", "{t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap_or_default();
    assert!(why.contains("deadline of 1 s while the tool py__slow was running"), "{why}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "the deadline cut the 30 s call");
    // The failure is committed: what GetTask reads is what was answered,
    // and the conversation takes its next turn.
    let id = t["id"].as_str().expect("task id");
    let read = alice.call("GetTask", json!({"id": id})).await;
    assert_eq!(read["status"], t["status"], "{read}");
    let context = t["contextId"].as_str().expect("context id");
    let mut next = send_params(&uid("m"), "again", None);
    next["message"]["contextId"] = json!(context);
    completed(&alice.call("SendMessage", next).await);
}

#[tokio::test]
async fn subagents_get_only_the_tool_sets_they_name_within_their_parents_and_a_tool_not_offered_is_not_called()
 {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let spawn = |tools: Value| {
        json!({"tool_calls": [{"id": uid("s"), "name": "spawn_subagent",
            "arguments": {"instruction": "You help.", "input": "work", "tools": tools}}]})
    };
    let steps = json!([
        spawn(json!(["py__echo", "spawn_subagent"])),
        {"tool_calls": [
            {"id": "c1", "name": "py__echo", "arguments": {"text": "x"}},
            {"id": "c2", "name": "py__add", "arguments": {"a": 1, "b": 2}},
            {"id": "c3", "name": "spawn_subagent",
             "arguments": {"instruction": "You help too.", "input": "more", "tools": ["py"]}}
        ]},
        {"tool_calls": [{"id": "c4", "name": "py__add", "arguments": {"a": 1, "b": 2}}]},
        {"text": "grandchild done"},
        {"text": "child done"},
        {"text": "parent done"}
    ]);
    let yaml = format!("mcp:\n  servers:\n    - name: py\n      http: {{url: '{}'}}\n", server.url());
    let s = scripted(steps, &yaml, true);
    completed(&s.alice().call("SendMessage", send_params(&uid("m"), "delegate", None)).await);
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 6, "{reqs:?}");
    assert!(
        offered(&reqs[0]).contains(&"py__add".to_owned()),
        "the turn has every tool: {:?}",
        offered(&reqs[0])
    );
    assert_eq!(offered(&reqs[1]), ["spawn_subagent", "py__echo"], "the child gets the sets it named");
    assert_eq!(
        offered(&reqs[2]),
        ["py__echo"],
        "the grandchild named all of py, and gets what its parent had"
    );
    let grandchild = tool_results(&reqs[3]);
    assert!(grandchild[0].contains("no tool named \"py__add\" on offer"), "{grandchild:?}");
    let child = tool_results(&reqs[4]);
    assert_eq!(child[0], "echo: x", "{child:?}");
    assert!(child[1].contains("no tool named \"py__add\" on offer"), "{child:?}");
    assert_eq!(child[2], "grandchild done", "{child:?}");
}

#[tokio::test]
async fn the_reference_server_over_stdio_serves_the_daemon_and_a_changed_tool_list_is_listed_again() {
    if skipped() {
        return;
    }
    let args = serde_json::to_string(&[server_script(), "stdio".into()]).expect("args");
    let steps = json!([
        {"tool_calls": [
            {"id": "c1", "name": "everything__echo", "arguments": {"message": "hi"}},
            {"id": "c2", "name": "py__add_fresh_tool", "arguments": {}}
        ]},
        {"tool_calls": [{"id": "c3", "name": "py__fresh", "arguments": {"text": "new"}}]},
        {"text": "done"}
    ]);
    let yaml = format!(
        "mcp:\n  servers:\n    - name: everything\n      stdio: {{command: '{}', args: [stdio]}}\n      policy: {{tools: {{echo: allow}}}}\n    - name: py\n      stdio: {{command: '{}', args: {args}}}\n",
        everything(),
        python()
    );
    let s = scripted(steps, &yaml, true);
    completed(&s.alice().call("SendMessage", send_params(&uid("m"), "go", None)).await);
    let reqs = s.recorded();
    assert!(!offered(&reqs[0]).contains(&"py__fresh".to_owned()), "{:?}", offered(&reqs[0]));
    assert_eq!(tool_results(&reqs[1]), ["Echo: hi", "added fresh"]);
    assert!(offered(&reqs[1]).contains(&"py__fresh".to_owned()), "listed again: {:?}", offered(&reqs[1]));
    assert_eq!(tool_results(&reqs[2]), ["Echo: hi", "added fresh", "fresh: new"], "the new tool was called");
}

/// An instruction document's `!mcp` stdio command that names a path is
/// the document's directory's, as a config file's is, wherever the daemon
/// was started from (the tests run in the crate's directory).
#[tokio::test]
async fn a_stdio_command_of_the_instruction_document_is_found_beside_it() {
    if skipped() {
        return;
    }
    let doc = tempfile::tempdir().expect("tempdir");
    let launcher = doc.path().join("py-server");
    std::fs::write(&launcher, format!("#!/bin/sh\nexec '{}' '{}' stdio\n", python(), server_script()))
        .expect("write launcher");
    std::fs::set_permissions(&launcher, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let agent = doc.path().join("agent.md");
    std::fs::write(
        &agent,
        "# Agent\n\nAnswers.\n\n:::!mcp{name=py}\nstdio: {command: ./py-server}\npolicy: {tools: {echo: allow}}\n:::\n",
    )
    .expect("write document");
    let steps = json!([
        {"tool_calls": [{"id": "c1", "name": "py__echo", "arguments": {"text": "beside"}}]},
        {"text": "done"}
    ]);
    let s = scripted(steps, &format!("instruction: {}\n", agent.display()), true);
    completed(&s.alice().call("SendMessage", send_params(&uid("m"), "go", None)).await);
    let reqs = s.recorded();
    assert!(offered(&reqs[0]).contains(&"py__echo".to_owned()), "{:?}", offered(&reqs[0]));
    assert_eq!(tool_results(&reqs[1]), ["echo: beside"]);
}
