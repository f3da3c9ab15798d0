//! `MemoryStore`: the in-memory backend for unit tests. It keeps the same
//! contract as SQLite: one lock makes each batch atomic, task versions are
//! checked before anything is applied, records are read back in their
//! stored (normalized) form, and push events fan out to the configs a task
//! has at commit time.

use crate::codec::{
    decode_entry, encode_entry, journal_conflict, normalize_config, normalize_reminder, normalize_task,
};
use crate::event_log::Announcer;
use agentd_core::{
    Batch, BridgeTarget, EventLogBounds, EventRecord, EventRetention, JournalEntry, OutboxItem, OutboxTarget,
    PushConfigRow, ReminderRecord, Store, StoreError, TaskPage, TaskQuery, TaskRecord,
};
use agentd_proto::{TaskState, Timestamp};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// An in-memory store. Cheap to create; everything is lost on drop.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    announcer: Announcer,
}

#[derive(Debug, Default)]
struct Inner {
    tasks: BTreeMap<String, TaskRecord>,
    /// `(task_id, id)` → (insertion sequence, row).
    push: BTreeMap<(String, String), (u64, PushConfigRow)>,
    next_push_seq: u64,
    outbox: BTreeMap<i64, OutboxRow>,
    next_outbox_id: i64,
    /// Closed conversations: context id → closed_ms (first close wins).
    closed: BTreeMap<String, i64>,
    /// `(task_id, id)` → (first-commit sequence, reminder).
    reminders: BTreeMap<(String, String), (u64, ReminderRecord)>,
    next_reminder_seq: u64,
    events: VecDeque<EventRecord>,
    bounds: EventLogBounds,
    /// `(task_id, seq)` → the entry's stored form.
    journal: BTreeMap<(String, u32), String>,
}

#[derive(Debug, Clone)]
struct OutboxRow {
    task_id: String,
    /// The push config's id, or `None` for a bridge row.
    config_id: Option<String>,
    bridge: Option<BridgeTarget>,
    body: String,
    attempts: u32,
    not_before_ms: i64,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        self.inner.lock().map_err(|_| StoreError::backend("memory store lock poisoned"))
    }
}

/// The ListTasks order: newest status first, ties by id descending.
fn sort_key(r: &TaskRecord) -> (std::cmp::Reverse<i64>, std::cmp::Reverse<&str>) {
    (std::cmp::Reverse(r.updated_ms()), std::cmp::Reverse(r.id()))
}

fn matches(r: &TaskRecord, q: &TaskQuery) -> bool {
    q.owner.as_ref().is_none_or(|o| &r.owner == o)
        && q.context_id.as_ref().is_none_or(|c| &r.task.context_id == c)
        && q.state.is_none_or(|s| r.state() == s)
        && q.updated_since_ms.is_none_or(|ms| r.updated_ms() >= ms)
}

impl Inner {
    /// Appends events with the next seqs; returns them as stored.
    fn append_events(&mut self, batch: &Batch) -> Vec<EventRecord> {
        let mut out = Vec::with_capacity(batch.events.len());
        for e in &batch.events {
            self.bounds.last += 1;
            let rec = EventRecord { seq: self.bounds.last, event: e.clone() };
            self.events.push_back(rec.clone());
            out.push(rec);
        }
        if let Some(r) = batch.prune_events {
            self.prune(r);
        }
        out
    }

    /// Removes the oldest events past the count, and the prefix older than
    /// the age limit, at most `max_removed` seqs of them.
    fn prune(&mut self, r: EventRetention) {
        let window_end = r.window_end(self.bounds);
        let expired = self
            .events
            .iter()
            .take_while(|e| e.seq <= window_end)
            .filter(|e| e.event.ts.millis() < r.min_ts_ms)
            .map(|e| e.seq)
            .max();
        let Some(cutoff) = r.cutoff(self.bounds, expired.unwrap_or(0)) else {
            return;
        };
        while self.events.front().is_some_and(|e| e.seq <= cutoff) {
            self.events.pop_front();
        }
        self.bounds.pruned_through = cutoff;
    }

    /// Refuses the batch unless each task write is at the version after
    /// the stored one, earlier writes of the same batch included.
    fn check_versions(&self, tasks: &[TaskRecord]) -> Result<(), StoreError> {
        let mut written: BTreeMap<&str, u64> = BTreeMap::new();
        for r in tasks {
            let found = match written.get(r.id()) {
                Some(v) => *v,
                None => self.tasks.get(r.id()).map_or(0, |t| t.version),
            };
            StoreError::check_version(r, found)?;
            written.insert(r.id(), r.version);
        }
        Ok(())
    }

    /// Refuses the batch when one of its journal entries is stored already
    /// (or is in the batch twice).
    fn check_journal(&self, entries: &[JournalEntry]) -> Result<(), StoreError> {
        let mut seen = std::collections::BTreeSet::new();
        for e in entries {
            let key = (e.task_id.clone(), e.seq);
            if self.journal.contains_key(&key) || !seen.insert(key) {
                return Err(journal_conflict(e));
            }
        }
        Ok(())
    }

    /// Applies a batch; every step is infallible once the inputs are
    /// normalized and the versions checked, so the batch is all or nothing.
    fn apply(
        &mut self,
        tasks: Vec<TaskRecord>,
        upserts: Vec<PushConfigRow>,
        reminders: Vec<ReminderRecord>,
        journal: Vec<((String, u32), String)>,
        batch: &Batch,
    ) {
        for r in tasks {
            self.tasks.insert(r.task.id.clone(), r);
        }
        for row in upserts {
            let key = (row.config.task_id.clone(), row.config.id.clone());
            match self.push.get_mut(&key) {
                Some(existing) => existing.1 = row,
                None => {
                    self.next_push_seq += 1;
                    self.push.insert(key, (self.next_push_seq, row));
                }
            }
        }
        for key in &batch.push_deletes {
            self.push.remove(key);
            self.outbox.retain(|_, o| o.task_id != key.0 || o.config_id.as_deref() != Some(key.1.as_str()));
        }
        let now = Timestamp::now().millis();
        for (task_id, body) in &batch.push_events {
            let mut configs: Vec<_> = self
                .push
                .iter()
                .filter(|((t, _), _)| t == task_id)
                .map(|((_, id), (seq, _))| (*seq, id.clone()))
                .collect();
            configs.sort();
            for (_, config_id) in configs {
                self.next_outbox_id += 1;
                let row = OutboxRow {
                    task_id: task_id.clone(),
                    config_id: Some(config_id),
                    bridge: None,
                    body: body.clone(),
                    attempts: 0,
                    not_before_ms: now,
                };
                self.outbox.insert(self.next_outbox_id, row);
            }
        }
        for d in &batch.bridge_deliveries {
            self.next_outbox_id += 1;
            let row = OutboxRow {
                task_id: d.task_id.clone(),
                config_id: None,
                bridge: Some(d.target.clone()),
                body: d.body.clone(),
                attempts: 0,
                not_before_ms: now,
            };
            self.outbox.insert(self.next_outbox_id, row);
        }
        for id in &batch.outbox_done {
            self.outbox.remove(id);
        }
        for (id, not_before_ms, attempts) in &batch.outbox_retry {
            if let Some(row) = self.outbox.get_mut(id) {
                row.not_before_ms = *not_before_ms;
                row.attempts = *attempts;
            }
        }
        for c in &batch.closed_contexts {
            self.closed.entry(c.context_id.clone()).or_insert(c.closed_ms);
        }
        for (key, body) in journal {
            self.journal.insert(key, body);
        }
        for t in &batch.tasks {
            if t.state().is_terminal() {
                let id = t.task.id.clone();
                self.journal.retain(|(task, _), _| *task != id);
            }
        }
        for r in reminders {
            let key = (r.task_id.clone(), r.id.clone());
            match self.reminders.get_mut(&key) {
                Some(existing) => existing.1 = r,
                None => {
                    self.next_reminder_seq += 1;
                    self.reminders.insert(key, (self.next_reminder_seq, r));
                }
            }
        }
    }
}

#[async_trait]
impl Store for MemoryStore {
    #[tracing::instrument(name = "store.commit", level = "debug", skip_all, fields(size = batch.size(), tasks = batch.tasks.len()))]
    async fn commit(&self, batch: Batch) -> Result<(), StoreError> {
        // Normalize first: an encoding error fails the batch before any change.
        let tasks = batch.tasks.iter().map(normalize_task).collect::<Result<Vec<_>, _>>()?;
        let upserts = batch.push_upserts.iter().map(normalize_config).collect::<Result<Vec<_>, _>>()?;
        let reminders = batch.reminders.iter().map(normalize_reminder).collect::<Result<Vec<_>, _>>()?;
        let journal = batch.journal.iter().map(encode_entry).collect::<Result<Vec<_>, _>>()?;
        let mut inner = self.lock()?;
        inner.check_versions(&tasks)?;
        inner.check_journal(&batch.journal)?;
        let outbox_before = inner.next_outbox_id;
        inner.apply(tasks, upserts, reminders, journal, &batch);
        let events = inner.append_events(&batch);
        // Announced under the lock, so receivers see seq order.
        self.announcer.announce(events);
        if inner.next_outbox_id != outbox_before {
            self.announcer.outbox_queued();
        }
        tracing::debug!("committed");
        Ok(())
    }

    async fn get_task(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.lock()?.tasks.get(id).cloned())
    }

    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let inner = self.lock()?;
        let mut matched: Vec<&TaskRecord> = inner.tasks.values().filter(|r| matches(r, query)).collect();
        matched.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        let total = matched.len();
        let rest = matched.into_iter().filter(|r| match &query.after {
            Some((ms, id)) => (r.updated_ms(), r.id()) < (*ms, id.as_str()),
            None => true,
        });
        let (mut tasks, mut bytes, mut more) = (Vec::new(), 0usize, false);
        for r in rest {
            // The size the other stores count: the task's and its status
            // history's JSON.
            let size = crate::codec::encode_task(r, None)
                .map(|e| e.task_json.len() + e.status_history_json.len())?;
            let over_budget =
                query.max_bytes > 0 && !tasks.is_empty() && bytes.saturating_add(size) > query.max_bytes;
            if tasks.len() == query.limit || over_budget {
                more = true;
                break;
            }
            bytes = bytes.saturating_add(size);
            tasks.push(r.clone());
        }
        Ok(TaskPage { tasks, total, more })
    }

    async fn tasks_in_states(&self, states: &[TaskState]) -> Result<Vec<TaskRecord>, StoreError> {
        let inner = self.lock()?;
        let mut out: Vec<TaskRecord> =
            inner.tasks.values().filter(|r| states.contains(&r.state())).cloned().collect();
        out.sort_by(|a, b| (a.updated_ms(), a.id()).cmp(&(b.updated_ms(), b.id())));
        Ok(out)
    }

    async fn context_tasks(&self, context_id: &str) -> Result<Vec<TaskRecord>, StoreError> {
        let inner = self.lock()?;
        let mut out: Vec<TaskRecord> =
            inner.tasks.values().filter(|r| r.task.context_id == context_id).cloned().collect();
        out.sort_by(|a, b| (a.created_at, a.id()).cmp(&(b.created_at, b.id())));
        Ok(out)
    }

    async fn context_foreign(&self, context_id: &str, owner: &str) -> Result<bool, StoreError> {
        let inner = self.lock()?;
        let first = inner
            .tasks
            .values()
            .filter(|r| r.task.context_id == context_id)
            .min_by(|a, b| (a.created_at, a.id()).cmp(&(b.created_at, b.id())));
        Ok(first.is_some_and(|r| r.owner != owner))
    }

    async fn get_push_config(&self, task_id: &str, id: &str) -> Result<Option<PushConfigRow>, StoreError> {
        let key = (task_id.to_owned(), id.to_owned());
        Ok(self.lock()?.push.get(&key).map(|(_, row)| row.clone()))
    }

    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfigRow>, StoreError> {
        let inner = self.lock()?;
        let mut rows: Vec<&(u64, PushConfigRow)> =
            inner.push.iter().filter(|((t, _), _)| t == task_id).map(|(_, v)| v).collect();
        rows.sort_by_key(|(seq, _)| *seq);
        Ok(rows.into_iter().map(|(_, row)| row.clone()).collect())
    }

    async fn due_outbox(&self, now_ms: i64, limit: usize) -> Result<Vec<OutboxItem>, StoreError> {
        let inner = self.lock()?;
        let due = inner.outbox.iter().filter(|(_, o)| o.not_before_ms <= now_ms);
        let items = due.filter_map(|(id, o)| {
            let (target, owner) = match (&o.config_id, &o.bridge) {
                (Some(config_id), _) => {
                    let key = (o.task_id.clone(), config_id.clone());
                    let row = &inner.push.get(&key)?.1;
                    (OutboxTarget::Push(row.config.clone()), row.owner.clone())
                }
                (None, Some(b)) => {
                    let owner = inner.tasks.get(&o.task_id).map(|t| t.owner.clone()).unwrap_or_default();
                    (OutboxTarget::Bridge(b.clone()), owner)
                }
                (None, None) => return None,
            };
            Some(OutboxItem {
                id: *id,
                task_id: o.task_id.clone(),
                owner,
                target,
                body: o.body.clone(),
                attempts: o.attempts,
            })
        });
        // Round-robin across owners, as the SQL stores do: an owner's n-th
        // due row (in id order) comes after every owner's (n-1)-th.
        let mut turns: HashMap<String, usize> = HashMap::new();
        let mut ranked: Vec<(usize, OutboxItem)> = items
            .map(|item| {
                let turn = turns.entry(item.owner.clone()).or_default();
                *turn += 1;
                (*turn, item)
            })
            .collect();
        ranked.sort_by_key(|(turn, item)| (*turn, item.id));
        Ok(ranked.into_iter().take(limit).map(|(_, item)| item).collect())
    }

    async fn outbox_depth(&self) -> Result<u64, StoreError> {
        Ok(self.lock()?.outbox.len() as u64)
    }

    async fn next_outbox_due(&self) -> Result<Option<i64>, StoreError> {
        Ok(self.lock()?.outbox.values().map(|o| o.not_before_ms).min())
    }

    async fn closed_contexts(&self) -> Result<Vec<String>, StoreError> {
        let inner = self.lock()?;
        let mut closed: Vec<_> = inner.closed.iter().map(|(id, ms)| (*ms, id.clone())).collect();
        closed.sort();
        Ok(closed.into_iter().map(|(_, id)| id).collect())
    }

    async fn reminders(&self, task_id: &str, active_only: bool) -> Result<Vec<ReminderRecord>, StoreError> {
        let inner = self.lock()?;
        let mut rows: Vec<&(u64, ReminderRecord)> = inner
            .reminders
            .iter()
            .filter(|((t, _), (_, r))| t == task_id && (!active_only || r.is_active()))
            .map(|(_, v)| v)
            .collect();
        rows.sort_by_key(|(seq, _)| *seq);
        Ok(rows.into_iter().map(|(_, r)| r.clone()).collect())
    }

    async fn get_reminder(&self, task_id: &str, id: &str) -> Result<Option<ReminderRecord>, StoreError> {
        let key = (task_id.to_owned(), id.to_owned());
        Ok(self.lock()?.reminders.get(&key).map(|(_, r)| r.clone()))
    }

    async fn read_events(&self, after: u64, limit: usize) -> Result<Vec<EventRecord>, StoreError> {
        let inner = self.lock()?;
        // An event's stored form is its JSON text, which it keeps as made.
        Ok(inner.events.iter().filter(|e| e.seq > after).take(limit).cloned().collect())
    }

    async fn event_log_bounds(&self) -> Result<EventLogBounds, StoreError> {
        Ok(self.lock()?.bounds)
    }
    async fn prune_step(&self, r: EventRetention) -> Result<bool, StoreError> {
        agentd_core::prune_step_by_bounds(self, r).await
    }

    async fn journal(&self, task_id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let inner = self.lock()?;
        let from = (task_id.to_owned(), 0);
        let rows = inner.journal.range(from..).take_while(|((t, _), _)| t == task_id);
        // Decoded from the stored form, as SQLite would.
        rows.map(|((t, seq), body)| decode_entry(t, *seq, body)).collect()
    }

    fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<Arc<EventRecord>> {
        self.announcer.subscribe()
    }

    async fn outbox_queued(&self) {
        self.announcer.outbox_wait().await;
    }

    fn may_have_push_configs(&self) -> bool {
        self.lock().map(|inner| !inner.push.is_empty()).unwrap_or(true)
    }

    /// One process uses it: its replica holds everything.
    fn leases(&self) -> Option<&dyn agentd_core::Leases> {
        None
    }
}
