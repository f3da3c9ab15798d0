//! `agentd run WORKFLOW`: starts a workflow run with the `workflow.run`
//! command op and prints the run task like `agentd send` prints a reply.

use super::ClientOpts;
use super::client::Client;
use super::progress::Steps;
use super::send;
use agentd_proto::{Message, Part, Role, SendMessageRequest, new_id};
use anyhow::{Context, bail};
use clap::Args;
use serde_json::{Map, Value, json};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The workflow's name (`:::!workflow{name=…}` in the instruction document).
    #[arg(value_name = "WORKFLOW")]
    pub workflow: String,
    /// One input, `KEY=VALUE`; VALUE is read as JSON when it parses (`n=3`,
    /// `ok=true`), else as text. Repeatable.
    #[arg(long = "input", value_name = "KEY=VALUE", conflicts_with = "inputs")]
    pub input: Vec<String>,
    /// All inputs as one JSON object.
    #[arg(long, value_name = "JSON")]
    pub inputs: Option<String>,
    /// Wait for the whole run and print it at once (SendMessage).
    #[arg(long)]
    pub no_stream: bool,
    #[command(flatten)]
    pub client: ClientOpts,
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let client = Client::new(&args.client)?;
    let inputs = inputs(&args.input, args.inputs.as_deref())?;
    let command = json!({"agentd": {"op": "workflow.run", "workflow": args.workflow, "inputs": inputs}});
    let message = Message {
        message_id: new_id(),
        role: Role::User,
        parts: vec![Part::data(command)],
        ..Default::default()
    };
    let req = SendMessageRequest { message: Some(message), ..Default::default() };
    if args.no_stream || args.client.json {
        send::unary(&client, &req, args.client.json).await
    } else {
        let steps = Steps::follow(&args.client, None).await;
        send::stream(&client, &req, false, steps).await
    }
}

/// The `inputs` object from `--inputs JSON` or the `--input KEY=VALUE` list.
fn inputs(pairs: &[String], object: Option<&str>) -> anyhow::Result<Value> {
    if let Some(text) = object {
        let v: Value = serde_json::from_str(text).context("--inputs is not JSON")?;
        if !v.is_object() {
            bail!("--inputs must be a JSON object, like '{{\"topic\": \"rust\"}}'");
        }
        return Ok(v);
    }
    let mut out = Map::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("--input {pair:?} is not KEY=VALUE");
        };
        let key = key.trim();
        if key.is_empty() {
            bail!("--input {pair:?} has an empty KEY");
        }
        let value = serde_json::from_str(value).unwrap_or_else(|_| Value::String(value.to_owned()));
        if out.insert(key.to_owned(), value).is_some() {
            bail!("--input {key:?} is given twice");
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::inputs;
    use serde_json::json;

    #[test]
    fn pairs_read_json_values_and_fall_back_to_text() {
        let pairs = ["n=3".to_owned(), "ok=true".to_owned(), "topic=rust lang".to_owned(), "e=".to_owned()];
        assert_eq!(inputs(&pairs, None).unwrap(), json!({"n": 3, "ok": true, "topic": "rust lang", "e": ""}));
        assert!(inputs(&["x".to_owned()], None).unwrap_err().to_string().contains("KEY=VALUE"));
        assert!(inputs(&["a=1".to_owned(), "a=2".to_owned()], None).is_err());
        assert_eq!(inputs(&[], Some(r#"{"a":[1]}"#)).unwrap(), json!({"a": [1]}));
        assert!(inputs(&[], Some("[1]")).unwrap_err().to_string().contains("object"));
        assert_eq!(inputs(&[], None).unwrap(), json!({}));
    }
}
