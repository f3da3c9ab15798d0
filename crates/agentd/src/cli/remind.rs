//! `agentd remind TASK_ID TEXT`: InjectTaskReminder on a running task.

use super::ClientOpts;
use super::client::Client;
use super::output;
use agentd_proto::ext::reminders::{
    self, InjectTaskReminderRequest, InjectTaskReminderResponse, Propagate, ReminderInput,
};
use anyhow::Context;
use clap::Args;

#[derive(Args, Debug)]
pub struct RemindArgs {
    /// The task to remind.
    pub task_id: String,
    /// What the task's model should keep in mind.
    pub text: String,
    /// A newer reminder with the same key replaces the active ones.
    #[arg(long, value_name = "K")]
    pub dedupe_key: Option<String>,
    /// Model calls the reminder reaches before it expires (default 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub ttl: Option<u32>,
    /// Also copy it to the task's subagents, live and spawned while it is
    /// active (`propagate: subagents`).
    #[arg(long)]
    pub propagate: bool,
    #[command(flatten)]
    pub client: ClientOpts,
}

pub async fn run(a: RemindArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.client)?;
    let req = InjectTaskReminderRequest {
        task_id: a.task_id,
        reminder: ReminderInput {
            body: a.text,
            dedupe_key: a.dedupe_key,
            ttl_turns: a.ttl,
            propagate: a.propagate.then_some(Propagate::Subagents),
            ..Default::default()
        },
        ..Default::default()
    };
    let v = client.call(reminders::METHOD, &req).await?;
    if a.client.json {
        return output::json_pretty(&v);
    }
    let r: InjectTaskReminderResponse =
        serde_json::from_value(v).context("the daemon's answer is not an InjectTaskReminder result")?;
    output::line(&r.reminder_id)?;
    if !r.displaced.is_empty() {
        output::note(&format!("displaced: {}", r.displaced.join(", ")));
    }
    Ok(())
}
