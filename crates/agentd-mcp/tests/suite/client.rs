//! Listing, naming, calls, errors, narrowing and failures against the
//! Python SDK's server (HTTP and stdio) and the reference server (stdio).

use crate::servers::{HttpServer, everything, python, server_script, skipped};
use agentd_core::Background;
use agentd_mcp::{McpHub, ServerConfig, from_config};
use serde_json::json;

fn hub(yaml: &str) -> McpHub {
    let servers: Vec<ServerConfig> = serde_yaml_ng::from_str(yaml).expect("server configs");
    let specs = servers.iter().map(|s| from_config(s).expect("a valid server")).collect();
    let hub = McpHub::new(specs).expect("a hub");
    hub.start(&Background::new());
    hub
}

fn http_hub(url: &str, extra: &str) -> McpHub {
    hub(&format!("- name: py\n  http: {{url: '{url}'}}\n{extra}"))
}

fn stdio_hub(args: &[&str], extra: &str) -> McpHub {
    let mut all = vec![server_script()];
    all.extend(args.iter().map(|a| a.to_string()));
    let args = serde_json::to_string(&all).unwrap();
    hub(&format!("- name: py\n  stdio: {{command: '{}', args: {args}}}\n{extra}", python()))
}

async fn names(hub: &McpHub) -> Vec<String> {
    let mut n: Vec<String> =
        hub.offered().await.iter().map(|t| agentd_runtime::agent_loop::Tool::spec(t.as_ref()).name).collect();
    n.sort();
    n
}

#[tokio::test]
async fn http_tools_are_listed_as_server_and_tool_within_the_function_name_rules() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let hub = http_hub(&server.url(), "");
    let names = names(&hub).await;
    for expected in ["py__echo", "py__add", "py__fail", "py__slow", "py__crash", "py__delete_everything"] {
        assert!(names.contains(&expected.to_owned()), "{expected} missing from {names:?}");
    }
    let long = names.iter().find(|n| n.starts_with("py__report_")).expect("the long-named tool");
    assert_eq!(long.len(), 64, "{long}");
    assert!(long.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{long}");
    // The owner and the server's own name are kept beside the name.
    let tool = hub.offered().await.into_iter().find(|t| t.tool().len() > 70).expect("the long tool");
    assert_eq!((tool.server(), tool.tool()), ("py", format!("report_{}", "x".repeat(70)).as_str()));
    assert_eq!(hub.call(long, json!({})).await.as_deref(), Ok("long"));
}

#[tokio::test]
async fn http_calls_return_text_and_structured_content_and_is_error_is_an_error() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let hub = http_hub(&server.url(), "");
    assert_eq!(hub.call("py__echo", json!({"text": "hi"})).await.as_deref(), Ok("echo: hi"));
    let sum = hub.call("py__add", json!({"a": 2, "b": 3})).await.expect("a sum");
    let v: serde_json::Value = serde_json::from_str(&sum).expect("the structured result as JSON");
    assert_eq!(v["sum"], 5, "{sum}");
    let err = hub.call("py__fail", json!({"reason": "testing"})).await.expect_err("an isError result");
    assert!(
        err.contains("the tool reported an error") && err.contains("failed on purpose: testing"),
        "{err}"
    );
}

#[tokio::test]
async fn allow_and_deny_globs_narrow_the_list_and_a_tool_left_out_is_not_called() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let hub = http_hub(&server.url(), "  tools: {allow: ['e*', 'd*', add], deny: ['delete_*']}\n");
    assert_eq!(names(&hub).await, ["py__add", "py__echo"]);
    let err = hub.call("py__delete_everything", json!({})).await.expect_err("not on offer");
    assert!(err.contains("no tool named \"py__delete_everything\" on offer"), "{err}");
}

#[tokio::test]
async fn an_expired_session_is_initialised_again_once() {
    if skipped() {
        return;
    }
    let server = HttpServer::start();
    let hub = http_hub(&server.url(), "");
    assert_eq!(hub.call("py__echo", json!({"text": "one"})).await.as_deref(), Ok("echo: one"));
    // The server forgets the session, as a restarted one would: it answers
    // the next request on it with 404, and the client initialises again.
    server.forget_sessions();
    assert_eq!(hub.call("py__echo", json!({"text": "two"})).await.as_deref(), Ok("echo: two"));
}

#[tokio::test]
async fn a_server_down_at_start_is_an_error_at_once_then_waits_its_backoff() {
    if skipped() {
        return;
    }
    // A port nothing listens on: one a server had and gave back.
    let port = HttpServer::start().stop();
    let hub = http_hub(&format!("http://127.0.0.1:{port}/mcp"), "  timeout_secs: 5\n");
    let status = hub.check().await;
    let err = status[0].1.as_ref().expect_err("down");
    assert!(
        err.contains("the MCP server py at http://127.0.0.1:") && err.contains("failed its handshake"),
        "{err}"
    );
    let err = hub.check().await[0].1.clone().expect_err("still down");
    assert!(err.contains("the next attempt to connect is in"), "{err}");
    assert!(hub.offered().await.is_empty());
}

#[tokio::test]
async fn stdio_server_calls_and_a_crash_mid_call_is_an_error_then_it_is_started_again() {
    if skipped() {
        return;
    }
    let hub = stdio_hub(&["stdio"], "");
    assert_eq!(hub.call("py__echo", json!({"text": "a"})).await.as_deref(), Ok("echo: a"));
    let err = hub.call("py__crash", json!({})).await.expect_err("the server died");
    assert!(err.contains("the MCP server py failed during the call of crash"), "{err}");
    // The next call starts a new child.
    assert_eq!(hub.call("py__echo", json!({"text": "b"})).await.as_deref(), Ok("echo: b"));
}

#[tokio::test]
async fn a_failed_stdio_handshake_reports_the_servers_stderr() {
    if skipped() {
        return;
    }
    let hub = stdio_hub(&["stdio", "--stderr-banner", "token file missing: /etc/x", "--exit-at-start"], "");
    let status = hub.check().await;
    let err = status[0].1.as_ref().expect_err("it exited");
    assert!(
        err.contains("failed its handshake") && err.contains("its stderr:\ntoken file missing: /etc/x"),
        "{err}"
    );
}

#[tokio::test]
async fn a_call_over_its_timeout_is_an_error_and_the_server_stays_usable() {
    if skipped() {
        return;
    }
    let hub = stdio_hub(&["stdio"], "  timeout_secs: 1\n");
    let err = hub.call("py__slow", json!({"seconds": 30})).await.expect_err("too slow");
    assert!(err.contains("did not answer the call of slow within 1 s"), "{err}");
    assert_eq!(hub.call("py__echo", json!({"text": "c"})).await.as_deref(), Ok("echo: c"));
}

#[tokio::test]
async fn the_reference_server_over_stdio_lists_and_answers() {
    if skipped() {
        return;
    }
    let hub = hub(&format!("- name: everything\n  stdio: {{command: '{}', args: [stdio]}}\n", everything()));
    let names = names(&hub).await;
    assert!(names.contains(&"everything__echo".to_owned()), "{names:?}");
    assert!(names.contains(&"everything__get-sum".to_owned()), "{names:?}");
    assert_eq!(hub.call("everything__echo", json!({"message": "hello"})).await.as_deref(), Ok("Echo: hello"));
    let sum = hub.call("everything__get-sum", json!({"a": 2, "b": 40})).await.expect("a sum");
    assert!(sum.contains("42"), "{sum}");
    let image = hub.call("everything__get-tiny-image", json!({})).await.expect("an image result");
    assert!(image.contains("[image content, image/png"), "{image}");
}
