//! The `echo` model: answers with the last user message, lists the reminder
//! blocks it was given, streams in a few deltas, never calls tools.

use agentd_runtime::model::{
    ChatMessage, ModelConfig, ModelError, ModelProvider, ModelRequest, ModelResponse, ToolCall, reminder,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

async fn run(req: &ModelRequest) -> (ModelResponse, Vec<String>) {
    let echo = agentd_runtime::model::from_config(ModelConfig::default()).unwrap();
    assert_eq!(echo.name(), "echo");
    let (tx, mut rx) = mpsc::channel(64);
    let r = echo.complete(req, &tx, &CancellationToken::new()).await.unwrap();
    drop(tx);
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    (r, deltas)
}

fn req(messages: Vec<ChatMessage>) -> ModelRequest {
    ModelRequest { messages, ..Default::default() }
}

#[tokio::test]
async fn echoes_the_last_user_message_in_a_few_deltas() {
    let (r, deltas) = run(&req(vec![
        ChatMessage::system("You are helpful."),
        ChatMessage::user("first question"),
        ChatMessage::assistant("first answer"),
        ChatMessage::user("what is the capital of France?"),
    ]))
    .await;
    assert_eq!(r.text, "echo: what is the capital of France?");
    assert!((2..=3).contains(&deltas.len()), "{deltas:?}");
    assert_eq!(deltas.concat(), r.text);
    assert!(r.tool_calls.is_empty());
    assert_eq!(r.finish_reason, "stop");
    assert_eq!(r.usage.output_tokens, 7);
    assert_eq!(r.usage.input_tokens, 3 + 2 + 2 + 6);
}

#[tokio::test]
async fn lists_the_reminders_appended_after_the_conversation() {
    let blocks = [
        reminder::render("agent:coordinator", "r1", "Be brief."),
        reminder::render("ops", "r2", "Use\nmetric units."),
    ];
    let (r, _) = run(&req(vec![
        ChatMessage::system("You are helpful."),
        ChatMessage::user(format!("how far is Paris?\n\n{}\n{}", blocks[0], blocks[1])),
    ]))
    .await;
    assert_eq!(r.text, "echo: how far is Paris?\nreminders: [r1] Be brief.; [r2] Use metric units.");
}

#[tokio::test]
async fn reminders_in_their_own_user_message_after_a_tool_result() {
    let call = ToolCall { id: "c1".into(), name: "lookup".into(), arguments: "{}".into() };
    let (r, _) = run(&req(vec![
        ChatMessage::system("s"),
        ChatMessage::user("look it up"),
        ChatMessage::assistant_with_tools("", vec![call]),
        ChatMessage::tool_result("c1", "found"),
        ChatMessage::user("<system-reminder source=ops id=42>deadline is noon</system-reminder>"),
    ]))
    .await;
    assert_eq!(r.text, "echo: look it up\nreminders: [42] deadline is noon");
}

#[tokio::test]
async fn no_user_message_and_cancellation() {
    let (r, _) = run(&req(vec![ChatMessage::system("s")])).await;
    assert_eq!(r.text, "echo: ");
    let echo = agentd_runtime::model::EchoProvider;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (tx, _rx) = mpsc::channel(4);
    assert_eq!(echo.complete(&req(vec![]), &tx, &cancel).await, Err(ModelError::Cancelled));
}
