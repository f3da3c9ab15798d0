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
    /// One input, `KEY=VALUE`; VALUE is a string as written (`version=1.2`
    /// is "1.2"). Repeatable.
    #[arg(long = "input", value_name = "KEY=VALUE", conflicts_with = "inputs")]
    pub input: Vec<String>,
    /// One input whose VALUE is JSON: a number, boolean, list or object
    /// (`n=3`, `urgent=true`, `tags='["a","b"]'`). Repeatable.
    #[arg(long = "input-json", value_name = "KEY=JSON", conflicts_with = "inputs")]
    pub input_json: Vec<String>,
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
    let inputs = inputs(&args.input, &args.input_json, args.inputs.as_deref())?;
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

/// The `inputs` object from `--inputs JSON`, or the `--input KEY=VALUE`
/// (strings) and `--input-json KEY=JSON` lists. A value is never guessed:
/// `version=1.2` read as JSON would be the number 1.2, which a schema
/// asking for a string refuses (and `1.10` would become 1.1).
fn inputs(text: &[String], json: &[String], object: Option<&str>) -> anyhow::Result<Value> {
    if let Some(text) = object {
        let v: Value = serde_json::from_str(text).context("--inputs is not JSON")?;
        if !v.is_object() {
            bail!("--inputs must be a JSON object, like '{{\"topic\": \"rust\"}}'");
        }
        return Ok(v);
    }
    let mut out = Map::new();
    let tagged = text.iter().map(|p| ("--input", p)).chain(json.iter().map(|p| ("--input-json", p)));
    for (flag, pair) in tagged {
        let Some((key, value)) = pair.split_once('=') else {
            bail!("{flag} {pair:?} is not KEY=VALUE");
        };
        let key = key.trim();
        if key.is_empty() {
            bail!("{flag} {pair:?} has an empty KEY");
        }
        let value = match flag {
            "--input-json" => serde_json::from_str(value).with_context(|| {
                format!("--input-json {key}: {value:?} is not JSON (a string is written --input {key}=TEXT)")
            })?,
            _ => Value::String(value.to_owned()),
        };
        if out.insert(key.to_owned(), value).is_some() {
            bail!("the input {key:?} is given twice");
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::inputs;
    use serde_json::json;

    fn owned(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn input_values_are_strings_and_input_json_values_json() {
        let text = owned(&["version=1.2", "n=3", "ok=true", "topic=rust lang", "e="]);
        assert_eq!(
            inputs(&text, &[], None).unwrap(),
            json!({"version": "1.2", "n": "3", "ok": "true", "topic": "rust lang", "e": ""})
        );
        let typed = owned(&["n=3", "urgent=true", r#"tags=["a"]"#]);
        assert_eq!(
            inputs(&owned(&["version=1.10"]), &typed, None).unwrap(),
            json!({"version": "1.10", "n": 3, "urgent": true, "tags": ["a"]})
        );
        let e = format!("{:#}", inputs(&[], &owned(&["v=1.2.3"]), None).unwrap_err());
        assert!(e.contains("is not JSON") && e.contains("--input v="), "{e}");
        assert!(inputs(&owned(&["x"]), &[], None).unwrap_err().to_string().contains("KEY=VALUE"));
        assert!(inputs(&owned(&["a=1"]), &owned(&["a=2"]), None).unwrap_err().to_string().contains("twice"));
        assert_eq!(inputs(&[], &[], Some(r#"{"a":[1]}"#)).unwrap(), json!({"a": [1]}));
        assert!(inputs(&[], &[], Some("[1]")).unwrap_err().to_string().contains("object"));
        assert_eq!(inputs(&[], &[], None).unwrap(), json!({}));
    }
}
