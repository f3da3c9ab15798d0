//! The step journal: entries read back whole in `seq` order per task, an
//! entry whose place is taken refuses its whole batch, and the commit that
//! ends a task removes its journal.

use super::build::{commit, record, tasks_batch};
use agentd_core::{
    Batch, DeliveredReminder, JournalEntry, JournalToolCall, ModelInput, ModelStep, StepRecord, Store,
    StoreError, ToolOutcome, ToolProgress, ToolStart,
};
use agentd_proto::ext::reminders::RoleHint;
use agentd_proto::{Message, TaskState};

fn model(task: &str, seq: u32) -> JournalEntry {
    JournalEntry {
        task_id: task.into(),
        seq,
        step: StepRecord::Model(ModelStep {
            step: seq,
            turn_started_ms: 1_700_000_000_000,
            history_len: 1,
            steering: vec![Message {
                message_id: "m-steer".into(),
                ..Message::agent_text("steer \u{1F9ED} \"quoted\"")
            }],
            reminders: vec![DeliveredReminder {
                id: "r1".into(),
                source: "agent:c".into(),
                body: "keep it short".into(),
                role_hint: Some(RoleHint::System),
            }],
            text: "Let me look.\n".into(),
            tool_calls: vec![JournalToolCall {
                id: "c1".into(),
                name: "lookup".into(),
                arguments: "{\"q\":1}".into(),
            }],
            input_tokens: 120,
            output_tokens: 7,
        }),
    }
}

fn started(task: &str, seq: u32) -> JournalEntry {
    let step = StepRecord::ToolStarted(ToolStart {
        step: 1,
        call: 0,
        name: "lookup".into(),
        attempt: 2,
        key: format!("{task}:1:0"),
        id: "0190b7c4-1b2c-7d3e-8f40-5a6b7c8d9e0f".into(),
    });
    JournalEntry { task_id: task.into(), seq, step }
}

fn result(task: &str, seq: u32, result: Result<String, String>) -> JournalEntry {
    JournalEntry {
        task_id: task.into(),
        seq,
        step: StepRecord::ToolResult(ToolOutcome { step: 1, call: 0, result }),
    }
}

fn progress(task: &str, seq: u32) -> JournalEntry {
    let step = StepRecord::ToolProgress(ToolProgress {
        step: 1,
        call: 0,
        peer: "review-bot".into(),
        task_id: "peer-task-\u{e9}".into(),
    });
    JournalEntry { task_id: task.into(), seq, step }
}

fn journal_batch(entries: Vec<JournalEntry>) -> Batch {
    Batch { journal: entries, ..Batch::default() }
}

fn input(task: &str, seq: u32) -> JournalEntry {
    let StepRecord::Model(m) = model(task, seq).step else { unreachable!("a model entry") };
    let step = StepRecord::ModelInput(ModelInput { step: 2, reminders: m.reminders });
    JournalEntry { task_id: task.into(), seq, step }
}

/// Entries come back as committed, in `seq` order, per task.
pub async fn journal_roundtrip_and_order(store: &dyn Store) {
    let (m, s, ok, err) = (
        model("t1", 1),
        started("t1", 2),
        result("t1", 3, Ok("found".into())),
        result("t2", 1, Err("boom".into())),
    );
    let (i, p) = (input("t1", 4), progress("t1", 5));
    commit(store, journal_batch(vec![m.clone(), s.clone()]), "first entries").await;
    commit(store, journal_batch(vec![p.clone(), i.clone(), ok.clone(), err.clone()]), "later entries").await;
    assert_eq!(store.journal("t1").await.unwrap(), vec![m, s, ok, i, p], "seq order, other tasks excluded");
    assert_eq!(store.journal("t2").await.unwrap(), vec![err]);
    assert!(store.journal("t3").await.unwrap().is_empty(), "a task without a journal has an empty one");
}

/// An entry at a `(task, seq)` already stored refuses its whole batch:
/// two runs of one task cannot both record a step.
pub async fn journal_entry_written_twice_refuses_its_batch(store: &dyn Store) {
    commit(store, journal_batch(vec![model("t1", 1)]), "first entry").await;
    let task = record(("t9", "alice", "c", TaskState::Working, 1_000));
    let again =
        Batch { tasks: vec![task], journal: vec![model("t1", 2), started("t1", 1)], ..Batch::default() };
    let refused = store.commit(again).await;
    assert!(
        matches!(&refused, Err(StoreError::Conflict { task_id, expected: 0, found: 1 }) if task_id == "t1"),
        "a taken journal place is a conflict: {refused:?}"
    );
    assert_eq!(store.journal("t1").await.unwrap(), vec![model("t1", 1)], "nothing of the batch was written");
    assert_eq!(store.get_task("t9").await.unwrap(), None, "not even its task");
}

/// The commit that moves a task to a terminal state removes its journal,
/// entries of that same commit included; other tasks keep theirs.
pub async fn journal_removed_when_its_task_ends(store: &dyn Store) {
    let mut task = record(("t1", "alice", "c", TaskState::Working, 1_000));
    commit(store, Batch { journal: vec![model("t1", 1)], ..tasks_batch(vec![task.clone()]) }, "working")
        .await;
    commit(store, journal_batch(vec![model("t2", 1)]), "another task's journal").await;
    task.task.status.state = TaskState::Completed;
    task.version = 2;
    commit(store, Batch { journal: vec![started("t1", 2)], ..tasks_batch(vec![task]) }, "completed").await;
    assert!(store.journal("t1").await.unwrap().is_empty(), "a terminal task keeps no journal");
    assert_eq!(store.journal("t2").await.unwrap(), vec![model("t2", 1)]);
    // Created and ended in one commit with entries of that commit: none stays.
    let once = record(("t3", "alice", "c", TaskState::Completed, 2_000));
    commit(store, Batch { journal: vec![model("t3", 1)], ..tasks_batch(vec![once]) }, "created and ended")
        .await;
    assert!(store.journal("t3").await.unwrap().is_empty(), "a task created and ended keeps no journal");
}
