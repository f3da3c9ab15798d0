//! Reminders in the model input: after the conversation, never inside it,
//! so the system prompt and the history prefix stay byte-identical from
//! one model call to the next (provider prompt caches keep working).

use crate::model::reminder::render;
use crate::model::{ChatMessage, ChatRole};
use agentd_core::DeliveredReminder;
use agentd_proto::ext::reminders::RoleHint;

/// The messages that carry `reminders`, to append after the conversation.
/// By default one user-role message holds every block. When the provider
/// honours role hints, reminders hinted `system` or `developer` go in a
/// message of that role instead (still after the conversation).
pub fn reminder_messages(reminders: &[DeliveredReminder], role_hints: bool) -> Vec<ChatMessage> {
    let slot = |r: &DeliveredReminder| match r.role_hint {
        Some(RoleHint::System) if role_hints => ChatRole::System,
        Some(RoleHint::Developer) if role_hints => ChatRole::Developer,
        _ => ChatRole::User,
    };
    [ChatRole::System, ChatRole::Developer, ChatRole::User]
        .into_iter()
        .filter_map(|role| {
            let blocks: Vec<String> = reminders
                .iter()
                .filter(|r| slot(r) == role)
                .map(|r| render(&r.source, &r.id, &r.body))
                .collect();
            (!blocks.is_empty()).then(|| ChatMessage::new(role, blocks.join("\n")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(id: &str, hint: Option<RoleHint>) -> DeliveredReminder {
        DeliveredReminder {
            id: id.into(),
            source: "agent:c".into(),
            body: format!("body {id}"),
            role_hint: hint,
        }
    }

    #[test]
    fn one_user_block_unless_the_provider_honours_hints() {
        let rs = [r("a", Some(RoleHint::System)), r("b", None), r("c", Some(RoleHint::Developer))];
        let plain = reminder_messages(&rs, false);
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].role, ChatRole::User);
        assert_eq!(
            plain[0].content,
            [
                render("agent:c", "a", "body a"),
                render("agent:c", "b", "body b"),
                render("agent:c", "c", "body c")
            ]
            .join("\n")
        );
        let hinted = reminder_messages(&rs, true);
        let roles: Vec<ChatRole> = hinted.iter().map(|m| m.role).collect();
        assert_eq!(roles, [ChatRole::System, ChatRole::Developer, ChatRole::User]);
        assert!(hinted[0].content.contains("id=\"a\""));
        assert!(reminder_messages(&[], true).is_empty());
    }
}
