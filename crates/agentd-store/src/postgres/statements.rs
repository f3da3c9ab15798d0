//! A batch as the statements that write it, in the SQLite writer's order:
//! fences, tasks, push upserts, push deletes (their outbox rows go by
//! cascade), push events, bridge deliveries, outbox done, outbox retry,
//! closed conversations, reminders, journal, its removal for a task that
//! ended, events. Each statement says what its answer must be ([`Check`]);
//! `write` sends a whole group's fence checks, then, once they all hold,
//! a whole group's writes, each time before it reads the first answer.

use super::write::{
    APPEND_EVENTS, CHECK_FENCE, CLOSE_CONTEXT, DELETE_PUSH, ENQUEUE_BRIDGE, FAN_OUT, INSERT_JOURNAL,
    INSERT_TASK, NOTIFY, REMOVE_JOURNAL, REMOVE_OUTBOX_ROW, RESCHEDULE_OUTBOX_ROW, UPDATE_TASK, UPSERT_PUSH,
    UPSERT_REMINDER,
};
use super::{EVENTS_CHANNEL, TASKS_CHANNEL};
use crate::codec::{EncodedTask, encode_config, encode_entry, encode_reminder, encode_task};
use crate::event_log;
use agentd_core::{Batch, Fence, JournalEntry, StoreError, TaskRecord};
use agentd_proto::Timestamp;
use agentd_proto::ext::events::EventKind;
use tokio_postgres::types::ToSql;

/// What a statement's answer must be for its batch to be written.
pub(super) enum Check<'a> {
    /// Nothing: it cannot refuse.
    None,
    /// The fence's lease row is found.
    Fence(&'a Fence),
    /// One row written: the task was at the version before the record's.
    Task(&'a TaskRecord),
    /// One row added: the entry's place was free.
    Journal(&'a JournalEntry),
    /// Outbox rows queued (counted).
    Queued,
    /// The batch's events appended: the row holds the last seq taken.
    Append,
}

/// One statement of a batch, its parameters bound.
pub(super) struct Statement<'a> {
    /// Which batch of the group it writes.
    pub batch: usize,
    pub sql: &'static str,
    /// What it does, for an error.
    pub context: &'static str,
    pub params: Vec<&'a (dyn ToSql + Sync)>,
    /// Answers with a row (read with `query_opt`), not a count.
    pub row: bool,
    pub check: Check<'a>,
}

/// The events of one append as columns, bound as arrays (one statement).
#[derive(Default)]
struct EventArrays<'a> {
    ts: Vec<i64>,
    kind: Vec<&'static str>,
    task_id: Vec<Option<&'a str>>,
    owner: Vec<Option<&'a str>>,
    data: Vec<&'a str>,
    annotations: Vec<Option<&'a str>>,
}

/// What a batch's statements bind that the batch does not hold as it is.
pub(super) struct Encoded<'b> {
    batch: &'b Batch,
    fence_epochs: Vec<i64>,
    tasks: Vec<(EncodedTask<'b>, i32)>,
    configs: Vec<String>,
    push_tasks: Vec<&'b str>,
    push_bodies: Vec<&'b str>,
    bridge_targets: Vec<String>,
    retry_attempts: Vec<i32>,
    reminders: Vec<(bool, String)>,
    journal: Vec<(i64, String)>,
    events: EventArrays<'b>,
    now: i64,
}

impl<'b> Encoded<'b> {
    pub(super) fn of(batch: &'b Batch) -> Result<Self, StoreError> {
        let mut tasks = Vec::with_capacity(batch.tasks.len());
        for record in &batch.tasks {
            if record.version == 0 {
                StoreError::check_version(record, u64::MAX)?;
            }
            let t = encode_task(record, batch.task_json_of(record))?;
            let state =
                i32::try_from(t.state).map_err(|e| StoreError::backend(format!("encode task state: {e}")))?;
            tasks.push((t, state));
        }
        let mut events = EventArrays::default();
        for e in &batch.events {
            let (ts, kind, task_id, owner, data, annotations) = event_log::encode(e);
            events.ts.push(ts);
            events.kind.push(kind);
            events.task_id.push(task_id);
            events.owner.push(owner);
            events.data.push(data);
            events.annotations.push(annotations);
        }
        let bridge_targets = batch
            .bridge_deliveries
            .iter()
            .map(|d| serde_json::to_string(&d.target))
            .collect::<Result<_, _>>()
            .map_err(|e| StoreError::backend(format!("encode bridge target: {e}")))?;
        Ok(Self {
            batch,
            fence_epochs: batch.fences.iter().map(|f| i64::try_from(f.epoch).unwrap_or(i64::MAX)).collect(),
            tasks,
            configs: batch
                .push_upserts
                .iter()
                .map(|row| encode_config(&row.config))
                .collect::<Result<_, _>>()?,
            push_tasks: batch.push_events.iter().map(|(t, _)| t.as_str()).collect(),
            push_bodies: batch.push_events.iter().map(|(_, b)| b.as_str()).collect(),
            bridge_targets,
            retry_attempts: batch
                .outbox_retry
                .iter()
                .map(|r| i32::try_from(r.2).unwrap_or(i32::MAX))
                .collect(),
            reminders: batch
                .reminders
                .iter()
                .map(|r| Ok((r.is_active(), encode_reminder(r)?)))
                .collect::<Result<_, StoreError>>()?,
            journal: batch
                .journal
                .iter()
                .map(|e| encode_entry(e).map(|((_, seq), body)| (i64::from(seq), body)))
                .collect::<Result<_, _>>()?,
            events,
            now: Timestamp::now().millis(),
        })
    }

    /// Appends the checks of the batch's fences (it is batch `i` of its
    /// group): each lease row, locked `FOR KEY SHARE`.
    pub(super) fn fences<'a>(&'a self, i: usize, out: &mut Vec<Statement<'a>>) {
        for (f, epoch) in self.batch.fences.iter().zip(&self.fence_epochs) {
            let params: Vec<&'a (dyn ToSql + Sync)> = vec![&f.resource, &f.holder, epoch];
            let check = Check::Fence(f);
            out.push(Statement {
                batch: i,
                sql: CHECK_FENCE,
                context: "check lease",
                params,
                row: true,
                check,
            });
        }
    }

    /// Appends the batch's writes (it is batch `i` of its group).
    pub(super) fn writes<'a>(&'a self, i: usize, out: &mut Vec<Statement<'a>>) {
        let b = self.batch;
        let mut push = |sql, context, params: Vec<&'a (dyn ToSql + Sync)>, row, check| {
            out.push(Statement { batch: i, sql, context, params, row, check });
        };
        for (record, (t, state)) in b.tasks.iter().zip(&self.tasks) {
            let sql = if record.version == 1 { INSERT_TASK } else { UPDATE_TASK };
            let params: Vec<&'a (dyn ToSql + Sync)> = vec![
                &t.id,
                &t.context_id,
                &t.owner,
                state,
                &t.updated_ms,
                &t.created_ms,
                &t.task_json,
                &t.status_history_json,
                &t.meta_json,
                &t.version,
            ];
            push(sql, "write task", params, false, Check::Task(record));
            // A `task` event wakes the replicas following the task already.
            let id = record.id();
            if !b.events.iter().any(|e| e.kind == EventKind::Task && e.task_id.as_deref() == Some(id)) {
                push(NOTIFY, "notify task", vec![&TASKS_CHANNEL, &record.task.id], true, Check::None);
            }
        }
        for (row, json) in b.push_upserts.iter().zip(&self.configs) {
            let c = &row.config;
            push(
                UPSERT_PUSH,
                "write push config",
                vec![&c.task_id, &c.id, &row.owner, json],
                false,
                Check::None,
            );
        }
        for (task_id, id) in &b.push_deletes {
            push(DELETE_PUSH, "delete push config", vec![task_id, id], false, Check::None);
        }
        if !b.push_events.is_empty() {
            let params: Vec<&'a (dyn ToSql + Sync)> = vec![&self.push_tasks, &self.push_bodies, &self.now];
            push(FAN_OUT, "fan out push events", params, false, Check::Queued);
        }
        for (d, target) in b.bridge_deliveries.iter().zip(&self.bridge_targets) {
            let params: Vec<&'a (dyn ToSql + Sync)> = vec![&d.task_id, target, &d.body, &self.now];
            push(ENQUEUE_BRIDGE, "enqueue bridge delivery", params, false, Check::Queued);
        }
        for id in &b.outbox_done {
            push(REMOVE_OUTBOX_ROW, "remove outbox row", vec![id], false, Check::None);
        }
        for ((id, not_before_ms, _), attempts) in b.outbox_retry.iter().zip(&self.retry_attempts) {
            let params: Vec<&'a (dyn ToSql + Sync)> = vec![id, not_before_ms, attempts];
            push(RESCHEDULE_OUTBOX_ROW, "reschedule outbox row", params, false, Check::None);
        }
        for c in &b.closed_contexts {
            let params: Vec<&'a (dyn ToSql + Sync)> = vec![&c.context_id, &c.closed_by, &c.closed_ms];
            push(CLOSE_CONTEXT, "close conversation", params, false, Check::None);
        }
        for (r, (active, json)) in b.reminders.iter().zip(&self.reminders) {
            push(
                UPSERT_REMINDER,
                "write reminder",
                vec![&r.task_id, &r.id, active, json],
                false,
                Check::None,
            );
        }
        for (e, (seq, body)) in b.journal.iter().zip(&self.journal) {
            push(
                INSERT_JOURNAL,
                "write journal entry",
                vec![&e.task_id, seq, body],
                false,
                Check::Journal(e),
            );
        }
        // A task that ended never resumes: its journal goes with the commit
        // that ended it.
        for record in b.ended_with_journal() {
            push(REMOVE_JOURNAL, "remove journal", vec![&record.task.id], false, Check::None);
        }
        if !b.events.is_empty() {
            let ev = &self.events;
            let params: Vec<&'a (dyn ToSql + Sync)> =
                vec![&ev.ts, &ev.kind, &ev.task_id, &ev.owner, &ev.data, &ev.annotations, &EVENTS_CHANNEL];
            push(APPEND_EVENTS, "append events", params, true, Check::Append);
        }
    }
}
