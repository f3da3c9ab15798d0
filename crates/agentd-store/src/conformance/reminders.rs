//! Reminder rows: round trip, first-commit order, active filter, lookup by id.

use agentd_core::{Batch, ReminderEnd, ReminderRecord, Store};
use agentd_proto::Timestamp;
use agentd_proto::ext::reminders::{Propagate, RoleHint};

pub(super) fn reminder(task: &str, id: &str) -> ReminderRecord {
    ReminderRecord {
        task_id: task.into(),
        id: id.into(),
        body: format!("body of {id}"),
        dedupe_key: Some("k".into()),
        ttl_turns: 2,
        role_hint: Some(RoleHint::Developer),
        source: "agent:coordinator".into(),
        propagate: Propagate::Subagents,
        metadata: Some(serde_json::from_value(serde_json::json!({"why": "test"})).unwrap()),
        accepted_at: Timestamp::from_millis(1_700_000_000_123).unwrap(),
        displaced: vec!["older".into()],
        delivered: 0,
        ended: None,
        copied_from: Some("parent/r0".into()),
    }
}

async fn commit(store: &dyn Store, reminders: Vec<ReminderRecord>) {
    store.commit(Batch { reminders, ..Batch::default() }).await.expect("commit reminders");
}

/// Reminders read back as committed, in first-commit order, per task; a
/// recommit (delivery, end) keeps the place and replaces the content.
pub async fn reminders_roundtrip_and_order(store: &dyn Store) {
    let (a, b, c) = (reminder("t1", "b-second"), reminder("t1", "a-first"), reminder("t2", "x"));
    commit(store, vec![a.clone()]).await;
    commit(store, vec![b.clone(), c.clone()]).await;
    let got = store.reminders("t1", false).await.unwrap();
    assert_eq!(got, vec![a.clone(), b.clone()], "first-commit order, not id order; other tasks excluded");
    let mut delivered = a.clone();
    delivered.delivered = 2;
    delivered.ended = Some(ReminderEnd::Expired);
    let mut displaced = b.clone();
    displaced.ended = Some(ReminderEnd::Deduped { by: "y".into() });
    commit(store, vec![displaced.clone(), delivered.clone()]).await;
    assert_eq!(store.reminders("t1", false).await.unwrap(), vec![delivered.clone(), displaced]);
    assert!(store.reminders("t1", true).await.unwrap().is_empty(), "ended reminders are not active");
    assert_eq!(store.reminders("t2", true).await.unwrap(), vec![c]);
    assert_eq!(store.get_reminder("t1", "b-second").await.unwrap(), Some(delivered));
    assert_eq!(store.get_reminder("t2", "b-second").await.unwrap(), None, "ids are per task");
}
