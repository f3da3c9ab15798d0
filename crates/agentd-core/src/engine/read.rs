//! GetTask, ListTasks and CancelTask, and the one function that shapes a
//! stored record into the Task a client sees.

use super::{Engine, refused};
use crate::error::{Error, FieldPath, Violations};
use crate::principal::Principal;
use crate::record::{OpenGate, TaskRecord, visible_to};
use crate::store::TaskQuery;
use crate::transition::{self, Change};
use agentd_proto::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, Message, Task, TaskState,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

pub const DEFAULT_PAGE_SIZE: i32 = 50;
pub const MAX_PAGE_SIZE: i32 = 100;

/// The client's view of a record: the last `history_length` messages (all
/// when `None`, the member omitted when 0 or empty) and artifacts only when
/// asked for.
pub fn view(rec: &TaskRecord, history_length: Option<i32>, artifacts: bool) -> Task {
    let t = &rec.task;
    // Only what the view keeps is cloned: the last messages asked for, and
    // the artifacts only when wanted.
    let history = match (t.history.as_deref(), history_length) {
        (Some(h), None) if !h.is_empty() => Some(h.to_vec()),
        (Some(h), Some(n)) if n > 0 && !h.is_empty() => {
            let keep = usize::try_from(n).unwrap_or(usize::MAX).min(h.len());
            Some(h[h.len() - keep..].to_vec())
        }
        _ => None,
    };
    Task {
        id: t.id.clone(),
        context_id: t.context_id.clone(),
        status: t.status.clone(),
        artifacts: artifacts.then(|| t.artifacts.clone().unwrap_or_default()),
        history,
        metadata: t.metadata.clone(),
    }
}

/// [`view`] of a record the caller owns: what the view keeps is moved out
/// of it instead of cloned (a read from the store, a settled answer).
pub fn into_view(rec: TaskRecord, history_length: Option<i32>, artifacts: bool) -> Task {
    task_view(rec.task, history_length, artifacts)
}

/// [`into_view`] of the Task alone.
fn task_view(t: Task, history_length: Option<i32>, artifacts: bool) -> Task {
    let history = match (t.history, history_length) {
        (Some(h), None) if !h.is_empty() => Some(h),
        (Some(mut h), Some(n)) if n > 0 && !h.is_empty() => {
            let keep = usize::try_from(n).unwrap_or(usize::MAX).min(h.len());
            h.drain(..h.len() - keep);
            Some(h)
        }
        _ => None,
    };
    Task {
        id: t.id,
        context_id: t.context_id,
        status: t.status,
        artifacts: artifacts.then(|| t.artifacts.unwrap_or_default()),
        history,
        metadata: t.metadata,
    }
}

/// GetTask's answer.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // built once per request, never stored
pub enum TaskAnswer {
    Task(Task),
    /// A stored Task shown whole: its text (`agentd_proto::exact`'s form),
    /// byte for byte what the `Task` variant of it would be written as.
    Text(String),
}

impl TaskAnswer {
    /// The answer as a Task, for a binding that does not write JSON.
    pub fn into_task(self) -> Result<Task, Error> {
        match self {
            TaskAnswer::Task(t) => Ok(t),
            TaskAnswer::Text(text) => decode_task(&text),
        }
    }
}

fn decode_task(text: &str) -> Result<Task, Error> {
    serde_json::from_str(text).map_err(|e| {
        tracing::error!(error = %e, "a stored task does not decode");
        Error::internal()
    })
}

/// GetTask leaves out an empty `artifacts` (ListTasks, which shares
/// [`view`], writes it when asked for).
fn get_task_view(mut t: Task) -> Task {
    if t.artifacts.as_ref().is_some_and(Vec::is_empty) {
        t.artifacts = None;
    }
    t
}

/// The GetTask answer of a stored Task shown whole: its text, unless the
/// text holds an empty `artifacts` or `history`, which the view leaves out
/// (then it is decoded and viewed). The search is over the whole text: an
/// empty member of either name in a nested object only costs the shortcut.
fn whole_view(text: String) -> Result<TaskAnswer, Error> {
    let viewed = |text: &str| decode_task(text).map(|t| get_task_view(task_view(t, None, true)));
    if text.contains(r#""artifacts":[]"#) || text.contains(r#""history":[]"#) {
        return viewed(&text).map(TaskAnswer::Task);
    }
    if cfg!(debug_assertions) {
        let written = agentd_proto::exact::to_string(&viewed(&text)?).map_err(|_| Error::internal())?;
        assert_eq!(written, text, "a stored Task shown whole is its text");
    }
    Ok(TaskAnswer::Text(text))
}

/// The stored JSON a ListTasks page reads at most (its first task always):
/// a page of tasks with long histories ends early, with a next page token,
/// instead of holding hundreds of megabytes for one answer.
const LIST_PAGE_BYTES: usize = 16 << 20;

impl Engine {
    pub async fn get_task(&self, p: &Principal, req: GetTaskRequest) -> Result<Task, Error> {
        self.get_task_answer(p, req).await?.into_task()
    }

    /// GetTask, answering with the stored text of a task it shows whole.
    #[tracing::instrument(name = "get_task", level = "debug", skip_all, fields(task_id = %req.id))]
    pub async fn get_task_answer(&self, p: &Principal, req: GetTaskRequest) -> Result<TaskAnswer, Error> {
        let mut v = Violations::default();
        if req.id.is_empty() {
            v.add(FieldPath::of("id"), "is required");
        }
        v.history_length("historyLength", req.history_length);
        v.finish()?;
        let rec = match self.held_record(&req.id).await {
            Some(rec) => Some(rec),
            // Every message and no annotations: the stored Task is the view.
            None if req.history_length.is_none() && !self.annotate => {
                return match self.inner.store.get_task_text(&req.id).await? {
                    Some(t) if visible_to(&t.owner, &t.meta, p) => whole_view(t.task_json),
                    _ => Err(Error::task_not_found(&req.id)),
                };
            }
            None => self.inner.store.get_task(&req.id).await?,
        };
        let rec = rec.filter(|r| r.visible_to(p)).ok_or_else(|| Error::task_not_found(&req.id))?;
        Ok(TaskAnswer::Task(get_task_view(self.owned_view(rec, req.history_length, true))))
    }

    #[tracing::instrument(name = "list_tasks", level = "debug", skip_all, fields(context_id = %req.context_id))]
    pub async fn list_tasks(&self, p: &Principal, req: ListTasksRequest) -> Result<ListTasksResponse, Error> {
        let mut v = Violations::default();
        let page_size = req.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
            v.add(
                FieldPath::of("pageSize"),
                format!("must be between 1 and {MAX_PAGE_SIZE}, got {page_size}"),
            );
        }
        v.history_length("historyLength", req.history_length);
        let after = match req.page_token.as_str() {
            "" => None,
            tok => match decode_cursor(tok) {
                Some(c) => Some(c),
                None => {
                    v.add(FieldPath::of("pageToken"), "is not a token this server issued");
                    None
                }
            },
        };
        v.finish()?;
        let query = TaskQuery {
            owner: p.owner_filter(),
            context_id: (!req.context_id.is_empty()).then(|| req.context_id.clone()),
            state: (req.status != TaskState::Unspecified).then_some(req.status),
            updated_since_ms: req.status_timestamp_after.map(|t| t.millis()),
            after,
            limit: usize::try_from(page_size).unwrap_or(50),
            max_bytes: LIST_PAGE_BYTES,
        };
        let page = self.inner.store.list_tasks(&query).await?;
        let include = req.include_artifacts.unwrap_or(false);
        let next_page_token = match (page.more, page.tasks.last()) {
            (true, Some(last)) => encode_cursor(last.updated_ms(), last.id()),
            _ => String::new(),
        };
        Ok(ListTasksResponse {
            tasks: page.tasks.into_iter().map(|r| self.owned_view(r, req.history_length, include)).collect(),
            next_page_token,
            page_size,
            total_size: i32::try_from(page.total).unwrap_or(i32::MAX),
        })
    }

    /// CancelTask. A task already CANCELED answers with its snapshot (cancel
    /// is idempotent); other terminal states are TaskNotCancelable.
    #[tracing::instrument(name = "cancel_task", level = "debug", skip_all, fields(task_id = %req.id))]
    pub async fn cancel_task(&self, p: &Principal, req: CancelTaskRequest) -> Result<Task, Error> {
        if req.id.is_empty() {
            return Err(Error::invalid(FieldPath::of("id"), "is required"));
        }
        self.cancel(p, &req.id, None).await
    }

    /// CancelTask with a status message saying why (a cascade, a closed
    /// conversation).
    pub async fn cancel_because(&self, p: &Principal, id: &str, why: &str) -> Result<Task, Error> {
        self.cancel(p, id, Some(Message::agent_text(why))).await
    }

    /// The open gates addressed to `p` on tasks it does not own: the
    /// INPUT_REQUIRED tasks whose gate names `p` among its answerers (the
    /// principal bound to the `!human` it asks). Its own gates are in its
    /// ListTasks already; these are not. Newest first, at most `limit`;
    /// the flag says whether more were left out.
    pub async fn gates_addressed_to(
        &self,
        p: &Principal,
        limit: usize,
    ) -> Result<(Vec<TaskRecord>, bool), Error> {
        // Only the waiting tasks' metas are read, and only the gates listed
        // whole: a waiting task's history may be megabytes.
        let waiting = self.inner.store.metas_in_state(TaskState::InputRequired).await?;
        let addressed_to_p = |owner: &str, gate: Option<&OpenGate>| {
            owner != p.id && gate.is_some_and(|g| g.answerers.contains(&p.id))
        };
        // Oldest first from the store: walk it backwards.
        let mut addressed =
            waiting.into_iter().rev().filter(|m| addressed_to_p(&m.owner, m.meta.gate.as_ref()));
        let mut gates = Vec::new();
        for m in addressed.by_ref().take(limit) {
            // Read again whole: answered or ended meanwhile, it is left out.
            if let Some(rec) = self.inner.store.get_task(&m.id).await?
                && rec.state() == TaskState::InputRequired
                && addressed_to_p(&rec.owner, rec.meta.gate.as_ref())
            {
                gates.push(rec);
            }
        }
        let more = addressed.next().is_some();
        Ok((gates, more))
    }

    /// The stored facts of a task the principal may see (owner, link,
    /// parent), for the runtime's commands; TaskNotFound otherwise.
    pub async fn task_record(&self, p: &Principal, id: &str) -> Result<TaskRecord, Error> {
        self.visible_record(p, id).await
    }

    /// [`Engine::task_record`] for acting on the task as its owner would
    /// (`what`: "cancel", "signal"): a principal that sees the task only to
    /// answer its gate gets PermissionDenied.
    pub async fn owned_task_record(&self, p: &Principal, id: &str, what: &str) -> Result<TaskRecord, Error> {
        self.owned_record(p, id, what).await
    }

    async fn cancel(&self, p: &Principal, id: &str, message: Option<Message>) -> Result<Task, Error> {
        let rec = self.owned_record(p, id, "cancel").await?;
        let answer = |rec: &TaskRecord| match rec.state() {
            TaskState::Canceled => Ok(self.view(rec, None, true)),
            state => Err(Error::NotCancelable { id: rec.id().to_owned(), state }),
        };
        if rec.state().is_terminal() {
            return answer(&rec);
        }
        let change = Change::Status { state: TaskState::Canceled, message };
        match self
            .mutate(id, |r, now| transition::apply(r, change.clone(), now).map_err(|why| refused(id, why)))
            .await
        {
            Ok(rec) => Ok(self.owned_view(rec, None, true)),
            // Became terminal between the read and the change.
            Err(Error::Terminal { .. }) => {
                let rec = self.visible_record(p, id).await?;
                answer(&rec)
            }
            Err(e) => Err(e),
        }
    }
}

fn encode_cursor(ms: i64, id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{ms}:{id}"))
}

fn decode_cursor(tok: &str) -> Option<(i64, String)> {
    let raw = String::from_utf8(URL_SAFE_NO_PAD.decode(tok).ok()?).ok()?;
    let (ms, id) = raw.split_once(':')?;
    Some((ms.parse().ok()?, id.to_owned()))
}

impl Engine {
    /// SubscribeToTask: the current task first, then its events until it
    /// ends. A terminal task is refused before any stream opens. A task
    /// waiting for input with nothing running still streams: the events of
    /// a later resume reach it.
    #[tracing::instrument(name = "subscribe", level = "debug", skip_all, fields(task_id = %req.id))]
    pub async fn subscribe(
        &self,
        p: &Principal,
        req: agentd_proto::SubscribeToTaskRequest,
    ) -> Result<super::TaskEvents, Error> {
        if req.id.is_empty() {
            return Err(Error::invalid(FieldPath::of("id"), "is required"));
        }
        loop {
            let Some(slot) = self.slot(&req.id).await? else {
                let rec = self.visible_record(p, &req.id).await?;
                return Err(Error::unsupported(format!(
                    "task {:?} is {}; a terminal task has no events to subscribe to",
                    req.id,
                    rec.state().as_str()
                ))
                .with_meta("taskId", &req.id));
            };
            let st = slot.state.lock().await;
            if st.detached {
                continue;
            }
            if !st.record.visible_to(p) {
                return Err(Error::task_not_found(&req.id));
            }
            if !p.can_see(&st.record.owner) {
                // Answering a gate is no licence to follow the whole task.
                return Err(super::answerer_only(p, &req.id, "subscribe to"));
            }
            return Ok(super::TaskEvents::new(
                self,
                self.view(&st.record, None, true),
                slot.subscribe(),
                false,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentd_proto::{Part, Role};

    fn answer_of(t: &Task) -> TaskAnswer {
        whole_view(agentd_proto::exact::to_string(t).expect("serializes")).expect("an answer")
    }

    #[test]
    fn a_stored_task_is_its_own_answer_unless_it_holds_an_empty_member_the_view_leaves_out() {
        let said = Message {
            message_id: "m".into(),
            role: Role::User,
            parts: vec![Part::text("hi")],
            ..Default::default()
        };
        let mut t =
            Task { id: "t".into(), context_id: "c".into(), history: Some(vec![said]), ..Default::default() };
        let text = agentd_proto::exact::to_string(&t).expect("serializes");
        assert!(matches!(answer_of(&t), TaskAnswer::Text(answer) if answer == text));

        t.artifacts = Some(vec![]);
        let TaskAnswer::Task(viewed) = answer_of(&t) else {
            panic!("an empty artifacts is left out, not lent")
        };
        assert_eq!(viewed.artifacts, None);
        assert_eq!(viewed.history, t.history);

        (t.artifacts, t.history) = (None, Some(vec![]));
        let TaskAnswer::Task(viewed) = answer_of(&t) else {
            panic!("an empty history is left out, not lent")
        };
        assert_eq!(viewed.history, None);
        assert_eq!(TaskAnswer::Task(viewed.clone()).into_task().expect("a task"), viewed);
    }
}
