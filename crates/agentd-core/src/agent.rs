//! The runtime port: what an agent implementation gets from the engine and
//! what it must do. An agent run moves its task only through
//! [`TaskControl`], so every change goes through the state machine, is
//! committed, and only then reaches clients.

use crate::engine::Runtime;
use crate::error::Error;
use crate::transition::Change;
use agentd_proto::{Artifact, Message, TaskState};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

/// One unit of agent work: the message that started or resumed a task.
pub struct Turn {
    pub input: Message,
    pub control: TaskControl,
    /// The run starts again after a restart (or a stop) interrupted the
    /// task's earlier run: its step journal says how far that one got.
    pub resumed: bool,
}

#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// Answers a new message with a direct Message instead of a task.
    /// Called only for messages that name no task.
    fn direct_reply(&self, _message: &Message) -> Option<Message> {
        None
    }
    /// Whether a run of this agent picks up where an interrupted run of the
    /// same task stopped (from the task's step journal), so the engine
    /// resumes the task after a restart or stop instead of failing it.
    fn resumes(&self) -> bool {
        false
    }
    /// Runs the task. When this returns and the task is neither terminal nor
    /// waiting for input, the engine fails it: a run may not vanish.
    async fn run(&self, turn: Turn);
}

/// One turn of a conversation as the agent sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ConversationTurn {
    pub task_id: String,
    pub state: TaskState,
    /// The task's history: client input and agent messages, in order.
    pub messages: Vec<Message>,
}

/// The handle an agent run uses to move its task.
#[derive(Clone)]
pub struct TaskControl {
    pub(crate) runtime: Runtime,
    pub(crate) task_id: String,
    pub(crate) context_id: String,
    pub(crate) cancel: CancellationToken,
}

impl TaskControl {
    pub fn task_id(&self) -> &str {
        &self.task_id
    }
    pub fn context_id(&self) -> &str {
        &self.context_id
    }
    /// The runtime handle, for work a run starts on its task's behalf (a
    /// subagent). The run's own task still moves only through this handle.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }
    /// The task as committed now: owner, link, parent.
    pub async fn record(&self) -> Result<crate::record::TaskRecord, Error> {
        self.runtime.engine().record(&self.task_id).await?.ok_or_else(|| Error::task_not_found(&self.task_id))
    }
    /// Fires when the task is canceled; a run should stop promptly.
    pub fn cancelled(&self) -> &CancellationToken {
        &self.cancel
    }
    async fn change(&self, change: Change) -> Result<(), Error> {
        self.runtime.engine().apply_change(&self.task_id, change).await
    }
    pub async fn status(&self, state: TaskState, message: Option<Message>) -> Result<(), Error> {
        self.change(Change::Status { state, message }).await
    }
    pub async fn working(&self, message: Option<Message>) -> Result<(), Error> {
        self.status(TaskState::Working, message).await
    }
    pub async fn complete(&self, message: Option<Message>) -> Result<(), Error> {
        self.status(TaskState::Completed, message).await
    }
    pub async fn fail(&self, reason: &str) -> Result<(), Error> {
        self.status(TaskState::Failed, Some(Message::agent_text(reason))).await
    }
    pub async fn reject(&self, message: Message) -> Result<(), Error> {
        self.status(TaskState::Rejected, Some(message)).await
    }
    pub async fn input_required(&self, question: Message) -> Result<(), Error> {
        self.status(TaskState::InputRequired, Some(question)).await
    }
    pub async fn artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) -> Result<(), Error> {
        self.change(Change::Artifact { artifact, append, last_chunk, merge_text: false }).await
    }
    /// A chunk of a text streamed into one artifact: streams and webhooks
    /// get the chunk, the stored artifact (GetTask, ListTasks) keeps the
    /// text as one part, so readers of `parts[0].text` get all of it.
    pub async fn text_chunk(&self, artifact: Artifact, append: bool, last_chunk: bool) -> Result<(), Error> {
        self.change(Change::Artifact { artifact, append, last_chunk, merge_text: true }).await
    }
    /// Changes the task's meta (a run's checkpoint, its open gate) and,
    /// when `status` is given, its state, in one commit.
    pub async fn commit(
        &self,
        meta: impl FnMut(&mut crate::record::TaskMeta) + Send,
        status: Option<(TaskState, Option<Message>)>,
    ) -> Result<crate::record::TaskRecord, Error> {
        self.commit_with(meta, status, crate::store::Batch::default()).await
    }
    /// `commit`, with `extra` (an outbox row, say) in the same store batch.
    pub async fn commit_with(
        &self,
        mut meta: impl FnMut(&mut crate::record::TaskMeta) + Send,
        status: Option<(TaskState, Option<Message>)>,
        extra: crate::store::Batch,
    ) -> Result<crate::record::TaskRecord, Error> {
        self.runtime
            .engine()
            .mutate_with(&self.task_id, extra, |rec, now| {
                meta(&mut rec.meta);
                match status.clone() {
                    Some((state, message)) => {
                        crate::transition::apply(rec, Change::Status { state, message }, now)
                            .map_err(|r| crate::engine::refused(&self.task_id, r))
                    }
                    None => Ok(Vec::new()),
                }
            })
            .await
    }
    /// The conversation so far: the turns of this task's context created
    /// before it, oldest first, then this task itself (its history as of
    /// now, including input that arrived while it waited). Steering input
    /// already in that history is not returned again by `take_steering`.
    pub async fn conversation(&self) -> Result<Vec<ConversationTurn>, Error> {
        self.runtime.engine().conversation(&self.task_id, &self.context_id).await
    }

    /// The task's active reminders for the model call about to be made;
    /// the call counts against each one's `ttlTurns`. Call once per model call.
    pub async fn reminders_for_model_call(&self) -> Vec<crate::reminder::DeliveredReminder> {
        self.runtime.engine().deliver_reminders(&self.task_id).await
    }

    /// `reminders_for_model_call` for step `step` of a journaled turn: when
    /// reminders are delivered, their delivery commits the journal entry
    /// `seq` recording them, so a call a restart interrupts is made again
    /// with the same reminders. Returns them, and whether `seq` was used.
    pub async fn reminders_for_step(
        &self,
        step: u32,
        seq: u32,
    ) -> (Vec<crate::reminder::DeliveredReminder>, bool) {
        let task_id = self.task_id.clone();
        let entry = move |delivered: &[crate::reminder::DeliveredReminder]| {
            let step = crate::journal::StepRecord::ModelInput(crate::journal::ModelInput {
                step,
                reminders: delivered.to_vec(),
            });
            vec![crate::journal::JournalEntry { task_id, seq, step }]
        };
        self.runtime.engine().deliver_reminders_journaled(&self.task_id, entry).await
    }

    /// The task's step journal, oldest entry first (see [`crate::journal`]).
    pub async fn journal(&self) -> Result<Vec<crate::journal::JournalEntry>, Error> {
        self.runtime.engine().journal(&self.task_id).await
    }

    /// Commits step-journal entries of this task before the run acts on
    /// them. Refused (the task is gone) once the task ended.
    pub async fn record_steps(&self, entries: Vec<crate::journal::JournalEntry>) -> Result<(), Error> {
        self.runtime.engine().append_journal(&self.task_id, entries).await
    }

    /// Completes the task with `entries` in the same commit: a turn whose
    /// last step ends it pays no commit of its own for that step.
    pub async fn complete_with_steps(
        &self,
        message: Option<Message>,
        entries: Vec<crate::journal::JournalEntry>,
    ) -> Result<(), Error> {
        let extra = crate::store::Batch { journal: entries, ..Default::default() };
        self.commit_with(|_| {}, Some((TaskState::Completed, message)), extra).await.map(|_| ())
    }

    /// Asks a human to approve a tool call and waits for the answer or the
    /// deadline (see [`crate::approval`]): the task is INPUT_REQUIRED on a
    /// typed gate meanwhile, then WORKING again. A pending approval of the
    /// same call already on the task (after a restart) is waited on, not
    /// asked again. Errors when the task ends while waiting.
    pub async fn await_approval(
        &self,
        req: crate::approval::ApprovalRequest,
    ) -> Result<crate::approval::ApprovalOutcome, Error> {
        self.runtime.engine().await_approval(&self.task_id, &self.cancel, req).await
    }

    /// Fails when this replica may no longer act for the task: its lease
    /// could have expired (it was not renewed in time) or another replica
    /// took it over. Checked before each side effect a commit does not
    /// precede (a model call).
    pub fn check_lease(&self) -> Result<(), Error> {
        self.runtime.engine().may_act(&self.task_id)
    }

    /// Client messages that arrived while the task was working (steering input).
    pub async fn take_steering(&self) -> Vec<Message> {
        self.runtime.engine().take_steering(&self.task_id).await
    }
}
