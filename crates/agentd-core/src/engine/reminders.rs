//! InjectTaskReminder and reminder delivery (design §6). A reminder is
//! accepted under its task's lock (validation, idempotent id, dedupe,
//! pending limit), committed in its own rows, and only then are its
//! lifecycle events published. At each model call the run takes the active
//! reminders, which counts the call against each one's `ttl_turns`.

use super::{Engine, refused};
use crate::error::{Error, FieldPath, Invalid, Violation, Violations};
use crate::events::{EventJson, NewEvent};
use crate::principal::Principal;
use crate::record::{LinkKind, TaskRecord};
use crate::reminder::{
    DeliveredReminder, ReminderEnd, ReminderLimits, ReminderRecord, lifecycle_event, stream_event,
};
use crate::slots::{Slot, SlotState};
use crate::store::Batch;
use crate::transition::Refused;
use agentd_proto::ext::events::{EventKind, ReminderData};
use agentd_proto::ext::reminders::{
    CompatibilityEnvelope, InjectTaskReminderRequest, InjectTaskReminderResponse, Propagate, ReminderEvent,
    ReminderEventKind, URI,
};
use agentd_proto::validate::{DecodeFailure, PathStep, decode_at};
use agentd_proto::{SendMessageRequest, Timestamp, new_id};
use std::sync::Arc;

/// Longest `id`, `dedupeKey` and `source` accepted, in bytes.
const MAX_LABEL_BYTES: usize = 256;

impl Engine {
    /// InjectTaskReminder: for the task's owner and operators only. To
    /// anyone else, a gate's answerer included, the task does not exist:
    /// a reminder reaches the owner's model, which only the owner may steer.
    #[tracing::instrument(name = "inject_reminder", level = "debug", skip_all, fields(task_id = %req.task_id))]
    pub async fn inject_reminder(
        &self,
        p: &Principal,
        req: InjectTaskReminderRequest,
    ) -> Result<InjectTaskReminderResponse, Error> {
        validate(&req, &self.inner.config.reminders)?;
        let task_id = req.task_id.clone();
        self.steerable_record(p, &task_id).await?;
        let id = req.reminder.id.as_deref();
        loop {
            let Some(slot) = self.slot(&task_id).await? else {
                // Ended: an id accepted before still answers its result.
                if let Some(done) = self.earlier_result(&task_id, id).await? {
                    return Ok(done);
                }
                let rec = self.steerable_record(p, &task_id).await?;
                return Err(refused(&task_id, Refused::Terminal(rec.state())));
            };
            let mut st = slot.state.lock().await;
            if st.detached {
                continue;
            }
            // Under the lock, so two sends of one id cannot both be accepted.
            if let Some(done) = self.earlier_result(&task_id, id).await? {
                return Ok(done);
            }
            let r = new_record(&task_id, p, &req);
            let accepted = self.accept_locked(&slot, &mut st, r).await?;
            drop(st);
            if accepted.propagate == Propagate::Subagents {
                self.propagate(&accepted).await;
            }
            return Ok(result_of(&accepted));
        }
    }

    /// A record its owner or an operator asks for; TaskNotFound for
    /// anyone else.
    async fn steerable_record(&self, p: &Principal, task_id: &str) -> Result<TaskRecord, Error> {
        match self.record(task_id).await? {
            Some(r) if p.can_see(&r.owner) => Ok(r),
            _ => Err(Error::task_not_found(task_id)),
        }
    }

    /// The result of an earlier injection of reminder `id`, if there was one.
    async fn earlier_result(
        &self,
        task_id: &str,
        id: Option<&str>,
    ) -> Result<Option<InjectTaskReminderResponse>, Error> {
        let Some(id) = id else { return Ok(None) };
        let found = self.inner.store.get_reminder(task_id, id).await?;
        Ok(found.as_ref().map(result_of))
    }

    /// Dedupe, limit, commit, then publish. The caller holds the slot lock.
    async fn accept_locked(
        &self,
        slot: &Arc<Slot>,
        st: &mut SlotState,
        mut r: ReminderRecord,
    ) -> Result<ReminderRecord, Error> {
        let active = self.inner.store.reminders(&r.task_id, true).await?;
        let (mut displaced, kept): (Vec<_>, Vec<_>) =
            active.into_iter().partition(|a| r.dedupe_key.is_some() && a.dedupe_key == r.dedupe_key);
        let max = self.inner.config.reminders.max_pending_per_task;
        if kept.len() >= max as usize {
            return Err(Error::unsupported(format!(
                    "task {:?} already holds {} active reminders, the limit (reminders.max_pending_per_task = {max}); \
                     wait for some to expire or reuse a dedupeKey to replace one",
                    r.task_id,
                    kept.len()
                ),
            )
            .with_meta("taskId", &r.task_id)
            .with_meta("limit", "maxPendingPerTask")
            .with_meta("maxPendingPerTask", max.to_string()));
        }
        r.displaced = displaced.iter().map(|d| d.id.clone()).collect();
        for d in &mut displaced {
            d.ended = Some(ReminderEnd::Deduped { by: r.id.clone() });
        }
        let mut batch = Batch::default();
        batch.reminders.push(r.clone());
        batch.reminders.extend(displaced.iter().cloned());
        let events: Vec<ReminderEvent> =
            displaced.iter().map(|d| lifecycle_event(ReminderEventKind::Deduped, d, None)).collect();
        feed_events(&st.record, &events, &mut batch);
        self.inner.store.commit(batch).await?;
        self.metrics().reminders.event("injected");
        self.publish_reminder_events(slot, st, events);
        if !st.running && slot.followers() == 0 {
            // Loaded only to serialise this change: nothing keeps it live.
            st.detached = true;
            self.inner.slots.remove(&r.task_id);
        }
        Ok(r)
    }

    /// Copies a reminder to the live subagent tasks below its task, each
    /// copy with its own id (and so its own events). Best effort: a child
    /// that ended or is full is skipped.
    async fn propagate(&self, origin: &ReminderRecord) {
        let mut queue: Vec<ReminderRecord> = vec![origin.clone()];
        while let Some(parent) = queue.pop() {
            for child in self.children_of(&parent.task_id) {
                let copy = copy_for(&parent, &child);
                match self.accept_copy(copy).await {
                    Ok(Some(c)) => queue.push(c),
                    Ok(None) => {}
                    Err(e) => tracing::info!(task = child, error = %e, "reminder not propagated"),
                }
            }
        }
    }

    async fn accept_copy(&self, copy: ReminderRecord) -> Result<Option<ReminderRecord>, Error> {
        loop {
            let Some(slot) = self.slot(&copy.task_id).await? else { return Ok(None) };
            let mut st = slot.state.lock().await;
            if st.detached {
                continue;
            }
            return self.accept_locked(&slot, &mut st, copy).await.map(Some);
        }
    }

    /// The one place reminder lifecycle events leave the engine for
    /// streams: to the task's streams (shown only where the extension was
    /// activated, see `TaskEvents`), never to push webhooks. Their `reminder`
    /// events in the feed are committed with the change (`feed_events`).
    fn publish_reminder_events(&self, slot: &Slot, st: &SlotState, events: Vec<ReminderEvent>) {
        let t = &st.record.task;
        for ev in &events {
            self.metrics().reminders.event(match ev.event {
                ReminderEventKind::Emitted => "emitted",
                ReminderEventKind::Deduped => "deduped",
                ReminderEventKind::Expired => "expired",
            });
        }
        for ev in events {
            slot.publish(stream_event(&t.id, &t.context_id, &t.status, &ev));
        }
    }

    /// Called by a run before each model call: the task's active reminders,
    /// each counted as having reached this call (committed before they are
    /// returned; a failed commit delivers none). Counts the call as the
    /// task's next turn either way.
    ///
    /// A workflow run makes its model calls in its steps (subagents of the
    /// run), so a step's call is also the run's turn: it takes the run's
    /// active reminders too, without `propagate` (those with `subagents`
    /// reach the step as copies already, so they are not taken twice).
    pub(crate) async fn deliver_reminders(&self, task_id: &str) -> Vec<DeliveredReminder> {
        self.deliver_reminders_journaled(task_id, |_| Vec::new()).await.0
    }

    /// `deliver_reminders`, committing the journal entries `journal` makes
    /// of the task's own delivered reminders in the same batch as their
    /// delivery (no commit when there are none). Also says whether such
    /// entries were committed.
    pub(crate) async fn deliver_reminders_journaled(
        &self,
        task_id: &str,
        journal: impl FnOnce(&[DeliveredReminder]) -> Vec<crate::journal::JournalEntry> + Send,
    ) -> (Vec<DeliveredReminder>, bool) {
        let (mut out, parent, journaled) = self.deliver_turn(task_id, false, journal).await;
        if let Some(run) = parent {
            out.extend(self.deliver_turn(&run, true, |_| Vec::new()).await.0);
        }
        (out, journaled)
    }

    /// One turn of task `task_id` (with `run_only`, only if it is a workflow
    /// run, and only its reminders that do not propagate): its delivered
    /// reminders, and its parent.
    async fn deliver_turn(
        &self,
        task_id: &str,
        run_only: bool,
        journal: impl FnOnce(&[DeliveredReminder]) -> Vec<crate::journal::JournalEntry> + Send,
    ) -> (Vec<DeliveredReminder>, Option<String>, bool) {
        let Some(slot) = self.inner.slots.get(task_id) else { return (Vec::new(), None, false) };
        let mut st = slot.state.lock().await;
        if st.commit_in_doubt && !st.detached && self.settle_abandoned_commit(&slot, &mut st).await.is_err() {
            return (Vec::new(), None, false);
        }
        let is_run = st.record.meta.link.as_ref().is_some_and(|l| l.kind == LinkKind::Run);
        if st.detached || (run_only && !is_run) {
            return (Vec::new(), None, false);
        }
        let parent = st.record.meta.parent.clone();
        // Kept in the live record; committed with the next change of the
        // task (at the latest when this turn ends).
        st.record.meta.model_calls += 1;
        let turn = st.record.meta.model_calls;
        let active = match self.inner.store.reminders(task_id, true).await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(task = task_id, error = %e, "cannot read reminders; this model call gets none");
                return (Vec::new(), parent, false);
            }
        };
        let active: Vec<ReminderRecord> =
            active.into_iter().filter(|r| !run_only || r.propagate == Propagate::None).collect();
        if active.is_empty() {
            return (Vec::new(), parent, false);
        }
        let mut batch = Batch::default();
        let mut events = Vec::new();
        let mut out = Vec::new();
        for mut r in active {
            r.delivered += 1;
            events.push(lifecycle_event(ReminderEventKind::Emitted, &r, Some(turn)));
            if r.delivered >= r.ttl_turns {
                r.ended = Some(ReminderEnd::Expired);
                events.push(lifecycle_event(ReminderEventKind::Expired, &r, None));
            }
            out.push(DeliveredReminder {
                id: r.id.clone(),
                source: r.source.clone(),
                body: r.body.clone(),
                role_hint: r.role_hint,
            });
            batch.reminders.push(r);
        }
        feed_events(&st.record, &events, &mut batch);
        batch.journal = journal(&out);
        let journaled = !batch.journal.is_empty();
        let mut rec = st.record.clone();
        let shared = self.leases().is_some();
        let mut attempt = 1;
        loop {
            let retry_left = shared && attempt < super::CONFLICT_ATTEMPTS;
            let this_try = if retry_left { batch.clone() } else { std::mem::take(&mut batch) };
            match self.commit_next(&slot, &mut st, &mut rec, &[], this_try).await {
                Ok(()) => break,
                // Another replica committed the task (input, say): the
                // delivery is committed on its new version.
                Err(Error::Store(crate::store::StoreError::Conflict { .. })) if retry_left => {
                    self.reload_changed_elsewhere(&slot, &mut st).await;
                    if st.detached {
                        return (Vec::new(), parent, false);
                    }
                    st.record.meta.model_calls = st.record.meta.model_calls.max(turn);
                    rec = st.record.clone();
                    attempt += 1;
                }
                Err(e) => {
                    tracing::warn!(task = task_id, error = %e, "cannot commit reminder delivery; this model call gets none");
                    return (Vec::new(), parent, false);
                }
            }
        }
        st.record.version = rec.version;
        self.publish_reminder_events(&slot, &st, events);
        (out, parent, journaled)
    }

    /// Copies of the active propagating reminders of `parent` for a new
    /// child task `child` (committed with the child's creation).
    pub(super) async fn inherited_reminders(&self, parent: &str, child: &str) -> Vec<ReminderRecord> {
        match self.inner.store.reminders(parent, true).await {
            Ok(active) => active
                .iter()
                .filter(|r| r.propagate == Propagate::Subagents)
                .map(|r| copy_for(r, child))
                .collect(),
            Err(e) => {
                tracing::warn!(task = parent, error = %e, "cannot read reminders to propagate");
                Vec::new()
            }
        }
    }

    pub(super) fn remember_child(&self, parent: &str, child: &str) {
        self.inner.children.entry(parent.to_owned()).or_default().push(child.to_owned());
    }

    pub(super) fn forget_child(&self, rec: &crate::record::TaskRecord) {
        self.inner.children.remove(rec.id());
        if let Some(parent) = &rec.meta.parent
            && let Some(mut kids) = self.inner.children.get_mut(parent)
        {
            kids.retain(|k| k != rec.id());
        }
    }

    fn children_of(&self, parent: &str) -> Vec<String> {
        self.inner.children.get(parent).map(|k| k.clone()).unwrap_or_default()
    }

    /// The compatibility path: the InjectTaskReminder a SendMessage carries
    /// under `metadata[URI]` (of the message, else of the request), if any.
    pub(super) fn compat_reminder(
        req: &SendMessageRequest,
    ) -> Result<Option<InjectTaskReminderRequest>, Error> {
        let Some(msg) = &req.message else { return Ok(None) };
        let (field, envelope) = match (msg.metadata.as_ref().and_then(|m| m.get(URI)), req.metadata.as_ref())
        {
            (Some(v), _) => ("message.metadata", v),
            (None, Some(m)) => match m.get(URI) {
                Some(v) => ("metadata", v),
                None => return Ok(None),
            },
            (None, None) => return Ok(None),
        };
        let at = FieldPath::of(field).key(URI);
        let envelope: CompatibilityEnvelope = decode_at(envelope.clone()).map_err(|e| located(e, &at))?;
        if msg.task_id.is_empty() {
            return Err(Error::invalid(
                FieldPath::of("message.taskId"),
                "a message carrying a reminder must name the task it is for",
            ));
        }
        Ok(Some(InjectTaskReminderRequest {
            tenant: req.tenant.clone(),
            task_id: msg.task_id.clone(),
            reminder: envelope.reminder,
            metadata: envelope.metadata,
        }))
    }
}

/// A payload's decode failure, named from where the payload sat.
fn located(e: DecodeFailure, at: &FieldPath) -> Error {
    let field = e.path.into_iter().fold(at.clone(), |path, step| match step {
        PathStep::Member(name) => path.member(name),
        PathStep::Index(i) => path.index(i),
    });
    Error::Invalid(Invalid::of(vec![Violation { field, description: e.description }]))
}

fn validate(req: &InjectTaskReminderRequest, limits: &ReminderLimits) -> Result<(), Error> {
    let mut v = Violations::default();
    let mut bad = |field: &'static str, description: String| v.add(FieldPath::of(field), description);
    if req.task_id.is_empty() {
        bad("taskId", "is required".into());
    }
    let r = &req.reminder;
    if r.body.trim().is_empty() {
        bad("reminder.body", "must not be empty".into());
    } else if r.body.len() > limits.max_body_bytes as usize {
        bad(
            "reminder.body",
            format!("is {} bytes, over the limit of {} (maxBodyBytes)", r.body.len(), limits.max_body_bytes),
        );
    }
    if let Some(ttl) = r.ttl_turns
        && !(1..=limits.max_ttl_turns).contains(&ttl)
    {
        bad(
            "reminder.ttlTurns",
            format!("must be between 1 and {} (maxTtlTurns), got {ttl}", limits.max_ttl_turns),
        );
    }
    for (field, value) in
        [("reminder.id", &r.id), ("reminder.dedupeKey", &r.dedupe_key), ("reminder.source", &r.source)]
    {
        match value.as_deref() {
            Some(s) if s.trim().is_empty() => bad(field, "must not be empty when given".into()),
            Some(s) if s.len() > MAX_LABEL_BYTES => {
                bad(field, format!("must be at most {MAX_LABEL_BYTES} bytes"))
            }
            _ => {}
        }
    }
    v.finish()
}

fn new_record(task_id: &str, p: &Principal, req: &InjectTaskReminderRequest) -> ReminderRecord {
    let r = &req.reminder;
    ReminderRecord {
        task_id: task_id.to_owned(),
        id: r.id.clone().unwrap_or_else(new_id),
        body: r.body.clone(),
        dedupe_key: r.dedupe_key.clone(),
        ttl_turns: r.ttl_turns.unwrap_or(1),
        role_hint: r.role_hint,
        source: r.source.clone().unwrap_or_else(|| p.id.clone()),
        propagate: r.propagate.unwrap_or_default(),
        metadata: req.metadata.clone(),
        accepted_at: Timestamp::now(),
        displaced: Vec::new(),
        delivered: 0,
        ended: None,
        copied_from: None,
    }
}

/// A fresh copy of `r` for the task `child`: its own id, no deliveries yet.
fn copy_for(r: &ReminderRecord, child: &str) -> ReminderRecord {
    ReminderRecord {
        task_id: child.to_owned(),
        id: new_id(),
        accepted_at: Timestamp::now(),
        displaced: Vec::new(),
        delivered: 0,
        ended: None,
        copied_from: Some(format!("{}/{}", r.task_id, r.id)),
        ..r.clone()
    }
}

fn result_of(r: &ReminderRecord) -> InjectTaskReminderResponse {
    InjectTaskReminderResponse {
        reminder_id: r.id.clone(),
        displaced: r.displaced.clone(),
        accepted_at: r.accepted_at,
    }
}

/// The `reminder` events of the events feed, committed in the same batch as
/// the reminder change they report.
fn feed_events(rec: &TaskRecord, events: &[ReminderEvent], batch: &mut Batch) {
    let now = Timestamp::now();
    for ev in events {
        let data = ReminderData { task_id: rec.task.id.clone(), event: ev.clone() };
        batch.events.push(NewEvent::for_task(EventKind::Reminder, rec, now, EventJson::of(&data)));
    }
}
