//! The `openai` provider against a real Chat Completions server on
//! 127.0.0.1:0: streamed and whole answers, tool calls assembled from
//! fragments, the request body and headers the server receives, secrets.

use crate::model_support::*;
use agentd_runtime::model::{
    ChatMessage, ModelConfig, ModelError, ModelRequest, OpenAiProvider, SecretRef, ToolCall, ToolSpec, Usage,
};
use serde_json::json;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn streamed_text_arrives_in_order_and_usage_is_parsed() {
    let mock = Mock::start(|_, _| stream_of(&["Hel", "lo, ", "wor", "ld!"])).await;
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    let (result, deltas) = call(&p, &ask("hi")).await;
    let r = result.unwrap();
    assert_eq!(deltas, ["Hel", "lo, ", "wor", "ld!"]);
    assert_eq!(r.text, deltas.concat());
    assert_eq!(r.usage, Usage { input_tokens: 10, output_tokens: 4 });
    assert_eq!(r.finish_reason, "stop");
    assert!(r.tool_calls.is_empty());
    let body = &mock.received()[0].body;
    assert_eq!(body["stream"], json!(true));
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn deltas_reach_the_caller_before_the_answer_is_complete() {
    let events = vec![text("first "), text("second"), finish("stop"), done()];
    let mock = Mock::start(move |_, _| Reply::Sse {
        events: events.clone(),
        gap: Duration::from_millis(400),
        hang: false,
    })
    .await;
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    assert_eq!(first_delta_before_the_end(p, ask("hi"), "first ").await, "first second");
}

#[tokio::test]
async fn non_streamed_answer_is_one_delta() {
    let mock = Mock::start(|_, _| completion("whole answer")).await;
    let mut c = config(&[&mock.base]);
    c.http.stream = false;
    let p = OpenAiProvider::new(c).unwrap();
    let (result, deltas) = call(&p, &ask("hi")).await;
    let r = result.unwrap();
    assert_eq!(
        (r.text.as_str(), deltas.as_slice()),
        ("whole answer", ["whole answer".to_owned()].as_slice())
    );
    assert_eq!(r.usage, Usage { input_tokens: 7, output_tokens: 2 });
    let body = &mock.received()[0].body;
    assert!(body.get("stream").is_none() && body.get("stream_options").is_none(), "{body}");
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_still_understood() {
    let mock = Mock::start(|_, _| completion("not streamed")).await;
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    assert_eq!(call(&p, &ask("hi")).await.0.unwrap().text, "not streamed");
}

#[tokio::test]
async fn parallel_tool_calls_are_assembled_from_fragments() {
    let events = vec![
        text("Let me check. "),
        tool(0, Some("call_a"), Some("get_weather"), ""),
        tool(1, Some("call_b"), Some("get_"), "{\"ci"),
        tool(0, None, None, "{\"city\":"),
        tool(1, None, Some("time"), "ty\": \"Oslo\"}"),
        tool(0, None, None, " \"Paris\"}"),
        finish("tool_calls"),
        usage(30, 12),
        done(),
    ];
    let mock =
        Mock::start(move |_, _| Reply::Sse { events: events.clone(), gap: Duration::ZERO, hang: false })
            .await;
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    let (result, deltas) = call(&p, &ask("weather and time?")).await;
    let r = result.unwrap();
    assert_eq!(deltas, ["Let me check. "]);
    assert_eq!(r.finish_reason, "tool_calls");
    assert_eq!(
        r.tool_calls,
        [
            ToolCall {
                id: "call_a".into(),
                name: "get_weather".into(),
                arguments: "{\"city\": \"Paris\"}".into()
            },
            ToolCall {
                id: "call_b".into(),
                name: "get_time".into(),
                arguments: "{\"city\": \"Oslo\"}".into()
            },
        ]
    );
    assert_eq!(r.usage, Usage { input_tokens: 30, output_tokens: 12 });
}

#[tokio::test]
async fn non_streamed_tool_calls() {
    let mock = Mock::start(|_, _| Reply::Json {
        status: 200,
        body: json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":1}"}},
            {"id": "c2", "type": "function", "function": {"name": "lenient", "arguments": {"q": 2}}}
        ]}, "finish_reason": "tool_calls"}]}),
        headers: Vec::new(),
    })
    .await;
    let mut c = config(&[&mock.base]);
    c.http.stream = false;
    let (result, deltas) = call(&OpenAiProvider::new(c).unwrap(), &ask("q")).await;
    let r = result.unwrap();
    assert!(deltas.is_empty() && r.text.is_empty());
    assert_eq!(
        r.tool_calls[0],
        ToolCall { id: "c1".into(), name: "lookup".into(), arguments: "{\"q\":1}".into() }
    );
    assert_eq!(r.tool_calls[1].arguments, "{\"q\":2}");
    assert_eq!(r.usage, Usage::default());
}

/// The conversation a tool-using agent sends on its second model call.
fn conversation() -> ModelRequest {
    let call = ToolCall { id: "call_1".into(), name: "lookup".into(), arguments: "{\"q\":\"rust\"}".into() };
    ModelRequest {
        messages: vec![
            ChatMessage::system("You are terse."),
            ChatMessage::developer("Prefer tools."),
            ChatMessage::user("look up rust"),
            ChatMessage::assistant_with_tools("", vec![call]),
            ChatMessage::tool_result("call_1", "Rust is a language."),
            ChatMessage::user("<system-reminder source=\"ops\" id=\"r1\">be brief</system-reminder>"),
        ],
        tools: vec![ToolSpec {
            name: "lookup".into(),
            description: "Looks a word up.".into(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        }],
        max_output_tokens: Some(256),
    }
}

#[tokio::test]
async fn the_server_receives_roles_tool_results_tools_and_model() {
    let mock = Mock::start(|_, _| stream_of(&["ok"])).await;
    let p = OpenAiProvider::new(config(&[&mock.base])).unwrap();
    call(&p, &conversation()).await.0.unwrap();
    let got = &mock.received()[0];
    let body = &got.body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "developer", "content": "Prefer tools."},
            {"role": "user", "content": "look up rust"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{\"q\":\"rust\"}"}}
            ]},
            {"role": "tool", "content": "Rust is a language.", "tool_call_id": "call_1"},
            {"role": "user", "content": "<system-reminder source=\"ops\" id=\"r1\">be brief</system-reminder>"},
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": "lookup", "description": "Looks a word up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        }}])
    );
    assert_eq!(got.headers["content-type"], "application/json");
    assert!(got.headers.get("authorization").is_none(), "no key configured, no header");
}

const KEY_VAR: &str = "AGENTD_MODEL_TEST_KEY";

/// Environment variables cannot be set safely in a threaded test process,
/// so this test runs itself again in a child process that has the key.
#[tokio::test]
async fn api_key_from_env_is_sent_as_bearer_and_never_debug_printed() {
    let Ok(key) = std::env::var(KEY_VAR) else {
        let module = module_path!().split_once("::").map_or("", |(_, m)| m);
        let name = format!("{module}::api_key_from_env_is_sent_as_bearer_and_never_debug_printed");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", &name, "--nocapture"])
            .env(KEY_VAR, "sk-test-0123456789")
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "child failed:\n{report}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(report.contains("1 passed"), "the child ran the test:\n{report}");
        return;
    };
    let mock = Mock::start(|_, _| stream_of(&["ok"])).await;
    let mut c = config(&[&mock.base]);
    c.api_key = Some(SecretRef::parse(&format!("env:{KEY_VAR}")).unwrap());
    c.http.headers.insert("X-Org".into(), "acme".into());
    c.http.headers.insert("X-Secret".into(), format!("env:{KEY_VAR}"));
    let shown = format!("{c:?}");
    let p = OpenAiProvider::new(c).unwrap();
    let shown = format!("{shown}\n{p:?}\n{p:#?}");
    assert!(!shown.contains(&key), "{shown}");
    assert!(shown.contains(KEY_VAR), "the reference may be shown: {shown}");
    call(&p, &ask("hi")).await.0.unwrap();
    let headers = &mock.received()[0].headers;
    assert_eq!(headers["authorization"], format!("Bearer {key}"));
    assert_eq!(headers["x-org"], "acme");
    assert_eq!(headers["x-secret"], key.as_str());
}

#[tokio::test]
async fn api_key_from_file_and_refused_inline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("key");
    std::fs::write(&path, "sk-from-file-42\n").unwrap();
    let mock = Mock::start(|_, _| stream_of(&["ok"])).await;
    let yaml = format!(
        "kind: openai\nopenai:\n  endpoints: {}\n  model: m\n  api_key: file:{}\n",
        mock.base,
        path.display()
    );
    let cfg: ModelConfig = serde_yaml_ng::from_str(&yaml).unwrap();
    assert!(!format!("{cfg:?}").contains("sk-from-file-42"));
    let p = agentd_runtime::model::from_config(cfg).unwrap();
    let (tx, _rx) = mpsc::channel(16);
    p.complete(&ask("hi"), &tx, &CancellationToken::new()).await.unwrap();
    assert_eq!(mock.received()[0].headers["authorization"], "Bearer sk-from-file-42");

    let inline = "kind: openai\nopenai:\n  endpoints: http://x/v1\n  model: m\n  api_key: sk-inline-secret\n";
    let err = serde_yaml_ng::from_str::<ModelConfig>(inline).unwrap_err().to_string();
    assert!(err.contains("by reference") && !err.contains("sk-inline-secret"), "{err}");
    let missing = SecretRef::parse("env:AGENTD_MODEL_TEST_SURELY_UNSET").unwrap();
    let mut c = config(&["http://127.0.0.1:9/v1"]);
    c.api_key = Some(missing);
    assert!(matches!(OpenAiProvider::new(c), Err(ModelError::Config(m)) if m.contains("not set")));
}

#[tokio::test]
async fn config_from_yaml_with_a_comma_list_of_endpoints() {
    let yaml = "kind: openai\nopenai:\n  endpoints: \"http://a:1/v1, http://b:2/v1/\"\n  model: qwen\n  \
                timeout_secs: 1.5\n  max_retries: 4\n  backoff_ms: 20\n  max_backoff_ms: 900\n  stream: false\n";
    let cfg: ModelConfig = serde_yaml_ng::from_str(yaml).unwrap();
    let o = &cfg.openai;
    assert_eq!(o.endpoints, ["http://a:1/v1", "http://b:2/v1/"]);
    assert_eq!((o.http.timeout, o.http.max_retries, o.http.stream), (Duration::from_millis(1500), 4, false));
    assert_eq!(
        (o.http.backoff_base, o.http.max_backoff),
        (Duration::from_millis(20), Duration::from_millis(900))
    );
    assert!(agentd_runtime::model::from_config(cfg).is_ok());
    for (bad, why) in [
        ("kind: openai\n", "no endpoints"),
        ("kind: openai\nopenai: {endpoints: 'ftp://x', model: m}\n", "not http"),
        ("kind: openai\nopenai: {endpoints: 'http://x', model: ''}\n", "no model"),
    ] {
        let cfg: ModelConfig = serde_yaml_ng::from_str(bad).unwrap();
        match agentd_runtime::model::from_config(cfg) {
            Err(ModelError::Config(m)) => assert!(m.contains(why), "{bad}: {m}"),
            other => panic!("{bad}: {:?}", other.map(|p| p.name().to_owned())),
        }
    }
    assert!(serde_yaml_ng::from_str::<ModelConfig>("kind: openai\nopenai: {modle: x}\n").is_err());
    // A kind agentd does not have is refused when the configuration is read, naming the kinds.
    let e = serde_yaml_ng::from_str::<ModelConfig>("kind: claude\n").unwrap_err().to_string();
    assert!(e.contains("claude") && e.contains("echo") && e.contains("openai"), "{e}");
}
