//! Builders for conformance data: records, push configs, batches and
//! queries, so each check reads as a table of inputs and expected outputs.

use agentd_core::{
    Batch, LinkKind, PushConfigRow, StatusEntry, Store, TaskLink, TaskMeta, TaskPage, TaskQuery, TaskRecord,
};
use agentd_proto::{
    Artifact, AuthenticationInfo, Message, Part, Role, Task, TaskPushNotificationConfig, TaskState,
    TaskStatus, Timestamp,
};
use serde_json::json;

/// A timestamp at `ms` since the epoch (the epoch if out of range).
pub fn ts(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms).unwrap_or(Timestamp(chrono::DateTime::UNIX_EPOCH))
}

/// `(id, owner, context_id, state, status timestamp ms)`.
pub type Spec<'a> = (&'a str, &'a str, &'a str, TaskState, i64);

/// A minimal record: empty history and artifacts, one status entry.
pub fn record((id, owner, context_id, state, ms): Spec<'_>) -> TaskRecord {
    TaskRecord {
        task: Task {
            id: id.into(),
            context_id: context_id.into(),
            status: TaskStatus { state, message: None, timestamp: Some(ts(ms)) },
            artifacts: Some(vec![]),
            history: Some(vec![]),
            metadata: None,
        },
        owner: owner.into(),
        created_at: ts(ms),
        status_history: vec![StatusEntry { state, timestamp: ts(ms) }],
        meta: TaskMeta::default(),
        version: 1,
    }
}

/// Minimal records for every spec.
pub fn records(specs: &[Spec<'_>]) -> Vec<TaskRecord> {
    specs.iter().copied().map(record).collect()
}

fn message(id: &str, role: Role, parts: Vec<Part>) -> Message {
    Message { message_id: id.into(), role, parts, ..Default::default() }
}

/// A record using every field the store must keep: history, artifacts with
/// text, raw and data parts, metadata, a status message, status history.
pub fn full_record(id: &str, owner: &str, context_id: &str, ms: i64) -> TaskRecord {
    let mut user = message("m-1", Role::User, vec![Part::text("hello")]);
    user.context_id = context_id.into();
    user.task_id = id.into();
    user.metadata = json!({"client": "conformance"}).as_object().cloned();
    user.extensions = vec!["https://example.com/ext/1".into()];
    user.reference_task_ids = vec!["other-task".into()];
    let mut raw = Part::raw(vec![0, 1, 2, 250, 255]);
    raw.filename = "blob.bin".into();
    raw.media_type = "application/octet-stream".into();
    let mut data = Part::data(json!({"n": 1, "list": [true, null, "x"], "nested": {"k": "v"}}));
    data.metadata = json!({"schema": "s1"}).as_object().cloned();
    let artifact = Artifact {
        artifact_id: "a-1".into(),
        name: "result".into(),
        description: "the answer".into(),
        parts: vec![Part::text("forty-two"), raw, data],
        metadata: json!({"score": 0.5}).as_object().cloned(),
        extensions: vec![],
    };
    let agent = message("m-2", Role::Agent, vec![Part::text("working on it")]);
    let status_message = message("m-3", Role::Agent, vec![Part::text("need input")]);
    TaskRecord {
        task: Task {
            id: id.into(),
            context_id: context_id.into(),
            status: TaskStatus {
                state: TaskState::InputRequired,
                message: Some(status_message),
                timestamp: Some(ts(ms)),
            },
            artifacts: Some(vec![artifact, Artifact { artifact_id: "a-2".into(), ..Default::default() }]),
            history: Some(vec![user, agent]),
            metadata: json!({"priority": "high", "tags": ["a", "b"]}).as_object().cloned(),
        },
        owner: owner.into(),
        created_at: ts(ms - 2_000),
        status_history: vec![
            StatusEntry { state: TaskState::Submitted, timestamp: ts(ms - 2_000) },
            StatusEntry { state: TaskState::Working, timestamp: ts(ms - 1_000) },
            StatusEntry { state: TaskState::InputRequired, timestamp: ts(ms) },
        ],
        meta: TaskMeta {
            link: Some(TaskLink::new(LinkKind::Subagent, format!("helper-{id}"))),
            parent: Some("parent-task".into()),
            command: Some("subagent.spawn".into()),
            gate: None,
            approval: None,
            model_calls: 3,
            checkpoint: None,
        },
        version: 1,
    }
}

/// A push config for `task_id`, registered by `owner`.
pub fn push_config(task_id: &str, id: &str, owner: &str) -> PushConfigRow {
    PushConfigRow {
        owner: owner.into(),
        config: TaskPushNotificationConfig {
            tenant: String::new(),
            id: id.into(),
            task_id: task_id.into(),
            url: format!("https://hooks.example.com/{task_id}/{id}"),
            token: format!("token-{id}"),
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "secret".into(),
            }),
        },
    }
}

/// A batch writing `tasks`.
pub fn tasks_batch(tasks: Vec<TaskRecord>) -> Batch {
    Batch { tasks, ..Default::default() }
}

/// A query for every task, up to 1000.
pub fn query() -> TaskQuery {
    TaskQuery { limit: 1000, ..Default::default() }
}

/// The ids of `records`, in order.
pub fn ids(records: &[TaskRecord]) -> Vec<String> {
    records.iter().map(|r| r.task.id.clone()).collect()
}

/// Commits `batch`, failing the check with `what` if the store refuses it.
pub async fn commit(store: &dyn Store, batch: Batch, what: &str) {
    if let Err(e) = store.commit(batch).await {
        panic!("commit of {what} failed: {e}");
    }
}

/// Lists with `query`, failing the check on a store error.
pub async fn list(store: &dyn Store, query: &TaskQuery) -> TaskPage {
    match store.list_tasks(query).await {
        Ok(page) => page,
        Err(e) => panic!("list_tasks({query:?}) failed: {e}"),
    }
}

/// Unwraps a store result, failing the check with `what` on error.
pub fn ok<T>(result: Result<T, agentd_core::StoreError>, what: &str) -> T {
    match result {
        Ok(v) => v,
        Err(e) => panic!("{what} failed: {e}"),
    }
}
