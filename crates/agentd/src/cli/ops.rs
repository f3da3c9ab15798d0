//! `agentd status`, `agentd subagents …`, `agentd conversations …`,
//! `agentd workflows …` and `agentd gates`: the command extension's ops (`docs/commands.md`)
//! as verbs. Each sends one command message; an op's data answer prints as
//! JSON (`status` also has a one-line human form), a task answer like `send`.

use super::ClientOpts;
use super::client::Client;
use super::exit;
use super::output::{self, note};
use agentd_proto::jsonrpc::methods;
use agentd_proto::{
    Message, Part, PartContent, Role, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    new_id,
};
use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::{Map, Value, json};

#[derive(Args, Debug)]
pub struct StatusArgs {
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Args, Debug)]
pub struct GatesArgs {
    #[command(flatten)]
    pub client: ClientOpts,
}

#[derive(Subcommand, Debug)]
pub enum SubagentsCommand {
    /// Start a subagent: its own instruction and conversation, tracked by a task.
    Spawn {
        /// What the subagent's first message says.
        #[arg(value_name = "INPUT")]
        input: String,
        /// Its system prompt.
        #[arg(long, value_name = "TEXT")]
        instruction: String,
        /// The start of its handle (lowercase letters, digits and `_`).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// Send input to a subagent: steering while it works, the answer when it waits.
    Send {
        /// The subagent's handle or task id.
        id: String,
        #[arg(value_name = "INPUT")]
        input: String,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// A subagent's state, parent, live children and last message.
    Status {
        /// The subagent's handle or task id.
        id: String,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// Cancel a subagent and every live subagent below it.
    Kill {
        /// The subagent's handle or task id.
        id: String,
        #[command(flatten)]
        client: ClientOpts,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConversationsCommand {
    /// The turns of a conversation: task ids, states and messages.
    Get {
        #[arg(value_name = "CONTEXT_ID")]
        context: String,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// Close a conversation: cancel its live turns and refuse later ones.
    Close {
        #[arg(value_name = "CONTEXT_ID")]
        context: String,
        #[command(flatten)]
        client: ClientOpts,
    },
}

#[derive(Subcommand, Debug)]
pub enum WorkflowsCommand {
    /// A run's state, steps with their outputs, and open gate (start one with `agentd run`).
    Status {
        /// The run id or its task id.
        run: String,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// Cancel a run, the subagents of its steps and its delegations.
    Cancel {
        /// The run id or its task id.
        run: String,
        #[command(flatten)]
        client: ClientOpts,
    },
    /// Send a named signal to a run (its steps read it as run.signals.NAME).
    Signal {
        /// The run id or its task id.
        run: String,
        /// The signal's name.
        signal: String,
        /// Data sent with it: JSON, or else text.
        #[arg(long, value_name = "JSON")]
        data: Option<String>,
        #[command(flatten)]
        client: ClientOpts,
    },
}

pub async fn status(a: StatusArgs) -> anyhow::Result<()> {
    let v = op(&a.client, "status", Map::new(), false).await?;
    if let Some(v) = v {
        output::line(&status_line(&v))?;
    }
    Ok(())
}

pub async fn subagents(cmd: SubagentsCommand) -> anyhow::Result<()> {
    let (client, name, args, starts) = match cmd {
        SubagentsCommand::Spawn { input, instruction, name, client } => {
            let mut args = obj(json!({"input": input, "instruction": instruction}));
            if let Some(n) = name {
                args.insert("name".into(), Value::String(n));
            }
            (client, "subagent.spawn", args, true)
        }
        SubagentsCommand::Send { id, input, client } => {
            (client, "subagent.send", obj(json!({"id": id, "input": input})), true)
        }
        SubagentsCommand::Status { id, client } => (client, "subagent.status", obj(json!({"id": id})), false),
        SubagentsCommand::Kill { id, client } => (client, "subagent.kill", obj(json!({"id": id})), false),
    };
    print_data(op(&client, name, args, starts).await?)
}

pub async fn conversations(cmd: ConversationsCommand) -> anyhow::Result<()> {
    let (client, name, context) = match cmd {
        ConversationsCommand::Get { context, client } => (client, "conversation.get", context),
        ConversationsCommand::Close { context, client } => (client, "conversation.close", context),
    };
    print_data(op(&client, name, obj(json!({"contextId": context})), false).await?)
}

pub async fn workflows(cmd: WorkflowsCommand) -> anyhow::Result<()> {
    let (client, name, args) = match cmd {
        WorkflowsCommand::Status { run, client } => (client, "workflow.status", obj(json!({"run": run}))),
        WorkflowsCommand::Cancel { run, client } => (client, "workflow.cancel", obj(json!({"run": run}))),
        WorkflowsCommand::Signal { run, signal, data, client } => {
            let mut args = obj(json!({"run": run, "signal": signal}));
            if let Some(d) = data {
                let value = serde_json::from_str(&d).unwrap_or(Value::String(d));
                args.insert("data".into(), value);
            }
            (client, "workflow.signal", args)
        }
    };
    print_data(op(&client, name, args, false).await?)
}

pub async fn gates(a: GatesArgs) -> anyhow::Result<()> {
    print_data(op(&a.client, "gate.list", Map::new(), false).await?)
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn print_data(v: Option<Value>) -> anyhow::Result<()> {
    match v {
        Some(v) => output::json_pretty(&v),
        None => Ok(()),
    }
}

/// Runs one op. Returns its data answer for the caller to print; a task
/// answer (or anything with `--json`) is printed here and gives `None`.
/// `starts_work` ops return at once with their task instead of waiting.
async fn op(
    opts: &ClientOpts,
    name: &str,
    mut args: Map<String, Value>,
    starts_work: bool,
) -> anyhow::Result<Option<Value>> {
    let client = Client::new(opts)?;
    args.insert("op".into(), Value::String(name.to_owned()));
    let message = Message {
        message_id: new_id(),
        role: Role::User,
        parts: vec![Part::data(json!({"agentd": args}))],
        ..Default::default()
    };
    let configuration =
        starts_work.then(|| SendMessageConfiguration { return_immediately: true, ..Default::default() });
    let req = SendMessageRequest { message: Some(message), configuration, ..Default::default() };
    let v = client.call(methods::SEND_MESSAGE, &req).await?;
    if opts.json {
        output::json_pretty(&v)?;
        return Ok(None);
    }
    let resp: SendMessageResponse =
        serde_json::from_value(v).context("the daemon's answer is not a task or a message")?;
    match resp {
        SendMessageResponse::Task(t) => {
            output::line(&t.id)?;
            exit::check_task(&t)?;
            note(&output::task_summary(&t));
            Ok(None)
        }
        SendMessageResponse::Message(m) => {
            let data = m.parts.iter().find_map(|p| match &p.content {
                PartContent::Data(d) => Some(Value::clone(d)),
                _ => None,
            });
            match data {
                Some(d) => Ok(Some(d)),
                None if !m.text().is_empty() => Ok(Some(Value::String(m.text()))),
                None => bail!("the daemon answered {name} without data"),
            }
        }
    }
}

/// `agentd 0.1.0 up 42s · 0 live tasks · model scripted · subagents 0/8 · you: operator:local (operator)`
fn status_line(v: &Value) -> String {
    let s = |k: &str| v[k].as_str().map(str::to_owned).unwrap_or_else(|| v[k].to_string());
    format!(
        "agentd {} up {}s · {} live tasks · model {} · subagents {}/{} · you: {} ({})",
        s("version"),
        v["uptimeSecs"],
        v["liveTasks"],
        s("model"),
        v["subagents"]["live"],
        v["subagents"]["maxLive"],
        v["principal"]["id"].as_str().unwrap_or("?"),
        v["principal"]["role"].as_str().unwrap_or("?"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn the_status_line_reads_the_op_answer() {
        let v = json!({"version": "0.1.0", "uptimeSecs": 42, "liveTasks": 0, "model": "scripted",
            "subagents": {"live": 0, "maxLive": 8, "maxDepth": 3, "maxTokens": 100000},
            "principal": {"id": "operator:local", "role": "operator"}});
        assert_eq!(
            super::status_line(&v),
            "agentd 0.1.0 up 42s · 0 live tasks · model scripted · subagents 0/8 · you: operator:local (operator)"
        );
    }
}
