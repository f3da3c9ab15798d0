//! The `anthropic` provider against a real Messages API server on
//! 127.0.0.1:0: streamed and whole answers, the tool loop (tool_use in,
//! tool_result back by id), where the system prompt goes and how roles are
//! merged, retries, failover over endpoints and models, stream errors, the
//! key by reference and the configuration.

use crate::anthropic_support::*;
use crate::model_support::{
    Mock, Reply, call, dead_endpoint, fast_http, first_delta_before_the_end, timed_call,
    waited_for_retry_after,
};
use agentd_runtime::model::{
    AnthropicConfig, AnthropicProvider, ChatMessage, HttpSettings, ModelConfig, ModelError, ModelProvider,
    ModelRequest, SecretRef, ToolCall, ToolSpec, Usage, from_config,
};
use serde_json::{Value, json};
use std::time::Duration;

fn ask(q: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![ChatMessage::system("be terse"), ChatMessage::user(q)],
        ..Default::default()
    }
}

fn provider(mock: &Mock) -> AnthropicProvider {
    AnthropicProvider::new(anthropic_config(&[&mock.root])).unwrap()
}

fn lookup_tool() -> ToolSpec {
    ToolSpec {
        name: "lookup".into(),
        description: "Looks a word up.".into(),
        parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
    }
}

#[tokio::test]
async fn a_plain_text_reply_streams_and_the_request_is_a_messages_request() {
    let mock = Mock::start(|_, _| stream_text(&["Hel", "lo, ", "world"])).await;
    let p = provider(&mock);
    let (result, deltas) = call(&p, &ask("hi")).await;
    let r = result.unwrap();
    assert_eq!(deltas, ["Hel", "lo, ", "world"]);
    assert_eq!(r.text, "Hello, world");
    assert_eq!(r.usage, Usage { input_tokens: 12, output_tokens: 3 });
    assert_eq!(r.finish_reason, "end_turn");
    assert!(r.tool_calls.is_empty());

    let got = &mock.received()[0];
    assert_eq!(got.path, "/v1/messages");
    assert_eq!(got.headers["anthropic-version"], "2023-06-01");
    assert_eq!(got.headers["content-type"], "application/json");
    assert!(got.headers.get("x-api-key").is_none() && got.headers.get("authorization").is_none());
    assert_eq!(
        got.body,
        json!({
            "model": "claude-test",
            "max_tokens": 4096,
            "system": "be terse",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "stream": true,
        })
    );
}

#[tokio::test]
async fn streamed_deltas_reach_the_caller_before_the_answer_is_complete() {
    let mock = Mock::start(|_, _| slow(stream_text(&["first ", "second"]), Duration::from_millis(300))).await;
    assert_eq!(first_delta_before_the_end(provider(&mock), ask("hi"), "first ").await, "first second");
}

#[tokio::test]
async fn a_non_streamed_message_is_one_delta_and_its_tool_use_a_call() {
    let mock = Mock::start(|_, _| {
        message(
            json!([{"type": "text", "text": "Checking."},
                   {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"q": "rust"}}]),
            "tool_use",
        )
    })
    .await;
    let mut c = anthropic_config(&[&mock.root]);
    c.http.stream = false;
    let (result, deltas) = call(&AnthropicProvider::new(c).unwrap(), &ask("q")).await;
    let r = result.unwrap();
    assert_eq!(deltas, ["Checking."]);
    assert_eq!(
        r.tool_calls,
        [ToolCall { id: "toolu_9".into(), name: "lookup".into(), arguments: r#"{"q":"rust"}"#.into() }]
    );
    assert_eq!(
        (r.finish_reason.as_str(), r.usage),
        ("tool_use", Usage { input_tokens: 7, output_tokens: 2 })
    );
    let body = &mock.received()[0].body;
    assert!(body.get("stream").is_none(), "{body}");
}

/// The tool loop as the agent loop runs it: the model asks for a tool
/// (its input streamed in pieces), the result goes back as a user-role
/// `tool_result` naming the `tool_use` id, and the model answers.
#[tokio::test]
async fn a_tool_loop_sends_the_result_back_under_the_tool_use_id() {
    let mock = Mock::start(|n, _| match n {
        0 => stream_tool_use("Let me look. ", "toolu_01A", "lookup", &["{\"q\":", " \"rust\"}"]),
        _ => stream_text(&["Rust is a language."]),
    })
    .await;
    let p = provider(&mock);
    let mut req = ask("what is rust?");
    req.tools = vec![lookup_tool()];
    let (first, deltas) = call(&p, &req).await;
    let first = first.unwrap();
    assert_eq!(deltas, ["Let me look. "]);
    assert_eq!(first.finish_reason, "tool_use");
    assert_eq!(first.usage, Usage { input_tokens: 20, output_tokens: 9 });
    assert_eq!(
        first.tool_calls,
        [ToolCall { id: "toolu_01A".into(), name: "lookup".into(), arguments: "{\"q\": \"rust\"}".into() }]
    );

    req.messages.push(ChatMessage::assistant_with_tools(first.text, first.tool_calls.clone()));
    req.messages.push(ChatMessage::tool_result(&first.tool_calls[0].id, "A systems language."));
    let (last, _) = call(&p, &req).await;
    assert_eq!(last.unwrap().text, "Rust is a language.");

    let sent = &mock.received()[1].body;
    assert_eq!(
        sent["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "what is rust?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me look. "},
                {"type": "tool_use", "id": "toolu_01A", "name": "lookup", "input": {"q": "rust"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A", "content": "A systems language."},
            ]},
        ])
    );
    assert_eq!(
        sent["tools"],
        json!([{"name": "lookup", "description": "Looks a word up.", "input_schema": lookup_tool().parameters}])
    );
}

#[tokio::test]
async fn the_system_prompt_is_top_level_and_same_role_messages_are_merged() {
    let mock = Mock::start(|_, _| stream_text(&["ok"])).await;
    let calls = vec![
        ToolCall { id: "toolu_a".into(), name: "lookup".into(), arguments: "{\"q\":\"a\"}".into() },
        ToolCall { id: "toolu_b".into(), name: "lookup".into(), arguments: "not json".into() },
    ];
    let req = ModelRequest {
        messages: vec![
            ChatMessage::system("You are terse."),
            ChatMessage::developer("Prefer tools."),
            ChatMessage::user("look up a and b"),
            ChatMessage::user("(steering) quickly"),
            ChatMessage::assistant_with_tools("", calls),
            ChatMessage::tool_result("toolu_a", "found a"),
            ChatMessage::tool_error("toolu_b", "error: the arguments are not valid JSON"),
            ChatMessage::user("<system-reminder source=\"ops\" id=\"r1\">be brief</system-reminder>"),
        ],
        tools: vec![lookup_tool()],
        max_output_tokens: Some(256),
    };
    call(&provider(&mock), &req).await.0.unwrap();
    let body = &mock.received()[0].body;
    assert_eq!(body["system"], "You are terse.\n\nPrefer tools.");
    assert_eq!(body["max_tokens"], 256, "the loop's cap wins over the configured default");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "look up a and b"},
                {"type": "text", "text": "(steering) quickly"},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_a", "name": "lookup", "input": {"q": "a"}},
                {"type": "tool_use", "id": "toolu_b", "name": "lookup", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "found a"},
                {"type": "tool_result", "tool_use_id": "toolu_b",
                 "content": "error: the arguments are not valid JSON", "is_error": true},
                {"type": "text", "text": "<system-reminder source=\"ops\" id=\"r1\">be brief</system-reminder>"},
            ]},
        ])
    );
    assert!(!provider(&mock).honours_role_hints(), "reminders stay in the user slot");
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after() {
    let rate_limited = api_error(429, "rate_limit_error", "slow down", vec![("retry-after", "1".into())]);
    let replies =
        std::sync::Mutex::new(vec![rate_limited, api_error(529, "overloaded_error", "Overloaded", vec![])]);
    let mock =
        Mock::start(move |_, _| replies.lock().unwrap().pop().unwrap_or_else(|| stream_text(&["ok"]))).await;
    let http = HttpSettings { max_backoff: Duration::from_secs(5), ..fast_http() };
    let p = AnthropicProvider::new(AnthropicConfig { http, ..anthropic_config(&[&mock.root]) }).unwrap();
    let (result, waited) = timed_call(&p, &ask("hi")).await;
    assert_eq!(
        (result.unwrap().text.as_str(), mock.hits()),
        ("ok", 3),
        "529 (overloaded), 429, then the answer"
    );
    waited_for_retry_after(waited);
}

#[tokio::test]
async fn a_failing_endpoint_fails_over_to_the_second() {
    let a = Mock::start(|_, _| api_error(500, "api_error", "boom", vec![])).await;
    let b = Mock::start(|_, _| stream_text(&["from b"])).await;
    let mut c = anthropic_config(&[&a.root, &b.root]);
    c.http.max_retries = 1;
    let (result, deltas) = call(&AnthropicProvider::new(c).unwrap(), &ask("hi")).await;
    assert_eq!(
        (result.unwrap().text.as_str(), deltas.as_slice()),
        ("from b", ["from b".to_owned()].as_slice())
    );
    assert_eq!((a.hits(), b.hits()), (2, 1), "1 try + 1 retry on A, then B");
    assert_eq!(a.received()[1].body, b.received()[0].body, "the same request everywhere");

    let dead = dead_endpoint().await.trim_end_matches("/v1").to_owned();
    let mut c = anthropic_config(&[&dead, &b.root]);
    c.http.max_retries = 0;
    assert_eq!(call(&AnthropicProvider::new(c).unwrap(), &ask("hi")).await.0.unwrap().text, "from b");
}

#[tokio::test]
async fn an_overloaded_model_fails_over_to_the_fallback_model() {
    let mock = Mock::start(|_, r| match r.body["model"].as_str() {
        Some("claude-big") => api_error(529, "overloaded_error", "Overloaded", vec![]),
        _ => stream_text(&["from the fallback"]),
    })
    .await;
    let mut c = anthropic_config(&[&mock.root]);
    c.model = "claude-big".into();
    c.fallback_models = vec!["claude-small".into()];
    c.http.max_retries = 1;
    let r = call(&AnthropicProvider::new(c).unwrap(), &ask("hi")).await.0.unwrap();
    assert_eq!(r.text, "from the fallback");
    let models: Vec<Value> = mock.received().iter().map(|r| r.body["model"].clone()).collect();
    assert_eq!(models, ["claude-big", "claude-big", "claude-small"]);
}

#[tokio::test]
async fn a_400_is_surfaced_with_the_servers_message_and_not_retried() {
    let a =
        Mock::start(|_, _| api_error(400, "invalid_request_error", "max_tokens: too large", vec![])).await;
    let b = Mock::start(|_, _| stream_text(&["never"])).await;
    let err = call(&AnthropicProvider::new(anthropic_config(&[&a.root, &b.root])).unwrap(), &ask("hi"))
        .await
        .0
        .unwrap_err();
    assert_eq!(err, ModelError::Http { status: 400, message: "max_tokens: too large".into() });
    assert_eq!((a.hits(), b.hits()), (1, 0));
}

#[tokio::test]
async fn an_error_event_mid_stream_is_a_clear_error() {
    let overloaded =
        || event(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    // After text reached the caller: final, with the server's words.
    let mock = Mock::start(move |_, _| {
        let mut pieces = vec![message_start(5)];
        pieces.extend(text_block(0, &["partial "]).into_iter().take(2));
        pieces.push(overloaded());
        Reply::SseRaw(pieces)
    })
    .await;
    let (result, deltas) = call(&provider(&mock), &ask("hi")).await;
    let err = result.unwrap_err();
    assert_eq!(deltas, ["partial "]);
    assert_eq!(mock.hits(), 1, "text was shown: no second attempt");
    assert_eq!(
        err,
        ModelError::Http {
            status: 529,
            message: "Overloaded (overloaded_error, reported mid-stream)".into()
        }
    );
    assert!(err.to_string().contains("Overloaded (overloaded_error, reported mid-stream)"), "{err}");

    // Before any text: retried like the 529 it stands for.
    let mock = Mock::start(move |n, _| match n {
        0 => Reply::SseRaw(vec![message_start(5), overloaded()]),
        _ => stream_text(&["second try"]),
    })
    .await;
    assert_eq!(call(&provider(&mock), &ask("hi")).await.0.unwrap().text, "second try");
    assert_eq!(mock.hits(), 2);

    // An error the API does not ask to retry.
    let mock = Mock::start(|_, _| {
        Reply::SseRaw(vec![event(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}),
        )])
    })
    .await;
    let err = call(&provider(&mock), &ask("hi")).await.0.unwrap_err();
    assert!(
        matches!(&err, ModelError::Unavailable(m) if m.contains("mid-stream") && m.contains("bad")),
        "{err}"
    );
    assert_eq!(mock.hits(), 1);
}

#[tokio::test]
async fn a_stream_cut_before_message_stop_is_retried_only_when_nothing_was_shown() {
    let mock = Mock::start(|n, _| match n {
        0 => Reply::SseRaw(vec![message_start(5)]),
        _ => stream_text(&["whole"]),
    })
    .await;
    assert_eq!(call(&provider(&mock), &ask("hi")).await.0.unwrap().text, "whole");
    assert_eq!(mock.hits(), 2);

    let cut = Mock::start(|_, _| Reply::SseRaw(text_block(0, &["half"]))).await;
    let (result, deltas) = call(&provider(&cut), &ask("hi")).await;
    assert!(matches!(&result, Err(ModelError::Protocol(m)) if m.contains("message_stop")), "{result:?}");
    assert_eq!((deltas.len(), cut.hits()), (1, 1));
}

#[tokio::test]
async fn answers_it_cannot_understand_are_protocol_errors_and_not_retried() {
    let cases: Vec<(&str, Reply)> = vec![
        ("garbage event", Reply::SseRaw(vec!["event: message_start\ndata: {not json\n\n".into()])),
        (
            "json delta for a text block",
            Reply::SseRaw({
                let mut p = text_block(0, &["x"]);
                p.insert(
                    2,
                    event(json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{"}})),
                );
                p
            }),
        ),
        (
            "not a message",
            Reply::Raw { status: 200, content_type: "application/json", body: "{\"content\": 5}".into() },
        ),
        ("no content", Reply::Raw { status: 200, content_type: "application/json", body: "{}".into() }),
    ];
    for (what, reply) in cases {
        let reply = std::sync::Mutex::new(Some(reply));
        let mock = Mock::start(move |_, _| {
            reply.lock().unwrap().take().unwrap_or_else(|| stream_text(&["retried"]))
        })
        .await;
        let err = call(&provider(&mock), &ask("hi")).await.0;
        assert!(matches!(err, Err(ModelError::Protocol(_))), "{what}: {err:?}");
        assert_eq!(mock.hits(), 1, "{what}: a bad answer is not retried");
    }
}

#[tokio::test]
async fn the_key_is_read_by_reference_sent_as_x_api_key_and_never_printed() {
    let key = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(key.path(), "sk-ant-from-file-42\n").unwrap();
    let mock = Mock::start(|_, _| stream_text(&["ok"])).await;
    let yaml = format!(
        "kind: anthropic\nanthropic:\n  endpoints: {}\n  model: claude-test\n  api_key: file:{}\n  \
         headers: {{anthropic-beta: tools-2024}}\n",
        mock.root,
        key.path().display()
    );
    let cfg: ModelConfig = serde_yaml_ng::from_str(&yaml).unwrap();
    let p = AnthropicProvider::new(cfg.anthropic.clone()).unwrap();
    let shown = format!("{cfg:?}\n{p:?}\n{p:#?}");
    assert!(!shown.contains("sk-ant-from-file-42"), "{shown}");
    assert!(shown.contains("file:"), "the reference may be shown: {shown}");
    call(&p, &ask("hi")).await.0.unwrap();
    let headers = &mock.received()[0].headers;
    assert_eq!(headers["x-api-key"], "sk-ant-from-file-42");
    assert_eq!(headers["anthropic-beta"], "tools-2024");
    assert!(headers.get("authorization").is_none());

    let inline = "kind: anthropic\nanthropic:\n  model: m\n  api_key: sk-ant-inline\n";
    let err = serde_yaml_ng::from_str::<ModelConfig>(inline).unwrap_err().to_string();
    assert!(err.contains("by reference") && !err.contains("sk-ant-inline"), "{err}");
    let mut c = anthropic_config(&[&mock.root]);
    c.api_key = Some(SecretRef::parse("env:AGENTD_ANTHROPIC_TEST_SURELY_UNSET").unwrap());
    assert!(matches!(AnthropicProvider::new(c), Err(ModelError::Config(m)) if m.contains("not set")));
}

#[tokio::test]
async fn config_from_yaml_with_defaults_and_refusals() {
    let yaml = "kind: anthropic\nanthropic:\n  model: claude-sonnet-4-5\n  fallback_models: \"claude-haiku-4-5, claude-3-5-haiku\"\n  \
                max_tokens: 1024\n  timeout_secs: 60\n  max_retries: 5\n";
    let cfg: ModelConfig = serde_yaml_ng::from_str(yaml).unwrap();
    let a = &cfg.anthropic;
    assert_eq!(a.endpoints, ["https://api.anthropic.com"]);
    assert_eq!(a.fallback_models, ["claude-haiku-4-5", "claude-3-5-haiku"]);
    assert_eq!((a.max_tokens, a.http.timeout, a.http.max_retries), (1024, Duration::from_secs(60), 5));
    assert!(a.http.stream);
    assert_eq!(from_config(cfg).unwrap().name(), "anthropic");
    for (bad, why) in [
        ("kind: anthropic\n", "no model"),
        ("kind: anthropic\nanthropic: {model: m, endpoints: []}\n", "no endpoints"),
        ("kind: anthropic\nanthropic: {model: m, endpoints: 'ftp://x'}\n", "not http"),
        ("kind: anthropic\nanthropic: {model: m, max_tokens: 0}\n", "max_tokens"),
        ("kind: anthropic\nanthropic: {model: m, timeout_secs: 0}\n", "timeout"),
    ] {
        let cfg: ModelConfig = serde_yaml_ng::from_str(bad).unwrap();
        match from_config(cfg) {
            Err(ModelError::Config(m)) => {
                assert!(m.contains(why) && m.starts_with("anthropic"), "{bad}: {m}")
            }
            other => panic!("{bad}: {:?}", other.map(|p| p.name().to_owned())),
        }
    }
    let e = serde_yaml_ng::from_str::<ModelConfig>("kind: anthropic\nanthropic: {modle: x}\n").unwrap_err();
    assert!(e.to_string().contains("modle"), "{e}");
}

#[test]
fn the_documented_anthropic_config_parses() {
    let cfg = crate::model_scripted::doc_config("anthropic-config");
    let a = &cfg.anthropic;
    assert_eq!(
        (a.model.as_str(), a.fallback_models.as_slice()),
        ("claude-sonnet-4-5", ["claude-haiku-4-5".to_owned()].as_slice())
    );
    assert_eq!(
        (a.endpoints.as_slice(), a.max_tokens),
        (["https://api.anthropic.com".to_owned()].as_slice(), 2048)
    );
    assert_eq!(a.api_key.as_ref().map(|k| k.reference()), Some("env:ANTHROPIC_API_KEY"));
    if std::env::var_os("ANTHROPIC_API_KEY").is_none() {
        let Err(ModelError::Config(m)) = from_config(cfg) else { panic!("an unset key is refused") };
        assert!(m.contains("ANTHROPIC_API_KEY is not set"), "{m}");
    }
}
