//! The `scripted` model: steps replayed in order (text, deltas, tool calls,
//! errors), delay and cancel, exhaustion, recording, script files, and the
//! examples of `docs/models.md` run as written.

use agentd_runtime::model::{
    ChatMessage, ModelConfig, ModelError, ModelProvider, ModelRequest, ModelResponse, ScriptStep,
    ScriptedProvider, ToolCall, Usage, from_config,
};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

async fn call(p: &dyn ModelProvider, req: &ModelRequest) -> (Result<ModelResponse, ModelError>, Vec<String>) {
    let (tx, mut rx) = mpsc::channel(64);
    let r = p.complete(req, &tx, &CancellationToken::new()).await;
    drop(tx);
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    (r, deltas)
}

fn ask(q: &str) -> ModelRequest {
    ModelRequest { messages: vec![ChatMessage::system("sys"), ChatMessage::user(q)], ..Default::default() }
}

#[tokio::test]
async fn steps_replay_in_order_and_requests_are_recorded() {
    let steps = vec![
        ScriptStep::tool_call("lookup", json!({"q": "x", "n": 1})),
        ScriptStep { deltas: Some(vec!["a".into(), "b".into(), "c".into()]), ..Default::default() },
        ScriptStep::text("the answer is forty two"),
    ];
    let p = ScriptedProvider::from_steps(steps);
    assert_eq!(p.name(), "scripted");

    let (r, deltas) = call(&p, &ask("one")).await;
    let r = r.unwrap();
    assert!(deltas.is_empty() && r.text.is_empty());
    assert_eq!(
        r.tool_calls,
        [ToolCall { id: "call_1_1".into(), name: "lookup".into(), arguments: r#"{"q":"x","n":1}"#.into() }]
    );
    assert_eq!(r.finish_reason, "tool_calls");

    let (r, deltas) = call(&p, &ask("two")).await;
    assert_eq!((r.unwrap().text, deltas), ("abc".to_owned(), vec!["a".to_owned(), "b".into(), "c".into()]));

    let (r, deltas) = call(&p, &ask("three")).await;
    let r = r.unwrap();
    assert_eq!(r.text, "the answer is forty two");
    assert_eq!(deltas.concat(), r.text);
    assert!(deltas.len() > 1, "default chunking: {deltas:?}");
    assert_eq!((r.finish_reason.as_str(), r.usage), ("stop", Usage { input_tokens: 2, output_tokens: 5 }));

    let recorded = p.recorded();
    let asked: Vec<&str> = recorded.iter().map(|r| r.messages[1].content.as_str()).collect();
    assert_eq!(asked, ["one", "two", "three"]);
    assert_eq!(p.remaining(), 0);
}

#[tokio::test]
async fn an_exhausted_script_is_a_clear_error() {
    let p = ScriptedProvider::from_steps(vec![ScriptStep::text("only")]);
    call(&p, &ask("1")).await.0.unwrap();
    for n in [2, 3] {
        let err = call(&p, &ask("again")).await.0.unwrap_err();
        let ModelError::Unavailable(m) = &err else { panic!("{err:?}") };
        assert!(m.contains("1 step(s)") && m.contains(&format!("call {n}")), "{m}");
    }
    assert_eq!(p.recorded().len(), 3, "failed calls are recorded too");
}

#[tokio::test]
async fn an_error_step_streams_its_deltas_then_fails() {
    let step = ScriptStep {
        deltas: Some(vec!["par".into(), "tial".into()]),
        error: Some(agentd_runtime::model::ScriptError { status: 502, message: "upstream".into() }),
        ..Default::default()
    };
    let p = ScriptedProvider::from_steps(vec![step, ScriptStep::text("next")]);
    let (r, deltas) = call(&p, &ask("x")).await;
    assert_eq!(r.unwrap_err(), ModelError::Http { status: 502, message: "upstream".into() });
    assert_eq!(deltas, ["par", "tial"]);
    assert_eq!(call(&p, &ask("y")).await.0.unwrap().text, "next");
}

#[tokio::test]
async fn a_delay_can_be_cancelled() {
    let slow = ScriptStep { text: Some("a b c".into()), delay_ms: Some(400), ..Default::default() };
    let p = std::sync::Arc::new(ScriptedProvider::from_steps(vec![slow.clone(), slow]));

    let start = Instant::now();
    let (r, deltas) = call(p.as_ref(), &ask("x")).await;
    assert_eq!(r.unwrap().text, "a b c");
    assert_eq!(deltas.len(), 3);
    assert!(start.elapsed() >= Duration::from_millis(1100), "{:?}", start.elapsed());

    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::channel(8);
    let (p2, token) = (p.clone(), cancel.clone());
    let task = tokio::spawn(async move { p2.complete(&ask("y"), &tx, &token).await });
    assert_eq!(tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().as_deref(), Some("a "));
    cancel.cancel();
    let r = tokio::time::timeout(Duration::from_millis(500), task).await.expect("prompt").unwrap();
    assert_eq!(r.unwrap_err(), ModelError::Cancelled);
}

#[tokio::test]
async fn requests_are_appended_to_the_record_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let p =
        ScriptedProvider::from_steps(vec![ScriptStep::text("a"), ScriptStep::text("b")]).with_record_to(&log);
    let mut second = ask("two");
    second.messages.push(ChatMessage::assistant_with_tools(
        "",
        vec![ToolCall { id: "c".into(), name: "t".into(), arguments: "{}".into() }],
    ));
    second.messages.push(ChatMessage::tool_result("c", "done"));
    second.max_output_tokens = Some(9);
    call(&p, &ask("one")).await.0.unwrap();
    call(&p, &second).await.0.unwrap();
    let lines: Vec<ModelRequest> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines, [ask("one"), second]);
    assert_eq!(lines, p.recorded());
}

#[tokio::test]
async fn script_files_in_json_and_their_mistakes() {
    let dir = tempfile::tempdir().unwrap();
    let json_script = dir.path().join("s.json");
    std::fs::write(
        &json_script,
        r#"[{"text": "hi", "usage": {"input_tokens": 3, "output_tokens": 1}},
            {"tool_calls": [{"id": "x", "name": "raw", "arguments": "{not json"}], "finish_reason": "length"}]"#,
    )
    .unwrap();
    let p = ScriptedProvider::from_file(&json_script).unwrap();
    assert_eq!(call(&p, &ask("a")).await.0.unwrap().usage, Usage { input_tokens: 3, output_tokens: 1 });
    let r = call(&p, &ask("b")).await.0.unwrap();
    assert_eq!(r.tool_calls[0].arguments, "{not json");
    assert_eq!(r.finish_reason, "length");

    for (name, body, why) in [
        ("a.yaml", "- text: ab\n  deltas: [a, c]\n", "do not add up"),
        ("b.yaml", "- txt: typo\n", "unknown field"),
        ("c.yml", "- tool_calls: [{name: ''}]\n", "no name"),
        ("d.txt", "[]", ".yaml, .yml or .json"),
        ("e.json", "{\"steps\": []}", "s.json"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        let err = ScriptedProvider::from_file(&path).unwrap_err();
        let ModelError::Config(m) = &err else { panic!("{name}: {err:?}") };
        assert!(m.contains(why) || (why == "s.json" && m.contains("e.json")), "{name}: {m}");
    }
    let missing = ScriptedProvider::from_file(dir.path().join("nope.yaml")).unwrap_err();
    assert!(matches!(missing, ModelError::Config(m) if m.contains("cannot read")));
    let no_script: ModelConfig = serde_yaml_ng::from_str("kind: scripted").unwrap();
    assert!(matches!(from_config(no_script), Err(ModelError::Config(m)) if m.contains("script")));
}

/// The YAML block after `<!-- tested: NAME -->` in docs/models.md.
fn doc_block(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/models.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let marker = format!("<!-- tested: {name} -->");
    let after = &doc[doc.find(&marker).unwrap_or_else(|| panic!("{marker} missing")) + marker.len()..];
    let body = &after[after.find("```yaml\n").unwrap() + 8..];
    body[..body.find("```").unwrap()].to_owned()
}

pub(crate) fn doc_config(name: &str) -> ModelConfig {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&doc_block(name)).unwrap();
    serde_yaml_ng::from_value(v["model"].clone()).unwrap()
}

#[tokio::test]
async fn the_documented_scripted_example_runs_as_described() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("demo-script.yaml"), doc_block("scripted-script")).unwrap();
    let mut cfg = doc_config("scripted-config");
    assert_eq!(cfg.kind, agentd_runtime::model::ModelKind::Scripted);
    cfg.script = cfg.script.map(|s| dir.path().join(s));
    cfg.record_to = cfg.record_to.map(|s| dir.path().join(s));
    let p = from_config(cfg).unwrap();

    let r = call(p.as_ref(), &ask("what is agentd?")).await.0.unwrap();
    assert_eq!(r.text, "Let me look that up.");
    assert_eq!(
        r.tool_calls,
        [ToolCall { id: "call_1_1".into(), name: "lookup".into(), arguments: r#"{"q":"agentd"}"#.into() }]
    );
    let (r, deltas) = call(p.as_ref(), &ask("go on")).await;
    let r = r.unwrap();
    assert_eq!(deltas, ["agentd is ", "a daemon ", "that serves an agent over A2A."]);
    assert_eq!(r.usage, Usage { input_tokens: 120, output_tokens: 9 });
    assert_eq!(
        call(p.as_ref(), &ask("again")).await.0.unwrap_err(),
        ModelError::Http { status: 503, message: "the demo model is tired".into() }
    );
    assert!(matches!(call(p.as_ref(), &ask("more")).await.0, Err(ModelError::Unavailable(_))));
    let recorded = std::fs::read_to_string(dir.path().join("requests.jsonl")).unwrap();
    assert_eq!(recorded.lines().count(), 4);
}

#[test]
fn the_documented_openai_configs_parse() {
    let local = doc_config("openai-config");
    assert_eq!(local.openai.endpoints, ["http://127.0.0.1:8080/v1", "http://10.0.0.7:8080/v1"]);
    assert_eq!(local.openai.http.timeout, Duration::from_secs(120));
    assert!(from_config(local).is_ok());
    let hosted = doc_config("openai-hosted-config");
    assert_eq!(hosted.openai.api_key.as_ref().map(|k| k.reference()), Some("env:OPENAI_API_KEY"));
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        let Err(ModelError::Config(m)) = from_config(hosted) else { panic!("an unset key is refused") };
        assert!(m.contains("OPENAI_API_KEY is not set"), "{m}");
    }
    let defaults: ModelConfig = serde_yaml_ng::from_str("{}").unwrap();
    assert_eq!(defaults.kind, agentd_runtime::model::ModelKind::Echo);
}
