//! Conformance checks for task rows: roundtrip, replace, listing order,
//! pagination and filters.

use super::build::{commit, full_record, ids, list, ok, query, record, records, tasks_batch};
use agentd_core::{Batch, LinkKind, OpenGate, Store, TaskLink, TaskMeta, TaskQuery, TaskRecord};
use agentd_proto::TaskState::{Canceled, Completed, InputRequired, Working};

/// An empty batch commits and changes nothing.
pub async fn empty_batch(store: &dyn Store) {
    commit(store, Batch::default(), "an empty batch").await;
    let page = list(store, &query()).await;
    assert_eq!(page.total, 0, "an empty batch must not create tasks");
    assert_eq!(ok(store.next_outbox_due().await, "next_outbox_due"), None);
}

/// A record with every field comes back equal; an unknown id is `None`.
pub async fn roundtrip_full_record(store: &dyn Store) {
    let rec = full_record("task-full", "alice", "ctx-1", 1_700_000_000_123);
    commit(store, tasks_batch(vec![rec.clone()]), "a full record").await;
    let got = ok(store.get_task("task-full").await, "get_task");
    assert_eq!(got.as_ref(), Some(&rec), "a full record must read back unchanged");
    assert_eq!(ok(store.get_task("no-such-task").await, "get_task"), None);
    let page = list(store, &query()).await;
    assert_eq!(page.tasks, vec![rec], "list_tasks must return the full record too");
}

/// A task's stored text is the `exact` form of its Task, beside its owner
/// and meta, whether the row is small or larger than a point read takes
/// inline; an unknown id is `None`.
pub async fn text_of_a_task(store: &dyn Store) {
    let full = TaskRecord {
        meta: TaskMeta { parent: Some("p-1".into()), model_calls: 3, ..TaskMeta::default() },
        ..full_record("task-text", "alice", "ctx-1", 1_700_000_000_123)
    };
    let mut big = full_record("task-big", "bob", "ctx-2", 1_700_000_000_456);
    big.task.history.get_or_insert_default().push(agentd_proto::Message {
        parts: vec![agentd_proto::Part::text("x".repeat(200 << 10))],
        ..Default::default()
    });
    commit(store, tasks_batch(vec![full.clone(), big.clone()]), "a full and a big record").await;
    for rec in [&full, &big] {
        let got =
            ok(store.get_task_text(rec.id()).await, "get_task_text").expect("a stored task has its text");
        assert_eq!((got.owner.as_str(), &got.meta), (rec.owner.as_str(), &rec.meta), "{}", rec.id());
        let written = agentd_proto::exact::to_string(&rec.task).expect("the task serializes");
        assert_eq!(got.task_json, written, "the text of {} is its Task as written", rec.id());
    }
    assert_eq!(ok(store.get_task_text("no-such-task").await, "get_task_text"), None);
}

/// Every shape of a task's meta (link kinds, parent, command, none) reads
/// back unchanged, and a re-commit replaces it too.
pub async fn meta_roundtrip(store: &dyn Store) {
    let metas = [
        TaskMeta::default(),
        TaskMeta { link: Some(TaskLink::new(LinkKind::Turn, "m-0")), ..TaskMeta::default() },
        TaskMeta {
            link: Some(TaskLink::new(LinkKind::Run, "triage-01J")),
            command: Some("workflow.run".into()),
            parent: None,
            gate: Some(OpenGate {
                ask_schema: Some(serde_json::json!({"type": "object", "required": ["approve"]})),
                ask_channel: Some("ops".into()),
                step: Some("ask".into()),
                answerers: vec!["user:carol".into()],
            }),
            approval: None,
            model_calls: 0,
            checkpoint: Some(serde_json::json!({"steps": {"ask": {"status": "waiting"}}})),
        },
        TaskMeta {
            link: Some(TaskLink::new(LinkKind::Subagent, "helper-1")),
            parent: Some("m-0".into()),
            command: Some("subagent.spawn".into()),
            gate: None,
            approval: None,
            model_calls: 7,
            checkpoint: None,
        },
        TaskMeta { parent: Some("m-2".into()), ..TaskMeta::default() },
        // A turn waiting for a tool call's approval: what a restart finds.
        TaskMeta {
            link: Some(TaskLink::new(LinkKind::Turn, "m-4")),
            gate: Some(OpenGate {
                ask_schema: Some(agentd_core::approval::ask_schema()),
                ask_channel: Some("@channel/ops".into()),
                step: None,
                answerers: vec![],
            }),
            approval: Some(agentd_core::PendingApproval {
                tool: "files__delete".into(),
                server: Some("files".into()),
                args_hash: agentd_core::approval::args_hash(&serde_json::json!({"path": "/tmp/x"})),
                opened_ms: 1_700_000_000_000,
                deadline_ms: 1_700_003_600_000,
                idempotent: false,
                interrupted: true,
                decision: Some(agentd_core::approval::Decision {
                    approve: false,
                    note: Some("no".into()),
                    by: "user:carol".into(),
                }),
            }),
            ..TaskMeta::default()
        },
    ];
    let recs: Vec<_> = metas
        .iter()
        .enumerate()
        .map(|(i, meta)| TaskRecord {
            meta: meta.clone(),
            ..record((&format!("m-{i}"), "alice", "ctx", Working, 1_000))
        })
        .collect();
    commit(store, tasks_batch(recs.clone()), "records with every meta shape").await;
    for rec in &recs {
        let got = ok(store.get_task(rec.id()).await, "get_task");
        assert_eq!(
            got.map(|r| r.meta),
            Some(rec.meta.clone()),
            "the meta of {} must read back unchanged",
            rec.id()
        );
    }
    let listed = list(store, &TaskQuery { context_id: Some("ctx".into()), ..query() }).await;
    assert!(
        listed.tasks.iter().all(|r| recs.iter().any(|w| w.id() == r.id() && w.meta == r.meta)),
        "list_tasks must return the meta too"
    );
    let cleared = TaskRecord { meta: TaskMeta::default(), version: 2, ..recs[3].clone() };
    commit(store, tasks_batch(vec![cleared]), "the meta cleared").await;
    let got = ok(store.get_task("m-3").await, "get_task");
    assert_eq!(got.map(|r| r.meta), Some(TaskMeta::default()), "a re-commit must replace the meta");
}

/// Committing a task again replaces the whole row.
pub async fn recommit_replaces(store: &dyn Store) {
    let first = record(("t-1", "alice", "ctx-1", Working, 1_000));
    commit(store, tasks_batch(vec![first]), "the first version").await;
    let second = TaskRecord { version: 2, ..full_record("t-1", "alice", "ctx-1", 2_000) };
    commit(store, tasks_batch(vec![second.clone()]), "the second version").await;
    let got = ok(store.get_task("t-1").await, "get_task");
    assert_eq!(got, Some(second), "a re-commit must replace the record");
    let page = list(store, &query()).await;
    assert_eq!(page.total, 1, "a re-commit must not add a row");
    let working = TaskQuery { state: Some(Working), ..query() };
    assert_eq!(list(store, &working).await.total, 0, "the state column must follow the record");
    let old = TaskQuery { updated_since_ms: Some(1_500), ..query() };
    assert_eq!(list(store, &old).await.total, 1, "the timestamp column must follow the record");
}

/// Newest status first; equal timestamps by id descending.
pub async fn list_order(store: &dyn Store) {
    let specs = [
        ("b", "alice", "c", Working, 2_000),
        ("a", "alice", "c", Working, 3_000),
        ("d", "alice", "c", Working, 2_000),
        ("c", "alice", "c", Working, 2_000),
        ("e", "alice", "c", Working, 1_000),
    ];
    commit(store, tasks_batch(records(&specs)), "five tasks").await;
    let page = list(store, &query()).await;
    assert_eq!(ids(&page.tasks), ["a", "d", "c", "b", "e"], "order must be (ms desc, id desc)");
    assert_eq!((page.total, page.more), (5, false));
    let limited = list(store, &TaskQuery { limit: 2, ..query() }).await;
    assert_eq!(ids(&limited.tasks), ["a", "d"]);
    assert_eq!((limited.total, limited.more), (5, true), "a cut page must say more");
    let exact = list(store, &TaskQuery { limit: 5, ..query() }).await;
    assert!(!exact.more, "a page that ends exactly at the last task must not say more");
}

/// Paging with a cursor through many tasks sharing a timestamp returns
/// every task exactly once, in order, with a constant total.
pub async fn paginate_shared_timestamp(store: &dyn Store) {
    let names: Vec<String> = (0..31).map(|i| format!("task-{:02}", (i * 7) % 31)).collect();
    let mut specs: Vec<_> = names.iter().map(|n| (n.as_str(), "alice", "c", Working, 5_000)).collect();
    specs.extend([("z-new", "alice", "c", Working, 6_000), ("a-old", "alice", "c", Working, 4_000)]);
    commit(store, tasks_batch(records(&specs)), "33 tasks").await;
    let everything = ids(&list(store, &query()).await.tasks);
    assert_eq!(everything.len(), 33);
    let mut seen = Vec::new();
    let mut q = TaskQuery { limit: 4, ..query() };
    let mut done = false;
    for _page in 0..20 {
        let page = list(store, &q).await;
        assert_eq!(page.total, 33, "total must ignore the cursor (after {:?})", q.after);
        seen.extend(ids(&page.tasks));
        if !page.more {
            done = true;
            break;
        }
        let Some(last) = page.tasks.last() else {
            panic!("a page saying more must not be empty (after {:?})", q.after)
        };
        q.after = Some((last.updated_ms(), last.task.id.clone()));
    }
    assert!(done, "paging must end with a page saying no more");
    assert_eq!(seen, everything, "pages must return every task once, in list order");
}

/// A page ends before the task that would take its stored JSON past
/// `max_bytes`, saying there is more; its first task is always in it, however
/// big; paging on returns every task once.
pub async fn page_bytes_bound(store: &dyn Store) {
    let specs = [
        ("big", "alice", "c", Working, 4_000),
        ("small-1", "alice", "c", Working, 3_000),
        ("small-2", "alice", "c", Working, 2_000),
        ("small-3", "alice", "c", Working, 1_000),
    ];
    let mut recs = records(&specs);
    let history = |n: usize| Some(vec![agentd_proto::Message::agent_text("x".repeat(n))]);
    recs[0].task.history = history(20_000);
    for r in &mut recs[1..] {
        r.task.history = history(3_000);
    }
    commit(store, tasks_batch(recs), "a big task and three small").await;
    let mut q = TaskQuery { max_bytes: 8_000, ..query() };
    let mut pages = Vec::new();
    for _ in 0..10 {
        let page = list(store, &q).await;
        pages.push(ids(&page.tasks));
        if !page.more {
            break;
        }
        let last = page.tasks.last().expect("a page saying more is not empty");
        q.after = Some((last.updated_ms(), last.task.id.clone()));
    }
    assert_eq!(pages, [vec!["big"], vec!["small-1", "small-2"], vec!["small-3"]], "pages within 8,000 bytes");
    let unbounded = list(store, &query()).await;
    assert_eq!(unbounded.tasks.len(), 4, "0: no bound");
}

/// `total` counts the filtered rows before the cursor and limit.
pub async fn total_ignores_cursor(store: &dyn Store) {
    let specs = [
        ("t1", "alice", "c", Working, 1_000),
        ("t2", "alice", "c", Working, 2_000),
        ("t3", "alice", "c", Working, 3_000),
        ("t4", "bob", "c", Working, 4_000),
    ];
    commit(store, tasks_batch(records(&specs)), "four tasks").await;
    let q = TaskQuery { owner: Some("alice".into()), after: Some((3_000, "t3".into())), limit: 1, ..query() };
    let page = list(store, &q).await;
    assert_eq!(ids(&page.tasks), ["t2"]);
    assert_eq!((page.total, page.more), (3, true), "total is alice's 3 tasks");
    let past_end = TaskQuery { after: Some((0, String::new())), ..q };
    let page = list(store, &past_end).await;
    assert!(page.tasks.is_empty() && !page.more);
    assert_eq!(page.total, 3, "total must not depend on the cursor");
}

/// Each filter alone and together, as a table of (query, expected ids).
pub async fn list_filters(store: &dyn Store) {
    let specs = [
        ("t1", "alice", "c1", Working, 1_000),
        ("t2", "alice", "c2", Completed, 2_000),
        ("t3", "bob", "c1", Completed, 3_000),
        ("t4", "bob", "c2", InputRequired, 4_000),
        ("t5", "alice", "c1", Completed, 5_000),
    ];
    commit(store, tasks_batch(records(&specs)), "five tasks").await;
    let s = |v: &str| Some(v.to_owned());
    let cases: Vec<(TaskQuery, Vec<&str>)> = vec![
        (TaskQuery { owner: s("alice"), ..query() }, vec!["t5", "t2", "t1"]),
        (TaskQuery { owner: s("carol"), ..query() }, vec![]),
        (TaskQuery { context_id: s("c1"), ..query() }, vec!["t5", "t3", "t1"]),
        (TaskQuery { state: Some(Completed), ..query() }, vec!["t5", "t3", "t2"]),
        (TaskQuery { state: Some(Canceled), ..query() }, vec![]),
        (TaskQuery { updated_since_ms: Some(3_000), ..query() }, vec!["t5", "t4", "t3"]),
        (TaskQuery { updated_since_ms: Some(5_001), ..query() }, vec![]),
        (TaskQuery { owner: s("alice"), context_id: s("c1"), state: Some(Completed), ..query() }, vec!["t5"]),
        (TaskQuery { owner: s("bob"), updated_since_ms: Some(3_500), ..query() }, vec!["t4"]),
    ];
    for (q, expected) in cases {
        let page = list(store, &q).await;
        assert_eq!(ids(&page.tasks), expected, "filter {q:?}");
        assert_eq!(page.total, expected.len(), "total for filter {q:?}");
    }
}
