//! The reminders extension as the card declares it.

use agentd_core::ReminderLimits;
use agentd_proto::ext::reminders::{self, Propagate, RemindersCapabilities, RoleHint};
use agentd_proto::jsonrpc::methods;
use agentd_proto::serde_util::WireName;
use agentd_server::DeclaredExtension;

/// The card entry: never required; `params` are the capabilities. It is
/// activated by InjectTaskReminder (echoed only; the method works without
/// it), by SendMessage (the compatibility path) and by the two streaming
/// methods, whose streams then carry the lifecycle events.
pub fn declared(limits: &ReminderLimits) -> DeclaredExtension {
    let caps = RemindersCapabilities {
        inject: true,
        emit: true,
        propagate: Propagate::ALL.to_vec(),
        role_hints: RoleHint::ALL.to_vec(),
        max_ttl_turns: limits.max_ttl_turns,
        max_body_bytes: limits.max_body_bytes,
        max_pending_per_task: limits.max_pending_per_task,
    };
    let params = match serde_json::to_value(caps) {
        Ok(serde_json::Value::Object(m)) => Some(m),
        _ => None,
    };
    DeclaredExtension {
        uri: reminders::URI.into(),
        description: "Reminders: InjectTaskReminder adds ambient context a running task's model sees at its \
                      next model calls, without entering its history (see params for the limits)"
            .into(),
        required: false,
        params,
        methods: vec![
            reminders::METHOD.into(),
            methods::SEND_MESSAGE.into(),
            methods::SEND_STREAMING_MESSAGE.into(),
            methods::SUBSCRIBE_TO_TASK.into(),
        ],
    }
}
