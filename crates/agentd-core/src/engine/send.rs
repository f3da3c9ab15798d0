//! SendMessage and SendStreamingMessage: routing of an incoming message to a
//! reminder for a task (the reminders extension's compatibility path), a
//! new task, a direct reply, input for a waiting task, or steering input
//! for a working one.

use super::{Engine, TaskEvents, refused};
use crate::agent::Agent;
use crate::claims::ContextClaim;
use crate::error::{Error, FieldPath, Violations};
use crate::events::WholeTask;
use crate::principal::Principal;
use crate::record::{LinkKind, StatusEntry, TaskLink, TaskMeta, TaskRecord};
use crate::slots::{InputAction, OwedInput, Slot, SlotState};
use crate::store::{Batch, PushConfigRow};
use crate::transition::{self, Change, Refused};
use agentd_proto::ext::reminders::InjectTaskReminderRequest;
use agentd_proto::{
    Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, Task, TaskState, TaskStatus,
    Timestamp, new_id,
};
use std::sync::Arc;

/// Work the runtime starts itself (a subagent, a workflow run): a new task
/// owned by `owner`, committed SUBMITTED, then run by `agent`.
pub struct StartTask {
    /// The principal id the task belongs to (who may see it).
    pub owner: String,
    /// The task id; default a fresh one. Lets a caller derive names from
    /// the id (a subagent's handle) before the task exists.
    pub id: Option<String>,
    /// The conversation; default a new one.
    pub context_id: Option<String>,
    /// The message that starts the task (its first history entry).
    pub input: Message,
    pub meta: TaskMeta,
    /// The agent that runs the task and every later turn of it; default
    /// the engine's agent.
    pub agent: Option<Arc<dyn Agent>>,
}

tokio::task_local! {
    /// Set while a blocking SendMessage routes its message: the task it
    /// creates is answered only once it settles, so its creation may be
    /// committed with its run's first change (see `create_task`).
    static ANSWER_WHEN_SETTLED: ();
}

/// A SendMessage's answer, and, when the answer is a task whose view is
/// its whole Task JSON as its last commit's `task` event holds it (with
/// its artifacts, none, put in), that text: a binding writing JSON writes
/// it (`WholeTask::view_framed`) instead of serializing the answer.
pub struct SendAnswer {
    pub response: SendMessageResponse,
    pub whole: Option<WholeTask>,
}

/// What a message turned into.
#[allow(clippy::large_enum_variant)] // built once per request, never stored
pub enum SendOutcome {
    /// A direct reply; no task was created.
    Message(Message),
    /// The events of the task the message created or continued.
    Task(TaskEvents),
}

impl Engine {
    /// SendMessage: blocking unless `returnImmediately`.
    pub async fn send_message(
        &self,
        p: &Principal,
        req: SendMessageRequest,
    ) -> Result<SendMessageResponse, Error> {
        Ok(self.send_message_answer(p, req).await?.response)
    }

    /// SendMessage, with the answer's JSON when it is lent (see [`SendAnswer`]).
    #[tracing::instrument(name = "send_message", level = "debug", skip_all, fields(task_id = super::task_of(&req), context_id = super::context_of(&req)))]
    pub async fn send_message_answer(
        &self,
        p: &Principal,
        req: SendMessageRequest,
    ) -> Result<SendAnswer, Error> {
        let answer = |response| SendAnswer { response, whole: None };
        let cfg = req.configuration.clone().unwrap_or_default();
        // Its own boxed future: rare, and larger than the common path's.
        let reminder = Engine::compat_reminder(&req)?;
        if let Some(inject) = reminder {
            return Box::pin(self.answer_reminder(p, &req, inject, &cfg)).await.map(answer);
        }
        // Boxed, here and in `route`, where one branch is far larger than
        // the rest: a future holds room for its largest await, and every
        // move of it copies all of that room.
        match ANSWER_WHEN_SETTLED.scope((), Box::pin(self.route(p, req, true))).await? {
            SendOutcome::Message(m) => Ok(answer(SendMessageResponse::Message(m))),
            SendOutcome::Task(mut events) => {
                if let Some(snapshot) = events.take_snapshot() {
                    return Ok(answer(SendMessageResponse::Task(snapshot)));
                }
                let id = events.task_id().to_owned();
                let settled = if cfg.return_immediately {
                    drop(events);
                    None
                } else {
                    events.settle().await
                };
                let (rec, whole) = match settled {
                    Some(settled) => settled,
                    // Boxed: the common case never takes it, and its future
                    // is the largest this one awaits.
                    None => (Box::pin(self.committed_record(&id)).await?, None),
                };
                // The whole Task is the answer when the answer shows all of
                // it: every message, and no annotations added.
                let messages = rec.task.history.as_ref().map_or(0, Vec::len);
                let all_messages = cfg
                    .history_length
                    .is_none_or(|n| usize::try_from(n).is_ok_and(|n| n > 0 && n >= messages));
                let whole = whole.filter(|_| all_messages && !self.annotate);
                let response = SendMessageResponse::Task(self.owned_view(rec, cfg.history_length, true));
                if let Some(whole) = &whole {
                    // Every test's blocking SendMessage checks the lent answer.
                    debug_assert_eq!(
                        String::from_utf8_lossy(&whole.view_framed(&[b"{\"task\":"], &[b"}"])),
                        agentd_proto::exact::to_string(&response).unwrap_or_default(),
                        "the lent answer is not the answer"
                    );
                }
                Ok(SendAnswer { response, whole })
            }
        }
    }

    /// SendMessage's answer to a message that carries a reminder: a
    /// reminder, not a turn; the message enters no history.
    async fn answer_reminder(
        &self,
        p: &Principal,
        req: &SendMessageRequest,
        inject: InjectTaskReminderRequest,
        cfg: &SendMessageConfiguration,
    ) -> Result<SendMessageResponse, Error> {
        let task_id = inject.task_id.clone();
        self.check_reminder_message(p, req, &task_id).await?;
        Box::pin(self.inject_reminder(p, inject)).await?;
        let rec = self.visible_record(p, &task_id).await?;
        Ok(SendMessageResponse::Task(super::read::view(&rec, cfg.history_length, true)))
    }

    /// The record of task `id` as committed: its creation is committed
    /// first if it is still pending.
    async fn committed_record(&self, id: &str) -> Result<TaskRecord, Error> {
        self.commit_pending(id).await?;
        self.record(id).await?.ok_or_else(|| Error::task_not_found(id))
    }

    /// Routes a message (SendStreamingMessage). The returned events start
    /// with the task snapshot taken under the task's lock, so no event is
    /// missed or repeated.
    #[tracing::instrument(name = "send", level = "debug", skip_all, fields(task_id = super::task_of(&req), context_id = super::context_of(&req)))]
    pub async fn send(
        &self,
        p: &Principal,
        req: SendMessageRequest,
        close_on_interrupt: bool,
    ) -> Result<SendOutcome, Error> {
        self.route(p, req, close_on_interrupt).await
    }

    /// [`Engine::send`], in the span of the operation calling it.
    async fn route(
        &self,
        p: &Principal,
        req: SendMessageRequest,
        close_on_interrupt: bool,
    ) -> Result<SendOutcome, Error> {
        self.refuse_when_stopping()?;
        if let Some(inject) = Engine::compat_reminder(&req)? {
            // Answered with the task's stream; the message starts no turn.
            let id = inject.task_id.clone();
            self.check_reminder_message(p, &req, &id).await?;
            Box::pin(self.inject_reminder(p, inject)).await?;
            let sub = agentd_proto::SubscribeToTaskRequest { tenant: req.tenant, id };
            return Ok(SendOutcome::Task(self.subscribe(p, sub).await?));
        }
        let Some(msg) = req.message else {
            return Err(Error::invalid(FieldPath::of("message"), "is required"));
        };
        let cfg = req.configuration.unwrap_or_default();
        message_violations(&msg, &cfg).finish()?;
        self.check_media_types(&msg)?;
        let push = self.inline_push_config(p, &cfg).await?;
        if msg.task_id.is_empty()
            && let Some(command) = super::commands::find(&msg)?
        {
            if push.is_some() {
                return Err(Error::invalid(
                    FieldPath::of("configuration.taskPushNotificationConfig"),
                    "is not accepted with a command; register a config on the task the command started",
                ));
            }
            return Box::pin(self.run_command(p, command, &msg, &cfg, close_on_interrupt)).await;
        }
        if msg.task_id.is_empty() {
            Box::pin(self.new_task(p, msg, &cfg, push, close_on_interrupt)).await
        } else {
            Box::pin(self.continue_task(p, msg, &cfg, push, close_on_interrupt)).await
        }
    }

    /// A SendMessage that carries a reminder is checked as any other before
    /// the reminder is injected: its message, its configuration (a webhook
    /// is registered with a turn, not with a reminder) and its context,
    /// which must be the task's.
    async fn check_reminder_message(
        &self,
        p: &Principal,
        req: &SendMessageRequest,
        id: &str,
    ) -> Result<(), Error> {
        let Some(msg) = &req.message else { return Ok(()) };
        let cfg = req.configuration.clone().unwrap_or_default();
        let mut v = message_violations(msg, &cfg);
        if cfg.task_push_notification_config.is_some() {
            v.add(
                FieldPath::of("configuration.taskPushNotificationConfig"),
                "is not accepted with a reminder; register a config on the task",
            );
        }
        v.finish()?;
        self.check_media_types(msg)?;
        if !msg.context_id.is_empty() {
            let rec = self.visible_record(p, id).await?;
            if msg.context_id != rec.task.context_id {
                return Err(foreign_context(id, &rec.task.context_id));
            }
        }
        Ok(())
    }

    /// Refuses a message that would take its task's history past
    /// `max_task_history_bytes` of JSON (see [`super::EngineConfig`]).
    fn check_history_room(&self, rec: &TaskRecord, msg: &Message) -> Result<(), Error> {
        let max = self.inner.config.max_task_history_bytes;
        let len = |m: &Message| agentd_proto::exact::json_len(m).unwrap_or(usize::MAX);
        let held = rec.task.history.iter().flatten().map(len).fold(0usize, usize::saturating_add);
        if held.saturating_add(len(msg)) > max {
            return Err(Error::unsupported(format!(
                "task {:?} holds {held} bytes of messages, and this one would take it past {max}, the most a \
                 task holds; send it as a new task in the same context (contextId {:?})",
                rec.task.id, rec.task.context_id
            )));
        }
        Ok(())
    }

    fn check_media_types(&self, msg: &Message) -> Result<(), Error> {
        for (i, part) in msg.parts.iter().enumerate() {
            let mt = part.media_type.trim();
            let accepted =
                mt.is_empty() || self.inner.config.input_modes.iter().any(|m| media_type_matches(m, mt));
            if !accepted {
                return Err(Error::ContentTypeNotSupported {
                    part: i,
                    media_type: mt.to_owned(),
                    accepted: self.inner.config.input_modes.join(", "),
                });
            }
        }
        Ok(())
    }

    async fn inline_push_config(
        &self,
        p: &Principal,
        cfg: &SendMessageConfiguration,
    ) -> Result<Option<PushConfigRow>, Error> {
        let Some(pc) = &cfg.task_push_notification_config else { return Ok(None) };
        if !self.inner.config.push_enabled {
            return Err(Error::PushNotSupported(None));
        }
        super::push::check_authentication(
            pc,
            FieldPath::of("configuration.taskPushNotificationConfig.authentication.scheme"),
        )?;
        super::push::check_sizes(pc, "configuration.taskPushNotificationConfig")?;
        self.check_push_url(FieldPath::of("configuration.taskPushNotificationConfig.url"), &pc.url).await?;
        Ok(Some(PushConfigRow { owner: p.id.clone(), config: pc.clone() }))
    }

    async fn new_task(
        &self,
        p: &Principal,
        msg: Message,
        cfg: &SendMessageConfiguration,
        push: Option<PushConfigRow>,
        close_on_interrupt: bool,
    ) -> Result<SendOutcome, Error> {
        let claim = match msg.context_id.as_str() {
            "" => None,
            context_id => self.claim_context(p, context_id).await?,
        };
        if !msg.context_id.is_empty() && self.inner.closed_contexts.contains(&msg.context_id) {
            return Err(Error::unsupported(format!(
                "the conversation {:?} was closed and takes no new turns; omit contextId to start a new one",
                msg.context_id
            ))
            .with_meta("contextId", &msg.context_id));
        }
        let context_id = if msg.context_id.is_empty() { new_id() } else { msg.context_id.clone() };
        if let Some(mut reply) = self.inner.agent.direct_reply(&msg) {
            reply.context_id = context_id;
            return Ok(SendOutcome::Message(reply));
        }
        let id = new_id();
        let start = StartTask {
            owner: p.id.clone(),
            id: Some(id.clone()),
            context_id: Some(context_id),
            input: msg,
            meta: TaskMeta { link: Some(TaskLink::new(LinkKind::Turn, &id)), ..TaskMeta::default() },
            agent: None,
        };
        let batch = inline_push_batch(push, &id);
        let events = Some((cfg.history_length, close_on_interrupt));
        let defer = !cfg.return_immediately && ANSWER_WHEN_SETTLED.try_with(|_| ()).is_ok();
        let ((), events) = self.create_task(start, batch, events, defer, claim, |_| ()).await?;
        Ok(SendOutcome::Task(events.ok_or_else(Error::internal)?))
    }

    /// Claims a client-chosen context for `p`'s new task; refuses one that
    /// is another principal's conversation (operators may join any). The
    /// claim comes first and the store is asked second, so of two
    /// principals starting the same context at once only one gets it: the
    /// other finds the claim, or, once the first task is committed and the
    /// claim released, that task in the store.
    async fn claim_context(&self, p: &Principal, context_id: &str) -> Result<Option<ContextClaim>, Error> {
        let claim = match self.inner.claims.claim(context_id, &p.id) {
            Ok(claim) => Some(claim),
            Err(_) if p.is_operator() => None,
            Err(_) => return Err(another_principals_context()),
        };
        self.refuse_foreign_context(p, context_id).await?;
        Ok(claim)
    }

    /// Refuses `context_id` to `p` when another principal's tasks are in
    /// it (an operator may use any).
    pub(super) async fn refuse_foreign_context(&self, p: &Principal, context_id: &str) -> Result<(), Error> {
        if !p.is_operator() && self.inner.store.context_foreign(context_id, &p.id).await? {
            return Err(another_principals_context());
        }
        Ok(())
    }

    /// Starts work on the runtime's behalf: creates and commits a SUBMITTED
    /// task as `start` describes, starts its run, and returns the record as
    /// committed. Nobody is authorized here: the caller (the runtime, on
    /// behalf of a principal it checked) decides the owner.
    pub(crate) async fn start_task(&self, start: StartTask) -> Result<TaskRecord, Error> {
        if let Some(id) = &start.id
            && self.record(id).await?.is_some()
        {
            return Err(Error::Internal(format!("task id {id:?} is already taken")));
        }
        Ok(self.create_task(start, Batch::default(), None, false, None, TaskRecord::clone).await?.0)
    }

    /// The one creation path: commit the new task (with `batch`), make it
    /// live, subscribe to it when `events` asks (history length, close on
    /// interrupt), then start its run. With `defer` (a blocking SendMessage,
    /// answered when the task settles), the creation may be left pending,
    /// to be committed with the run's first change. `claim` (on the task's
    /// context) is held until the creation is committed. Answers with what
    /// `then` reads from the record as created (nothing, for a SendMessage:
    /// no copy of the record).
    async fn create_task<R>(
        &self,
        start: StartTask,
        mut batch: Batch,
        events: Option<(Option<i32>, bool)>,
        defer: bool,
        claim: Option<ContextClaim>,
        then: impl FnOnce(&TaskRecord) -> R,
    ) -> Result<(R, Option<TaskEvents>), Error> {
        let id = start.id.unwrap_or_else(new_id);
        let context_id = start.context_id.filter(|c| !c.is_empty()).unwrap_or_else(new_id);
        let now = Timestamp::now();
        let mut input = start.input;
        input.task_id.clone_from(&id);
        input.context_id.clone_from(&context_id);
        if input.message_id.is_empty() {
            input.message_id = new_id();
        }
        let rec = TaskRecord {
            task: Task {
                id: id.clone(),
                context_id,
                status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: Some(now) },
                // None until the first artifact: a view shows `[]`, and
                // the row's text is then its `task` event's (`emit`).
                artifacts: None,
                history: Some(vec![input.clone()]),
                metadata: None,
            },
            owner: start.owner,
            created_at: now,
            status_history: vec![StatusEntry { state: TaskState::Submitted, timestamp: now }],
            meta: start.meta,
            // Committed as the first version, now or with its run's first change.
            version: 1,
        };
        if let Some(parent) = &rec.meta.parent {
            batch.reminders.extend(self.inherited_reminders(parent, &id).await);
        }
        let answered_when_settled = ANSWER_WHEN_SETTLED.try_with(|_| ()).is_ok();
        // The record lives in the slot from here on: nothing copies it.
        let slot = Slot::new(rec, self.inner.config.stream_capacity);
        let mut guard = slot.state.lock().await;
        let st = &mut *guard;
        if defer && events.is_some() && self.inner.conversations.is_idle(&st.record.task.context_id) {
            // A blocking SendMessage's new task, whose run starts at once:
            // its creation is committed with the run's first change (or
            // before anything shows or reads it: `commit_pending`). Nothing
            // has observed the task before that (its id is not out yet), and
            // a SendMessage that completes at once is one commit, not two.
            // Streams and `returnImmediately` answers show the task at once:
            // their tasks are committed first, as ever.
            st.pending = Some(super::emit::on_deferred_create(&st.record, batch));
            st.claim = claim;
        } else {
            super::emit::on_create(&st.record, &mut batch);
            self.commit_record(&mut st.record, &[], batch).await?;
            self.count_commit(None, &st.record);
            drop(claim);
        }
        if let Some(parent) = &st.record.meta.parent {
            self.remember_child(parent, &id);
        }
        if let Some(agent) = start.agent {
            self.inner.task_agents.insert(id.clone(), agent);
        }
        self.inner.slots.insert_or_get(&id, slot.clone());
        let events = events.map(|(history_length, close_on_interrupt)| {
            if answered_when_settled {
                // SendMessage answers with the settled record (or, with
                // `returnImmediately`, reads it): no snapshot, no events.
                return TaskEvents::settling(self, &slot, &id, st.record.state());
            }
            TaskEvents::new(
                self,
                self.view(&st.record, history_length, true),
                slot.subscribe(),
                close_on_interrupt,
            )
            .with_slot(&slot)
        });
        let out = then(&st.record);
        self.start_run(st, input, false);
        Ok((out, events))
    }

    async fn continue_task(
        &self,
        p: &Principal,
        msg: Message,
        cfg: &SendMessageConfiguration,
        push: Option<PushConfigRow>,
        close_on_interrupt: bool,
    ) -> Result<SendOutcome, Error> {
        let id = msg.task_id.clone();
        loop {
            let Some(slot) = self.slot(&id).await? else {
                // Not live: terminal, or no such task.
                let rec = self.visible_record(p, &id).await?;
                return Err(refused(&id, Refused::Terminal(rec.state())));
            };
            let mut st = slot.state.lock().await;
            if st.commit_in_doubt && !st.detached {
                // What is running and waiting is known once the store is read.
                self.settle_abandoned_commit(&slot, &mut st).await?;
            }
            if st.detached {
                continue;
            }
            if !st.record.visible_to(p) {
                return Err(Error::task_not_found(&id));
            }
            if let Some(row) = &push {
                // Registering a webhook is the owner's (or an operator's),
                // inline or not; and it may not take over another's config.
                if !p.can_see(&st.record.owner) {
                    return Err(super::answerer_only(p, &id, "watch"));
                }
                self.check_config_id(p, &id, &row.config.id, FieldPath::of(INLINE_ID)).await?;
                self.check_config_room(&id, &row.config.id).await?;
            }
            if !msg.context_id.is_empty() && msg.context_id != st.record.task.context_id {
                return Err(foreign_context(&id, &st.record.task.context_id));
            }
            self.check_history_room(&st.record, &msg)?;
            let gate_open = st.record.state() == TaskState::InputRequired && st.record.meta.gate.is_some();
            let is_run = st.record.meta.link.as_ref().is_some_and(|l| l.kind == LinkKind::Run);
            if is_run && !gate_open && self.has_link_agent(LinkKind::Run) && !st.record.state().is_terminal()
            {
                return Err(Error::unsupported(format!(
                    "task {id:?} is a workflow run that is not waiting for an answer (no gate is open, \
                         or it was answered already); see it with workflow.status"
                ))
                .with_meta("taskId", &id));
            }
            // A tool call's approval: its turn is still running, waiting
            // inside the call, and takes the answer from the record.
            let approval =
                gate_open && st.record.meta.approval.as_ref().is_some_and(|a| a.decision.is_none());
            let keeper = if gate_open && !approval { self.gate_keeper().cloned() } else { None };
            let batch = inline_push_batch(push.clone(), &id);
            // A run that already left the task waiting for input is over for
            // this message's purposes (it may still be unwinding): resume.
            let running = st.running && (approval || !st.record.state().is_interrupted());
            let was_running = st.running;
            // Keeps the slot live through the commit: a run starts right after.
            st.running = true;
            let action = match (approval, running) {
                (true, true) => InputAction::Nothing,
                (_, true) => InputAction::Steer,
                (_, false) => InputAction::Resume,
            };
            let mut owed = msg.clone();
            owed.context_id.clone_from(&st.record.task.context_id);
            st.owed_input = Some(OwedInput { input: owed, action, was_running });
            let input = msg.clone();
            let committed = self
                .commit_locked(
                    &slot,
                    &mut st,
                    |rec, now| {
                        if approval {
                            crate::approval::accept(rec, &input, &p.id, now.millis())?;
                        } else if gate_open {
                            // The answer to the open gate: checked, and recorded
                            // with the message in this one commit.
                            match &keeper {
                                Some(k) => k.accept(rec, &input)?,
                                None => rec.meta.gate = None,
                            }
                        }
                        let mut ev = transition::apply(rec, Change::Input(input.clone()), now)
                            .map_err(|r| refused(&id, r))?;
                        if !running || approval {
                            // A waiting task resumes: INPUT_REQUIRED → WORKING.
                            let resume = Change::Status { state: TaskState::Working, message: None };
                            ev.extend(transition::apply(rec, resume, now).map_err(|r| refused(&id, r))?);
                        }
                        Ok(ev)
                    },
                    batch,
                )
                .await;
            let owed = st.owed_input.take();
            let rec = match committed {
                Ok(()) => &st.record,
                Err(e) => {
                    st.running = was_running;
                    return Err(e);
                }
            };
            let stream = || {
                TaskEvents::new(
                    self,
                    self.view(rec, cfg.history_length, true),
                    slot.subscribe(),
                    close_on_interrupt,
                )
                .with_slot(&slot)
            };
            let events = if !p.can_see(&rec.owner) {
                // A gate's answerer sees the task as its answer left it.
                stream().snapshot_only()
            } else if ANSWER_WHEN_SETTLED.try_with(|_| ()).is_ok() {
                // Answered once the task settles: a wait on the count of
                // settling statuses, not a stream woken among the task's
                // other streams for each event.
                TaskEvents::settling(self, &slot, &id, rec.state())
            } else {
                stream()
            };
            if let Some(owed) = owed {
                self.give_input(&mut st, owed);
            }
            return Ok(SendOutcome::Task(events));
        }
    }

    /// Gives a committed input to its task's run: as steering input, or
    /// to a run started with it; the answer to an approval is read by the
    /// waiting call from the record, and the model does not get it.
    pub(super) fn give_input(&self, st: &mut SlotState, owed: OwedInput) {
        match owed.action {
            InputAction::Nothing => {}
            InputAction::Steer => st.steering.push(owed.input),
            // A task that ran before: its agent picks up its journal.
            InputAction::Resume => self.start_run(st, owed.input, true),
        }
    }

    pub(super) async fn check_push_url(&self, field: FieldPath, url: &str) -> Result<(), Error> {
        if url.trim().is_empty() {
            return Err(Error::invalid(field, "is required"));
        }
        self.inner.push_policy.check(url).await.map_err(|why| Error::invalid(field, why))
    }
}

/// What is wrong with a SendMessage's message and configuration by
/// themselves (the caller may add its own, then finishes them).
fn message_violations(msg: &Message, cfg: &SendMessageConfiguration) -> Violations {
    let mut v = Violations::default();
    v.message("message", msg);
    v.history_length("configuration.historyLength", cfg.history_length);
    v
}

/// A message naming task `id` with a `contextId` that is not the task's.
fn foreign_context(id: &str, context_id: &str) -> Error {
    Error::invalid(
        FieldPath::of("message.contextId"),
        format!("does not match the context of task {id:?}; omit it or send {context_id:?}"),
    )
}

/// The field an inline config's id is reported under.
const INLINE_ID: &str = "configuration.taskPushNotificationConfig.id";

/// The batch registering a SendMessage's inline push config for `task_id`.
/// On a new task no config exists yet; on an existing one the caller has
/// checked the id under the task's lock ([`Engine::check_config_id`]).
fn inline_push_batch(push: Option<PushConfigRow>, task_id: &str) -> Batch {
    let mut batch = Batch::default();
    if let Some(mut row) = push {
        task_id.clone_into(&mut row.config.task_id);
        if row.config.id.is_empty() {
            row.config.id = new_id();
        }
        batch.push_upserts.push(row);
    }
    batch
}

/// `accepted` may be `*/*`, `type/*` or a full type; parameters are ignored.
fn media_type_matches(accepted: &str, actual: &str) -> bool {
    let base = |s: &str| s.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let (a, t) = (base(accepted), base(actual));
    a == "*/*" || a == t || a.strip_suffix("/*").is_some_and(|major| t.split('/').next() == Some(major))
}

fn another_principals_context() -> Error {
    Error::invalid(
        FieldPath::of("message.contextId"),
        "this contextId belongs to a conversation of another principal; omit it to start a new one",
    )
}
