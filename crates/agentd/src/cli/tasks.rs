//! `agentd tasks list|get|cancel|watch`.

use super::ClientOpts;
use super::client::{Client, is_reason};
use super::exit;
use super::output::{self, note};
use agentd_proto::jsonrpc::methods;
use agentd_proto::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, StreamResponse,
    SubscribeToTaskRequest, Task, TaskState,
};
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::collections::HashMap;

#[derive(Subcommand, Debug)]
pub enum TasksCommand {
    /// List tasks, newest first: a header, then `id  state  updated  contextId  text` per task.
    List(ListArgs),
    /// Show a task: its state, reply and counts (the whole task as JSON with --json).
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

/// Column titles and widths of `tasks list`.
const HEADER: [&str; 5] = ["ID", "STATE", "UPDATED", "CONTEXT", "TEXT"];
const WIDTHS: [usize; 4] = [36, 14, 24, 36];

fn task_line(t: &Task) -> String {
    let updated = t.status.timestamp.map_or_else(|| "-".to_owned(), |ts| ts.to_wire());
    let context = if t.context_id.is_empty() { "-" } else { &t.context_id };
    let text = output::reply_text(t).map(|r| output::snippet(&r)).unwrap_or_default();
    output::columns(&WIDTHS, &[&t.id, output::state_name(t.status.state), &updated, context, &text])
}

/// Prints the header before the first task line only, so an empty list prints nothing.
fn print_tasks(tasks: &[Task], header_done: &mut bool) -> anyhow::Result<()> {
    for t in tasks {
        if !*header_done {
            output::line(&output::columns(&WIDTHS, &HEADER))?;
            *header_done = true;
        }
        output::line(&task_line(t))?;
    }
    Ok(())
}

fn parse_page(v: &Value) -> anyhow::Result<ListTasksResponse> {
    serde_json::from_value(v.clone()).context("the daemon's ListTasks answer is not a ListTasksResponse")
}

async fn list(a: ListArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.client)?;
    let json = a.client.json;
    let mut req = ListTasksRequest {
        context_id: a.context.unwrap_or_default(),
        status: a.state.unwrap_or_default(),
        page_size: a.page_size,
        // The text column shows the start of each reply.
        include_artifacts: (!json).then_some(true),
        history_length: (!json).then_some(0),
        ..Default::default()
    };
    let mut header_done = false;
    if !a.all {
        let v = client.call(methods::LIST_TASKS, &req).await?;
        if json {
            return output::json_pretty(&v);
        }
        let page = parse_page(&v)?;
        print_tasks(&page.tasks, &mut header_done)?;
        if page.tasks.is_empty() {
            note("no tasks");
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
            print_tasks(&page.tasks, &mut header_done)?;
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
    let v = client.call(methods::GET_TASK, &req).await?;
    if a.client.json {
        return output::json_pretty(&v);
    }
    let t: Task = serde_json::from_value(v).context("the daemon's GetTask answer is not a task")?;
    output::emit(&describe(&t))
}

/// The human form of a task: a few labelled lines, then its reply.
fn describe(t: &Task) -> String {
    let mut s = output::labelled("task", &t.id);
    let when = t.status.timestamp.map(|ts| format!(" since {}", ts.to_wire())).unwrap_or_default();
    s.push_str(&output::labelled("state", &format!("{}{when}", output::state_name(t.status.state))));
    if !t.context_id.is_empty() {
        s.push_str(&output::labelled("context", &t.context_id));
    }
    let artifacts = t.artifacts.as_ref().map_or(0, Vec::len);
    let history = t.history.as_ref().map_or(0, Vec::len);
    s.push_str(&output::labelled(
        "holds",
        &format!("{artifacts} artifact(s), {history} message(s) of history"),
    ));
    let reply = output::artifacts_text(t);
    // The status message, unless it only repeats the reply.
    if let Some(status) = output::status_text(&t.status).filter(|s| Some(s) != reply.as_ref()) {
        s.push_str(&output::labelled("status", &status));
    }
    if let Some(reply) = reply {
        s.push('\n');
        s.push_str(&reply);
        if !reply.ends_with('\n') {
            s.push('\n');
        }
    }
    s
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
    let req = SubscribeToTaskRequest { id: a.id.clone(), ..Default::default() };
    let mut events = match client.stream(methods::SUBSCRIBE_TO_TASK, &req).await {
        Ok(events) => events,
        // A finished task has nothing left to watch: its final state is the answer.
        Err(e) if is_reason(&e, "UNSUPPORTED_OPERATION") => return finished(&client, &a).await,
        Err(e) => return Err(e),
    };
    let mut task = Task::default();
    let mut out = output::Inline::default();
    // The text of each artifact as printed: a reply streamed as an artifact
    // is often the final status message too, and is not printed twice.
    let mut shown: HashMap<String, String> = HashMap::new();
    let without_reply = |message: Option<String>, shown: &HashMap<String, String>| {
        message.filter(|m| !shown.values().any(|t| t.trim() == m.trim()))
    };
    while let Some(v) = events.next().await? {
        let ev: StreamResponse = serde_json::from_value(v.clone())
            .context("the daemon sent an event that is not a StreamResponse")?;
        output::track(&mut task, &ev);
        if a.client.json {
            output::json_line(&v)?;
            continue;
        }
        match ev {
            StreamResponse::Task(t) => {
                out.line(&state_line(t.status.state, output::status_text(&t.status)))?;
                // What a turn under way has streamed so far: the chunks that
                // follow carry on from it.
                for artifact in t.artifacts.iter().flatten() {
                    out.artifact(artifact)?;
                    shown.insert(artifact.artifact_id.clone(), output::artifact_text(artifact));
                }
            }
            StreamResponse::StatusUpdate(u) => {
                let message = without_reply(output::status_text(&u.status), &shown);
                out.line(&state_line(u.status.state, message))?;
            }
            StreamResponse::ArtifactUpdate(u) => {
                out.artifact(&u.artifact)?;
                let text = shown.entry(u.artifact.artifact_id.clone()).or_default();
                if !u.append {
                    text.clear();
                }
                text.push_str(&output::artifact_text(&u.artifact));
            }
            StreamResponse::Message(m) => out.line(&format!("message: {}", output::one_line(&m.text())))?,
        }
    }
    out.close()?;
    // A subscription stays open while the task waits for input; it ends
    // when the task does.
    output::check_stream_end(&task, false)?;
    exit::check_task(&task)
}

/// `tasks watch` on a task that already ended: its final state line (the
/// task with --json), and the exit code of that state.
async fn finished(client: &Client, a: &IdArgs) -> anyhow::Result<()> {
    let req = GetTaskRequest { id: a.id.clone(), history_length: Some(0), ..Default::default() };
    let v = client.call(methods::GET_TASK, &req).await?;
    let task: Task =
        serde_json::from_value(v.clone()).context("the daemon's GetTask answer is not a task")?;
    if a.client.json {
        output::json_line(&json!({"task": v}))?;
    } else {
        output::line(&state_line(task.status.state, output::status_text(&task.status)))?;
    }
    exit::check_task(&task)
}

/// `COMPLETED`, or `INPUT_REQUIRED: <status message>`.
fn state_line(state: TaskState, message: Option<String>) -> String {
    let name = output::state_name(state);
    match message {
        Some(m) => format!("{name}: {}", output::one_line(&m)),
        None => name.to_owned(),
    }
}
