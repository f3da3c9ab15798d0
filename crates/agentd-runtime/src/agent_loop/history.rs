//! From a conversation's turns to model messages, within a token budget.
//!
//! Policy: the current turn is always sent whole. Earlier turns are sent
//! oldest first, and when they do not fit the budget (estimated at four
//! characters a token) the oldest whole turns are dropped until they do.
//! A turn that did not complete contributes its client input only, never
//! the failure notes the daemon wrote into it.

use crate::model::ChatMessage;
use agentd_core::ConversationTurn;
use agentd_proto::{Message, PartContent, Role, TaskState};

/// The text a model sees for a message: text parts as they are, data as
/// JSON, files as a short placeholder.
pub fn message_text(m: &Message) -> String {
    let parts: Vec<String> = m
        .parts
        .iter()
        .map(|p| match &p.content {
            PartContent::Text(t) => t.to_string(),
            PartContent::Data(v) => v.to_string(),
            PartContent::Url(u) => format!("[file {u}]"),
            PartContent::Raw(b) => {
                let name = if p.filename.is_empty() { "inline file" } else { p.filename.as_str() };
                format!("[{name}, {} bytes]", b.len())
            }
        })
        .collect();
    parts.join("\n")
}

fn turn_messages(turn: &ConversationTurn, current: bool) -> Vec<ChatMessage> {
    let keep_agent = current || turn.state == TaskState::Completed;
    turn.messages
        .iter()
        .filter(|m| m.role == Role::User || keep_agent)
        .map(|m| match m.role {
            Role::Agent => ChatMessage::assistant(message_text(m)),
            _ => ChatMessage::user(message_text(m)),
        })
        .collect()
}

fn estimate_tokens(msgs: &[ChatMessage]) -> usize {
    msgs.iter().map(|m| m.content.len().div_ceil(4) + 4).sum()
}

/// Model messages for a conversation whose last turn is the current one.
pub fn render_history(turns: &[ConversationTurn], budget_tokens: usize) -> Vec<ChatMessage> {
    let Some((current, earlier)) = turns.split_last() else { return Vec::new() };
    let mut kept: Vec<Vec<ChatMessage>> = Vec::new();
    let mut used = 0;
    for turn in earlier.iter().rev() {
        let msgs = turn_messages(turn, false);
        let cost = estimate_tokens(&msgs);
        if used + cost > budget_tokens {
            break;
        }
        used += cost;
        kept.push(msgs);
    }
    let mut out: Vec<ChatMessage> = kept.into_iter().rev().flatten().collect();
    out.extend(turn_messages(current, true));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ChatRole;

    fn turn(state: TaskState, msgs: &[(Role, &str)]) -> ConversationTurn {
        ConversationTurn {
            task_id: "t".into(),
            state,
            messages: msgs
                .iter()
                .map(|(role, text)| Message { role: *role, ..Message::agent_text(*text) })
                .collect(),
        }
    }

    #[test]
    fn earlier_turns_come_first_and_failures_keep_only_input() {
        let turns = vec![
            turn(TaskState::Completed, &[(Role::User, "hi"), (Role::Agent, "hello")]),
            turn(TaskState::Failed, &[(Role::User, "boom"), (Role::Agent, "the model call failed")]),
            turn(TaskState::Working, &[(Role::User, "again")]),
        ];
        let got: Vec<(ChatRole, String)> =
            render_history(&turns, 10_000).into_iter().map(|m| (m.role, m.content)).collect();
        let want = [
            (ChatRole::User, "hi"),
            (ChatRole::Assistant, "hello"),
            (ChatRole::User, "boom"),
            (ChatRole::User, "again"),
        ];
        assert_eq!(got, want.map(|(r, t)| (r, t.to_owned())));
    }

    #[test]
    fn the_oldest_turns_are_dropped_to_fit_the_budget_but_never_the_current_one() {
        let long = "x".repeat(400); // ~100 tokens
        let turns = vec![
            turn(TaskState::Completed, &[(Role::User, &long)]),
            turn(TaskState::Completed, &[(Role::User, "recent")]),
            turn(TaskState::Working, &[(Role::User, &long)]),
        ];
        let got = render_history(&turns, 50);
        assert_eq!(got.len(), 2, "the long old turn is dropped: {got:?}");
        assert_eq!(got[0].content, "recent");
        assert_eq!(got[1].content.len(), 400, "the current turn is sent whole even over budget");
    }
}
