//! `agentd send`: SendStreamingMessage for people (the reply prints as it
//! arrives), SendMessage for `--json`, `--no-wait` and `--no-stream`.

use super::ClientOpts;
use super::client::Client;
use super::exit;
use super::output::{self, note};
use super::progress::Steps;
use agentd_proto::ext::task_annotations;
use agentd_proto::jsonrpc::methods;
use agentd_proto::{
    GetTaskRequest, ListTasksRequest, ListTasksResponse, Message, Part, Role, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskState, new_id,
};
use anyhow::{Context, bail};
use clap::Args;
use std::io::Read;

#[derive(Args, Debug)]
pub struct SendArgs {
    /// The message; several words are joined with spaces, `-` reads it from stdin.
    #[arg(required = true, value_name = "TEXT")]
    pub text: Vec<String>,
    /// Send within this context (contextId).
    #[arg(long, value_name = "ID")]
    pub context: Option<String>,
    /// Carry on the last conversation: the context of the turn (a task a
    /// message started) updated most recently among those you can see.
    #[arg(long = "continue", conflicts_with_all = ["context", "task"])]
    pub continue_last: bool,
    /// Continue this task, e.g. one waiting for input (taskId).
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Print the reply as it is produced (SendStreamingMessage). This is
    /// the default for human output; with `--json` it prints one event per line.
    #[arg(long, conflicts_with = "no_wait")]
    pub stream: bool,
    /// Wait for the whole reply and print it at once (SendMessage).
    #[arg(long, conflicts_with = "stream")]
    pub no_stream: bool,
    /// Return as soon as the task exists, without waiting for the reply.
    #[arg(long)]
    pub no_wait: bool,
    /// The messageId to send instead of a fresh one (tests, scripts).
    #[arg(long, hide = true, value_name = "ID")]
    pub message_id: Option<String>,
    #[command(flatten)]
    pub client: ClientOpts,
}

pub async fn run(args: SendArgs) -> anyhow::Result<()> {
    let client = Client::new(&args.client)?;
    let text = if args.text.len() == 1 && args.text[0] == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).context("cannot read the message from stdin")?;
        // `echo hi | agentd send -` sends "hi", not "hi\n".
        s.trim_end_matches(['\n', '\r']).to_owned()
    } else {
        args.text.join(" ")
    };
    let context = match (&args.context, args.continue_last) {
        (_, true) => {
            Some(last_context(&Client::new(&args.client)?.with_extensions(&[task_annotations::URI])?).await?)
        }
        (c, false) => c.clone(),
    };
    if let Some(id) = &args.task {
        queued_hint(&client, id).await;
    }
    let message = Message {
        message_id: args.message_id.clone().unwrap_or_else(new_id),
        context_id: context.unwrap_or_default(),
        task_id: args.task.clone().unwrap_or_default(),
        role: Role::User,
        parts: vec![Part::text(text)],
        ..Default::default()
    };
    let configuration =
        args.no_wait.then(|| SendMessageConfiguration { return_immediately: true, ..Default::default() });
    let req = SendMessageRequest { message: Some(message), configuration, ..Default::default() };
    // People see the reply as it arrives; scripts (`--json`) get one
    // document unless they ask for the event stream.
    let streaming = args.stream || (!args.client.json && !args.no_wait && !args.no_stream);
    if streaming {
        stream(&client, &req, args.client.json, None).await
    } else {
        unary(&client, &req, args.client.json).await
    }
}

/// The context of the caller's latest conversation: of the most recently
/// updated task it can see that a message started (a turn: not a
/// subagent, a workflow run or a command's task, which have their own
/// contexts). `client` asks for the task annotations, which name that.
async fn last_context(client: &Client) -> anyhow::Result<String> {
    const PAGE: i32 = 50;
    const PAGES: usize = 5;
    let mut token = String::new();
    for _ in 0..PAGES {
        let req = ListTasksRequest {
            page_size: Some(PAGE),
            history_length: Some(0),
            page_token: token.clone(),
            ..Default::default()
        };
        let page: ListTasksResponse = serde_json::from_value(client.call(methods::LIST_TASKS, &req).await?)
            .context("the daemon's ListTasks answer is not a ListTasksResponse")?;
        let is_turn = |t: &agentd_proto::Task| {
            let link =
                t.metadata.as_ref().and_then(|m| m.get(task_annotations::URI)).map(|a| &a["link"]["kind"]);
            link.is_some_and(|k| k == "turn") && !t.context_id.is_empty()
        };
        if let Some(t) = page.tasks.iter().find(|t| is_turn(t)) {
            return Ok(t.context_id.clone());
        }
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    bail!("--continue: there is no conversation to continue yet; send without it to start one")
}

/// Says on stderr that input to a working task is steering, queued for
/// its next step. Best effort: a task that cannot be read is left to the
/// send itself to report.
async fn queued_hint(client: &Client, id: &str) {
    let req = GetTaskRequest { id: id.to_owned(), history_length: Some(0), ..Default::default() };
    let Ok(v) = client.call(methods::GET_TASK, &req).await else { return };
    let Ok(task) = serde_json::from_value::<Task>(v) else { return };
    if matches!(task.status.state, TaskState::Working | TaskState::Submitted) {
        note(&format!(
            "task {id} is {}: this input is queued for its next step",
            output::state_name(task.status.state)
        ));
    }
}

pub(super) async fn unary(client: &Client, req: &SendMessageRequest, json: bool) -> anyhow::Result<()> {
    let v = client.call(methods::SEND_MESSAGE, req).await?;
    if json {
        output::json_pretty(&v)?;
    }
    let resp: SendMessageResponse =
        serde_json::from_value(v).context("the daemon's SendMessage answer is not a task or a message")?;
    match resp {
        SendMessageResponse::Message(_) if json => Ok(()),
        SendMessageResponse::Message(m) => output::line(&m.text()),
        SendMessageResponse::Task(t) if json => exit::check_task(&t),
        SendMessageResponse::Task(t) => {
            // A task that did not succeed: what it produced is the reply,
            // its status message is the reason (on stderr, with the code).
            let ended_badly = exit::for_state(t.status.state).is_some();
            let text = if ended_badly { output::artifacts_text(&t) } else { output::reply_text(&t) };
            if let Some(text) = text {
                output::line(&text)?;
            }
            exit::check_task(&t)?;
            note(&output::task_summary(&t));
            Ok(())
        }
    }
}

pub(super) async fn stream(
    client: &Client,
    req: &SendMessageRequest,
    json: bool,
    steps: Option<Steps>,
) -> anyhow::Result<()> {
    let mut events = client.stream(methods::SEND_STREAMING_MESSAGE, req).await?;
    let mut task = Task::default();
    let mut out = output::Inline::default();
    while let Some(v) = events.next().await? {
        let ev: StreamResponse = serde_json::from_value(v.clone())
            .context("the daemon sent an event that is not a StreamResponse")?;
        output::track(&mut task, &ev);
        if let Some(s) = &steps
            && !task.id.is_empty()
        {
            s.task(&task.id);
        }
        if json {
            output::json_line(&v)?;
            continue;
        }
        match ev {
            StreamResponse::Task(_) | StreamResponse::StatusUpdate(_) => {}
            StreamResponse::ArtifactUpdate(u) => out.artifact(&u.artifact)?,
            StreamResponse::Message(m) => out.line(&m.text())?,
        }
    }
    if let Some(s) = steps {
        out.close()?;
        s.finish(task.status.state).await;
    }
    if json {
        // A streamed send ends when the task finishes or waits for input.
        output::check_stream_end(&task, true)?;
        return exit::check_task(&task);
    }
    out.close()?;
    if let Some(text) = output::status_after_stream(&task, out.printed) {
        output::line(&text)?;
    }
    output::check_stream_end(&task, true)?;
    exit::check_task(&task)?;
    if !task.id.is_empty() {
        note(&output::task_summary(&task));
    }
    Ok(())
}
