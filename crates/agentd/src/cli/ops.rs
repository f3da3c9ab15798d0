//! `agentd status`, `agentd subagents …`, `agentd conversations …`,
//! `agentd workflows …` and `agentd gates`: the command extension's ops (`docs/commands.md`)
//! as verbs. Each sends one command message; an op's data answer prints in
//! a human form (a line, a record, a table; the raw answer with `--json`),
//! a task answer like `send`.

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
    let human = if name == "subagent.kill" { killed } else { subagent };
    print_data(op(&client, name, args, starts).await?, human)
}

pub async fn conversations(cmd: ConversationsCommand) -> anyhow::Result<()> {
    let (client, name, context) = match cmd {
        ConversationsCommand::Get { context, client } => (client, "conversation.get", context),
        ConversationsCommand::Close { context, client } => (client, "conversation.close", context),
    };
    print_data(op(&client, name, obj(json!({"contextId": context})), false).await?, conversation)
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
    let human = if name == "workflow.signal" { signaled } else { run };
    print_data(op(&client, name, args, false).await?, human)
}

pub async fn gates(a: GatesArgs) -> anyhow::Result<()> {
    let Some(v) = op(&a.client, "gate.list", Map::new(), false).await? else { return Ok(()) };
    let listed = v["gates"].as_array().map_or(0, Vec::len);
    print_data(Some(v.clone()), gates_table)?;
    if listed == 0 {
        note(
            "no open gates addressed to you (your own tasks' gates: agentd tasks list --state input-required)",
        );
    } else {
        note("answer one with: agentd answer TASK ANSWER");
    }
    if v["truncated"] == true {
        note(&format!("more gates are open than the {listed} shown"));
    }
    Ok(())
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Prints an op's data answer in its human form (a text answer as it is).
fn print_data(v: Option<Value>, human: fn(&Value) -> String) -> anyhow::Result<()> {
    match v {
        Some(Value::String(text)) => output::line(&text),
        Some(v) => output::emit(&human(&v)),
        None => Ok(()),
    }
}

fn text_of(v: &Value) -> &str {
    v.as_str().unwrap_or("-")
}

/// A message's text: its text parts, data parts as compact JSON.
fn message_text(m: &Value) -> String {
    let parts = m["parts"].as_array().map(Vec::as_slice).unwrap_or_default();
    let texts: Vec<String> = parts
        .iter()
        .map(|p| match p["text"].as_str() {
            Some(t) => t.to_owned(),
            None => p.get("data").map_or_else(String::new, Value::to_string),
        })
        .filter(|t| !t.is_empty())
        .collect();
    texts.join("\n")
}

/// `user` for `ROLE_USER`.
fn role_of(m: &Value) -> String {
    let r = text_of(&m["role"]);
    r.strip_prefix("ROLE_").unwrap_or(r).to_ascii_lowercase()
}

/// Task ids (or whatever the list holds), comma-separated; `none` for none.
fn list_of(v: &Value) -> String {
    let items: Vec<String> = v
        .as_array()
        .map(|a| a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned)).collect())
        .unwrap_or_default();
    if items.is_empty() { "none".to_owned() } else { items.join(", ") }
}

/// `subagent.status` (and `.send` when it answers with data).
fn subagent(v: &Value) -> String {
    let mut s = output::labelled("handle", text_of(&v["handle"]));
    s.push_str(&output::labelled("task", text_of(&v["taskId"])));
    s.push_str(&output::labelled("context", text_of(&v["contextId"])));
    s.push_str(&output::labelled("state", output::state_text(&v["state"])));
    let parent = v["parent"].as_str().unwrap_or("- (started by a command)");
    s.push_str(&output::labelled("parent", parent));
    s.push_str(&output::labelled("children", &format!("live: {}", list_of(&v["liveChildren"]))));
    let last = message_text(&v["lastMessage"]);
    if !last.is_empty() {
        s.push_str(&format!("\n{}\n", last.trim_end()));
    }
    s
}

/// `subagent.kill`.
fn killed(v: &Value) -> String {
    let mut s = output::labelled("handle", text_of(&v["handle"]));
    s.push_str(&output::labelled("state", output::state_text(&v["state"])));
    s.push_str(&output::labelled("canceled", &list_of(&v["canceled"])));
    s
}

/// `conversation.get` (its turns, each with its messages) and `.close`.
fn conversation(v: &Value) -> String {
    let closed = if v["closed"] == true { " (closed)" } else { "" };
    let mut s = output::labelled("context", &format!("{}{closed}", text_of(&v["contextId"])));
    if let Some(canceled) = v.get("canceled") {
        s.push_str(&output::labelled("canceled", &list_of(canceled)));
    }
    for turn in v["turns"].as_array().into_iter().flatten() {
        s.push_str(&format!("\n{}  {}\n", text_of(&turn["taskId"]), output::state_text(&turn["state"])));
        for m in turn["messages"].as_array().into_iter().flatten() {
            let text = message_text(m).replace('\n', "\n    ");
            s.push_str(&format!("  {}: {text}\n", role_of(m)));
        }
    }
    s
}

/// The plan's steps in an order that runs: each after those it depends on
/// (the answer lists them by id).
fn plan_order(plan: &[Value]) -> Vec<&Value> {
    let mut placed: Vec<&Value> = Vec::with_capacity(plan.len());
    let mut left: Vec<&Value> = plan.iter().collect();
    while !left.is_empty() {
        let ready = left.iter().position(|step| {
            step["dependsOn"].as_array().into_iter().flatten().all(|d| placed.iter().any(|p| p["id"] == *d))
        });
        // A cycle cannot be planned; whatever is left follows as listed.
        let i = ready.unwrap_or(0);
        placed.push(left.remove(i));
    }
    placed
}

/// `workflow.status` and `workflow.cancel`: the run, its gate, its steps.
fn run(v: &Value) -> String {
    let mut s = output::labelled("run", text_of(&v["runId"]));
    s.push_str(&output::labelled("task", text_of(&v["taskId"])));
    s.push_str(&output::labelled("workflow", text_of(&v["workflow"])));
    s.push_str(&output::labelled("state", output::state_text(&v["state"])));
    let gate = &v["gate"];
    if gate.is_object() {
        let question = format!("{}: {}", text_of(&gate["step"]), text_of(&gate["question"]));
        s.push_str(&output::labelled("gate", &question));
        let answer = format!("answer with: agentd answer {} ANSWER", text_of(&v["taskId"]));
        s.push_str(&output::labelled("", &answer));
    } else {
        let last = message_text(&v["lastMessage"]);
        if !last.is_empty() {
            s.push_str(&output::labelled("message", &last));
        }
    }
    let plan = v["plan"].as_array().map(Vec::as_slice).unwrap_or_default();
    let rows: Vec<Vec<String>> = plan_order(plan)
        .into_iter()
        .map(|step| {
            let id = text_of(&step["id"]);
            let done = &v["steps"][id];
            let status = done["status"].as_str().unwrap_or("pending");
            let said = match (&done["error"], &done["output"]) {
                (Value::String(e), _) => format!("error: {e}"),
                (_, Value::Null) => String::new(),
                (_, Value::String(o)) => o.clone(),
                (_, o) => o.to_string(),
            };
            vec![id.to_owned(), text_of(&step["kind"]).to_owned(), status.to_owned(), output::snippet(&said)]
        })
        .collect();
    if !rows.is_empty() {
        s.push('\n');
        s.push_str(&output::table(&[16, 10, 10], &["STEP", "KIND", "STATUS", "OUTPUT"], &rows));
    }
    s
}

/// `workflow.signal`.
fn signaled(v: &Value) -> String {
    let taken = if v["accepted"] == true { "accepted by" } else { "not accepted by" };
    format!("signal {} {taken} {}\n", text_of(&v["signal"]), text_of(&v["runId"]))
}

/// `gate.list`: one line per gate.
fn gates_table(v: &Value) -> String {
    let rows: Vec<Vec<String>> = v["gates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|g| {
            let step = g["step"].as_str().unwrap_or("-");
            let cells = [text_of(&g["taskId"]), step, text_of(&g["openedAt"])];
            let mut row: Vec<String> = cells.iter().map(|c| (*c).to_owned()).collect();
            row.push(output::snippet(text_of(&g["question"])));
            row
        })
        .collect();
    output::table(&[36, 16, 24], &["TASK", "STEP", "OPENED", "QUESTION"], &rows)
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

    /// The human forms of the op answers, from the answers `docs/commands.md` shows.
    #[test]
    fn op_answers_read_as_records_and_tables() {
        let gates = json!({"gates": [{"taskId": "t1", "contextId": "c1", "runId": "review-01J", "step": "ask",
            "question": "Ship v2?", "askSchema": null, "askChannel": "@channel/releases",
            "openedAt": "2025-01-01T12:00:00.000Z"}], "truncated": false});
        let text = super::gates_table(&gates);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("TASK") && lines[0].ends_with("QUESTION"), "{text}");
        assert!(
            lines[1].starts_with("t1 ") && lines[1].contains(" ask ") && lines[1].ends_with("Ship v2?"),
            "{text}"
        );
        assert_eq!(super::gates_table(&json!({"gates": [], "truncated": false})), "");

        let run = json!({"runId": "demo-01", "taskId": "t1", "workflow": "demo", "state": "TASK_STATE_INPUT_REQUIRED",
            "steps": {"approve": {"status": "waiting", "output": null, "error": null, "attempts": 0}},
            "plan": [{"id": "approve", "kind": "human", "dependsOn": []},
                     {"id": "done", "kind": "finish", "dependsOn": ["summarize"]},
                     {"id": "summarize", "kind": "agent", "dependsOn": ["approve"]}],
            "gate": {"step": "approve", "question": "Approve?"}, "lastMessage": null});
        let text = super::run(&run);
        assert!(
            text.contains("state    INPUT_REQUIRED\n") && text.contains("gate     approve: Approve?\n"),
            "{text}"
        );
        assert!(text.contains("agentd answer t1 ANSWER"), "{text}");
        let steps: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("STEP")).skip(1).collect();
        let ids: Vec<&str> = steps.iter().filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(ids, ["approve", "summarize", "done"], "in the order they run: {text}");
        assert!(steps[0].contains("waiting") && steps[1].contains("pending"), "{text}");

        let conv = json!({"contextId": "c1", "closed": false, "turns": [{"taskId": "t1", "state": "TASK_STATE_COMPLETED",
            "messages": [{"role": "ROLE_USER", "parts": [{"text": "hello"}]},
                         {"role": "ROLE_AGENT", "parts": [{"text": "echo: hello"}]}]}]});
        assert_eq!(
            super::conversation(&conv),
            "context  c1\n\nt1  COMPLETED\n  user: hello\n  agent: echo: hello\n"
        );
        let status = json!({"handle": "helper-t1", "taskId": "t1", "contextId": "c1", "state": "TASK_STATE_WORKING",
            "parent": null, "command": "subagent.spawn", "liveChildren": [], "lastMessage": null});
        let text = super::subagent(&status);
        assert!(text.starts_with("handle   helper-t1\n") && text.contains("state    WORKING\n"), "{text}");
        assert_eq!(
            super::signaled(&json!({"runId": "r", "signal": "go", "accepted": true})),
            "signal go accepted by r\n"
        );
    }

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
