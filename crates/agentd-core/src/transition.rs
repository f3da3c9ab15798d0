//! The task state machine as a pure function: a record and a change in, the
//! changed record and the events it produced out. No I/O, no clock: the
//! caller passes the commit timestamp. A status change must be in the
//! transition table ([`allowed`]); terminal states absorb every change.

use crate::record::{StatusEntry, TaskRecord};
use agentd_proto::{
    Artifact, Message, Part, PartContent, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent, Timestamp,
};
use std::sync::Arc;

/// One change to a task.
#[derive(Clone, Debug)]
pub enum Change {
    /// A move to `state` (the same state again is a progress update).
    Status { state: TaskState, message: Option<Message> },
    /// A new artifact, a replacement, or a chunk appended to one. With
    /// `merge_text`, an appended text part extends the stored artifact's
    /// last text part instead of adding a part: a text streamed in chunks
    /// is stored as one part, while each event still carries its chunk.
    Artifact { artifact: Artifact, append: bool, last_chunk: bool, merge_text: bool },
    /// A client message appended to the task's history.
    Input(Message),
}

/// Why a change was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("task is in terminal state {0:?}")]
    Terminal(TaskState),
    #[error("TASK_STATE_UNSPECIFIED is not a state a task can move to")]
    Unspecified,
    #[error("a task in state {} cannot move to {}", .from.as_str(), .to.as_str())]
    NotAllowed { from: TaskState, to: TaskState },
}

/// The transition table: the states a task in `from` may move to. A task
/// is created SUBMITTED; every live state may end in any terminal one (the
/// agent finishes, fails or rejects it, CancelTask cancels it); WORKING
/// again is a progress update, and an interrupted task may ask again.
/// Nothing goes back to SUBMITTED and nothing leaves a terminal state. A2A
/// gives no normative table; this one is derived from its state classes.
/// Messages and artifacts may be added in every live state.
pub fn next_states(from: TaskState) -> &'static [TaskState] {
    use TaskState::*;
    // Exhaustive: a new state cannot ship without its row.
    match from {
        Submitted => &[Working, InputRequired, AuthRequired, Completed, Failed, Canceled, Rejected],
        Working => &[Working, InputRequired, AuthRequired, Completed, Failed, Canceled, Rejected],
        InputRequired => &[Working, InputRequired, AuthRequired, Completed, Failed, Canceled, Rejected],
        AuthRequired => &[Working, InputRequired, AuthRequired, Completed, Failed, Canceled, Rejected],
        Completed | Failed | Canceled | Rejected => &[],
        Unspecified => &[],
    }
}

/// Whether the transition table lets a task move from `from` to `to`.
pub fn allowed(from: TaskState, to: TaskState) -> bool {
    next_states(from).contains(&to)
}

/// Applies `change` at time `now`, returning the events to publish after
/// the record is committed.
pub fn apply(rec: &mut TaskRecord, change: Change, now: Timestamp) -> Result<Vec<StreamResponse>, Refused> {
    let current = rec.state();
    if current.is_terminal() {
        return Err(Refused::Terminal(current));
    }
    let (task_id, context_id) = (rec.task.id.clone(), rec.task.context_id.clone());
    match change {
        Change::Status { state, message } => {
            if state == TaskState::Unspecified {
                return Err(Refused::Unspecified);
            }
            if !allowed(current, state) {
                return Err(Refused::NotAllowed { from: current, to: state });
            }
            // Status timestamps never go backwards, whatever the clock does.
            let last = rec.task.status.timestamp.unwrap_or(now);
            let ts = if now < last { last } else { now };
            let message = message.map(|m| stamp(m, &task_id, &context_id));
            if let Some(m) = &message {
                rec.task.history.get_or_insert_with(Vec::new).push(m.clone());
            }
            rec.task.status = TaskStatus { state, message, timestamp: Some(ts) };
            rec.status_history.push(StatusEntry { state, timestamp: ts });
            // A gate is open only while its task waits for the answer.
            if state != TaskState::InputRequired {
                rec.meta.gate = None;
            }
            Ok(vec![StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: rec.task.status.clone(),
                metadata: None,
            })])
        }
        Change::Artifact { artifact, append, last_chunk, merge_text } => {
            let list = rec.task.artifacts.get_or_insert_with(Vec::new);
            match list.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
                Some(existing) if append => append_parts(&mut existing.parts, &artifact.parts, merge_text),
                Some(existing) => *existing = artifact.clone(),
                None => list.push(artifact.clone()),
            }
            Ok(vec![StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id,
                context_id,
                artifact,
                append,
                last_chunk,
                metadata: None,
            })])
        }
        Change::Input(message) => {
            let m = stamp(message, &task_id, &context_id);
            rec.task.history.get_or_insert_with(Vec::new).push(m);
            Ok(Vec::new())
        }
    }
}

/// Appends `new` to `parts`; with `merge_text`, a plain text part goes into
/// the last part when that is plain text too.
fn append_parts(parts: &mut Vec<Part>, new: &[Part], merge_text: bool) {
    for part in new {
        if merge_text
            && let (Some(PartContent::Text(last)), Some(text)) =
                (parts.last_mut().filter(|p| is_plain(p)).map(|p| &mut p.content), plain_text(part))
        {
            // In place when no copy of the record shares the text.
            Arc::make_mut(last).push_str(text);
        } else {
            parts.push(part.clone());
        }
    }
}

/// A text part with nothing beside its text (no metadata, name or type).
fn is_plain(p: &Part) -> bool {
    p.as_text().is_some() && p.metadata.is_none() && p.filename.is_empty() && p.media_type.is_empty()
}

fn plain_text(p: &Part) -> Option<&str> {
    if is_plain(p) { p.as_text() } else { None }
}

/// A message inside a task always names the task and its context.
fn stamp(mut m: Message, task_id: &str, context_id: &str) -> Message {
    task_id.clone_into(&mut m.task_id);
    context_id.clone_into(&mut m.context_id);
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_proto::Task;

    fn rec(state: TaskState) -> TaskRecord {
        TaskRecord {
            task: Task {
                id: "t".into(),
                context_id: "c".into(),
                status: TaskStatus { state, message: None, timestamp: Timestamp::from_millis(1000) },
                artifacts: Some(vec![]),
                history: Some(vec![]),
                metadata: None,
            },
            owner: "user:a".into(),
            created_at: Timestamp::from_millis(1000).unwrap(),
            status_history: vec![],
            meta: Default::default(),
            version: 1,
        }
    }

    #[test]
    fn leaving_input_required_closes_the_gate() {
        let now = Timestamp::from_millis(2000).unwrap();
        let mut r = rec(TaskState::Working);
        r.meta.gate = Some(crate::record::OpenGate { ask_channel: Some("ops".into()), ..Default::default() });
        let wait = Change::Status { state: TaskState::InputRequired, message: None };
        apply(&mut r, wait, now).unwrap();
        assert!(r.meta.gate.is_some(), "opened with the wait");
        apply(&mut r, Change::Status { state: TaskState::Canceled, message: None }, now).unwrap();
        assert_eq!(r.meta.gate, None);
    }

    #[test]
    fn terminal_states_absorb_every_change() {
        for s in [TaskState::Completed, TaskState::Failed, TaskState::Canceled, TaskState::Rejected] {
            let mut r = rec(s);
            let before = r.clone();
            let now = Timestamp::from_millis(2000).unwrap();
            let change = Change::Status { state: TaskState::Working, message: None };
            assert_eq!(apply(&mut r, change, now), Err(Refused::Terminal(s)));
            let change = Change::Input(Message::agent_text("x"));
            assert_eq!(apply(&mut r, change, now), Err(Refused::Terminal(s)));
            assert_eq!(r, before, "a refused change must leave the record untouched");
        }
    }

    #[test]
    fn status_change_records_history_and_one_event() {
        let mut r = rec(TaskState::Submitted);
        let now = Timestamp::from_millis(5000).unwrap();
        let ev = apply(
            &mut r,
            Change::Status { state: TaskState::Completed, message: Some(Message::agent_text("done")) },
            now,
        )
        .unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(r.state(), TaskState::Completed);
        assert_eq!(r.status_history, vec![StatusEntry { state: TaskState::Completed, timestamp: now }]);
        let h = r.task.history.as_ref().unwrap();
        assert_eq!(h[0].task_id, "t", "messages in a task carry its id");
        assert_eq!(h[0].context_id, "c");
    }

    #[test]
    fn timestamps_never_go_backwards() {
        let mut r = rec(TaskState::Working);
        let early = Timestamp::from_millis(10).unwrap();
        apply(&mut r, Change::Status { state: TaskState::Working, message: None }, early).unwrap();
        assert_eq!(r.task.status.timestamp.unwrap().millis(), 1000);
    }

    #[test]
    fn artifact_chunks_append_to_the_same_artifact() {
        let mut r = rec(TaskState::Working);
        let now = Timestamp::from_millis(2000).unwrap();
        let a =
            |t: &str| Artifact { artifact_id: "a".into(), parts: vec![Part::text(t)], ..Default::default() };
        let chunk = |t: &str, append: bool, last_chunk: bool| Change::Artifact {
            artifact: a(t),
            append,
            last_chunk,
            merge_text: false,
        };
        apply(&mut r, chunk("one ", false, false), now).unwrap();
        apply(&mut r, chunk("two", true, true), now).unwrap();
        let arts = r.task.artifacts.as_ref().unwrap();
        assert_eq!(arts.len(), 1);
        assert_eq!(arts[0].parts.len(), 2);
        apply(&mut r, chunk("new", false, true), now).unwrap();
        assert_eq!(
            r.task.artifacts.as_ref().unwrap()[0].parts,
            vec![Part::text("new")],
            "same id without append replaces"
        );
    }

    #[test]
    fn merged_text_chunks_are_stored_as_one_part_and_sent_as_chunks() {
        let mut r = rec(TaskState::Working);
        let now = Timestamp::from_millis(2000).unwrap();
        let chunk = |t: &str, append: bool| Change::Artifact {
            artifact: Artifact { artifact_id: "a".into(), parts: vec![Part::text(t)], ..Default::default() },
            append,
            last_chunk: false,
            merge_text: true,
        };
        apply(&mut r, chunk("The ", false), now).unwrap();
        apply(&mut r, chunk("quick ", true), now).unwrap();
        let events = apply(&mut r, chunk("fox", true), now).unwrap();
        assert_eq!(r.task.artifacts.as_ref().unwrap()[0].parts, vec![Part::text("The quick fox")]);
        let StreamResponse::ArtifactUpdate(u) = &events[0] else { panic!("{events:?}") };
        assert_eq!(u.artifact.parts, vec![Part::text("fox")], "the event carries the chunk only");
        let data = Change::Artifact {
            artifact: Artifact {
                artifact_id: "a".into(),
                parts: vec![Part::data(serde_json::json!({"k": 1}))],
                ..Default::default()
            },
            append: true,
            last_chunk: true,
            merge_text: true,
        };
        apply(&mut r, data, now).unwrap();
        assert_eq!(r.task.artifacts.as_ref().unwrap()[0].parts.len(), 2, "only text merges into text");
    }

    /// The table as a reader of the docs expects it, written out apart from
    /// `next_states`: a row per current state, a column per target, `x`
    /// where the move is allowed.
    const ORDER: [TaskState; 9] = {
        use TaskState::*;
        [Unspecified, Submitted, Working, InputRequired, AuthRequired, Completed, Failed, Canceled, Rejected]
    };
    const EXPECTED: [&str; 9] = [
        //  to: U S W I A C F X R
        /* U */ ".........",
        /* S */ "..xxxxxxx",
        /* W */ "..xxxxxxx",
        /* I */ "..xxxxxxx",
        /* A */ "..xxxxxxx",
        /* C */ ".........",
        /* F */ ".........",
        /* X */ ".........",
        /* R */ ".........",
    ];

    #[test]
    fn every_pair_in_the_table_is_allowed_and_every_other_refused() {
        let every: Vec<TaskState> = (0..=16).filter_map(TaskState::from_number).collect();
        assert_eq!(every.len(), ORDER.len(), "the grid must cover every state");
        let now = Timestamp::from_millis(2000).unwrap();
        for (i, &from) in ORDER.iter().enumerate() {
            for (j, &to) in ORDER.iter().enumerate() {
                let expect = EXPECTED[i].as_bytes()[j] == b'x';
                assert_eq!(allowed(from, to), expect, "{} -> {}", from.as_str(), to.as_str());
                let mut r = rec(from);
                let before = r.clone();
                let outcome = apply(&mut r, Change::Status { state: to, message: None }, now);
                if expect {
                    assert!(
                        outcome.is_ok(),
                        "{} -> {} must be allowed: {outcome:?}",
                        from.as_str(),
                        to.as_str()
                    );
                    assert_eq!(r.state(), to);
                    continue;
                }
                let why = match outcome {
                    Ok(_) => panic!("{} -> {} must be refused", from.as_str(), to.as_str()),
                    Err(why) => why,
                };
                let want = if from.is_terminal() {
                    Refused::Terminal(from)
                } else if to == TaskState::Unspecified {
                    Refused::Unspecified
                } else {
                    Refused::NotAllowed { from, to }
                };
                assert_eq!(why, want, "{} -> {}", from.as_str(), to.as_str());
                assert_eq!(r, before, "a refused change must leave the record untouched");
            }
        }
    }

    #[test]
    fn messages_and_artifacts_are_taken_in_every_live_state() {
        let now = Timestamp::from_millis(2000).unwrap();
        let artifact =
            Artifact { artifact_id: "a".into(), parts: vec![Part::text("x")], ..Default::default() };
        for s in [TaskState::Submitted, TaskState::Working, TaskState::InputRequired, TaskState::AuthRequired]
        {
            let mut r = rec(s);
            apply(&mut r, Change::Input(Message::agent_text("x")), now).unwrap();
            let change = Change::Artifact {
                artifact: artifact.clone(),
                append: false,
                last_chunk: true,
                merge_text: false,
            };
            apply(&mut r, change, now).unwrap();
            assert_eq!(r.state(), s, "neither moves the task");
        }
    }

    #[test]
    fn unspecified_is_refused() {
        let mut r = rec(TaskState::Working);
        let now = Timestamp::from_millis(2000).unwrap();
        assert_eq!(
            apply(&mut r, Change::Status { state: TaskState::Unspecified, message: None }, now),
            Err(Refused::Unspecified)
        );
    }
}
