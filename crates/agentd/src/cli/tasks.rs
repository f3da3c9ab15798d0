//! `agentd tasks list|get|cancel|watch`.

use super::ClientOpts;
use super::client::Client;
use super::output::{self, note};
use agentd_proto::jsonrpc::methods;
use agentd_proto::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState,
};
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

#[derive(Subcommand, Debug)]
pub enum TasksCommand {
    /// List tasks, one line each: `id  state  updated  contextId`.
    List(ListArgs),
    /// Print a task as JSON.
    Get(GetArgs),
    /// Cancel a task and print the state it ended in.
    Cancel(IdArgs),
    /// Print a task's events as they happen, until it ends (SubscribeToTask).
    Watch(IdArgs),
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Only tasks of this context.
    #[arg(long, value_name = "ID")]
    pub context: Option<String>,
    /// Only tasks in this state: `working`, `input-required`, … or `TASK_STATE_WORKING`.
    #[arg(long, value_name = "STATE", value_parser = output::parse_state)]
    pub state: Option<TaskState>,
    /// Tasks per page (the daemon caps it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(1..))]
    pub page_size: Option<i32>,
    /// Follow nextPageToken and list every page.
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    /// The task id.
    pub id: String,
    /// Include at most N messages of history.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(i32).range(0..))]
    pub history: Option<i32>,
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Args, Debug)]
pub struct IdArgs {
    /// The task id.
    pub id: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

pub async fn run(cmd: TasksCommand) -> anyhow::Result<()> {
    match cmd {
        TasksCommand::List(a) => list(a).await,
        TasksCommand::Get(a) => get(a).await,
        TasksCommand::Cancel(a) => cancel(a).await,
        TasksCommand::Watch(a) => watch(a).await,
    }
}

fn task_line(t: &Task) -> String {
    let updated = t.status.timestamp.map_or_else(|| "-".to_owned(), |ts| ts.to_wire());
    let context = if t.context_id.is_empty() { "-" } else { &t.context_id };
    format!("{}  {:<14}  {}  {}", t.id, output::state_name(t.status.state), updated, context)
}

fn parse_page(v: &Value) -> anyhow::Result<ListTasksResponse> {
    serde_json::from_value(v.clone()).context("the daemon's ListTasks answer is not a ListTasksResponse")
}

async fn list(a: ListArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.client)?;
    let mut req = ListTasksRequest {
        context_id: a.context.unwrap_or_default(),
        status: a.state.unwrap_or_default(),
        page_size: a.page_size,
        ..Default::default()
    };
    let json = a.client.json;
    if !a.all {
        let v = client.call(methods::LIST_TASKS, &req).await?;
        if json {
            return output::json_pretty(&v);
        }
        let page = parse_page(&v)?;
        for t in &page.tasks {
            output::line(&task_line(t))?;
        }
        if !page.next_page_token.is_empty() {
            note(&format!("more tasks follow ({} in all); --all lists every page", page.total_size));
        }
        return Ok(());
    }
    let mut raw_tasks: Vec<Value> = Vec::new();
    let mut total;
    loop {
        let v = client.call(methods::LIST_TASKS, &req).await?;
        let page = parse_page(&v)?;
        total = page.total_size;
        if json {
            raw_tasks.extend(v["tasks"].as_array().cloned().unwrap_or_default());
        } else {
            for t in &page.tasks {
                output::line(&task_line(t))?;
            }
        }
        if page.next_page_token.is_empty() {
            break;
        }
        if page.next_page_token == req.page_token {
            bail!("the daemon returned the same page token twice; stopping");
        }
        req.page_token = page.next_page_token;
    }
    if json {
        // Every page as one response, as if the page had been big enough.
        let n = raw_tasks.len();
        output::json_pretty(
            &json!({"tasks": raw_tasks, "nextPageToken": "", "pageSize": n, "totalSize": total}),
        )?;
    }
    Ok(())
}

async fn get(a: GetArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.client)?;
    let req = GetTaskRequest { id: a.id, history_length: a.history, ..Default::default() };
    // A task is data: the same JSON with or without --json.
    output::json_pretty(&client.call(methods::GET_TASK, &req).await?)
}

async fn cancel(a: IdArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.client)?;
    let req = CancelTaskRequest { id: a.id, ..Default::default() };
    let v = client.call(methods::CANCEL_TASK, &req).await?;
    if a.client.json {
        return output::json_pretty(&v);
    }
    let task: Task = serde_json::from_value(v).context("the daemon's CancelTask answer is not a task")?;
    output::line(output::state_name(task.status.state))
}

async fn watch(a: IdArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.client)?;
    let req = SubscribeToTaskRequest { id: a.id, ..Default::default() };
    let mut events = client.stream(methods::SUBSCRIBE_TO_TASK, &req).await?;
    let mut task = Task::default();
    while let Some(v) = events.next().await? {
        let ev: StreamResponse = serde_json::from_value(v.clone())
            .context("the daemon sent an event that is not a StreamResponse")?;
        output::track(&mut task, &ev);
        if a.client.json {
            output::json_line(&v)?;
            continue;
        }
        let text = match ev {
            StreamResponse::Task(t) => state_line(t.status.state, output::status_text(&t.status)),
            StreamResponse::StatusUpdate(u) => state_line(u.status.state, output::status_text(&u.status)),
            StreamResponse::ArtifactUpdate(u) => {
                format!(
                    "artifact {}: {}",
                    u.artifact.artifact_id,
                    output::one_line(&output::artifact_display(&u.artifact))
                )
            }
            StreamResponse::Message(m) => format!("message: {}", output::one_line(&m.text())),
        };
        output::line(&text)?;
    }
    // A subscription stays open while the task waits for input; it ends
    // when the task does.
    output::check_stream_end(&task, false)
}

/// `COMPLETED`, or `INPUT_REQUIRED: <status message>`.
fn state_line(state: TaskState, message: Option<String>) -> String {
    let name = output::state_name(state);
    match message {
        Some(m) => format!("{name}: {}", output::one_line(&m)),
        None => name.to_owned(),
    }
}
