//! What a bridge POSTs: the webhook JSON, or a Slack incoming-webhook
//! message built from the same facts.

use agentd_core::GateAnnouncement;
use serde_json::{Value, json};

/// The webhook body: `{taskId, runId, question, askSchema, channel,
/// target, answerHint, escalation}` (`runId`, `askSchema` null when absent).
/// `channel` is the channel's address, `@channel/<name>`, however the
/// announcement named it. `target` is the channel's target as declared (a
/// secret reference stays a reference).
pub fn webhook_body(a: &GateAnnouncement, declared_target: &str) -> Value {
    let name = a.channel.strip_prefix("@channel/").unwrap_or(&a.channel);
    json!({
        "taskId": a.task_id,
        "runId": a.run_id,
        "question": a.question,
        "askSchema": a.ask_schema,
        "channel": format!("@channel/{name}"),
        "target": declared_target,
        "answerHint": a.answer_hint,
        "escalation": a.escalation,
    })
}

/// Slack's mrkdwn needs `&`, `<` and `>` escaped; nothing else.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A Slack incoming-webhook message: `text` (the notification and
/// fallback) and `blocks` (question, answer schema, how to answer).
pub fn slack_body(a: &GateAnnouncement) -> Value {
    let lead = if a.escalation { "Still waiting for an answer" } else { "A question needs an answer" };
    let run = a.run_id.as_deref().map(|r| format!(" (run {})", escape(r))).unwrap_or_default();
    let text = format!("{lead}{run}: {}", escape(&a.question));
    let mut blocks = vec![
        json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("*{lead}*{run}\n{}", escape(&a.question))}}),
    ];
    if let Some(schema) = &a.ask_schema {
        let pretty = serde_json::to_string_pretty(schema).unwrap_or_else(|_| schema.to_string());
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("Answer schema:\n```{}```", escape(&pretty))}}));
    }
    blocks.push(json!({"type": "context", "elements": [
        {"type": "mrkdwn", "text": format!("Task `{}` · answer with `{}`", escape(&a.task_id), escape(&a.answer_hint))}
    ]}));
    json!({"text": text, "blocks": blocks})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ann() -> GateAnnouncement {
        GateAnnouncement {
            task_id: "t1".into(),
            run_id: Some("demo-01J".into()),
            question: "Ship <v2> & tag it?".into(),
            ask_schema: Some(json!({"type": "object"})),
            channel: "ops".into(),
            escalation: false,
            answer_hint: "agentd answer t1 '{\"approve\":true}'".into(),
        }
    }

    #[test]
    fn webhook_bodies_carry_every_member() {
        let b = webhook_body(&ann(), "https://hooks.example/x");
        assert_eq!(b["taskId"], "t1");
        assert_eq!(b["runId"], "demo-01J");
        assert_eq!(b["askSchema"], json!({"type": "object"}));
        assert_eq!(b["target"], "https://hooks.example/x");
        assert_eq!(b["channel"], "@channel/ops", "the address, from the bare name too");
        assert_eq!(b["escalation"], false);
        let bare = GateAnnouncement { run_id: None, ask_schema: None, ..ann() };
        let b = webhook_body(&bare, "x");
        assert!(b["runId"].is_null() && b["askSchema"].is_null(), "{b}");
    }

    #[test]
    fn slack_bodies_escape_and_show_the_schema() {
        let b = slack_body(&ann());
        let text = b["text"].as_str().unwrap();
        assert!(text.contains("Ship &lt;v2&gt; &amp; tag it?"), "{text}");
        let blocks = b["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 3);
        assert!(blocks[1]["text"]["text"].as_str().unwrap().contains("\"type\": \"object\""));
        let esc = slack_body(&GateAnnouncement { escalation: true, ask_schema: None, ..ann() });
        assert!(esc["text"].as_str().unwrap().starts_with("Still waiting"), "{esc}");
        assert_eq!(esc["blocks"].as_array().unwrap().len(), 2);
    }
}
