//! The rest of the surface on both bindings: push-notification configs,
//! the public and extended agent cards, tenant-prefixed REST routes, the
//! JSON-RPC URL with a trailing slash, and unknown fields.

use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn push_config_create_get_list_delete() {
    let d = Daemon::start(&["--agent", "tck", "--push-allow-private"]);
    for b in BINDINGS {
        let r = d.ok(b, "SendMessage", tck("tck-input-required")).await;
        let task = r["task"]["id"].as_str().expect("id");
        let url = "http://127.0.0.1:9/hook";
        let auth = json!({"scheme": "Bearer", "credentials": "hook-secret"});
        let created = d
            .ok(
                b,
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "url": url, "token": "tok", "authentication": auth}),
            )
            .await;
        let id = created["id"].as_str().filter(|s| !s.is_empty()).expect("an assigned id").to_owned();
        assert_eq!(
            (&created["taskId"], &created["url"], &created["token"]),
            (&json!(task), &json!(url), &json!("tok")),
            "{b:?}"
        );
        assert_eq!(created["authentication"], auth, "{b:?}: {created}");

        let got = d.ok(b, "GetTaskPushNotificationConfig", json!({"taskId": task, "id": id})).await;
        assert_eq!(got, created, "{b:?}");
        let list = d.ok(b, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
        assert_eq!(list["configs"], json!([created]), "{b:?}: {list}");
        assert!(list["nextPageToken"].is_string(), "{b:?}: {list}");

        let gone = d.ok(b, "DeleteTaskPushNotificationConfig", json!({"taskId": task, "id": id})).await;
        let empty = if b == Binding::Rest { json!({}) } else { Value::Null };
        assert_eq!(gone, empty, "{b:?}");
        let again = d.ok(b, "DeleteTaskPushNotificationConfig", json!({"taskId": task, "id": id})).await;
        assert_eq!(again, empty, "{b:?}: delete is idempotent");
        expect_error(
            d.op(b, "GetTaskPushNotificationConfig", json!({"taskId": task, "id": id})).await,
            -32001,
        );
        let list = d.ok(b, "ListTaskPushNotificationConfigs", json!({"taskId": task})).await;
        assert_eq!(list["configs"], json!([]), "{b:?}: {list}");
    }
}

#[tokio::test]
async fn the_extended_card_is_served_on_both_bindings() {
    let d = Daemon::start(&[]);
    // JSON-RPC with no `params` member at all, as the spec's example sends it.
    let body = br#"{"jsonrpc":"2.0","id":"card","method":"GetExtendedAgentCard"}"#.to_vec();
    let r = d.raw(Method::POST, &d.jsonrpc_url(), Some(body), &[("A2A-Version", "1.0")]).await.json();
    assert_eq!(r["id"], "card", "{r}");
    let rpc_card = &r["result"];
    assert_eq!(rpc_card["name"], "agentd", "{r}");
    assert_eq!(rpc_card["supportedInterfaces"].as_array().map(Vec::len), Some(3), "{r}");
    let (status, rest_card) = d.rest(Method::GET, "/extendedAgentCard", None).await;
    assert_eq!(status, 200, "{rest_card}");
    assert_eq!(&rest_card, rpc_card);
    for b in BINDINGS {
        assert_eq!(&d.ok(b, "GetExtendedAgentCard", json!({})).await, rpc_card, "{b:?}");
    }
}

#[tokio::test]
async fn the_public_card_describes_the_listener_and_supports_http_caching() {
    let d = Daemon::start(&[]);
    let url = format!("{}/.well-known/agent-card.json", d.url);
    let r = d.raw(Method::GET, &url, None, &[]).await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").starts_with("application/json"), "{}", r.header("content-type"));
    assert!(r.header("cache-control").contains("max-age="), "{}", r.header("cache-control"));
    assert!(!r.header("last-modified").is_empty(), "Last-Modified");
    let etag = r.header("etag");
    assert!(etag.starts_with('"') && etag.len() > 2, "ETag: {etag:?}");

    let card = r.json();
    let iface = |binding: &str| -> Value {
        card["supportedInterfaces"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|i| i["protocolBinding"] == binding)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(iface("JSONRPC")["url"], json!(d.jsonrpc_url()), "{card}");
    assert_eq!(iface("HTTP+JSON")["url"], json!(d.rest_url("")), "{card}");
    // gRPC clients dial `host:port`: no scheme, no path.
    assert_eq!(iface("GRPC")["url"], json!(d.url.trim_start_matches("http://")), "{card}");
    assert_eq!(iface("GRPC")["protocolVersion"], "1.0", "{card}");
    assert_eq!(
        (&iface("JSONRPC")["protocolVersion"], &iface("HTTP+JSON")["protocolVersion"]),
        (&json!("1.0"), &json!("1.0"))
    );
    assert_eq!(card["capabilities"]["streaming"], true, "{card}");
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");

    let cached = d.raw(Method::GET, &url, None, &[("If-None-Match", &etag)]).await;
    assert_eq!(cached.status, 304, "a matching If-None-Match is answered 304");
    assert!(cached.text.is_empty(), "a 304 has no body");
    assert_eq!(cached.header("etag"), etag);
    // If-None-Match compares weakly (RFC 9110 §13.1.2), and takes a list.
    for tags in [format!("W/{etag}"), format!("\"other\", {etag}")] {
        let r = d.raw(Method::GET, &url, None, &[("If-None-Match", &tags)]).await;
        assert_eq!(r.status, 304, "If-None-Match: {tags}");
    }
    let stale = d.raw(Method::GET, &url, None, &[("If-None-Match", "\"something-else\"")]).await;
    assert_eq!(stale.status, 200);
}

#[tokio::test]
async fn rest_routes_exist_under_a_tenant_prefix() {
    let d = Daemon::start(&["--agent", "tck"]);
    let (status, r) = d.rest(Method::POST, "/acme/message:send", Some(tck("tck-input-required"))).await;
    assert_eq!(status, 200, "{r}");
    let id = r["task"]["id"].as_str().expect("id");
    let (status, t) = d.rest(Method::GET, &format!("/acme/tasks/{id}"), None).await;
    assert_eq!((status, &t["id"]), (200, &json!(id)), "{t}");
    let (status, l) = d.rest(Method::GET, "/acme/tasks", None).await;
    assert_eq!((status, &l["tasks"][0]["id"]), (200, &json!(id)), "{l}");
    let (status, c) = d.rest(Method::POST, &format!("/acme/tasks/{id}:cancel"), None).await;
    assert_eq!((status, task_state(&c)), (200, "TASK_STATE_CANCELED"), "{c}");
}

#[tokio::test]
async fn json_rpc_is_also_served_with_a_trailing_slash() {
    let d = Daemon::start(&["--agent", "tck"]);
    let body =
        json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": tck("tck-complete-task")});
    let url = format!("{}/", d.jsonrpc_url());
    let r = d.raw(Method::POST, &url, Some(body.to_string().into_bytes()), &[("A2A-Version", "1.0")]).await;
    assert_eq!(r.status, 200);
    let r = r.json();
    assert_eq!((&r["id"], task_state(&r["result"]["task"])), (&json!(3), "TASK_STATE_COMPLETED"), "{r}");
}

#[tokio::test]
async fn unknown_fields_are_ignored_everywhere() {
    let d = Daemon::start(&["--agent", "tck"]);
    for b in BINDINGS {
        let mut p = tck("tck-complete-task");
        p["futureField"] = json!({"x": 1});
        p["message"]["futureMember"] = json!([1, 2]);
        p["message"]["parts"][0]["futurePartMember"] = json!(true);
        p["configuration"] = json!({"historyLength": 5, "futureOption": "on"});
        let r = d.ok(b, "SendMessage", p).await;
        assert_eq!(task_state(&r["task"]), "TASK_STATE_COMPLETED", "{b:?}: {r}");
        let id = r["task"]["id"].clone();
        let t = d.ok(b, "GetTask", json!({"id": id, "futureQuery": "1"})).await;
        assert_eq!(t["id"], id, "{b:?}");
        let l = d.ok(b, "ListTasks", json!({"futureFilter": "x"})).await;
        assert!(l["tasks"].as_array().is_some_and(|t| !t.is_empty()), "{b:?}: {l}");
    }
}
