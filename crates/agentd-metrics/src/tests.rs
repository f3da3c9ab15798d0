use super::*;

#[test]
fn recorded_values_show_in_the_exposition() {
    let m = Metrics::new();
    let h = m.requests.handle("SendMessage", "jsonrpc", "ok");
    h.observe(0.002);
    h.observe(0.003);
    m.tasks.live_add("working", "none", 2);
    m.tasks.live_add("working", "none", -1);
    m.tasks.transition("working", "completed");
    m.model.provider("echo").ok(0.5, 10, 3);
    let text = m.encode();
    for line in [
        r#"agentd_request_duration_seconds_count{method="SendMessage",binding="jsonrpc",outcome="ok"} 2"#,
        r#"agentd_tasks{state="working",link_kind="none"} 1"#,
        r#"agentd_task_transitions_total{from="working",to="completed"} 1"#,
        r#"gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="echo",gen_ai_token_type="input"} 10.0"#,
        "# TYPE process_cpu_seconds_total counter",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn tool_series_are_capped() {
    let m = Metrics::new();
    for i in 0..MAX_TOOL_SERIES + 5 {
        m.tools.call("s", &format!("t{i}"), "ok", 0.01);
    }
    m.tools.call("s", "t0", "ok", 0.01);
    let text = m.encode();
    let counts: Vec<&str> =
        text.lines().filter(|l| l.starts_with("agentd_tool_call_duration_seconds_count")).collect();
    assert_eq!(counts.len(), MAX_TOOL_SERIES + 1, "the cap and one `_other` series");
    assert!(counts.iter().any(|l| l.contains(r#"tool="_other""#) && l.ends_with(" 5")), "{counts:?}");
    assert!(
        counts.iter().any(|l| l.contains(r#"tool="t0""#) && l.ends_with(" 2")),
        "a known pair keeps its series"
    );
}
