//! Workflow runs end to end (`docs/workflows.md`): the real daemon with the
//! `scripted` model. Runs reach COMPLETED with their result artifact, skip
//! and join steps as their guards and switches say, fail naming the step,
//! wait at human gates whose answers are checked against their schema and
//! reach the next step typed, and resume after `kill -9`.

use crate::common::scripted::*;
use crate::common::workflow::*;
use crate::common::*;
use serde_json::{Value, json};

const BRANCHES: &str = r#"
inputs:
  schema:
    type: object
    properties: {size: {type: integer, minimum: 0}, who: {type: string}}
    required: [size]
    additionalProperties: false
steps:
  start: {kind: assign, values: {double: "{{inputs.size}}", greeting: "hello {{inputs.who}}"}}
  route:
    kind: switch
    depends_on: start
    cases:
      - when: inputs.size > 10
        steps: [big]
    default: [small]
  big: {kind: assign, values: {label: big}}
  small: {kind: assign, values: {label: small}}
  left: {kind: assign, depends_on: start, values: {side: left}}
  right: {kind: assign, depends_on: start, values: {side: right}, when: "inputs.size != 3"}
  join: {kind: parallel, branches: [left, right]}
  done:
    kind: finish
    depends_on: [big, small, join]
    output:
      label: "{{steps.big.output.label}}{{steps.small.output.label}}"
      sides: "{{steps.join.output}}"
      start: "{{steps.start.output}}"
"#;

#[tokio::test]
async fn a_run_branches_joins_and_completes_with_its_result() {
    let (s, _doc) = daemon(Some(&doc(&[("branches", BRANCHES)], "operator")), json!([]), false);
    let t = run(&s.d, "branches", json!({"size": 12, "who": "ann"})).await;
    assert_eq!(task_state(&t), "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(
        result_part(&t)["data"],
        json!({
            "label": "big",
            "sides": {"left": {"side": "left"}, "right": {"side": "right"}},
            "start": {"double": 12, "greeting": "hello ann"},
        }),
        "typed values, the switch's arm, both branches joined"
    );
    let st = status(&s.d, &id(&t)).await;
    assert_eq!(st["steps"]["small"]["status"], "skipped", "{st}");
    assert!(st["runId"].as_str().unwrap().starts_with("branches-"), "{st}");
    // Looked up by run id too.
    let by_run = status(&s.d, st["runId"].as_str().unwrap()).await;
    assert_eq!(by_run["taskId"], t["id"]);

    // The other arm, and a guard that skips a branch: the join still runs.
    let t = run(&s.d, "branches", json!({"size": 3})).await;
    assert_eq!(task_state(&t), "TASK_STATE_COMPLETED", "{t}");
    let out = &result_part(&t)["data"];
    assert_eq!(out["label"], "small");
    assert_eq!(out["sides"], json!({"left": {"side": "left"}, "right": null}));
    let st = status(&s.d, &id(&t)).await;
    assert_eq!(st["steps"]["big"]["status"], "skipped");
    assert_eq!(st["steps"]["right"]["status"], "skipped");
}

#[tokio::test]
async fn inputs_and_unknown_workflows_are_refused_naming_the_field() {
    let (s, _doc) = daemon(Some(&doc(&[("branches", BRANCHES)], "operator")), json!([]), false);
    let bad = command("workflow.run", json!({"workflow": "branches", "inputs": {"size": -1, "extra": 1}}));
    let e = expect_error(s.d.op(B, "SendMessage", bad).await, -32602);
    e.assert_field("message.parts[0].data.agentd.inputs.size");
    e.assert_field("message.parts[0].data.agentd.inputs.extra");
    let missing = command("workflow.run", json!({"workflow": "branches"}));
    expect_error(s.d.op(B, "SendMessage", missing).await, -32602)
        .assert_field("message.parts[0].data.agentd.inputs.size");
    let unknown = command("workflow.run", json!({"workflow": "nope"}));
    expect_error(s.d.op(B, "SendMessage", unknown).await, -32602)
        .assert_field("message.parts[0].data.agentd.workflow");
    let closed = command("workflow.run", json!({"workflow": "branches", "input": {}}));
    expect_error(s.d.op(B, "SendMessage", closed).await, -32602)
        .assert_field("message.parts[0].data.agentd.input");
    let page = s.d.ok(B, "ListTasks", json!({})).await;
    assert!(page["tasks"].as_array().unwrap().is_empty(), "nothing started: {page}");
}

/// What a client needs to start a run and to draw it: each workflow with
/// its inputs schema in the command extension's card params, and every
/// step of the run with its dependencies in `workflow.status`.
#[tokio::test]
async fn the_card_lists_each_inputs_schema_and_status_has_the_step_graph() {
    let (s, _doc) = daemon(Some(&doc(&[("branches", BRANCHES)], "operator")), json!([]), false);
    let card: Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", s.d.url)).await.unwrap().json().await.unwrap();
    let command = card["capabilities"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["uri"] == "https://agentd.dev/a2a/ext/command")
        .expect("the command extension is declared");
    let listed = command["params"]["workflows"].as_array().unwrap_or_else(|| panic!("{command}"));
    let branches = listed.iter().find(|w| w["name"] == "branches").expect("branches is listed");
    assert_eq!(branches["inputs"]["required"], json!(["size"]), "{branches}");
    assert_eq!(branches["inputs"]["properties"]["size"], json!({"type": "integer", "minimum": 0}));

    let t = run(&s.d, "branches", json!({"size": 12})).await;
    let st = status(&s.d, &id(&t)).await;
    let plan = st["plan"].as_array().unwrap_or_else(|| panic!("{st}"));
    let ids: Vec<&str> = plan.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["big", "done", "join", "left", "right", "route", "small", "start"],
        "every step, in id order"
    );
    let step = |id: &str| plan.iter().find(|s| s["id"] == id).unwrap().clone();
    let deps = |id: &str| {
        let mut d: Vec<String> = step(id)["dependsOn"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        d.sort();
        d
    };
    assert_eq!(step("route")["kind"], "switch");
    assert_eq!(step("join")["kind"], "parallel");
    assert_eq!(deps("start"), Vec::<String>::new());
    assert_eq!(deps("big"), ["route"], "a switch arm depends on its switch");
    assert_eq!(deps("join"), ["left", "right"], "a join depends on its branches");
    assert_eq!(deps("done"), ["big", "join", "small"]);
}

const FAILING: &str = r#"
steps:
  tolerant: {kind: a2a.delegate, peer: elsewhere, message: "hi", on_error: continue, retry: 1}
  strict: {kind: a2a.delegate, peer: elsewhere, message: "hi", depends_on: tolerant}
  done: {kind: finish, depends_on: strict}
"#;

#[tokio::test]
async fn a_failing_step_fails_the_run_naming_it_unless_it_may_continue() {
    let (s, _doc) = daemon(Some(&doc(&[("failing", FAILING)], "operator")), json!([]), false);
    let t = run(&s.d, "failing", json!({})).await;
    assert_eq!(task_state(&t), "TASK_STATE_FAILED", "{t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.starts_with("step strict (a2a.delegate) failed:") && why.contains("a2a.peers"), "{why}");
    let st = status(&s.d, &id(&t)).await;
    assert_eq!(st["steps"]["tolerant"]["status"], "done", "{st}");
    assert_eq!(st["steps"]["tolerant"]["attempts"], 1);
    assert!(
        st["steps"]["tolerant"]["output"]["error"].as_str().unwrap().contains("after 2 attempts"),
        "{st}"
    );
    assert_eq!(st["steps"]["strict"]["status"], "failed");
    assert_eq!(st["steps"].get("done"), None, "never reached");
}

#[tokio::test]
async fn the_demo_gate_takes_a_typed_answer_to_the_next_step() {
    let (s, _doc) = daemon(None, json!([{"text": "They approved: ship it."}]), false);
    let t = run(&s.d, "demo", json!({})).await;
    assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{t}");
    assert_eq!(t["status"]["message"]["role"], "ROLE_AGENT");
    let card: Value =
        reqwest::get(format!("{}/.well-known/agent-card.json", s.d.url)).await.unwrap().json().await.unwrap();
    let skill = card["skills"].as_array().unwrap().iter().find(|k| k["id"] == "workflow:demo");
    assert!(skill.is_some_and(|k| k["description"].as_str().unwrap().contains("workflow.run")), "{card}");
    assert!(t["status"]["message"]["parts"][0]["text"].as_str().unwrap().contains("Approve the demo run?"));
    let task_id = id(&t);
    let st = status(&s.d, &task_id).await;
    assert_eq!(st["gate"]["step"], "approve", "{st}");
    assert_eq!(st["gate"]["channel"], "@channel/demo", "as the built-in document writes it: {st}");
    let activate = [("A2A-Extensions", crate::common::annotations::URI)];
    let (_, got) = s.d.op_with(Binding::JsonRpc, "GetTask", json!({"id": task_id}), &activate).await;
    let got = got.unwrap_or_else(|e| panic!("GetTask: {}", e.error));
    assert_eq!(got["metadata"][crate::common::annotations::URI]["askChannel"], "@channel/demo", "{got}");
    assert_eq!(st["gate"]["askSchema"]["required"], json!(["approve"]));

    // Invalid answers: refused, listing the violations; nothing changes.
    let e =
        expect_error(answer(&s.d, &task_id, json!({"data": {"approve": "yes", "extra": 1}})).await, -32602);
    e.assert_field("answer.approve").assert_field("answer.extra");
    let e = expect_error(answer(&s.d, &task_id, json!({"text": "sure"})).await, -32602);
    e.assert_field("message.parts");
    let now = s.d.ok(B, "GetTask", json!({"id": task_id})).await;
    assert_eq!(task_state(&now), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(
        now["history"].as_array().unwrap().len(),
        t["history"].as_array().unwrap().len(),
        "no answer kept"
    );
    assert_eq!(s.recorded().len(), 0, "the run did not go on");

    // A valid answer (as text the schema parses) resumes the run.
    let done = task(
        &answer(&s.d, &task_id, json!({"text": "{\"approve\": true, \"note\": \"looks good\"}"}))
            .await
            .unwrap(),
    );
    let done = if task_state(&done) == "TASK_STATE_COMPLETED" {
        done
    } else {
        wait_state(&s.d, &task_id, "TASK_STATE_COMPLETED", 20).await
    };
    assert_eq!(result_part(&done)["text"], "They approved: ship it.");
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 1);
    let prompt =
        reqs[0]["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(
        prompt.contains(r#"answered {"approve":true,"note":"looks good"}"#),
        "the validated value: {prompt}"
    );
    let st = status(&s.d, &task_id).await;
    assert_eq!(st["steps"]["approve"]["output"], json!({"approve": true, "note": "looks good"}));
    assert_eq!(st["gate"], Value::Null);
    // First answer wins: the run no longer waits.
    expect_error(answer(&s.d, &task_id, json!({"data": {"approve": false}})).await, -32004);
}

/// The example document of `docs/workflows.md`.
fn docs_example() -> String {
    let page = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/workflows.md"));
    let start = page.find("<!-- example document -->\n```markdown\n").expect("the example") + 37;
    let end = start + page[start..].find("\n```\n").expect("its end");
    page[start..end].to_owned()
}

#[tokio::test]
async fn the_example_of_docs_workflows_md_runs() {
    let (s, _doc) = daemon(Some(&docs_example()), json!([{"text": "Faster builds."}]), false);
    let bad = command("workflow.run", json!({"workflow": "release", "inputs": {"version": "1.0"}}));
    expect_error(s.d.op(B, "SendMessage", bad).await, -32602)
        .assert_field("message.parts[0].data.agentd.inputs.version");
    let t = run(&s.d, "release", json!({"version": "v2"})).await;
    assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{t}");
    assert_eq!(t["status"]["message"]["parts"][0]["text"], "Publish v2 with these notes? Faster builds.");
    answer(&s.d, &id(&t), json!({"data": {"approve": false, "note": "not on a Friday"}})).await.unwrap();
    let done = wait_state(&s.d, &id(&t), "TASK_STATE_COMPLETED", 20).await;
    assert_eq!(
        result_part(&done)["data"],
        json!({"version": "v2", "publish": null, "shelve": {"published": null, "why": "not on a Friday"}})
    );
}

const LIMITED: &str = r#"
limits: {steps: 2}
steps:
  a: {kind: assign, values: 1}
  b: {kind: assign, values: 2, depends_on: a}
  c: {kind: assign, values: 3, depends_on: b}
  done: {kind: finish, depends_on: c}
"#;

const SLOW: &str = r#"
limits: {deadline: 300ms, tokens: 50}
steps:
  work: {kind: agent, prompt: "{{inputs.task}}"}
  done: {kind: finish, depends_on: work, output: "{{steps.work.output}}"}
"#;

#[tokio::test]
async fn limits_stop_a_run_with_a_reason() {
    let steps = json!([
        {"text": "late", "delay_ms": 5000},
        {"text": "costly", "usage": {"input_tokens": 100, "output_tokens": 1}},
    ]);
    let (s, _doc) = daemon(Some(&doc(&[("limited", LIMITED), ("slow", SLOW)], "operator")), steps, false);
    let t = run(&s.d, "limited", json!({})).await;
    assert_eq!(task_state(&t), "TASK_STATE_FAILED", "{t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert_eq!(why, "the run reached its limit of 2 step executions (limits.steps) before steps c");

    let t = run(&s.d, "slow", json!({"task": "take your time"})).await;
    assert_eq!(task_state(&t), "TASK_STATE_FAILED", "{t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert_eq!(why, "the run passed its deadline of 300ms (limits.deadline)");
    let page = s.d.ok(B, "ListTasks", json!({})).await;
    let child = page["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] != t["id"] && task_state(x) != "TASK_STATE_FAILED");
    let child = id(child.unwrap_or_else(|| panic!("the step's subagent: {page}")));
    wait_state(&s.d, &child, "TASK_STATE_CANCELED", 10).await;

    let t = run(&s.d, "slow", json!({"task": "spend"})).await;
    assert_eq!(task_state(&t), "TASK_STATE_FAILED", "{t}");
    let why = t["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.starts_with("step work (agent) failed:") && why.contains("over its limit of 50"), "{why}");
}

const SIGNALED: &str = r#"
steps:
  ask: {kind: human, question: "Ready?", to: "@human/approver"}
  done: {kind: finish, depends_on: ask, output: {answer: "{{steps.ask.output}}", go: "{{run.signals.go}}"}}
"#;

#[tokio::test]
async fn a_signal_reaches_the_steps_after_it() {
    let (s, _doc) = daemon(Some(&doc(&[("signaled", SIGNALED)], "operator")), json!([]), false);
    let t = id(&run(&s.d, "signaled", json!({})).await);
    let r =
        read_op(&s.d, B, "workflow.signal", json!({"run": t, "signal": "go", "data": {"speed": 3}})).await;
    assert_eq!(r["accepted"], true, "{r}");
    let bad = command("workflow.signal", json!({"run": t, "signal": "Not A Name"}));
    expect_error(s.d.op(B, "SendMessage", bad).await, -32602)
        .assert_field("message.parts[0].data.agentd.signal");
    answer(&s.d, &t, json!({"text": "yes"})).await.unwrap();
    let done = wait_state(&s.d, &t, "TASK_STATE_COMPLETED", 20).await;
    assert_eq!(result_part(&done)["data"], json!({"answer": "yes", "go": {"speed": 3}}));
    let late = command("workflow.signal", json!({"run": t, "signal": "go"}));
    expect_error(s.d.op(B, "SendMessage", late).await, -32004);
}

#[tokio::test]
async fn a_streamed_run_shows_each_state_and_its_result() {
    let (s, _doc) = daemon(None, json!([{"text": "Declined, noted."}, {"text": "Declined, noted."}]), false);
    for b in BINDINGS {
        let mut ev =
            s.d.stream(b, "SendStreamingMessage", command("workflow.run", json!({"workflow": "demo"}))).await;
        let events = ev.collect().await;
        let states: Vec<&str> = events.iter().filter_map(state).collect();
        assert_eq!(
            states.last(),
            Some(&"TASK_STATE_INPUT_REQUIRED"),
            "{b:?}: the stream ends at the gate: {events:?}"
        );
        let task_id = events[0]["task"]["id"].as_str().unwrap().to_owned();
        let answer = json!({"message": {"messageId": uid("a"), "role": "ROLE_USER", "taskId": task_id,
            "parts": [{"data": {"approve": false}}]}});
        let events = s.d.stream(b, "SendStreamingMessage", answer).await.collect().await;
        let states: Vec<&str> = events.iter().filter_map(state).collect();
        assert_eq!(states.first(), Some(&"TASK_STATE_WORKING"), "{b:?}: {events:?}");
        assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{b:?}: {events:?}");
        let result = events.iter().find(|e| kind(e) == "artifactUpdate").expect("the result artifact");
        assert_eq!(result["artifactUpdate"]["artifact"]["name"], "result");
        assert_eq!(result["artifactUpdate"]["artifact"]["parts"][0]["text"], "Declined, noted.");
    }
}

const HELPERS: &str = r#"
steps:
  research:
    kind: subagent
    instruction: "You research {{inputs.topic}}."
    input: "Find one fact."
    retry: {max: 1, backoff: 10ms}
  write:
    kind: agent
    depends_on: research
    prompt: "Write it up: {{steps.research.output}}"
  done: {kind: finish, depends_on: write, output: {fact: "{{steps.research.output}}", text: "{{steps.write.output}}"}}
"#;

#[tokio::test]
async fn subagent_and_agent_steps_get_their_instruction_and_a_failed_attempt_is_retried() {
    let steps = json!([
        {"error": {"status": 503, "message": "busy"}},
        {"text": "Owls can rotate their heads 270 degrees."},
        {"text": "Owls turn their heads far."},
    ]);
    let (s, _doc) = daemon(Some(&doc(&[("helpers", HELPERS)], "operator")), steps, false);
    let t = run(&s.d, "helpers", json!({"topic": "owls"})).await;
    assert_eq!(task_state(&t), "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(
        result_part(&t)["data"],
        json!({"fact": "Owls can rotate their heads 270 degrees.", "text": "Owls turn their heads far."})
    );
    let reqs = s.recorded();
    assert_eq!(reqs.len(), 3, "a failed attempt, the retry, the agent step");
    for r in &reqs[..2] {
        assert_eq!(r["messages"][0], json!({"role": "system", "content": "You research owls."}));
        assert_eq!(r["messages"][1], json!({"role": "user", "content": "Find one fact."}));
    }
    let system = reqs[2]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("You run workflows."), "the agent's own instruction: {system}");
    assert_eq!(reqs[2]["messages"][1]["content"], "Write it up: Owls can rotate their heads 270 degrees.");
    let st = status(&s.d, &id(&t)).await;
    assert_eq!(st["steps"]["research"]["status"], "done", "{st}");
}
