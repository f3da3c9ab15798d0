//! Who sees what, on both bindings. Two users and an operator, with bearer
//! tokens from a config file: a task is visible to its owner and to
//! operators only; to anyone else it does not exist, on every method. Push
//! configs are private to whoever registered them. Authentication itself is
//! in `visibility/auth.rs`; every operation on every binding for every
//! relation (owner, gate answerer, other, operator, anonymous) in one table
//! in `visibility/authz_table.rs`.

mod auth;
mod authz_table;

use crate::common::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-9876543210";
const OPS: &str = "ops-token-abcdefghij";

struct Principals {
    d: Daemon,
    alice: Daemon,
    bob: Daemon,
    ops: Daemon,
    _conf: tempfile::TempDir,
    _data: tempfile::TempDir,
}

fn start() -> Principals {
    let (conf, data) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let digest = |t: &str| hex::encode(Sha256::digest(t.as_bytes()));
    let (alice, bob, ops) = (digest(ALICE), digest(BOB), digest(OPS));
    let yaml = format!(
        r#"auth:
  tokens:
    - {{id: "user:alice", role: user, sha256: "{alice}"}}
    - {{id: "user:bob", role: user, sha256: "{bob}"}}
    - {{id: "operator:ops", role: operator, sha256: "{ops}"}}
"#
    );
    let path = conf.path().join("agentd.yaml");
    std::fs::write(&path, yaml).expect("write config");
    let args = ["--agent", "tck", "--push-allow-private", "--config", path.to_str().expect("utf-8 path")];
    let d = Daemon::start_in(data.path(), &args);
    let (alice, bob, ops) = (d.as_token(Some(ALICE)), d.as_token(Some(BOB)), d.as_token(Some(OPS)));
    Principals { d, alice, bob, ops, _conf: conf, _data: data }
}

fn ids(page: &Value) -> Vec<String> {
    page["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["id"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// Alice's waiting task in a context of her own: (task id, context id).
async fn alice_task(p: &Principals, b: Binding) -> (String, String) {
    let ctx = uid("alice-ctx");
    let mut params = tck("tck-input-required");
    params["message"]["contextId"] = json!(ctx);
    let r = p.alice.ok(b, "SendMessage", params).await;
    (r["task"]["id"].as_str().expect("id").to_owned(), ctx)
}

fn hook(name: &str, secret: &str) -> Value {
    json!({"url": format!("http://127.0.0.1:9/{name}"), "authentication": {"scheme": "Bearer", "credentials": secret}})
}

fn with_task(mut cfg: Value, task: &str) -> Value {
    cfg["taskId"] = json!(task);
    cfg
}

/// A completed task (read from the store, its turn over) is shown whole to
/// its owner and to operators, as its send answered it but for the empty
/// artifacts GetTask leaves out, and does not exist for another user.
#[tokio::test]
async fn a_completed_task_is_shown_whole_to_its_owner_and_operators_only() {
    let p = start();
    for b in BINDINGS {
        let sent = p.alice.ok(b, "SendMessage", tck("tck-complete-task")).await;
        let mut task = sent["task"].clone();
        assert_eq!(task_state(&task), "TASK_STATE_COMPLETED", "{b:?}: {task}");
        assert_eq!(task["artifacts"], json!([]), "{b:?}: a send's task lists its artifacts, none here");
        task.as_object_mut().expect("a task object").remove("artifacts");
        let id = json!({"id": task["id"]});
        for who in [&p.alice, &p.ops] {
            assert_eq!(who.ok(b, "GetTask", id.clone()).await, task, "{b:?}: the task whole");
        }
        expect_error(p.bob.op(b, "GetTask", id.clone()).await, -32001);
        let last = p.alice.ok(b, "GetTask", json!({"id": task["id"], "historyLength": 1})).await;
        assert_eq!(last["history"].as_array().map(Vec::len), Some(1), "{b:?}: {last}");
    }
}

#[tokio::test]
async fn a_task_does_not_exist_for_another_user_on_any_method() {
    let p = start();
    for b in BINDINGS {
        let (id, ctx) = alice_task(&p, b).await;
        let cfg = p
            .alice
            .ok(b, "CreateTaskPushNotificationConfig", with_task(hook("alice", "alice-secret"), &id))
            .await;
        let cfg_id = cfg["id"].as_str().expect("config id");
        let unary = [
            ("GetTask", json!({"id": id})),
            ("CancelTask", json!({"id": id})),
            ("SendMessage", tck_on("tck-complete-task", &id)),
            ("CreateTaskPushNotificationConfig", with_task(hook("bob", "bob-secret"), &id)),
            ("GetTaskPushNotificationConfig", json!({"taskId": id, "id": cfg_id})),
            ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
            ("DeleteTaskPushNotificationConfig", json!({"taskId": id, "id": cfg_id})),
        ];
        for (method, params) in unary {
            expect_error(p.bob.op(b, method, params).await, -32001);
        }
        for (method, params) in
            [("SubscribeToTask", json!({"id": id})), ("SendStreamingMessage", tck_on("tck-stream-001", &id))]
        {
            expect_error(Err(p.bob.stream(b, method, params).await.refused().await), -32001);
        }
        let l = p.bob.ok(b, "ListTasks", json!({})).await;
        assert!(!ids(&l).contains(&id), "{b:?}: bob's listing omits alice's task: {l}");
        let l = p.bob.ok(b, "ListTasks", json!({"contextId": ctx})).await;
        assert_eq!(
            (l["tasks"].clone(), l["totalSize"].clone()),
            (json!([]), json!(0)),
            "{b:?}: even by her contextId"
        );

        // Nothing bob tried had an effect.
        let t = p.alice.ok(b, "GetTask", json!({"id": id})).await;
        assert_eq!(task_state(&t), "TASK_STATE_INPUT_REQUIRED", "{b:?}: {t}");
        assert_eq!(t["history"].as_array().map(Vec::len), Some(2), "{b:?}: bob's message was not added: {t}");
        let list = p.alice.ok(b, "ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
        assert_eq!(list["configs"], json!([cfg]), "{b:?}: her config is intact and bob's was never added");

        // The owner and the operator see it.
        let l = p.alice.ok(b, "ListTasks", json!({"contextId": ctx})).await;
        assert_eq!(ids(&l), [id.as_str()], "{b:?}");
        p.ops.ok(b, "GetTask", json!({"id": id})).await;
        assert!(
            ids(&p.ops.ok(b, "ListTasks", json!({})).await).contains(&id),
            "{b:?}: operators list every task"
        );
        let got = p.ops.ok(b, "GetTaskPushNotificationConfig", json!({"taskId": id, "id": cfg_id})).await;
        assert_eq!(got, cfg, "{b:?}: operators read every config");
        let mut s = p.ops.stream(b, "SubscribeToTask", json!({"id": id})).await;
        assert_eq!(s.next().await.expect("first event")["task"]["id"], json!(id), "{b:?}");
        let c = p.ops.ok(b, "CancelTask", json!({"id": id})).await;
        assert_eq!(task_state(&c), "TASK_STATE_CANCELED", "{b:?}: operators may act on it");
        assert_eq!(
            s.collect().await.iter().filter_map(state).collect::<Vec<_>>(),
            ["TASK_STATE_CANCELED"],
            "{b:?}"
        );
    }
}

#[tokio::test]
async fn webhook_configs_never_leak_across_principals() {
    let p = start();
    for b in BINDINGS {
        let (id, _) = alice_task(&p, b).await;
        let ops_cfg = p
            .ops
            .ok(b, "CreateTaskPushNotificationConfig", with_task(hook("ops", "ops-webhook-secret"), &id))
            .await;
        let ops_id = ops_cfg["id"].as_str().expect("id");
        let mine = p
            .alice
            .ok(b, "CreateTaskPushNotificationConfig", with_task(hook("alice", "alice-secret"), &id))
            .await;

        expect_error(
            p.alice.op(b, "GetTaskPushNotificationConfig", json!({"taskId": id, "id": ops_id})).await,
            -32001,
        );
        let list = p.alice.ok(b, "ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
        assert_eq!(list["configs"], json!([mine]), "{b:?}: only her own config");
        assert!(!list.to_string().contains("ops-webhook-secret"), "{b:?}");

        // She can neither delete nor overwrite it.
        p.alice.ok(b, "DeleteTaskPushNotificationConfig", json!({"taskId": id, "id": ops_id})).await;
        let mut hijack = with_task(hook("alice-hijack", "x"), &id);
        hijack["id"] = json!(ops_id);
        assert!(
            p.alice.op(b, "CreateTaskPushNotificationConfig", hijack).await.is_err(),
            "{b:?}: overwrite refused"
        );
        let still = p.ops.ok(b, "GetTaskPushNotificationConfig", json!({"taskId": id, "id": ops_id})).await;
        assert_eq!(still, ops_cfg, "{b:?}: the operator's config is untouched");
        let all = p.ops.ok(b, "ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
        assert_eq!(all["configs"].as_array().map(Vec::len), Some(2), "{b:?}: {all}");
    }
}

#[tokio::test]
async fn another_users_context_cannot_be_joined() {
    let p = start();
    for b in BINDINGS {
        let (_, ctx) = alice_task(&p, b).await;
        let mut params = tck("tck-complete-task");
        params["message"]["contextId"] = json!(ctx);
        expect_error(p.bob.op(b, "SendMessage", params.clone()).await, -32602)
            .assert_field("message.contextId");
        let l = p.bob.ok(b, "ListTasks", json!({"contextId": ctx})).await;
        assert_eq!(l["totalSize"], 0, "{b:?}: bob created nothing there");
        let r = p.alice.ok(b, "SendMessage", params).await;
        assert_eq!(r["task"]["contextId"], json!(ctx), "{b:?}: the owner continues her conversation");
    }
}

#[tokio::test]
async fn an_operator_adding_a_turn_does_not_take_the_conversation() {
    let p = start();
    for b in BINDINGS {
        let (_, ctx) = alice_task(&p, b).await;
        let mut params = tck("tck-complete-task");
        params["message"]["contextId"] = json!(ctx);
        let r = p.ops.ok(b, "SendMessage", params.clone()).await;
        assert_eq!(r["task"]["contextId"], json!(ctx), "{b:?}: an operator may add a turn");
        let r = p.alice.ok(b, "SendMessage", params.clone()).await;
        assert_eq!(r["task"]["contextId"], json!(ctx), "{b:?}: and the conversation stays hers");
        expect_error(p.bob.op(b, "SendMessage", params).await, -32602).assert_field("message.contextId");
    }
}

#[tokio::test]
async fn push_configs_racing_for_one_id_leave_it_one_owner() {
    // Alice (the task's owner) and an operator register a config with the
    // same new id at the same moment, 20 times over: one of them gets it,
    // the other is refused, and the config is the winner's.
    let p = start();
    let b = Binding::JsonRpc;
    let (id, _) = alice_task(&p, b).await;
    for n in 0..20 {
        let cfg_id = format!("race-{n}");
        let mut mine = with_task(hook("alice-race", "a"), &id);
        mine["id"] = json!(cfg_id);
        let mut theirs = with_task(hook("ops-race", "o"), &id);
        theirs["id"] = json!(cfg_id);
        let (a, o) = tokio::join!(
            p.alice.op(b, "CreateTaskPushNotificationConfig", mine.clone()),
            p.ops.op(b, "CreateTaskPushNotificationConfig", theirs.clone())
        );
        let stored = p.ops.ok(b, "GetTaskPushNotificationConfig", json!({"taskId": id, "id": cfg_id})).await;
        match (a, o) {
            (Ok(a), Err(_)) => assert_eq!(stored, a, "{cfg_id}: alice's stands"),
            (Err(e), Ok(o)) => {
                expect_error(Err(e), -32602).assert_field("id");
                assert_eq!(stored, o, "{cfg_id}: the operator's stands");
            }
            // An operator may replace alice's config (it sees it): then the
            // later write is the operator's, and alice's answer was hers.
            (Ok(_), Ok(o)) => assert_eq!(stored, o, "{cfg_id}: the operator replaced it after alice"),
            (Err(a), Err(o)) => panic!("{cfg_id}: both refused: {a:?} {o:?}"),
        }
        // Room for the next round: a task holds at most 16 configs.
        p.ops.ok(b, "DeleteTaskPushNotificationConfig", json!({"taskId": id, "id": cfg_id})).await;
    }
}

/// A first turn in context `ctx`.
async fn first_turn(d: &Daemon, ctx: &str) -> Result<Value, WireError> {
    let mut params = tck("tck-complete-task");
    params["message"]["contextId"] = json!(ctx);
    d.op(Binding::JsonRpc, "SendMessage", params).await
}

#[tokio::test]
async fn first_turns_racing_for_one_context_leave_it_one_owner() {
    // Alice and bob send a first turn with the same new contextId at the
    // same moment, 40 times over: each conversation gets exactly one of
    // them, and the other is told the context is taken.
    let p = start();
    let contexts: Vec<String> = (0..40).map(|_| uid("race")).collect();
    let races = contexts.iter().map(|ctx| {
        let (a, b) = (first_turn(&p.alice, ctx), first_turn(&p.bob, ctx));
        async move { tokio::join!(a, b) }
    });
    let results = futures::future::join_all(races).await;
    for (ctx, (a, b)) in contexts.iter().zip(results) {
        match (a.is_ok(), b.is_ok()) {
            (true, false) => expect_error(b, -32602).assert_field("message.contextId"),
            (false, true) => expect_error(a, -32602).assert_field("message.contextId"),
            (both, _) => panic!("{ctx}: both accepted: {both}, or neither"),
        };
        let l = p.ops.ok(Binding::JsonRpc, "ListTasks", json!({"contextId": ctx})).await;
        assert_eq!(l["totalSize"], 1, "{ctx}: one turn in the conversation: {l}");
    }
}

#[tokio::test]
async fn a_finished_task_is_just_as_invisible() {
    // Terminal tasks take other code paths (no live slot): a foreign one
    // must still be "not found", never "not cancelable" or "unsupported".
    let p = start();
    for b in BINDINGS {
        let r = p.alice.ok(b, "SendMessage", tck("tck-complete-task")).await;
        let id = r["task"]["id"].as_str().expect("id");
        for (method, params) in [
            ("GetTask", json!({"id": id})),
            ("CancelTask", json!({"id": id})),
            ("SendMessage", tck_on("tck-complete-task", id)),
            ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        ] {
            expect_error(p.bob.op(b, method, params).await, -32001);
        }
        let s = p.bob.stream(b, "SubscribeToTask", json!({"id": id})).await;
        expect_error(Err(s.refused().await), -32001);
        // The owner gets the real answers.
        expect_error(p.alice.op(b, "CancelTask", json!({"id": id})).await, -32002);
        let s = p.alice.stream(b, "SubscribeToTask", json!({"id": id})).await;
        expect_error(Err(s.refused().await), -32004);
    }
}
