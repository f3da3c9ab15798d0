//! `agentd send`: SendStreamingMessage for people (the reply prints as it
//! arrives), SendMessage for `--json`, `--no-wait` and `--no-stream`.

use super::ClientOpts;
use super::client::Client;
use super::output::{self, note};
use agentd_proto::jsonrpc::methods;
use agentd_proto::{
    Message, Part, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    Task, new_id,
};
use anyhow::Context;
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
    let message = Message {
        message_id: args.message_id.clone().unwrap_or_else(new_id),
        context_id: args.context.clone().unwrap_or_default(),
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
        stream(&client, &req, args.client.json).await
    } else {
        unary(&client, &req, args.client.json).await
    }
}

pub(super) async fn unary(client: &Client, req: &SendMessageRequest, json: bool) -> anyhow::Result<()> {
    let v = client.call(methods::SEND_MESSAGE, req).await?;
    if json {
        return output::json_pretty(&v);
    }
    let resp: SendMessageResponse =
        serde_json::from_value(v).context("the daemon's SendMessage answer is not a task or a message")?;
    match resp {
        SendMessageResponse::Message(m) => output::line(&m.text()),
        SendMessageResponse::Task(t) => {
            if let Some(text) = output::reply_text(&t) {
                output::line(&text)?;
            }
            note(&output::task_summary(&t));
            Ok(())
        }
    }
}

/// What a streamed reply has shown so far.
#[derive(Default)]
struct Progress {
    task: Task,
    /// Artifact text was printed (the status message is then not repeated).
    printed: bool,
    /// The artifact whose text the cursor is on, if its line is still open.
    open: Option<String>,
}

impl Progress {
    fn close_line(&mut self) -> anyhow::Result<()> {
        if self.open.take().is_some() {
            output::emit("\n")?;
        }
        Ok(())
    }
}

pub(super) async fn stream(client: &Client, req: &SendMessageRequest, json: bool) -> anyhow::Result<()> {
    let mut events = client.stream(methods::SEND_STREAMING_MESSAGE, req).await?;
    let mut p = Progress::default();
    while let Some(v) = events.next().await? {
        let ev: StreamResponse = serde_json::from_value(v.clone())
            .context("the daemon sent an event that is not a StreamResponse")?;
        output::track(&mut p.task, &ev);
        if json {
            output::json_line(&v)?;
            continue;
        }
        match ev {
            StreamResponse::Task(_) | StreamResponse::StatusUpdate(_) => {}
            StreamResponse::ArtifactUpdate(u) => {
                let mut text = output::artifact_text(&u.artifact);
                if text.is_empty() {
                    // A file or data artifact: show a placeholder.
                    text = output::artifact_display(&u.artifact);
                }
                if text.is_empty() {
                    continue;
                }
                if p.open.as_deref() != Some(u.artifact.artifact_id.as_str()) {
                    p.close_line()?;
                }
                output::emit(&text)?;
                p.printed = true;
                p.open = (!text.ends_with('\n')).then_some(u.artifact.artifact_id);
            }
            StreamResponse::Message(m) => {
                p.close_line()?;
                output::line(&m.text())?;
                p.printed = true;
            }
        }
    }
    if json {
        // A streamed send ends when the task finishes or waits for input.
        return output::check_stream_end(&p.task, true);
    }
    p.close_line()?;
    if !p.printed
        && let Some(text) = output::status_text(&p.task.status)
    {
        output::line(&text)?;
    }
    output::check_stream_end(&p.task, true)?;
    if !p.task.id.is_empty() {
        note(&output::task_summary(&p.task));
    }
    Ok(())
}
