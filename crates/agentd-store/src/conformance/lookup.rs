//! Conformance checks for the lookups the engine makes outside ListTasks:
//! recovery by state and context ownership.

use super::build::{commit, ids, ok, records, tasks_batch};
use agentd_core::{Batch, ClosedContext, OpenGate, Store, TaskMetaRow};
use agentd_proto::TaskState::{self, Canceled, Completed, InputRequired, Submitted, Working};

/// `tasks_in_states` returns exactly the tasks in the given states.
pub async fn tasks_in_states(store: &dyn Store) {
    let specs = [
        ("t1", "alice", "c", Submitted, 1_000),
        ("t2", "alice", "c", Working, 2_000),
        ("t3", "bob", "c", Completed, 3_000),
        ("t4", "bob", "c", Working, 4_000),
    ];
    commit(store, tasks_batch(records(&specs)), "four tasks").await;
    let cases: [(&[TaskState], &[&str]); 4] = [
        (&[Submitted, Working], &["t1", "t2", "t4"]),
        (&[Completed], &["t3"]),
        (&[Canceled], &[]),
        (&[], &[]),
    ];
    for (states, expected) in cases {
        let got = ok(store.tasks_in_states(states).await, "tasks_in_states");
        let mut got = ids(&got);
        got.sort();
        assert_eq!(got, expected, "tasks_in_states({states:?})");
    }
}

/// `metas_in_state` gives the id, owner and meta of exactly the tasks in
/// the state, in `tasks_in_states`' order, as `tasks_in_states` has them.
pub async fn metas_in_state(store: &dyn Store) {
    let specs = [
        ("g1", "alice", "c", InputRequired, 1_000),
        ("w1", "alice", "c", Working, 2_000),
        ("g2", "bob", "c", InputRequired, 3_000),
        ("g0", "carol", "c", InputRequired, 500),
    ];
    let mut recs = records(&specs);
    for r in &mut recs {
        r.meta.gate =
            Some(OpenGate { answerers: vec![format!("user:{}-approver", r.owner)], ..OpenGate::default() });
    }
    commit(store, tasks_batch(recs), "four tasks, three waiting").await;
    let whole = ok(store.tasks_in_states(&[InputRequired]).await, "tasks_in_states");
    let metas = ok(store.metas_in_state(InputRequired).await, "metas_in_state");
    let expected: Vec<TaskMetaRow> =
        whole.into_iter().map(|r| TaskMetaRow { id: r.task.id, owner: r.owner, meta: r.meta }).collect();
    assert_eq!(metas, expected);
    let order: Vec<&str> = metas.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(order, ["g0", "g1", "g2"], "oldest change first");
    assert_eq!(
        metas[1].meta.gate.as_ref().map(|g| g.answerers.clone()),
        Some(vec!["user:alice-approver".into()])
    );
    assert!(ok(store.metas_in_state(Canceled).await, "none").is_empty());
}

/// `context_foreign` is true iff the context's first task (oldest, ties by
/// id) has another owner: a later task of someone else (an operator's turn)
/// does not take the conversation over.
pub async fn context_foreign(store: &dyn Store) {
    let specs = [
        ("t2", "operator", "shared", Working, 2_000),
        ("t1", "alice", "shared", Working, 1_000),
        ("t3", "alice", "mine", Working, 3_000),
        ("b", "bob", "tie", Working, 4_000),
        ("a", "carol", "tie", Working, 4_000),
    ];
    commit(store, tasks_batch(records(&specs)), "five tasks").await;
    let cases = [
        ("shared", "alice", false),
        ("shared", "operator", true),
        ("shared", "bob", true),
        ("mine", "alice", false),
        ("mine", "bob", true),
        ("tie", "carol", false),
        ("tie", "bob", true),
        ("unknown", "alice", false),
    ];
    for (context, owner, expected) in cases {
        let got = ok(store.context_foreign(context, owner).await, "context_foreign");
        assert_eq!(got, expected, "context_foreign({context:?}, {owner:?})");
    }
}

/// `context_tasks` lists a context's tasks in creation order, whatever
/// their status timestamps, and nothing from other contexts.
pub async fn context_tasks(store: &dyn Store) {
    let mut recs = records(&[
        ("b", "alice", "conv", Completed, 9_000),
        ("a", "alice", "conv", Working, 1_000),
        ("c", "alice", "other", Working, 2_000),
        ("d", "alice", "conv", Submitted, 3_000),
    ]);
    // Creation order differs from status order: b first, then a and d at once.
    for (r, created) in recs.iter_mut().zip([500, 700, 800, 700]) {
        r.created_at = super::build::ts(created);
    }
    commit(store, tasks_batch(recs), "four tasks").await;
    let got = ok(store.context_tasks("conv").await, "context_tasks");
    assert_eq!(ids(&got), ["b", "a", "d"], "creation order, ties by id");
    assert!(ok(store.context_tasks("none").await, "context_tasks").is_empty());
}

/// Closed conversations are listed oldest first, and closing one again
/// keeps the first close.
pub async fn closed_contexts(store: &dyn Store) {
    assert_eq!(ok(store.closed_contexts().await, "closed_contexts"), Vec::<String>::new(), "none at first");
    let close =
        |id: &str, ms| ClosedContext { context_id: id.into(), closed_by: "alice".into(), closed_ms: ms };
    let batch = |closed| Batch { closed_contexts: closed, ..Batch::default() };
    commit(store, batch(vec![close("b", 2_000), close("a", 1_000)]), "close two").await;
    commit(store, batch(vec![close("a", 3_000)]), "close again").await;
    let closed = ok(store.closed_contexts().await, "closed_contexts");
    assert_eq!(closed, ["a", "b"], "oldest first; a second close of `a` keeps its first time");
}
