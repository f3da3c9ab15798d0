//! Events for the durable log (the events feed, design §7). Events about a
//! task change are added to the batch that commits the change, so an event
//! exists exactly when its change does; the store assigns `seq`.
//!
//! Other parts of the daemon emit their own kinds (`run`, `step`, `gate`,
//! `reminder`, …) with [`Engine::emit_event`]; code inside the engine that
//! already commits a change adds `NewEvent::for_task(…)` to that batch.

use super::Engine;
use crate::error::Error;
use crate::events::{
    EVENT_PRUNE_STEP, EventJson, EventRetention, NewEvent, TASK_EVENT_HISTORY, TASK_EVENT_HISTORY_BYTES,
    WholeTask,
};
use crate::record::{LinkKind, TaskRecord};
use crate::slots::PendingCreation;
use crate::store::Batch;
use agentd_proto::ext::events::{
    ConversationData, ConversationEvent, EventKind, LifecycleData, LifecycleEvent, SubagentData,
    SubagentEvent,
};
use agentd_proto::{Message, Metadata, StreamResponse, TaskStatus, Timestamp};
use serde::Serialize;
use serde_json::Value;

/// The `task` event of a record: the Task with its last messages and no
/// artifacts, and its annotations for subscribers that activated them.
pub(super) fn task_event(rec: &TaskRecord, ts: Timestamp) -> NewEvent {
    task_event_and_row(rec, ts).0
}

/// [`task_event`], and its data as the record's whole Task when it is
/// that: byte for byte what the store writes as the task's row.
fn task_event_and_row(rec: &TaskRecord, ts: Timestamp) -> (NewEvent, Option<WholeTask>) {
    let (data, whole) = TaskEventView::json(rec);
    let whole = whole.map(|status_end| WholeTask::new(data.clone(), status_end));
    let mut ev = NewEvent::for_task(EventKind::Task, rec, ts, data);
    ev.annotations = Some(EventJson::of(&crate::annotations::lent(rec)));
    (ev, whole)
}

/// Adds the `task` event of `rec`, the record `batch` commits: when its
/// data is the whole Task, the store writes that text as the task's row
/// instead of serializing the task a second time (`Batch::task_json`).
fn push_task_event(rec: &TaskRecord, ts: Timestamp, batch: &mut Batch) {
    let (ev, whole) = task_event_and_row(rec, ts);
    if let Some(whole) = whole {
        batch.task_json.push((rec.task.id.clone(), whole));
    }
    batch.events.push(ev);
}

/// The Task of a `task` event, serialized as `read::view(rec,
/// Some(TASK_EVENT_HISTORY), false)` with its history cut to
/// [`recent_within`] would be, but lent from the record: nothing of it is
/// copied only to be written out. In two parts, the members up to the
/// status and those after it, so that where the status ends is known
/// (written whole, flattened, only when its history is cut).
#[derive(Serialize)]
struct TaskEventView<'a> {
    #[serde(flatten)]
    head: ViewHead<'a>,
    #[serde(flatten)]
    tail: ViewTail<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ViewHead<'a> {
    id: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    context_id: &'a str,
    status: &'a TaskStatus,
}

#[derive(Serialize)]
struct ViewTail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<&'a [Message]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
}

impl<'a> TaskEventView<'a> {
    /// The event's JSON. Tried first with the last messages whole, in the
    /// small-document buffer of `agentd_proto::exact` (smaller than the
    /// messages' budget): when all of it fits there, so do the messages,
    /// and it is the answer (the common case, with no pass measuring each
    /// message). Otherwise, a big message is not written out whole only to
    /// be cut: the messages are measured and cut to the budget first.
    ///
    /// Also says, when the JSON is the whole Task (what
    /// `agentd_proto::exact::to_string(&rec.task)` writes: no artifacts to
    /// leave out, and a history neither empty (written `[]` in the Task,
    /// left out here) nor cut), where in it the status ends.
    fn json(rec: &'a TaskRecord) -> (EventJson, Option<usize>) {
        const { assert!(agentd_proto::exact::SCRATCH <= TASK_EVENT_HISTORY_BYTES) };
        let whole = Self::of(rec, |last| last);
        if let Some(Ok((json, status_end))) =
            agentd_proto::exact::if_small_joined(&whole.head, &whole.tail, |json, end| {
                (EventJson::from_json(json), end)
            })
        {
            // The view kept every message (none cut, and an empty history,
            // which the Task writes as `[]`, is not left out).
            let t = &rec.task;
            let history_whole = whole.tail.history.map(<[Message]>::len) == t.history.as_ref().map(Vec::len);
            return (json, (t.artifacts.is_none() && history_whole).then_some(status_end));
        }
        (EventJson::of(&Self::of(rec, |last| recent_within(last, TASK_EVENT_HISTORY_BYTES))), None)
    }

    fn of(rec: &'a TaskRecord, cut: impl FnOnce(&'a [Message]) -> &'a [Message]) -> Self {
        let t = &rec.task;
        let history = t
            .history
            .as_deref()
            .filter(|h| !h.is_empty())
            .map(|h| cut(&h[h.len() - TASK_EVENT_HISTORY.min(h.len())..]));
        Self {
            head: ViewHead { id: &t.id, context_id: &t.context_id, status: &t.status },
            tail: ViewTail { history, metadata: t.metadata.as_ref() },
        }
    }
}

/// The newest messages that, newest first, fit in `budget` bytes of JSON;
/// a newest message over the budget alone leaves none.
fn recent_within(history: &[Message], budget: usize) -> &[Message] {
    let mut used = 0usize;
    let mut keep = 0;
    for m in history.iter().rev() {
        used = used.saturating_add(agentd_proto::exact::json_len(m).unwrap_or(usize::MAX)).saturating_add(1);
        if used > budget {
            break;
        }
        keep += 1;
    }
    &history[history.len() - keep..]
}

/// The events of a task just created and committed at once: the task
/// itself, a turn of its conversation or a subagent that started.
pub(super) fn on_create(rec: &TaskRecord, batch: &mut Batch) {
    push_task_event(rec, rec.created_at, batch);
    links_on_create(rec, batch);
}

/// The events of a task whose creation waits for its first change (a
/// blocking SendMessage's task, see `create_task`): all but its `task`
/// event, which [`absorb_first_change`] adds when the two are committed.
pub(super) fn on_deferred_create(rec: &TaskRecord, batch: Batch) -> PendingCreation {
    let task_event_at = batch.events.len();
    let mut pending = PendingCreation { batch, task_event_at };
    links_on_create(rec, &mut pending.batch);
    pending
}

/// A created task's conversation turn or subagent start.
fn links_on_create(rec: &TaskRecord, batch: &mut Batch) {
    let ts = rec.created_at;
    match rec.meta.link.as_ref().map(|l| l.kind) {
        Some(LinkKind::Turn) | None => {
            let data = ConversationData {
                context_id: rec.task.context_id.clone(),
                event: ConversationEvent::Turn,
                task_id: Some(rec.task.id.clone()),
            };
            batch.events.push(NewEvent::for_task(EventKind::Conversation, rec, ts, EventJson::of(&data)));
        }
        Some(LinkKind::Subagent) => batch.events.push(subagent_event(rec, SubagentEvent::Started, ts)),
        Some(LinkKind::Run) => {}
    }
}

/// A task's creation (`created`, its record as created) committed together
/// with its first change: the change's `task` event, if the change moved
/// the status, stands where the creation's would be, else the creation's
/// is made now. The created version was never committed alone, so no
/// reader could have seen it; the feed shows the task once, as committed,
/// and the commit serializes one snapshot, not two.
pub(super) fn absorb_first_change(
    creation: PendingCreation,
    mut change: Batch,
    created: &TaskRecord,
) -> Batch {
    let PendingCreation { mut batch, task_event_at } = creation;
    let id = created.id();
    let of_task = |e: &NewEvent| e.kind == EventKind::Task && e.task_id.as_deref() == Some(id);
    let event = match change.events.iter().position(of_task) {
        Some(later) => change.events.remove(later),
        None => task_event(created, created.created_at),
    };
    batch.events.insert(task_event_at, event);
    batch.absorb(change);
    batch
}

/// The events of a change to an existing task: a `task` event when its
/// status moved (not for each artifact chunk or input message), and a
/// `subagent` event when a subagent's task ended.
pub(super) fn on_change(
    before: &TaskRecord,
    after: &TaskRecord,
    events: &[StreamResponse],
    ts: Timestamp,
    batch: &mut Batch,
) {
    if !events.iter().any(|e| matches!(e, StreamResponse::StatusUpdate(_))) {
        return;
    }
    push_task_event(after, ts, batch);
    let is_subagent = after.meta.link.as_ref().is_some_and(|l| l.kind == LinkKind::Subagent);
    if is_subagent && after.state().is_terminal() && !before.state().is_terminal() {
        batch.events.push(subagent_event(after, SubagentEvent::Ended, ts));
    }
}

fn subagent_event(rec: &TaskRecord, event: SubagentEvent, ts: Timestamp) -> NewEvent {
    let data = SubagentData {
        handle: rec.meta.link.as_ref().map(|l| l.id.clone()).unwrap_or_default(),
        task_id: rec.task.id.clone(),
        parent_task_id: rec.meta.parent.clone(),
        event,
        state: rec.state(),
    };
    NewEvent::for_task(EventKind::Subagent, rec, ts, EventJson::of(&data))
}

/// The `conversation` event of `context_id`'s closing (visible to `owner`).
pub(super) fn context_closed(context_id: &str, owner: &str) -> NewEvent {
    let data = ConversationData {
        context_id: context_id.to_owned(),
        event: ConversationEvent::Closed,
        task_id: None,
    };
    NewEvent {
        ts: Timestamp::now(),
        kind: EventKind::Conversation,
        task_id: None,
        owner: Some(owner.to_owned()),
        data: EventJson::of(&data),
        annotations: None,
    }
}

impl Engine {
    /// Appends an event of any kind about a task to the durable log and
    /// publishes it to the feed once committed. Its visibility is the
    /// task's: the owner and operators. `data` is the kind's payload as the
    /// events schema bundle describes it. TaskNotFound when no such task.
    pub(crate) async fn emit_event(&self, kind: EventKind, task_id: &str, data: Value) -> Result<(), Error> {
        let rec = self.record(task_id).await?.ok_or_else(|| Error::task_not_found(task_id))?;
        let ev = NewEvent::for_task(kind, &rec, Timestamp::now(), EventJson::of(&data));
        self.commit_events(vec![ev]).await
    }

    /// The daemon started or is stopping: a `lifecycle` event every
    /// principal may see.
    pub(crate) async fn emit_lifecycle(&self, event: LifecycleEvent, version: &str) -> Result<(), Error> {
        let data = LifecycleData { event, version: version.to_owned() };
        let ev = NewEvent {
            ts: Timestamp::now(),
            kind: EventKind::Lifecycle,
            task_id: None,
            owner: None,
            data: EventJson::of(&data),
            annotations: None,
        };
        self.commit_events(vec![ev]).await
    }

    /// Removes the events retention no longer keeps (by count and age), in
    /// commits of at most [`EVENT_PRUNE_STEP`] events each, one after the
    /// other until retention holds: the store serves the commits queued
    /// meanwhile between two steps.
    pub(crate) async fn prune_events(&self) -> Result<(), Error> {
        let cfg = &self.inner.config;
        let age = i64::try_from(cfg.events_retain.as_millis()).unwrap_or(i64::MAX);
        let retention = EventRetention {
            max_count: cfg.events_retain_count,
            min_ts_ms: Timestamp::now().millis().saturating_sub(age),
            max_removed: EVENT_PRUNE_STEP,
        };
        while self.inner.store.prune_step(retention).await? {}
        Ok(())
    }

    async fn commit_events(&self, events: Vec<NewEvent>) -> Result<(), Error> {
        Ok(self.inner.store.commit(Batch { events, ..Batch::default() }).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::{TaskEventView, recent_within};
    use crate::events::{TASK_EVENT_HISTORY, TASK_EVENT_HISTORY_BYTES};
    use crate::record::{TaskMeta, TaskRecord};
    use agentd_proto::{Message, Part, Role, Task, TaskState, TaskStatus, Timestamp};

    fn msg(id: &str, text_len: usize) -> Message {
        Message {
            message_id: id.into(),
            role: Role::User,
            parts: vec![Part::text("x".repeat(text_len))],
            ..Default::default()
        }
    }

    fn ids(h: &[Message]) -> Vec<&str> {
        h.iter().map(|m| m.message_id.as_str()).collect()
    }

    #[test]
    fn task_events_keep_the_newest_messages_that_fit() {
        let h = vec![msg("a", 10), msg("b", 10), msg("c", 10)];
        let h = recent_within(&h, 10_000);
        assert_eq!(ids(h), ["a", "b", "c"], "all fit");

        let h = vec![msg("old", 5_000), msg("b", 10), msg("c", 10)];
        let h = recent_within(&h, 1_000);
        assert_eq!(ids(h), ["b", "c"], "the old big one goes, and nothing older than it");

        let h = vec![msg("a", 10), msg("big", 5_000), msg("c", 10)];
        let h = recent_within(&h, 1_000);
        assert_eq!(ids(h), ["c"], "no gap: older than a dropped message is dropped too");

        let h = vec![msg("a", 10), msg("huge", 5_000)];
        let h = recent_within(&h, 1_000);
        assert!(h.is_empty(), "a newest message over the budget leaves none");
    }

    fn record(history: Option<Vec<Message>>, context_id: &str, metadata: bool) -> TaskRecord {
        let now = Timestamp::from_millis(1_000).unwrap();
        let mut md = serde_json::Map::new();
        md.insert("k".into(), serde_json::json!([1, "two"]));
        TaskRecord {
            task: Task {
                id: "t1".into(),
                context_id: context_id.into(),
                status: TaskStatus {
                    state: TaskState::Completed,
                    message: Some(msg("s", 3)),
                    timestamp: Some(now),
                },
                artifacts: Some(Vec::new()),
                history,
                metadata: metadata.then_some(md),
            },
            owner: "user:a".into(),
            created_at: now,
            status_history: Vec::new(),
            meta: TaskMeta::default(),
            version: 3,
        }
    }

    #[test]
    fn the_lent_view_writes_what_the_cloned_view_wrote() {
        let many: Vec<Message> =
            (0..14).map(|i| msg(&format!("m{i}"), if i == 9 { 70_000 } else { 10 })).collect();
        let huge = vec![msg("a", 10), msg("huge", TASK_EVENT_HISTORY_BYTES)];
        for rec in [
            record(Some(many), "c1", true),
            record(Some(huge), "c1", false),
            record(Some(vec![msg("one", 1)]), "", true),
            record(Some(Vec::new()), "c1", false),
            record(None, "c1", false),
        ] {
            let history = i32::try_from(TASK_EVENT_HISTORY).unwrap();
            let mut cloned = crate::engine::read::view(&rec, Some(history), false);
            if let Some(h) = cloned.history.as_mut() {
                let keep = recent_within(h, TASK_EVENT_HISTORY_BYTES).len();
                h.drain(..h.len() - keep);
            }
            let want = serde_json::to_string(&cloned).unwrap();
            assert_eq!(TaskEventView::json(&rec).0.as_str(), want);
        }
    }

    #[test]
    fn an_event_says_it_is_the_row_exactly_when_it_is_the_whole_task() {
        let small = |n: usize| (0..n).map(|i| msg(&format!("m{i}"), 10)).collect::<Vec<_>>();
        let huge = vec![msg("a", 10), msg("huge", TASK_EVENT_HISTORY_BYTES)];
        let cases = [
            (Some(small(1)), true),
            (Some(small(TASK_EVENT_HISTORY)), true),
            (None, true),
            (Some(small(TASK_EVENT_HISTORY + 1)), false),
            (Some(huge), false),
            (Some(Vec::new()), false),
        ];
        for (history, whole) in cases {
            for artifacts in [None, Some(Vec::new())] {
                let mut rec = record(history.clone(), "c1", true);
                rec.task.artifacts = artifacts;
                let whole = whole && rec.task.artifacts.is_none();
                let (json, said) = TaskEventView::json(&rec);
                let row = agentd_proto::exact::to_string(&rec.task).unwrap();
                if let Some(status_end) = said {
                    // The answer that lists the task's artifacts, lent too.
                    let view = crate::engine::read::view(&rec, None, true);
                    let framed =
                        crate::events::WholeTask::new(json.clone(), status_end).view_framed(&[b"["], &[b"]"]);
                    assert_eq!(
                        String::from_utf8(framed).unwrap(),
                        format!("[{}]", serde_json::to_string(&view).unwrap())
                    );
                }
                assert_eq!(
                    said.is_some(),
                    whole,
                    "{:?} messages, artifacts {:?}",
                    history.as_ref().map(Vec::len),
                    rec.task.artifacts
                );
                assert_eq!(
                    json.as_str() == row,
                    whole,
                    "the row's text is the event's exactly when it says so"
                );
            }
        }
    }

    /// The kinds and task states of a batch's events, in order.
    fn shown(batch: &crate::store::Batch) -> Vec<(String, String)> {
        batch
            .events
            .iter()
            .map(|e| {
                let data: serde_json::Value = serde_json::from_str(e.data.as_str()).unwrap();
                let state = data["status"]["state"].as_str().unwrap_or("").to_owned();
                (format!("{:?}", e.kind), state)
            })
            .collect()
    }

    #[test]
    fn a_deferred_creation_shows_its_first_change_or_itself_once_where_its_event_was() {
        let mut created = record(Some(vec![msg("in", 3)]), "c1", false);
        created.task.status.state = TaskState::Submitted;
        created.version = 1;
        let mut completed = created.clone();
        completed.task.status.state = TaskState::Completed;
        let earlier = || crate::store::Batch {
            events: vec![super::context_closed("c0", "user:a")],
            ..Default::default()
        };
        let task = |s: &str| ("Task".to_owned(), s.to_owned());
        let other = |k: &str| (k.to_owned(), String::new());

        // The first change moved the status: its event stands where the
        // creation's would have been, and the creation's is never made.
        let pending = super::on_deferred_create(&created, earlier());
        let mut change = crate::store::Batch::default();
        change.events.push(super::task_event(&completed, Timestamp::now()));
        let batch = super::absorb_first_change(pending, change, &created);
        assert_eq!(
            shown(&batch),
            [other("Conversation"), task("TASK_STATE_COMPLETED"), other("Conversation")]
        );

        // It did not (a journal entry, a read of the task): the creation's
        // own event, as created, is made then.
        let pending = super::on_deferred_create(&created, earlier());
        let batch = super::absorb_first_change(pending, crate::store::Batch::default(), &created);
        assert_eq!(
            shown(&batch),
            [other("Conversation"), task("TASK_STATE_SUBMITTED"), other("Conversation")]
        );
        assert_eq!(batch.events[1].ts, created.created_at, "the creation's event is dated by the creation");
    }
}
