//! `agentd chat`: a conversation in the terminal. Each line is a turn in
//! one context, its reply streamed as it comes; at a terminal, a line typed
//! while a turn runs is steering input for it (queued for its next step),
//! while piped input is strictly sequential: each line waits for the turn
//! before it. A task that waits for input takes the next line as its
//! answer, and a gate that declares an answer schema is asked field by
//! field. `/new`, `/context`, `/run WORKFLOW [INPUTS]` and `/quit`.

use super::ClientOpts;
use super::client::Client;
use super::exit;
use super::output::{self, note};
use agentd_proto::ext::task_annotations;
use agentd_proto::jsonrpc::methods;
use agentd_proto::{
    GetTaskRequest, Message, Part, Role, SendMessageConfiguration, SendMessageRequest, StreamResponse, Task,
    new_id,
};
use anyhow::Context;
use clap::Args;
use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, IsTerminal, Write};
use tokio::sync::mpsc;

#[derive(Args, Debug)]
pub struct ChatArgs {
    /// Carry on this conversation (contextId) instead of starting one.
    #[arg(long, value_name = "ID")]
    pub context: Option<String>,
    #[command(flatten)]
    pub client: ClientOpts,
}

const HELP: &str = "/new starts a new conversation, /context prints its id, \
                    /run WORKFLOW [INPUTS JSON] starts a workflow run, /quit leaves";

/// Lines of stdin, read on their own thread (reading a terminal blocks) so
/// a turn can be steered while it streams. The channel closes at end of input.
fn stdin_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    rx
}

struct Chat {
    client: Client,
    lines: mpsc::Receiver<String>,
    /// Lines read during a turn that wait for the next one: commands, and
    /// text that could not steer it.
    later: VecDeque<String>,
    interactive: bool,
    context: String,
    /// The task waiting for input: the next line answers it.
    waiting: Option<Task>,
}

pub async fn run(a: ChatArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.client)?.with_extensions(&[task_annotations::URI])?;
    let interactive = std::io::stdin().is_terminal();
    let mut chat = Chat {
        client,
        lines: stdin_lines(),
        later: VecDeque::new(),
        interactive,
        context: a.context.unwrap_or_default(),
        waiting: None,
    };
    if interactive {
        note(&format!("agentd chat at {}; {HELP}", a.client.url));
    }
    loop {
        chat.prompt("you> ");
        let Some(line) = chat.next_line().await else { break };
        let line = line.trim();
        // A workflow run is a task of its own: the conversation stays where it was.
        let keep_context = line.starts_with("/run ").then(|| chat.context.clone());
        let message = match line.split_once(' ').map_or((line, ""), |(c, rest)| (c, rest.trim())) {
            ("", _) => continue,
            ("/quit" | "/exit", _) => break,
            ("/new", _) => {
                chat.context.clear();
                chat.waiting = None;
                note("a new conversation starts with your next message");
                continue;
            }
            ("/context", _) if chat.context.is_empty() => {
                note("no conversation yet: it starts with your first message");
                continue;
            }
            ("/context", _) => {
                output::line(&chat.context)?;
                continue;
            }
            ("/run", spec) => match workflow_command(spec) {
                Ok(m) => m,
                Err(e) => {
                    note(&format!("{e:#}"));
                    continue;
                }
            },
            (c, _) if c.starts_with('/') => {
                note(&format!("unknown command {c}; {HELP}"));
                continue;
            }
            _ => chat.message(vec![Part::text(line)]),
        };
        if let Err(e) = chat.turn(message).await {
            // The conversation goes on: a refused message or a failed task
            // is reported, not fatal.
            note(&format!("agentd: {e:#}"));
        }
        if let Some(context) = keep_context {
            chat.context = context;
        }
    }
    Ok(())
}

/// `/run demo {"topic": "x"}`: the `workflow.run` command message.
fn workflow_command(spec: &str) -> anyhow::Result<Message> {
    let (name, inputs) = spec.split_once(' ').map_or((spec, ""), |(n, i)| (n, i.trim()));
    if name.is_empty() {
        anyhow::bail!("/run needs a workflow name: /run WORKFLOW [INPUTS JSON]");
    }
    let inputs: Value = if inputs.is_empty() {
        json!({})
    } else {
        serde_json::from_str(inputs).context("/run: the inputs are not JSON")?
    };
    let command = json!({"agentd": {"op": "workflow.run", "workflow": name, "inputs": inputs}});
    Ok(Message {
        message_id: new_id(),
        role: Role::User,
        parts: vec![Part::data(command)],
        ..Default::default()
    })
}

impl Chat {
    /// The `you> ` prompt, for a person at a terminal only.
    fn prompt(&self, text: &str) {
        if self.interactive {
            ask_prompt(text);
        }
    }

    /// The next line: one kept from a turn, else the next one typed.
    async fn next_line(&mut self) -> Option<String> {
        match self.later.pop_front() {
            Some(line) => Some(line),
            None => self.lines.recv().await,
        }
    }

    /// Keeps a line typed during a turn for after it, saying so.
    fn keep(&mut self, line: String, why: &str) {
        note(&format!("({why}; kept for after this turn: {line})"));
        self.later.push_back(line);
    }

    /// A user message in this conversation (or to the task waiting for input).
    fn message(&mut self, parts: Vec<Part>) -> Message {
        let task_id = self.waiting.take().map(|t| t.id).unwrap_or_default();
        Message {
            message_id: new_id(),
            context_id: self.context.clone(),
            task_id,
            role: Role::User,
            parts,
            ..Default::default()
        }
    }

    /// Sends `message`, prints the reply as it streams, and answers the
    /// gates it stops at, until the task ends or waits for a free answer.
    async fn turn(&mut self, mut message: Message) -> anyhow::Result<()> {
        // The gate being answered, to ask again when the answer is refused.
        let mut gate: Option<(Task, Value)> = None;
        loop {
            let task = match self.stream(message).await {
                Ok(task) => task,
                Err(e) => {
                    let Some((waiting, schema)) = gate.take() else { return Err(e) };
                    note(&format!("agentd: {e:#}\nthe gate is still open; answer again"));
                    let Some((m, g)) = self.answer_gate(waiting, schema).await else { return Ok(()) };
                    (message, gate) = (m, Some(g));
                    continue;
                }
            };
            if !task.context_id.is_empty() {
                self.context.clone_from(&task.context_id);
            }
            exit::check_task(&task)?;
            if !task.status.state.is_interrupted() {
                return Ok(());
            }
            let Some(schema) = self.ask_schema(&task.id).await else {
                // A free answer: the next line.
                self.waiting = Some(task);
                return Ok(());
            };
            let Some((m, g)) = self.answer_gate(task, schema).await else { return Ok(()) };
            (message, gate) = (m, Some(g));
        }
    }

    /// Asks for a gate's answer; the message that carries it, or `None`
    /// when input ends (the task stays the one waiting).
    async fn answer_gate(&mut self, task: Task, schema: Value) -> Option<(Message, (Task, Value))> {
        let Some(answer) = self.ask(&schema).await else {
            self.waiting = Some(task);
            return None;
        };
        let message = Message {
            message_id: new_id(),
            context_id: task.context_id.clone(),
            task_id: task.id.clone(),
            role: Role::User,
            parts: vec![Part::data(answer)],
            ..Default::default()
        };
        Some((message, (task, schema)))
    }

    /// One SendStreamingMessage; at a terminal, lines typed meanwhile
    /// steer the task. Piped input is not read until the turn ends.
    async fn stream(&mut self, message: Message) -> anyhow::Result<Task> {
        let req = SendMessageRequest { message: Some(message), ..Default::default() };
        let mut events = self.client.stream(methods::SEND_STREAMING_MESSAGE, &req).await?;
        let mut task = Task::default();
        let mut out = output::Inline::default();
        let mut stdin_open = self.interactive;
        loop {
            tokio::select! {
                ev = events.next() => {
                    let Some(v) = ev? else { break };
                    let ev: StreamResponse = serde_json::from_value(v)
                        .context("the daemon sent an event that is not a StreamResponse")?;
                    output::track(&mut task, &ev);
                    match ev {
                        StreamResponse::Task(_) | StreamResponse::StatusUpdate(_) => {}
                        StreamResponse::ArtifactUpdate(u) => out.artifact(&u.artifact)?,
                        StreamResponse::Message(m) => out.line(&m.text())?,
                    }
                }
                line = self.lines.recv(), if stdin_open => match line {
                    Some(line) if line.trim().is_empty() => {}
                    Some(line) => {
                        out.close()?;
                        let line = line.trim().to_owned();
                        if line.starts_with('/') {
                            self.keep(line, "a command");
                        } else if task.id.is_empty() {
                            self.keep(line, "the turn has not started");
                        } else if !self.later.is_empty() {
                            // Steering now would pass the lines kept before it.
                            self.keep(line, "behind a kept line");
                        } else if let Err(e) = self.steer(&task, &line).await {
                            self.keep(line, &format!("not delivered: {e:#}"));
                        }
                    }
                    None => stdin_open = false,
                },
            }
        }
        out.close()?;
        if let Some(text) = output::status_after_stream(&task, out.printed) {
            output::line(&text)?;
        }
        output::check_stream_end(&task, true)?;
        Ok(task)
    }

    /// Steering input for a working task; it reads it at its next step.
    async fn steer(&self, task: &Task, text: &str) -> anyhow::Result<()> {
        let message = Message {
            message_id: new_id(),
            context_id: task.context_id.clone(),
            task_id: task.id.clone(),
            role: Role::User,
            parts: vec![Part::text(text)],
            ..Default::default()
        };
        let configuration = Some(SendMessageConfiguration { return_immediately: true, ..Default::default() });
        let req = SendMessageRequest { message: Some(message), configuration, ..Default::default() };
        self.client.call(methods::SEND_MESSAGE, &req).await?;
        note("(queued for the next step)");
        Ok(())
    }

    /// The answer schema of the gate a task waits on, from its annotations.
    async fn ask_schema(&self, id: &str) -> Option<Value> {
        let req = GetTaskRequest { id: id.to_owned(), history_length: Some(0), ..Default::default() };
        let v = self.client.call(methods::GET_TASK, &req).await.ok()?;
        v["metadata"][task_annotations::URI].get("askSchema").cloned()
    }

    /// Asks for each field of an object schema (or the whole answer as
    /// JSON); `None` when input ends.
    async fn ask(&mut self, schema: &Value) -> Option<Value> {
        let Some(props) = schema["properties"].as_object().filter(|p| !p.is_empty()) else {
            ask_prompt("answer (JSON): ");
            let line = self.next_line().await?;
            return Some(serde_json::from_str(&line).unwrap_or(Value::String(line)));
        };
        let required: Vec<&str> =
            schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let mut answer = Map::new();
        for (name, prop) in props {
            let need = required.contains(&name.as_str());
            loop {
                ask_prompt(&field_prompt(name, prop, need));
                let line = self.next_line().await?;
                let line = line.trim();
                if line.is_empty() && !need {
                    break;
                }
                match field_value(prop, line) {
                    Ok(v) => {
                        answer.insert(name.clone(), v);
                        break;
                    }
                    Err(e) => note(&format!("{name}: {e}")),
                }
            }
        }
        Some(Value::Object(answer))
    }
}

/// A question on stderr, without a newline: the answer is typed after it.
/// Gates ask even when stdin is not a terminal, so a script sees what is asked.
fn ask_prompt(text: &str) {
    eprint!("{text}");
    let _ = std::io::stderr().flush();
}

/// `approve (yes/no): `, `note (text, optional): `.
fn field_prompt(name: &str, prop: &Value, required: bool) -> String {
    let kind = match prop["type"].as_str() {
        Some("boolean") => "yes/no".to_owned(),
        Some("integer" | "number") => "number".to_owned(),
        Some("string") if prop["enum"].is_array() => {
            let choices: Vec<&str> =
                prop["enum"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            choices.join("/")
        }
        Some("string") => "text".to_owned(),
        _ => "JSON".to_owned(),
    };
    let optional = if required { "" } else { ", optional" };
    format!("{name} ({kind}{optional}): ")
}

/// Reads one field's answer by its schema type.
fn field_value(prop: &Value, line: &str) -> Result<Value, String> {
    match prop["type"].as_str() {
        Some("boolean") => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("answer yes or no".into()),
        },
        Some("integer") => line.parse::<i64>().map(Value::from).map_err(|_| "a whole number, please".into()),
        Some("number") => line
            .parse::<f64>()
            .ok()
            .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
            .ok_or_else(|| "a number, please".into()),
        Some("string") => Ok(Value::String(line.to_owned())),
        _ => serde_json::from_str(line).map_err(|e| format!("not JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_asked_and_read_by_their_type() {
        let b = json!({"type": "boolean"});
        assert_eq!(field_prompt("approve", &b, true), "approve (yes/no): ");
        assert_eq!(field_value(&b, "Yes"), Ok(json!(true)));
        assert_eq!(field_value(&b, "no"), Ok(json!(false)));
        assert!(field_value(&b, "maybe").is_err());
        let s = json!({"type": "string", "enum": ["low", "high"]});
        assert_eq!(field_prompt("sev", &s, false), "sev (low/high, optional): ");
        assert_eq!(field_value(&json!({"type": "integer"}), "3"), Ok(json!(3)));
        assert!(field_value(&json!({"type": "integer"}), "3.5").is_err());
        assert_eq!(field_value(&json!({}), "[1]"), Ok(json!([1])));
    }

    #[test]
    fn run_lines_become_workflow_commands() {
        let m = workflow_command("demo {\"n\": 1}").unwrap();
        let agentd_proto::PartContent::Data(d) = &m.parts[0].content else { panic!("{m:?}") };
        assert_eq!(**d, json!({"agentd": {"op": "workflow.run", "workflow": "demo", "inputs": {"n": 1}}}));
        assert!(workflow_command("").is_err());
        assert!(workflow_command("demo {bad").is_err());
    }
}
