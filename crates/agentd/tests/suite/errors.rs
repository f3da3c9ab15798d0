//! Every error a client can receive, end to end, on both bindings where it
//! applies: malformed requests, invalid params (naming the field), and
//! protocol-version negotiation. Task errors are in `errors/tasks.rs`,
//! size limits and garbage input in `errors/limits.rs`, connection
//! timeouts and caps in `errors/connections.rs`.

mod connections;
mod limits;
mod tasks;

use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};

/// A raw JSON-RPC POST (with `A2A-Version: 1.0`): (HTTP status, content-type, body).
async fn rpc_raw(d: &Daemon, body: &[u8]) -> (u16, String, Value) {
    let r = d.raw(Method::POST, &d.jsonrpc_url(), Some(body.to_vec()), &[("A2A-Version", "1.0")]).await;
    (r.status, r.header("content-type"), r.json())
}

#[tokio::test]
async fn malformed_json_is_a_parse_error() {
    let d = Daemon::start(&[]);
    let (status, ct, body) = rpc_raw(&d, br#"{"jsonrpc": "2.0", "id": 1, "method": "#).await;
    let e = expect_error(Err(WireError::from_body(Binding::JsonRpc, status, &ct, &body)), -32700);
    assert_eq!(body["id"], Value::Null, "the id of unparsable JSON is null: {body}");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(e.error["message"].as_str().unwrap_or("").contains("JSON"), "{body}");

    let r = d
        .raw(
            Method::POST,
            &d.rest_url("/message:send"),
            Some(br#"{"message": {"#.to_vec()),
            &[("A2A-Version", "1.0")],
        )
        .await;
    expect_error(
        Err(WireError::from_body(Binding::Rest, r.status, &r.header("content-type"), &r.json())),
        -32700,
    );
    // Valid JSON that is not an object is not a request body either.
    let r = d
        .raw(Method::POST, &d.rest_url("/message:send"), Some(b"[1, 2]".to_vec()), &[("A2A-Version", "1.0")])
        .await;
    expect_error(
        Err(WireError::from_body(Binding::Rest, r.status, &r.header("content-type"), &r.json())),
        -32602,
    )
    .assert_field("body");
}

#[tokio::test]
async fn invalid_envelopes_are_invalid_requests() {
    let d = Daemon::start(&[]);
    let cases: [(&str, Value); 6] = [
        (r#"{"id": 4, "method": "ListTasks", "params": {}}"#, json!(4)),
        (r#"{"jsonrpc": "1.0", "id": 5, "method": "ListTasks"}"#, json!(5)),
        (r#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ListTasks"}"#, Value::Null),
        (r#"{"jsonrpc": "2.0", "id": [6], "method": "ListTasks"}"#, Value::Null),
        (r#"[{"jsonrpc": "2.0", "id": 7, "method": "ListTasks"}]"#, Value::Null),
        (r#"{"jsonrpc": "2.0", "id": "no-method"}"#, json!("no-method")),
    ];
    for (body, id) in cases {
        let (status, ct, resp) = rpc_raw(&d, body.as_bytes()).await;
        expect_error(Err(WireError::from_body(Binding::JsonRpc, status, &ct, &resp)), -32600);
        assert_eq!(resp["id"], id, "{body} → {resp}");
    }
}

#[tokio::test]
async fn unknown_methods_are_method_not_found() {
    let d = Daemon::start(&[]);
    for method in ["NoSuchMethod", "message/send", "tasks/get", "sendMessage"] {
        let body = json!({"jsonrpc": "2.0", "id": "m", "method": method, "params": {}});
        let (status, ct, resp) = rpc_raw(&d, body.to_string().as_bytes()).await;
        expect_error(Err(WireError::from_body(Binding::JsonRpc, status, &ct, &resp)), -32601);
        assert_eq!(resp["id"], "m", "{method}: the id is echoed: {resp}");
    }
}

#[tokio::test]
async fn invalid_params_name_the_offending_field() {
    let d = Daemon::start(&["--agent", "tck"]);
    let msg = |m: Value| json!({"message": m});
    let ok_part = json!([{"text": "hi"}]);
    let cases = [
        ("SendMessage", json!({}), "message"),
        ("SendMessage", msg(json!({"messageId": "m", "role": "ROLE_USER", "parts": []})), "message.parts"),
        ("SendMessage", msg(json!({"role": "ROLE_USER", "parts": ok_part})), "message.messageId"),
        ("SendMessage", msg(json!({"messageId": "m", "parts": ok_part})), "message.role"),
        (
            "SendMessage",
            msg(json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a", "data": {}}]})),
            "message.parts[0]",
        ),
        (
            "SendMessage",
            msg(json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"mediaType": "text/plain"}]})),
            "message.parts[0]",
        ),
        (
            "SendMessage",
            json!({"message": user_msg("m", "x"), "configuration": {"historyLength": -1}}),
            "configuration.historyLength",
        ),
        ("GetTask", json!({"id": "t", "historyLength": -1}), "historyLength"),
        ("GetTask", json!({"id": "t", "historyLength": "abc"}), "historyLength"),
        ("GetTask", json!({}), "id"),
        ("ListTasks", json!({"pageSize": 0}), "pageSize"),
        ("ListTasks", json!({"pageSize": 150}), "pageSize"),
        ("ListTasks", json!({"pageSize": "many"}), "pageSize"),
        ("ListTasks", json!({"pageToken": "not-a-token-we-issued"}), "pageToken"),
        ("ListTasks", json!({"historyLength": -3}), "historyLength"),
        ("ListTasks", json!({"status": "TASK_STATE_SLEEPING"}), "status"),
        ("ListTasks", json!({"includeArtifacts": "maybe"}), "includeArtifacts"),
    ];
    for b in BINDINGS {
        for (method, params, field) in &cases {
            if b == Binding::Rest && method == &"GetTask" && params.get("id").is_none() {
                continue; // REST always has the id in the path
            }
            let r = d.op(b, method, params.clone()).await;
            let e = expect_error(r, -32602);
            assert_eq!(e.error["status"].as_str().unwrap_or("INVALID_ARGUMENT"), "INVALID_ARGUMENT", "{b:?}");
            e.assert_field(field);
        }
    }
}

#[tokio::test]
async fn rest_query_integers_follow_the_protojson_mapping() {
    // A query value is a string, so it takes the mapping's string form: a
    // JSON number exactly (`2`, `2.0`, `1e1`), no space, `+` or leading zero.
    let d = Daemon::start(&["--agent", "tck"]);
    let v = [("A2A-Version", "1.0")];
    for q in ["pageSize=2", "pageSize=2.0", "pageSize=1e1", "historyLength=0&pageSize=20E-1"] {
        let r = d.raw(Method::GET, &d.rest_url(&format!("/tasks?{q}")), None, &v).await;
        assert_eq!(r.status, 200, "{q}: {}", r.text);
    }
    for (q, field) in [
        ("pageSize=02", "pageSize"),
        ("pageSize=%202", "pageSize"),
        ("pageSize=%2B2", "pageSize"),
        ("pageSize=+2", "pageSize"),
        ("historyLength=1.5", "historyLength"),
    ] {
        let r = d.raw(Method::GET, &d.rest_url(&format!("/tasks?{q}")), None, &v).await;
        let body = r.json();
        let e = WireError::from_body(Binding::Rest, r.status, &r.header("content-type"), &body);
        expect_error(Err(e), -32602).assert_field(field);
    }
}

#[tokio::test]
async fn a2a_version_is_negotiated_by_header_or_query_parameter() {
    let d = Daemon::start(&[]);
    let list = json!({});
    for b in BINDINGS {
        for bad in ["99.0", "0.3", "2.0", "1.1"] {
            let e = expect_error(d.op_versioned(b, "ListTasks", list.clone(), Some(bad), &[]).await, -32009);
            assert!(
                e.error["message"].as_str().unwrap_or("").contains(bad),
                "{b:?}: names the version: {}",
                e.error
            );
        }
        // Patch numbers are not part of negotiation.
        for good in ["1.0", "1.0.3"] {
            d.op_versioned(b, "ListTasks", list.clone(), Some(good), &[])
                .await
                .unwrap_or_else(|e| panic!("{b:?} {good}: {}", e.error));
        }
        // Lenient default: a missing version is accepted.
        d.op_versioned(b, "ListTasks", list.clone(), None, &[])
            .await
            .unwrap_or_else(|e| panic!("{b:?}: {}", e.error));
        // The query parameter works when the header is absent.
        let q = [("A2A-Version", "99.0")];
        expect_error(d.op_versioned(b, "ListTasks", list.clone(), None, &q).await, -32009);
        let q = [("A2A-Version", "1.0")];
        d.op_versioned(b, "ListTasks", list.clone(), None, &q)
            .await
            .unwrap_or_else(|e| panic!("{b:?}: {}", e.error));
    }
}

#[tokio::test]
async fn strict_version_policy_refuses_a_missing_version() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_with_env(tmp.path(), &[], &[("AGENTD_A2A_VERSION", "strict")]);
    for b in BINDINGS {
        expect_error(d.op_versioned(b, "ListTasks", json!({}), None, &[]).await, -32009);
        d.op_versioned(b, "ListTasks", json!({}), Some("1.0"), &[])
            .await
            .unwrap_or_else(|e| panic!("{b:?}: {}", e.error));
        let q = [("A2A-Version", "1.0")];
        d.op_versioned(b, "ListTasks", json!({}), None, &q)
            .await
            .unwrap_or_else(|e| panic!("{b:?}: {}", e.error));
    }
    // Streams are refused before they open, as a plain error.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": send_params("m", "x", None)});
    let r = d.raw(Method::POST, &d.jsonrpc_url(), Some(body.to_string().into_bytes()), &[]).await;
    assert!(r.header("content-type").starts_with("application/json"), "{}", r.header("content-type"));
    assert_eq!(r.json()["error"]["code"], -32009, "{}", r.text);
}
