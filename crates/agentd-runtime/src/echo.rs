//! The `echo` agent: offline and deterministic. Each turn goes WORKING,
//! streams its reply as an artifact in two chunks (stored as one text
//! part), then COMPLETED.

use agentd_core::{Agent, Turn};
use agentd_proto::{Artifact, Message, Part, PartContent};
use async_trait::async_trait;

pub struct EchoAgent;

/// What the echo model answers to a message.
pub fn echo_reply(input: &Message) -> String {
    let mut out = Vec::new();
    for part in &input.parts {
        match &part.content {
            PartContent::Text(t) => out.push(t.to_string()),
            PartContent::Data(v) => out.push(v.to_string()),
            PartContent::Url(u) => out.push(format!("<file {u}>")),
            PartContent::Raw(b) => out.push(format!("<{} bytes>", b.len())),
        }
    }
    format!("echo: {}", out.join("\n"))
}

#[async_trait]
impl Agent for EchoAgent {
    async fn run(&self, turn: Turn) {
        let c = turn.control;
        let reply = echo_reply(&turn.input);
        let result = async {
            c.working(None).await?;
            // Streamed in two chunks, as a model's deltas would be.
            let split = reply.char_indices().nth(6).map_or(reply.len(), |(i, _)| i);
            let (head, tail) = reply.split_at(split);
            let chunk = |text: &str| Artifact {
                artifact_id: format!("{}-reply", c.task_id()),
                name: "reply".into(),
                parts: vec![Part::text(text)],
                ..Default::default()
            };
            c.text_chunk(chunk(head), false, tail.is_empty()).await?;
            if !tail.is_empty() {
                c.text_chunk(chunk(tail), true, true).await?;
            }
            c.complete(Some(Message::agent_text(reply.clone()))).await
        }
        .await;
        if let Err(e) = result {
            tracing::debug!(task = c.task_id(), error = %e, "echo turn ended early");
        }
    }
}
