//! What an upgrade of the listing indexes must keep, for every backend:
//! tasks written before it list newest first, ties by id from the highest,
//! page after page, for one owner and for all.

use agentd_core::{Store, TaskQuery};

/// Six tasks, two owners, two of them updated in the same millisecond:
/// `(id, owner, updated_ms)`.
pub const ROWS: &[(&str, &str, i64)] = &[
    ("a", "alice", 1_000),
    ("b", "bob", 2_000),
    ("c", "alice", 3_000),
    ("d", "alice", 3_000),
    ("e", "bob", 4_000),
    ("f", "alice", 5_000),
];

/// The Task text of a row of `ROWS` as an older build wrote it.
pub fn task_json(id: &str) -> String {
    format!(r#"{{"id":"{id}","contextId":"ctx","status":{{"state":"TASK_STATE_COMPLETED"}}}}"#)
}

/// `store`, holding `ROWS`, lists them newest first in pages of two.
pub async fn lists_rows_newest_first(store: &dyn Store) {
    let updated_of = |id: &str| ROWS.iter().find(|r| r.0 == id).map(|r| r.2).expect("a row");
    for (owner, expected) in
        [(Some("alice"), vec!["f", "d", "c", "a"]), (None, vec!["f", "e", "d", "c", "b", "a"])]
    {
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let q = TaskQuery {
                owner: owner.map(str::to_owned),
                after: after.take(),
                limit: 2,
                ..Default::default()
            };
            let page = store.list_tasks(&q).await.expect("list");
            assert_eq!(page.total, expected.len(), "{owner:?}");
            let last = page.tasks.last().map(|t| (updated_of(t.id()), t.id().to_owned()));
            seen.extend(page.tasks.iter().map(|t| t.id().to_owned()));
            match (page.more, last) {
                (true, Some(l)) => after = Some(l),
                _ => break,
            }
        }
        assert_eq!(seen, expected, "{owner:?}");
    }
}
