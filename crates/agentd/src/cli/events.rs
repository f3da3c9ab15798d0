//! `agentd events [--from-seq N] [--kinds a,b]`: tails the events feed.
//! One line per event (`seq  ts  kind  summary`), or with `--json` every
//! frame's `result` as received; the daemon's `goodbye` ends it.

use super::ClientOpts;
use super::client::Client;
use super::output;
use agentd_proto::ext::events::{EventKind, Frame, GoodbyeReason, METHOD, SubscribeParams, URI};
use anyhow::Context;
use clap::Args;
use serde_json::Value;

#[derive(Args, Debug)]
pub struct EventsArgs {
    /// Resume after this seq (the last one you saw).
    #[arg(long, value_name = "N")]
    pub from_seq: Option<u64>,
    /// Only these kinds, comma-separated: task, conversation, subagent, lifecycle, …
    #[arg(long, value_name = "KINDS", value_delimiter = ',', value_parser = parse_kind)]
    pub kinds: Option<Vec<EventKind>>,
    #[command(flatten)]
    pub client: ClientOpts,
}

fn parse_kind(s: &str) -> Result<EventKind, String> {
    EventKind::parse(s.trim()).ok_or_else(|| {
        let known: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
        format!("unknown kind {s:?}; known: {}", known.join(", "))
    })
}

pub async fn run(a: EventsArgs) -> anyhow::Result<()> {
    let client = Client::new(&a.client)?.with_extensions(&[URI])?;
    let params = SubscribeParams { from_seq: a.from_seq, kinds: a.kinds };
    let mut frames = client.stream(METHOD, &params).await?;
    while let Some(v) = frames.next().await? {
        if a.client.json {
            output::json_line(&v)?;
            continue;
        }
        let frame: Frame =
            serde_json::from_value(v).context("the daemon sent a frame that is not a feed frame")?;
        match frame {
            Frame::Hello(h) if h.resync => output::note(&format!(
                "events after --from-seq are no longer kept (or never were); continuing live after {}",
                h.seq
            )),
            Frame::Hello(_) => {}
            Frame::Event(e) => output::line(&format!(
                "{}  {}  {:<12}  {}",
                e.seq,
                e.ts.to_wire(),
                e.kind.as_str(),
                summary(&e.data)
            ))?,
            Frame::Goodbye(g) => {
                let resume = format!("resume with --from-seq {}", g.seq);
                return match g.reason {
                    GoodbyeReason::Shutdown => {
                        output::note(&format!("the daemon is stopping; {resume}"));
                        Ok(())
                    }
                    GoodbyeReason::Lagged => {
                        anyhow::bail!(
                            "this feed fell behind what the daemon keeps; {resume} (it will resync)"
                        )
                    }
                };
            }
        }
    }
    Ok(())
}

/// A task event as `id STATE`; anything else as its data on one line.
fn summary(data: &Value) -> String {
    match (data["id"].as_str(), data["status"]["state"].as_str()) {
        (Some(id), Some(state)) => format!("{id} {state}"),
        _ => data.to_string(),
    }
}
