//! Size limits and garbage input: the daemon answers every malformed or odd
//! request with a JSON error, never panics, and keeps serving.

use crate::common::*;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn an_oversized_body_is_refused_and_the_daemon_keeps_working() {
    let (data, conf) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let path = conf.path().join("agentd.yaml");
    std::fs::write(&path, "max_body_bytes: 2048\n").expect("write config");
    let d = Daemon::start_with_env(data.path(), &["--config", path.to_str().expect("utf-8 path")], &[]);
    let big = "x".repeat(4096);
    for b in BINDINGS {
        let e = d.op(b, "SendMessage", send_params(&uid("m"), &big, None)).await.expect_err("too large");
        assert_eq!(e.http, 413, "{b:?}: {}", e.error);
        assert!(e.content_type.starts_with("application/json"), "{b:?}: {}", e.content_type);
        assert!(
            e.error["message"].as_str().unwrap_or("").contains("2048"),
            "{b:?}: says the limit: {}",
            e.error
        );
        let r = d.ok(b, "SendMessage", send_params(&uid("m"), "small", None)).await;
        assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED", "{b:?}: still serving");
    }
}

/// Bodies that are not JSON-RPC requests at all.
fn envelopes() -> Vec<Vec<u8>> {
    let valid = br#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
    let mut out: Vec<Vec<u8>> =
        [1, 9, 30, 64, 100, valid.len() - 1].iter().map(|&n| valid[..n].to_vec()).collect();
    let text = [
        "",
        "  \n",
        "null",
        "0",
        "true",
        "\"str\"",
        "[]",
        "{}",
        "[{}]",
        "NaN",
        r#"{"jsonrpc":"2.0","id":NaN,"method":"ListTasks"}"#,
        r#"{"jsonrpc":"2.0","id":1e999,"method":"ListTasks"}"#,
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ListTasks","params":{"pageSize":123456789012345678901234567890}}"#,
        r#"{"jsonrpc":"2.0","id":"\ud800","method":"ListTasks"}"#,
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\nb\",\"method\":\"ListTasks\"}",
        r#"{"jsonrpc":2.0,"id":1,"method":"ListTasks"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":"t1"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":["t1"]}"#,
        r#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#,
    ];
    out.extend(text.iter().map(|t| t.as_bytes().to_vec()));
    out.push("[".repeat(100_000).into_bytes());
    out.push(format!("{}1{}", "{\"a\":".repeat(20_000), "}".repeat(20_000)).into_bytes());
    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    out.push(
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"metadata":{{"x":{deep}}}}}}}"#
        )
        .into_bytes(),
    );
    out.push(b"\xff\xfe\x00{".to_vec());
    out.push(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"Send\xffMessage\"}".to_vec());
    out.push(b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ListTasks\"}".to_vec());
    out
}

/// SendMessage params of the wrong shape, and other methods' bad params.
fn params() -> Vec<(&'static str, serde_json::Value)> {
    let m = |extra: serde_json::Value| {
        let mut msg = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            msg[k] = v;
        }
        json!({"message": msg})
    };
    let send = [
        json!({"message": 5}),
        json!({"message": []}),
        json!({"message": "hi"}),
        json!({"message": null}),
        m(json!({"messageId": 5})),
        m(json!({"role": true})),
        m(json!({"role": 99})),
        m(json!({"role": "user"})),
        m(json!({"parts": "x"})),
        m(json!({"parts": {}})),
        m(json!({"parts": [5]})),
        m(json!({"parts": [null]})),
        m(json!({"parts": [{}]})),
        m(json!({"parts": [{"text": 5}]})),
        m(json!({"parts": [{"raw": "***"}]})),
        m(json!({"parts": [{"url": []}]})),
        m(json!({"parts": [{"text": "a", "url": "b"}]})),
        m(json!({"parts": [{"data": 1, "raw": "AA=="}]})),
        m(json!({"metadata": "x"})),
        m(json!({"taskId": 5})),
        m(json!({"contextId": {}})),
        m(json!({"referenceTaskIds": "x"})),
        m(json!({"extensions": 5})),
        json!({"message": m(json!({}))["message"], "configuration": "fast"}),
        json!({"message": m(json!({}))["message"], "configuration": {"historyLength": 1e10}}),
        json!({"message": m(json!({}))["message"], "configuration": {"historyLength": 2_147_483_648_i64}}),
        json!({"message": m(json!({}))["message"], "configuration": {"returnImmediately": "perhaps"}}),
        json!({"message": m(json!({}))["message"], "configuration": {"taskPushNotificationConfig": "x"}}),
        json!({"message": m(json!({}))["message"], "metadata": [1]}),
    ];
    let mut out: Vec<_> = send.into_iter().map(|p| ("SendMessage", p)).collect();
    out.extend([
        ("SendStreamingMessage", json!({"message": 5})),
        ("GetTask", json!({"id": 5})),
        ("GetTask", json!({"id": "x", "historyLength": [1]})),
        ("CancelTask", json!({"id": {}})),
        ("CancelTask", json!({"id": "x", "metadata": 7})),
        ("ListTasks", json!({"status": 99})),
        ("ListTasks", json!({"statusTimestampAfter": "yesterday"})),
        ("ListTasks", json!({"pageSize": -1e30})),
        ("ListTasks", json!({"pageToken": 5})),
        ("SubscribeToTask", json!({"id": null})),
        ("CreateTaskPushNotificationConfig", json!({"taskId": 1, "url": []})),
        ("CreateTaskPushNotificationConfig", json!({"taskId": "x", "url": "x", "authentication": "Bearer"})),
        ("GetExtendedAgentCard", json!({"tenant": 5})),
    ]);
    out
}

#[tokio::test]
async fn garbage_in_gets_json_errors_out_and_the_daemon_stays_healthy() {
    let d = Daemon::start(&["--agent", "tck"]);
    let v = [("A2A-Version", "1.0")];
    let mut bodies: Vec<(String, Vec<u8>, Vec<u8>)> =
        envelopes().into_iter().map(|b| (String::new(), b.clone(), b)).collect();
    for (method, p) in params() {
        let envelope = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": p});
        bodies.push((method.to_owned(), envelope.to_string().into_bytes(), p.to_string().into_bytes()));
    }
    assert!(bodies.len() >= 50, "{} bodies", bodies.len());
    for (method, rpc_body, rest_body) in &bodies {
        let shown = String::from_utf8_lossy(&rpc_body[..rpc_body.len().min(120)]).into_owned();
        let r = d.raw(Method::POST, &d.jsonrpc_url(), Some(rpc_body.clone()), &v).await;
        assert_eq!(r.status, 200, "JSON-RPC {method} {shown:?}: {}", r.text);
        assert!(r.header("content-type").starts_with("application/json"), "{shown:?}");
        let body = r.json();
        let code =
            body["error"]["code"].as_i64().unwrap_or_else(|| panic!("{shown:?}: not an error: {body}"));
        assert!([-32700, -32600, -32602].contains(&code), "{shown:?}: {body}");
        assert!(body.get("result").is_none(), "{shown:?}: {body}");

        // The same bytes (or the bare params) as a REST SendMessage body.
        let r = d.raw(Method::POST, &d.rest_url("/message:send"), Some(rest_body.clone()), &v).await;
        assert_eq!(r.status, 400, "REST {shown:?}: {}", r.text);
        assert!(r.header("content-type").starts_with("application/json"), "{shown:?}");
        assert_eq!(r.json()["error"]["code"], 400, "{shown:?}: {}", r.text);
    }
    let queries = [
        "/tasks?pageSize=%FF",
        "/tasks?historyLength=1e999",
        "/tasks?status=%00",
        "/tasks?statusTimestampAfter=not-a-time",
        "/tasks?pageToken=%%%",
        "/tasks?includeArtifacts=1",
        "/tasks/%FF%FE",
        "/tasks/x?historyLength=-1",
    ];
    for q in queries {
        let r = d.raw(Method::GET, &d.rest_url(q), None, &v).await;
        assert!(r.status == 400 || r.status == 404, "{q}: {} {}", r.status, r.text);
        assert_eq!(r.json()["error"]["code"], r.status, "{q}: {}", r.text);
    }

    let health = d.raw(Method::GET, &format!("{}/healthz", d.url), None, &[]).await;
    assert_eq!(health.status, 200, "still healthy");
    for b in BINDINGS {
        let r = d.ok(b, "SendMessage", tck("tck-complete-task")).await;
        assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED", "{b:?}: still serving");
    }
    assert!(!d.log().contains("panicked"), "no panic in the daemon log:\n{}", d.log());
}

/// A SendMessage whose DataPart is `data`.
fn with_data(data: serde_json::Value) -> serde_json::Value {
    json!({"message": {"messageId": uid("m"), "role": "ROLE_USER", "parts": [{"data": data}]}})
}

#[tokio::test]
async fn json_too_deep_or_with_too_many_values_is_refused_naming_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [("AGENTD_SERVER_MAX_JSON_VALUES", "1000"), ("AGENTD_SERVER_MAX_JSON_DEPTH", "20")];
    let d = Daemon::start_with_env(dir.path(), &[], &env);
    let wide = json!((0..2000).collect::<Vec<u32>>());
    let mut deep = json!(1);
    for _ in 0..30 {
        deep = json!([deep]);
    }
    for b in BINDINGS {
        for (data, key) in [(wide.clone(), "server.max_json_values"), (deep.clone(), "server.max_json_depth")]
        {
            let e = d.op(b, "SendMessage", with_data(data)).await.expect_err("over a JSON limit");
            let want = if b == Binding::JsonRpc { 200 } else { 400 };
            assert_eq!(e.http, want, "{b:?} {key}: {}", e.error);
            assert!(
                e.error["message"].as_str().unwrap_or("").contains(key),
                "{b:?}: names {key}: {}",
                e.error
            );
        }
        let within = json!((0..500).collect::<Vec<u32>>());
        let r = d.ok(b, "SendMessage", with_data(within)).await;
        assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED", "{b:?}: within the limits");
    }
}

#[tokio::test]
async fn an_extensions_header_over_its_caps_is_refused_naming_the_limit() {
    let d = Daemon::start(&[]);
    let many = (0..200).map(|i| format!("https://example.com/ext/{i}")).collect::<Vec<_>>().join(", ");
    let huge = format!("https://example.com/{}", "x".repeat(20_000));
    for b in BINDINGS {
        for (value, says) in [(many.as_str(), "64"), (huge.as_str(), "16384")] {
            let (_, r) = d.op_with(b, "GetTask", json!({"id": "t"}), &[("A2A-Extensions", value)]).await;
            let e = r.expect_err("over an A2A-Extensions cap");
            let (code, http) = (e.error["code"].as_i64(), e.http);
            match b {
                Binding::JsonRpc => assert_eq!(code, Some(-32600), "{}", e.error),
                Binding::Rest => assert_eq!(http, 400, "{}", e.error),
            }
            let msg = e.error["message"].as_str().unwrap_or("");
            assert!(msg.contains("A2A-Extensions") && msg.contains(says), "{b:?}: names the cap: {msg}");
        }
    }
}

/// Peak resident memory of a process (VmHWM), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kib * 1024
}

/// Sends a message of `part` (near `limit` bytes) to the tck agent; returns
/// the body's size and the answer.
async fn send_big(d: &Daemon, limit: usize, part: serde_json::Value) -> (u64, String) {
    let params = json!({"message": {"messageId": uid("tck-complete-task"), "role": "ROLE_USER",
        "parts": [{"text": "big"}, part]}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
    let bytes = serde_json::to_vec(&body).expect("json");
    assert!(bytes.len() <= limit, "{} bytes", bytes.len());
    let size = bytes.len() as u64;
    let r = d.raw(Method::POST, &d.jsonrpc_url(), Some(bytes), &[("A2A-Version", "1.0")]).await;
    assert_eq!(r.status, 200, "{}", &r.text[..r.text.len().min(300)]);
    (size, r.text)
}

/// The bodies a client can send just under the 4 MiB limit that cost the
/// daemon most: long strings (most bytes), one long text part, small
/// numbers (most values per byte; before the bounds, 4 MiB of them cost
/// about 880 MB) as many as the value limit lets through, and over it. The
/// `tck` agent completes the task without echoing it, so this is the cost
/// of the request path: parse, history, store, answer.
#[tokio::test]
async fn max_size_bodies_cost_a_bounded_multiple_of_their_size() {
    let d = Daemon::process(&["--agent", "tck"]);
    let limit: usize = 4 * 1024 * 1024;
    // Warm: the first request's own costs (threads, store pages) are not the body's.
    let r = d.ok(Binding::JsonRpc, "SendMessage", tck("tck-complete-task")).await;
    assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED");
    let before = peak_rss(d.pid());
    // Copies of the message are shared, not made, on its way through
    // history, stream events, store batch and answer; a `task` event
    // carries no message that big. Before that, this body cost 11 times
    // its size; now about 3.2 (the benchmark measures it against its
    // target of 4, docs/benchmarks.md). Which threads' allocator arenas
    // keep freed buffers varies from run to run (up to 4 under the full
    // suite), hence the margin here.
    let (size, answer) = send_big(&d, limit, json!({"data": vec!["s".repeat(limit / 64 - 1024); 64]})).await;
    assert!(answer.contains(r#""state":"TASK_STATE_COMPLETED""#), "{}", &answer[..answer.len().min(300)]);
    let grown = peak_rss(d.pid()).saturating_sub(before);
    assert!(
        grown < 6 * size,
        "one body of long strings: peak RSS grew {:.2} times its size",
        grown as f64 / size as f64
    );
    // One text part, on a daemon of its own: the same copies, but in one
    // buffer, which the allocator keeps per thread (about 4 times, measured).
    {
        let d = Daemon::process(&["--agent", "tck"]);
        let r = d.ok(Binding::JsonRpc, "SendMessage", tck("tck-complete-task")).await;
        assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED");
        let before = peak_rss(d.pid());
        let (size, _) = send_big(&d, limit, json!({"text": "t".repeat(limit - 1024)})).await;
        let grown = peak_rss(d.pid()).saturating_sub(before);
        let x = grown as f64 / size as f64;
        assert!(grown < 7 * size, "one long text part: peak RSS grew {x:.2} times its size");
    }
    for data in [json!(vec![0u8; 19_000]), json!(vec![0u8; limit / 2 - 1024])] {
        let params = json!({"message": {"messageId": uid("tck-complete-task"), "role": "ROLE_USER",
            "parts": [{"text": "big"}, {"data": data}]}});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
        let r = d
            .raw(
                Method::POST,
                &d.jsonrpc_url(),
                Some(serde_json::to_vec(&body).expect("json")),
                &[("A2A-Version", "1.0")],
            )
            .await;
        assert_eq!(r.status, 200, "{}", &r.text[..r.text.len().min(300)]);
    }
    let grown = peak_rss(d.pid()).saturating_sub(before);
    // All of them together: the old expansion (880 MB for the numbers,
    // 44 MiB for the strings) crosses this many times over.
    assert!(grown < 8 * limit as u64, "peak RSS grew by {} MiB", grown >> 20);
    let r = d.ok(Binding::JsonRpc, "SendMessage", tck("tck-complete-task")).await;
    assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED");
}
