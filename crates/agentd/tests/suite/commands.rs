//! The command extension end to end (`docs/commands.md`): the real daemon
//! with the `scripted` model, every op and its refusals (unknown op, bad
//! arguments, a role without the grant) on JSON-RPC and REST, the card, and
//! the examples of the doc page run as written. Subagent trees, the model's
//! tool, cascades and limits are in `subagents.rs`.

use crate::common::scripted::*;
use crate::common::*;
use serde_json::{Value, json};

const URI: &str = "https://agentd.dev/a2a/ext/command";
const OPS_LIST: [&str; 12] = [
    "status",
    "subagent.spawn",
    "subagent.send",
    "subagent.status",
    "subagent.kill",
    "workflow.run",
    "workflow.status",
    "workflow.cancel",
    "workflow.signal",
    "gate.list",
    "conversation.get",
    "conversation.close",
];

fn field(name: &str) -> String {
    format!("message.parts[0].data.agentd.{name}")
}

#[tokio::test]
async fn status_answers_with_a_data_message_on_both_bindings() {
    let s = scripted(json!([]), "", false);
    let d = &s.d;
    for b in BINDINGS {
        let st = read_op(d, b, "status", json!({})).await;
        assert_eq!(st["version"], env!("CARGO_PKG_VERSION"), "{st}");
        assert_eq!(st["model"], "scripted", "{st}");
        assert!(st["liveTasks"].is_u64() && st["uptimeSecs"].is_u64(), "{st}");
        assert_eq!(st["subagents"], json!({"live": 0, "maxLive": 8, "maxDepth": 3, "maxTokens": 100000}));
        assert_eq!(st["principal"], json!({"id": "operator:local", "role": "operator"}));

        // Streaming: the one Message, then the stream ends.
        let events = d.stream(b, "SendStreamingMessage", command("status", json!({}))).await.collect().await;
        assert_eq!(events.len(), 1, "{b:?}: {events:?}");
        assert_eq!(data(&events[0])["model"], "scripted");
    }
    assert!(s.recorded().is_empty(), "a command never calls the model");
}

#[tokio::test]
async fn the_extension_is_echoed_when_requested_but_not_required() {
    let s = scripted(json!([]), "", false);
    let d = &s.d;
    let params = command("status", json!({}));
    let (h, r) = d.rpc_with("SendMessage", params.clone(), &[("A2A-Extensions", URI)]).await;
    assert!(r.get("error").is_none(), "{r}");
    assert_eq!(h.get("a2a-extensions").and_then(|v| v.to_str().ok()), Some(URI));
    let (h, r) = d.rpc_with("SendMessage", params.clone(), &[]).await;
    assert!(r.get("error").is_none(), "a command needs no activation: {r}");
    assert!(h.get("a2a-extensions").is_none(), "nothing activated, nothing echoed");
    let body = serde_json::to_vec(&params).unwrap();
    let headers = [("A2A-Version", "1.0"), ("A2A-Extensions", URI)];
    let raw = d.raw(reqwest::Method::POST, &d.rest_url("/message:send"), Some(body), &headers).await;
    assert_eq!(raw.status, 200, "{}", raw.text);
    assert_eq!(raw.header("a2a-extensions"), URI);
    assert_eq!(data(&raw.json())["model"], "scripted");
}

#[tokio::test]
async fn the_card_declares_the_extension_with_every_op_and_its_schema() {
    let s = scripted(json!([]), "", false);
    let card: Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", s.d.url)).await.unwrap().json().await.unwrap();
    let exts = card["capabilities"]["extensions"].as_array().expect("extensions");
    let ext = exts.iter().find(|e| e["uri"] == URI).unwrap_or_else(|| panic!("declared: {card}"));
    assert!(!ext.get("required").and_then(Value::as_bool).unwrap_or(false), "never required: {ext}");
    let ops = ext["params"]["ops"].as_array().expect("params.ops");
    let names: Vec<&str> = ops.iter().map(|o| o["op"].as_str().unwrap()).collect();
    assert_eq!(names, OPS_LIST);
    for o in ops {
        assert_eq!(o["schema"]["type"], "object", "{o}");
        assert_eq!(o["schema"]["additionalProperties"], false, "schemas are closed: {o}");
        assert!(o["description"].as_str().is_some_and(|d| !d.is_empty()), "{o}");
    }
    let skills: Vec<&str> =
        card["skills"].as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    for op in OPS_LIST {
        assert!(skills.contains(&format!("command:{op}").as_str()), "skill for {op}: {skills:?}");
    }
}

#[tokio::test]
async fn unknown_ops_and_bad_arguments_are_invalid_params_naming_the_field() {
    let s = scripted(json!([]), "", false);
    let d = &s.d;
    for b in BINDINGS {
        let e = expect_error(d.op(b, "SendMessage", command("nope", json!({}))).await, -32602);
        e.assert_field(&field("op"));
        let msg = e.error["message"].as_str().unwrap();
        assert!(OPS_LIST.iter().all(|op| msg.contains(op)), "lists the ops: {msg}");

        let cases = [
            ("subagent.status", json!({"id": 5}), vec!["id"]),
            ("status", json!({"verbose": true}), vec!["verbose"]),
            ("subagent.spawn", json!({"instruction": "x"}), vec!["input"]),
            ("subagent.spawn", json!({"instruction": "x", "input": "y", "name": "Bad Name"}), vec!["name"]),
            (
                "subagent.spawn",
                json!({"instruction": 7, "color": "red"}),
                vec!["instruction", "input", "color"],
            ),
            ("subagent.send", json!({"id": ""}), vec!["id", "input"]),
            ("conversation.get", json!({}), vec!["contextId"]),
            ("conversation.close", json!({"contextId": ["x"]}), vec!["contextId"]),
        ];
        for (op, args, fields) in cases {
            let e = expect_error(d.op(b, "SendMessage", command(op, args.clone())).await, -32602);
            for f in fields {
                e.assert_field(&field(f));
            }
        }

        // Where the command sits decides the field's name.
        let mut p = command("status", json!({"x": 1}));
        let part = p["message"]["parts"][0].clone();
        p["message"]["parts"] = json!([{"text": "first a text part"}, part]);
        expect_error(d.op(b, "SendMessage", p).await, -32602).assert_field("message.parts[1].data.agentd.x");

        let malformed = [
            (json!({"agentd": "status"}), "message.parts[0].data.agentd"),
            (json!({"agentd": {}}), "message.parts[0].data.agentd.op"),
            (json!({"agentd": {"op": 1}}), "message.parts[0].data.agentd.op"),
        ];
        for (dp, f) in malformed {
            let p =
                json!({"message": {"messageId": uid("bad"), "role": "ROLE_USER", "parts": [{"data": dp}]}});
            expect_error(d.op(b, "SendMessage", p).await, -32602).assert_field(f);
        }
    }
    assert!(s.recorded().is_empty(), "no refused command reached the model");
}

#[tokio::test]
async fn ops_not_granted_to_a_role_are_permission_denied() {
    let grants = "commands:\n  grants:\n    agent: [status, subagent.spawn, subagent.status]\n";
    let s = scripted(json!([]), grants, true);
    let (alice, bot, ops) = (s.alice(), s.bot(), s.ops());
    for b in BINDINGS {
        // A user has the default grants: status yes, spawning no.
        let st = read_op(&alice, b, "status", json!({})).await;
        assert_eq!(st["principal"], json!({"id": "user:alice", "role": "user"}));
        let spawn = json!({"instruction": "x", "input": "y"});
        expect_permission_denied(
            alice.op(b, "SendMessage", command("subagent.spawn", spawn)).await,
            "subagent.spawn",
            "user",
        );
        let send = json!({"id": "x", "input": "y"});
        expect_permission_denied(
            alice.op(b, "SendMessage", command("subagent.send", send)).await,
            "subagent.send",
            "user",
        );
        // The grant is checked before the arguments...
        expect_permission_denied(
            alice.op(b, "SendMessage", command("subagent.spawn", json!({}))).await,
            "subagent.spawn",
            "user",
        );
        // ...and after the op is known.
        expect_error(alice.op(b, "SendMessage", command("nope", json!({}))).await, -32602)
            .assert_field(&field("op"));

        // The agent role has what the config lists, and only that.
        let ctx = json!({"contextId": "c"});
        expect_permission_denied(
            bot.op(b, "SendMessage", command("conversation.get", ctx)).await,
            "conversation.get",
            "agent",
        );
        assert_eq!(read_op(&bot, b, "status", json!({})).await["principal"]["role"], "agent");

        // An operator may run every op.
        let e = expect_error(
            ops.op(b, "SendMessage", command("subagent.status", json!({"id": "nope"}))).await,
            -32001,
        );
        assert!(e.error["message"].as_str().unwrap().contains("nope"), "{}", e.error);
    }
}

#[tokio::test]
async fn a_subagent_spawned_by_a_command_is_a_task_of_the_caller() {
    let steps = json!([{"text": "Summary one."}, {"text": "hi"}, {"text": "Summary two."}, {"text": "hi"}]);
    let grants =
        "commands:\n  grants:\n    agent: [status, subagent.spawn, subagent.status, subagent.kill]\n";
    let s = scripted(steps, grants, true);
    let (alice, bot, ops) = (s.alice(), s.bot(), s.ops());
    for (i, b) in BINDINGS.into_iter().enumerate() {
        let args = json!({"instruction": "You summarize.", "input": format!("Summarize doc {i}."), "name": "summarizer"});
        let t = task(&bot.ok(b, "SendMessage", command("subagent.spawn", args)).await);
        let id = t["id"].as_str().unwrap().to_owned();
        assert_eq!(task_state(&t), "TASK_STATE_COMPLETED", "a blocking spawn waits for the subagent: {t}");
        let answer = if i == 0 { "Summary one." } else { "Summary two." };
        assert_eq!(t["status"]["message"]["parts"][0]["text"], answer);
        assert_eq!(
            t["history"][0]["parts"][0]["text"],
            format!("Summarize doc {i}."),
            "input is the first message"
        );

        // Its link and facts, by task id and by handle.
        let st = read_op(&bot, b, "subagent.status", json!({"id": id})).await;
        let handle = st["handle"].as_str().unwrap().to_owned();
        assert_eq!(handle, format!("summarizer-{id}"), "{st}");
        assert_eq!(st["taskId"], id.as_str());
        assert_eq!(st["state"], "TASK_STATE_COMPLETED");
        assert_eq!(st["parent"], Value::Null, "a command's subagent has no parent task");
        assert_eq!(st["command"], "subagent.spawn");
        assert_eq!(st["contextId"], t["contextId"]);
        assert_eq!(st["lastMessage"]["parts"][0]["text"], answer);
        assert_eq!(read_op(&bot, b, "subagent.status", json!({"id": handle})).await, st);

        // Owned by the caller: another principal cannot see it, an operator can.
        expect_error(
            alice.op(b, "SendMessage", command("subagent.status", json!({"id": handle}))).await,
            -32001,
        );
        expect_error(alice.op(b, "GetTask", json!({"id": id})).await, -32001);
        assert_eq!(read_op(&ops, b, "subagent.status", json!({"id": handle})).await["taskId"], id.as_str());
        let listed = bot.ok(b, "ListTasks", json!({})).await;
        assert!(listed["tasks"].as_array().unwrap().iter().any(|t| t["id"] == id.as_str()), "{listed}");
        // A turn is not a subagent.
        let turn = ops.ok(b, "SendMessage", json!({"message": user_msg(&uid("t"), "hi")})).await;
        let turn_id = turn["task"]["id"].as_str().unwrap();
        expect_error(
            ops.op(b, "SendMessage", command("subagent.status", json!({"id": turn_id}))).await,
            -32001,
        );

        // The model saw the instruction as its system prompt and the input.
        let req = &s.recorded()[2 * i];
        assert_eq!(req["messages"][0], json!({"role": "system", "content": "You summarize."}));
        assert_eq!(req["messages"][1]["content"], format!("Summarize doc {i}."));
        let tools: Vec<&str> =
            req["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(tools, ["spawn_subagent"], "subagents can nest");
    }
}

#[tokio::test]
async fn a_spawn_streams_its_task_to_the_end() {
    let s = scripted(json!([{"text": "one"}, {"text": "two"}]), "", false);
    for b in BINDINGS {
        let args = json!({"instruction": "Be brief.", "input": "go"});
        let events =
            s.d.stream(b, "SendStreamingMessage", command("subagent.spawn", args)).await.collect().await;
        assert!(events[0].get("task").is_some(), "{b:?}: the task first: {events:?}");
        assert!(events.iter().any(|e| e.get("artifactUpdate").is_some()), "{events:?}");
        assert_eq!(state(events.last().unwrap()), Some("TASK_STATE_COMPLETED"), "{events:?}");
    }
}

#[tokio::test]
async fn subagent_send_steers_a_working_subagent_and_is_refused_once_it_ended() {
    let round = [json!({"tool_calls": [{"name": "noop"}], "delay_ms": 800}), json!({"text": "steered"})];
    let s = scripted(json!([round[0], round[1], round[0], round[1]]), "", false);
    let d = &s.d;
    for (i, b) in BINDINGS.into_iter().enumerate() {
        let args = json!({"instruction": "Work.", "input": "start"});
        let id = task(&d.ok(b, "SendMessage", command_now("subagent.spawn", args)).await)["id"]
            .as_str()
            .unwrap()
            .to_owned();
        s.wait_calls(2 * i + 1).await;
        let sent = d
            .ok(b, "SendMessage", command("subagent.send", json!({"id": id, "input": "also mention X"})))
            .await;
        let t = task(&sent);
        assert_eq!(t["id"], id.as_str(), "answers with the subagent's task");
        assert_eq!(task_state(&t), "TASK_STATE_COMPLETED", "{t}");
        let second = &s.recorded()[2 * i + 1];
        let saw = second["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "user" && m["content"] == "also mention X");
        assert!(saw, "the steering input reached the model at its next step: {second}");
        let e = expect_error(
            d.op(b, "SendMessage", command("subagent.send", json!({"id": id, "input": "more"}))).await,
            -32004,
        );
        assert!(e.error["message"].as_str().unwrap().contains("terminal"), "{}", e.error);
        expect_error(
            d.op(b, "SendMessage", command("subagent.send", json!({"id": "ghost", "input": "x"}))).await,
            -32001,
        );
    }
}

#[tokio::test]
async fn conversation_get_lists_the_turns_a_caller_may_see() {
    let s = scripted(json!([{"text": "a1"}, {"text": "a2"}, {"text": "b1"}, {"text": "b2"}]), "", true);
    let (alice, bob, ops) = (s.alice(), s.bob(), s.ops());
    for b in BINDINGS {
        let first = task(&alice.ok(b, "SendMessage", json!({"message": user_msg(&uid("m"), "one")})).await);
        let ctx = first["contextId"].as_str().unwrap().to_owned();
        let mut m = user_msg(&uid("m"), "two");
        m["contextId"] = json!(ctx);
        let second = task(&alice.ok(b, "SendMessage", json!({"message": m})).await);
        let got = read_op(&alice, b, "conversation.get", json!({"contextId": ctx})).await;
        assert_eq!(got["contextId"], ctx.as_str());
        assert_eq!(got["closed"], false);
        let turns = got["turns"].as_array().unwrap();
        let ids: Vec<&Value> = turns.iter().map(|t| &t["taskId"]).collect();
        assert_eq!(ids, [&first["id"], &second["id"]], "oldest first");
        assert!(turns.iter().all(|t| t["state"] == "TASK_STATE_COMPLETED"), "{got}");
        assert_eq!(turns[1]["messages"][0]["parts"][0]["text"], "two");
        assert_eq!(turns[1]["messages"][1]["role"], "ROLE_AGENT");
        assert_eq!(
            read_op(&ops, b, "conversation.get", json!({"contextId": ctx})).await["turns"],
            got["turns"]
        );
        for (who, c) in [(&bob, ctx.as_str()), (&alice, "no-such-context")] {
            let e = expect_error(
                who.op(b, "SendMessage", command("conversation.get", json!({"contextId": c}))).await,
                -32602,
            );
            e.assert_field(&field("contextId"));
        }
    }
}

#[tokio::test]
async fn conversation_close_cancels_live_turns_and_refuses_later_ones() {
    let slow = json!({"text": "slow", "deltas": ["slow"], "delay_ms": 20000});
    let s = scripted(json!([slow, slow]), "", true);
    let (alice, bob) = (s.alice(), s.bob());
    for (i, b) in BINDINGS.into_iter().enumerate() {
        let mut p = json!({"message": user_msg(&uid("m"), "take your time")});
        p["configuration"] = json!({"returnImmediately": true});
        let t = task(&alice.ok(b, "SendMessage", p).await);
        let (id, ctx) = (t["id"].as_str().unwrap().to_owned(), t["contextId"].as_str().unwrap().to_owned());
        s.wait_calls(i + 1).await;
        let e = expect_error(
            bob.op(b, "SendMessage", command("conversation.close", json!({"contextId": ctx}))).await,
            -32602,
        );
        e.assert_field(&field("contextId"));
        let closed = read_op(&alice, b, "conversation.close", json!({"contextId": ctx})).await;
        assert_eq!(closed, json!({"contextId": ctx, "closed": true, "canceled": [id]}));
        let t = alice.ok(b, "GetTask", json!({"id": id})).await;
        assert_eq!(task_state(&t), "TASK_STATE_CANCELED");
        assert!(t["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("closed"), "{t}");
        let mut m = user_msg(&uid("m"), "one more");
        m["contextId"] = json!(ctx);
        let e = expect_error(alice.op(b, "SendMessage", json!({"message": m})).await, -32004);
        assert!(e.error["message"].as_str().unwrap().contains("closed"), "{}", e.error);
        assert_eq!(read_op(&alice, b, "conversation.get", json!({"contextId": ctx})).await["closed"], true);
    }
}

#[tokio::test]
async fn a_closed_conversation_stays_closed_after_a_restart() {
    let mut s = scripted(json!([{"text": "first answer"}]), "", true);
    let b = Binding::JsonRpc;
    let t = task(&s.alice().ok(b, "SendMessage", json!({"message": user_msg(&uid("m"), "hello")})).await);
    let ctx = t["contextId"].as_str().unwrap().to_owned();
    read_op(&s.alice(), b, "conversation.close", json!({"contextId": ctx})).await;
    s.restart();
    let mut m = user_msg(&uid("m"), "still there?");
    m["contextId"] = json!(ctx);
    let e = expect_error(s.alice().op(b, "SendMessage", json!({"message": m})).await, -32004);
    assert!(e.error["message"].as_str().unwrap().contains("closed"), "{}", e.error);
    let got = read_op(&s.alice(), b, "conversation.get", json!({"contextId": ctx})).await;
    assert_eq!(got["closed"], true, "{got}");
    assert_eq!(s.recorded().len(), 1, "the refused turn never reached the model");
}

/// The `<!-- request -->` / `<!-- reply… -->` pairs of docs/commands.md, run
/// in order. A reply's members must be exactly the real answer's (values
/// are examples); `reply: task` expects a Task in that state; `reply:
/// error` an error with that code naming those fields.
#[tokio::test]
async fn the_examples_in_docs_commands_md_run() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/commands.md")).unwrap();
    let mut blocks: Vec<(String, Value)> = Vec::new();
    let mut marker: Option<String> = None;
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if let Some(m) = line.strip_prefix("<!-- ").and_then(|l| l.strip_suffix(" -->")) {
            marker = Some(m.to_owned());
        } else if line.starts_with("```json")
            && let Some(m) = marker.take()
        {
            let body: String =
                lines.by_ref().take_while(|l| !l.starts_with("```")).collect::<Vec<_>>().join("\n");
            let v = serde_json::from_str(&body)
                .unwrap_or_else(|e| panic!("docs example after <!-- {m} -->: {e}"));
            blocks.push((m, v));
        }
    }
    assert!(blocks.len() >= 16, "the examples were found: {}", blocks.len());
    let steps = json!([
        {"tool_calls": [{"name": "noop"}], "delay_ms": 800},
        {"text": "Done: the summary."},
        {"text": "Hello!"}
    ]);
    let s = scripted(steps, "", false);
    let (mut task_id, mut context) = (String::new(), String::new());
    let mut pairs = blocks.into_iter();
    while let Some((m, request)) = pairs.next() {
        assert_eq!(m, "request", "a request comes first");
        let (kind, expected) = pairs.next().expect("every request has a reply");
        let text = request.to_string().replace("$TASK", &task_id).replace("$CONTEXT", &context);
        let params: Value = serde_json::from_str(&text).unwrap();
        let r = s.d.op(Binding::JsonRpc, "SendMessage", params).await;
        match kind.as_str() {
            "reply" => {
                let got = data(&r.unwrap_or_else(|e| panic!("{text}: {}", e.error)));
                let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
                assert_eq!(keys(&got), keys(&expected), "the documented members of {text}: {got}");
            }
            "reply: task" => {
                let t = task(&r.unwrap_or_else(|e| panic!("{text}: {}", e.error)));
                // A task answered at once may have moved on from the
                // documented state; a finished one must be in it.
                let want = expected["status"]["state"].as_str().unwrap();
                if want == "TASK_STATE_COMPLETED" {
                    assert_eq!(task_state(&t), want, "{text}: {t}");
                }
                task_id = t["id"].as_str().unwrap().to_owned();
                context = t["contextId"].as_str().unwrap().to_owned();
            }
            "reply: error" => {
                let e = expect_error(r, expected["code"].as_i64().unwrap());
                for f in expected["fields"].as_array().unwrap() {
                    e.assert_field(f.as_str().unwrap());
                }
            }
            other => panic!("unknown marker <!-- {other} -->"),
        }
    }
}

#[tokio::test]
async fn a_command_naming_another_principals_conversation_is_refused() {
    let s = scripted(json!([{"text": "hello"}]), "", true);
    let (alice, bob) = (s.alice(), s.bob());
    let first = alice
        .op(
            Binding::JsonRpc,
            "SendMessage",
            json!({"message": {"messageId": uid("m"), "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
        )
        .await
        .expect("alice's turn");
    let context = first["task"]["contextId"].as_str().expect("context").to_owned();
    for b in BINDINGS {
        let mut cmd = command("status", json!({}));
        cmd["message"]["contextId"] = json!(context);
        expect_error(bob.op(b, "SendMessage", cmd.clone()).await, -32602).assert_field("message.contextId");
        // Its owner may.
        let own = alice.op(b, "SendMessage", cmd).await.expect("alice's command");
        assert_eq!(own["message"]["contextId"], context.as_str(), "{own}");
    }
}
