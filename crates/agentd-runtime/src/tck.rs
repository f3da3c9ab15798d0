//! The `tck` profile: the behaviour the A2A conformance kit expects, chosen
//! by the prefix of the incoming messageId (kit scenarios, `tck-<name>-…`).

use agentd_core::{Agent, Error, TaskControl, Turn};
use agentd_proto::{Artifact, Message, Part, PartContent, new_id};
use async_trait::async_trait;
use serde_json::json;
use std::sync::Arc;

pub struct TckAgent;

#[async_trait]
impl Agent for TckAgent {
    fn direct_reply(&self, message: &Message) -> Option<Message> {
        message
            .message_id
            .starts_with("tck-message-response")
            .then(|| Message::agent_text("Direct message response"))
    }

    async fn run(&self, turn: Turn) {
        let c = turn.control;
        if let Err(e) = scenario(&c, &turn.input.message_id).await {
            tracing::debug!(task = c.task_id(), error = %e, "tck scenario ended early");
        }
    }
}

fn artifact(parts: Vec<Part>) -> Artifact {
    Artifact { artifact_id: new_id(), parts, ..Default::default() }
}

fn file_part(content: PartContent) -> Part {
    Part { filename: "output.txt".into(), media_type: "text/plain".into(), ..Part::new(content) }
}

async fn streamed(c: &TaskControl, text: &str) -> Result<(), Error> {
    c.working(None).await?;
    c.artifact(artifact(vec![Part::text(text)]), false, true).await?;
    c.complete(None).await
}

async fn scenario(c: &TaskControl, id: &str) -> Result<(), Error> {
    let has = |p: &str| id.starts_with(p);
    if has("tck-stream-artifact-chunked") {
        c.working(None).await?;
        let chunk = |t: &str| Artifact {
            artifact_id: "chunked".into(),
            parts: vec![Part::text(t)],
            ..Default::default()
        };
        c.artifact(chunk("chunk-1 "), false, false).await?;
        c.artifact(chunk("chunk-2"), true, true).await?;
        c.complete(None).await
    } else if has("test-resubscribe-message-id") {
        c.working(None).await?;
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_secs(4)) => c.complete(None).await,
            _ = c.cancelled().cancelled() => Ok(()),
        }
    } else if has("tck-stream-artifact-text") {
        streamed(c, "Streamed text content").await
    } else if has("tck-stream-artifact-file") {
        c.working(None).await?;
        c.artifact(artifact(vec![file_part(PartContent::Raw(Arc::new(b"tck".to_vec())))]), false, true)
            .await?;
        c.complete(None).await
    } else if has("tck-stream-ordering-001") {
        streamed(c, "Ordered output").await
    } else if has("tck-stream-001") {
        streamed(c, "Stream hello from TCK").await
    } else if has("tck-stream-002") {
        c.complete(None).await
    } else if has("tck-stream-003") {
        streamed(c, "Stream task lifecycle").await
    } else if has("tck-artifact-file-url") {
        let part = file_part(PartContent::Url("https://example.com/output.txt".into()));
        c.artifact(artifact(vec![part]), false, true).await?;
        c.complete(None).await
    } else if has("tck-artifact-file") {
        c.artifact(artifact(vec![file_part(PartContent::Raw(Arc::new(b"tck".to_vec())))]), false, true)
            .await?;
        c.complete(None).await
    } else if has("tck-artifact-text") {
        c.artifact(artifact(vec![Part::text("Generated text content")]), false, true).await?;
        c.complete(None).await
    } else if has("tck-artifact-data") {
        c.artifact(artifact(vec![Part::data(json!({"key": "value", "count": 42}))]), false, true).await?;
        c.complete(None).await
    } else if has("tck-input-required") {
        c.input_required(Message::agent_text("Please provide more input")).await
    } else if has("tck-reject-task") {
        c.reject(Message::agent_text("rejected")).await
    } else if has("tck-complete-task") {
        c.complete(Some(Message::agent_text("Hello from TCK"))).await
    } else {
        c.complete(Some(Message::agent_text("Unhandled messageId prefix"))).await
    }
}
