//! `agentd answer TASK_ID ANSWER`: answers a task waiting for input (a
//! human gate). ANSWER that parses as JSON goes as a DataPart, anything
//! else as text; the daemon validates it against the gate's schema.

use super::ClientOpts;
use super::client::Client;
use super::exit;
use super::output::{self, note, state_name};
use super::progress::Steps;
use agentd_proto::jsonrpc::methods;
use agentd_proto::{Message, Part, Role, SendMessageRequest, SendMessageResponse, TaskState, new_id};
use anyhow::{Context, bail};
use clap::Args;
use serde_json::Value;

#[derive(Args, Debug)]
pub struct AnswerArgs {
    /// The task waiting for the answer.
    #[arg(value_name = "TASK_ID")]
    pub task: String,
    /// The answer: JSON (sent as data, e.g. '{"approve": true}') or text.
    #[arg(value_name = "ANSWER")]
    pub answer: String,
    #[command(flatten)]
    pub client: ClientOpts,
}

/// A DataPart when the answer is JSON, else a text part.
fn answer_part(answer: &str) -> Part {
    match serde_json::from_str::<Value>(answer) {
        Ok(v) => Part::data(v),
        Err(_) => Part::text(answer),
    }
}

pub async fn run(args: AnswerArgs) -> anyhow::Result<()> {
    let client = Client::new(&args.client)?;
    if args.task.trim().is_empty() {
        bail!("TASK_ID is empty");
    }
    let message = Message {
        message_id: new_id(),
        task_id: args.task.clone(),
        role: Role::User,
        parts: vec![answer_part(&args.answer)],
        ..Default::default()
    };
    let req = SendMessageRequest { message: Some(message), ..Default::default() };
    // The steps the answer sets going, while the run goes on.
    let steps = if args.client.json { None } else { Steps::follow(&args.client, Some(&args.task)).await };
    let v = client
        .call(methods::SEND_MESSAGE, &req)
        .await
        .with_context(|| format!("the answer to task {} was refused", args.task))?;
    if let Some(s) = steps
        && let Some(state) = v["task"]["status"]["state"].as_str().and_then(TaskState::from_name)
    {
        s.finish(state).await;
    }
    if args.client.json {
        output::json_pretty(&v)?;
    }
    let resp: SendMessageResponse =
        serde_json::from_value(v).context("the daemon's SendMessage answer is not a task or a message")?;
    match resp {
        SendMessageResponse::Message(_) if args.client.json => Ok(()),
        SendMessageResponse::Message(m) => output::line(&m.text()),
        SendMessageResponse::Task(t) if args.client.json => exit::check_task(&t),
        SendMessageResponse::Task(t) => {
            output::line(state_name(t.status.state))?;
            // FAILED, REJECTED, CANCELED: the reason is in the error.
            exit::check_task(&t)?;
            if let Some(text) = output::status_text(&t.status) {
                note(&text);
            }
            note(&output::task_summary(&t));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::answer_part;
    use agentd_proto::Part;
    use serde_json::json;

    #[test]
    fn json_answers_are_data_and_the_rest_is_text() {
        assert_eq!(answer_part(r#"{"approve":true}"#), Part::data(json!({"approve": true})));
        assert_eq!(answer_part("42"), Part::data(json!(42)));
        assert_eq!(answer_part("yes, ship it"), Part::text("yes, ship it"));
    }
}
