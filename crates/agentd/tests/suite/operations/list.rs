//! ListTasks on both bindings: newest-updated first, cursor pagination that
//! returns every task once, the filters, `includeArtifacts`, and the
//! snake_case spellings ProtoJSON parsers must accept.

use crate::common::*;
use serde_json::{Value, json};
use std::collections::HashSet;

fn ids(page: &Value) -> Vec<String> {
    page["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["id"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn id_of(r: &Value) -> String {
    r["task"]["id"].as_str().expect("task id").to_owned()
}

/// Follows `nextPageToken` to the end, checking the REQUIRED members of
/// every page; returns the tasks in order and the number of pages.
async fn all_pages(
    d: &Daemon,
    b: Binding,
    mut params: Value,
    page_size: i64,
    total: i64,
) -> (Vec<Value>, usize) {
    let (mut tasks, mut pages) = (Vec::new(), 0);
    loop {
        params["pageSize"] = json!(page_size);
        let page = d.ok(b, "ListTasks", params.clone()).await;
        pages += 1;
        assert_eq!(page["totalSize"], json!(total), "{b:?}: totalSize counts all matches: {page}");
        assert_eq!(page["pageSize"], json!(page_size), "{b:?}: {page}");
        let token = page["nextPageToken"].as_str().expect("nextPageToken is always present").to_owned();
        let got = page["tasks"].as_array().expect("tasks").clone();
        assert!(got.len() as i64 <= page_size, "{b:?}: {page}");
        tasks.extend(got);
        if token.is_empty() {
            return (tasks, pages);
        }
        params["pageToken"] = json!(token);
        assert!(pages < 20, "{b:?}: pagination does not end");
    }
}

#[tokio::test]
async fn pages_return_every_task_exactly_once_newest_first() {
    let d = Daemon::start(&["--agent", "tck"]);
    // Created concurrently, so that several share a millisecond.
    let sends = (0..7).map(|_| d.ok(Binding::JsonRpc, "SendMessage", tck("tck-complete-task")));
    let want: HashSet<String> = futures::future::join_all(sends).await.iter().map(id_of).collect();
    assert_eq!(want.len(), 7);
    for b in BINDINGS {
        let (tasks, pages) = all_pages(&d, b, json!({}), 3, 7).await;
        assert_eq!(pages, 3, "{b:?}: 3 + 3 + 1");
        let got: Vec<String> = tasks.iter().map(|t| t["id"].as_str().unwrap_or("").to_owned()).collect();
        assert_eq!(got.len(), 7, "{b:?}: no task twice: {got:?}");
        assert_eq!(got.iter().cloned().collect::<HashSet<_>>(), want, "{b:?}: every task once");
        let stamps: Vec<&str> =
            tasks.iter().map(|t| t["status"]["timestamp"].as_str().unwrap_or("")).collect();
        assert!(stamps.windows(2).all(|w| w[0] >= w[1]), "{b:?}: newest first: {stamps:?}");

        let (_, pages) = all_pages(&d, b, json!({}), 7, 7).await;
        assert_eq!(pages, 1, "{b:?}: a page that fits exactly is the last");
        let one = d.ok(b, "ListTasks", json!({})).await;
        assert_eq!(one["nextPageToken"], "", "{b:?}: present and empty on the last page: {one}");
        assert_eq!(one["pageSize"], 50, "{b:?}: the default page size: {one}");
        assert_eq!(ids(&one).len(), 7, "{b:?}");
    }
}

#[tokio::test]
async fn the_most_recently_updated_task_is_listed_first() {
    let d = Daemon::start(&["--agent", "tck"]);
    let mut created = Vec::new();
    for _ in 0..3 {
        let t = d.call("SendMessage", tck("tck-input-required")).await;
        // Update times are in milliseconds: the next task's must be later.
        let updated =
            chrono::DateTime::parse_from_rfc3339(t["task"]["status"]["timestamp"].as_str().unwrap())
                .expect("an RFC 3339 timestamp");
        while chrono::Utc::now() <= updated {
            tokio::task::yield_now().await;
        }
        created.push(id_of(&t));
    }
    // Answering the oldest task updates it: it moves to the front.
    d.call("SendMessage", tck_on("tck-input-required", &created[0])).await;
    for b in BINDINGS {
        let l = d.ok(b, "ListTasks", json!({})).await;
        assert_eq!(ids(&l), [&created[0], &created[2], &created[1]].map(String::as_str), "{b:?}: {l}");
    }
}

#[tokio::test]
async fn filters_select_by_context_and_status() {
    let d = Daemon::start(&["--agent", "tck"]);
    let ctx = uid("ctx");
    let in_ctx = |prefix: &str| {
        let mut p = tck(prefix);
        p["message"]["contextId"] = json!(ctx);
        p
    };
    let a = id_of(&d.call("SendMessage", in_ctx("tck-artifact-text")).await);
    let b2 = id_of(&d.call("SendMessage", in_ctx("tck-artifact-text")).await);
    let waiting = id_of(&d.call("SendMessage", tck("tck-input-required")).await);
    let rejected = id_of(&d.call("SendMessage", tck("tck-reject-task")).await);
    for b in BINDINGS {
        let l = d.ok(b, "ListTasks", json!({"contextId": ctx})).await;
        assert_eq!(
            ids(&l).into_iter().collect::<HashSet<_>>(),
            HashSet::from([a.clone(), b2.clone()]),
            "{b:?}: {l}"
        );
        assert_eq!(l["totalSize"], 2, "{b:?}");
        let l = d.ok(b, "ListTasks", json!({"status": "TASK_STATE_INPUT_REQUIRED"})).await;
        assert_eq!(ids(&l), [waiting.as_str()], "{b:?}: {l}");
        let l = d.ok(b, "ListTasks", json!({"status": "TASK_STATE_REJECTED"})).await;
        assert_eq!(ids(&l), [rejected.as_str()], "{b:?}: {l}");
        let l = d.ok(b, "ListTasks", json!({"contextId": ctx, "status": "TASK_STATE_COMPLETED"})).await;
        assert_eq!(l["totalSize"], 2, "{b:?}: filters combine: {l}");
        let l = d.ok(b, "ListTasks", json!({"contextId": ctx, "status": "TASK_STATE_INPUT_REQUIRED"})).await;
        assert_eq!(
            (l["tasks"].clone(), l["totalSize"].clone(), l["nextPageToken"].clone()),
            (json!([]), json!(0), json!("")),
            "{b:?}"
        );
    }
}

#[tokio::test]
async fn artifacts_are_listed_only_when_asked_for() {
    let d = Daemon::start(&["--agent", "tck"]);
    for _ in 0..2 {
        d.call("SendMessage", tck("tck-artifact-text")).await;
    }
    d.call("SendMessage", tck("tck-input-required")).await;
    for b in BINDINGS {
        for params in [json!({}), json!({"includeArtifacts": false})] {
            let l = d.ok(b, "ListTasks", params.clone()).await;
            assert_eq!(ids(&l).len(), 3, "{b:?}");
            for t in l["tasks"].as_array().expect("tasks") {
                assert!(t.get("artifacts").is_none(), "{b:?} {params}: no `artifacts` member at all: {t}");
            }
        }
        let l = d.ok(b, "ListTasks", json!({"includeArtifacts": true})).await;
        let tasks = l["tasks"].as_array().expect("tasks");
        assert!(tasks.iter().all(|t| t["artifacts"].is_array()), "{b:?}: {l}");
        let texts: Vec<&Value> =
            tasks.iter().filter_map(|t| t["artifacts"].get(0)).map(|a| &a["parts"][0]["text"]).collect();
        assert_eq!(texts, [&json!("Generated text content"); 2], "{b:?}: {l}");
    }
}

#[tokio::test]
async fn snake_case_parameter_names_are_accepted() {
    let d = Daemon::start(&["--agent", "tck"]);
    let ctx = uid("ctx");
    let msg = json!({"message_id": uid("tck-input-required"), "context_id": ctx, "role": "ROLE_USER",
                     "parts": [{"text": "hi", "media_type": "text/plain"}]});
    let r = d
        .ok(Binding::JsonRpc, "SendMessage", json!({"message": msg, "configuration": {"history_length": 1}}))
        .await;
    assert_eq!(r["task"]["contextId"], json!(ctx), "{r}");
    assert_eq!(r["task"]["history"].as_array().map(Vec::len), Some(1), "configuration.history_length: {r}");
    let id = id_of(&r);
    d.call("SendMessage", tck_on("tck-input-required", &id)).await;
    d.call("SendMessage", in_other_context()).await;
    for b in BINDINGS {
        let t = d.ok(b, "GetTask", json!({"id": id, "history_length": 1})).await;
        assert_eq!(t["history"].as_array().map(Vec::len), Some(1), "{b:?}: history_length: {t}");
        let l =
            d.ok(b, "ListTasks", json!({"context_id": ctx, "page_size": 1, "include_artifacts": true})).await;
        assert_eq!(ids(&l), [id.as_str()], "{b:?}: context_id: {l}");
        assert_eq!(l["pageSize"], 1, "{b:?}: page_size: {l}");
        assert!(l["tasks"][0]["artifacts"].is_array(), "{b:?}: include_artifacts: {l}");
    }
}

fn in_other_context() -> Value {
    let mut p = tck("tck-complete-task");
    p["message"]["contextId"] = json!(uid("other"));
    p
}
