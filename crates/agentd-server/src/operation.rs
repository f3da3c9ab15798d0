//! The operation table: every operation a binding can ask of the agent, as
//! one closed enum holding its typed request. JSON-RPC decodes a method
//! name and params into it, the REST router names its [`OperationKind`] and
//! decodes the assembled params the same way, and gRPC converts its prost
//! request into it; [`crate::dispatch::execute`] runs it for all three. A
//! new operation is a new variant here, and every exhaustive match over
//! operations (decoding, execution, each binding's table) asks for it.

use crate::params::RequestContext;
use agentd_proto::ext::{events, reminders};
use agentd_proto::jsonrpc::methods as m;
use agentd_proto::validate::Params;
use agentd_proto::{
    A2aError, CancelTaskRequest, ErrorKind, GetExtendedAgentCardRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
    TaskPushConfigRef, TaskPushNotificationConfig,
};

/// An operation with its decoded request.
#[derive(Debug)]
pub enum Operation {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    SubscribeToTask(SubscribeToTaskRequest),
    CreatePushConfig(TaskPushNotificationConfig),
    GetPushConfig(TaskPushConfigRef),
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    DeletePushConfig(TaskPushConfigRef),
    GetExtendedCard(GetExtendedAgentCardRequest),
    /// The reminders extension's method.
    InjectReminder(reminders::InjectTaskReminderRequest),
    /// The events extension's feed (JSON-RPC only).
    SubscribeEvents(events::SubscribeParams),
}

/// Which operation, before its request is decoded: what a binding knows
/// from the method name or the route alone (service parameters and stream
/// admission are settled on it before the body is read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperationKind {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreatePushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
    GetExtendedCard,
    InjectReminder,
    SubscribeEvents,
}

impl Operation {
    pub fn kind(&self) -> OperationKind {
        use OperationKind as K;
        match self {
            Operation::SendMessage(_) => K::SendMessage,
            Operation::SendStreamingMessage(_) => K::SendStreamingMessage,
            Operation::GetTask(_) => K::GetTask,
            Operation::ListTasks(_) => K::ListTasks,
            Operation::CancelTask(_) => K::CancelTask,
            Operation::SubscribeToTask(_) => K::SubscribeToTask,
            Operation::CreatePushConfig(_) => K::CreatePushConfig,
            Operation::GetPushConfig(_) => K::GetPushConfig,
            Operation::ListPushConfigs(_) => K::ListPushConfigs,
            Operation::DeletePushConfig(_) => K::DeletePushConfig,
            Operation::GetExtendedCard(_) => K::GetExtendedCard,
            Operation::InjectReminder(_) => K::InjectReminder,
            Operation::SubscribeEvents(_) => K::SubscribeEvents,
        }
    }
}

impl OperationKind {
    /// Every kind, in declaration order (a new kind goes at the end; the
    /// assertion below keeps the list complete up to the last kind).
    pub const ALL: [Self; 13] = {
        use OperationKind as K;
        [
            K::SendMessage,
            K::SendStreamingMessage,
            K::GetTask,
            K::ListTasks,
            K::CancelTask,
            K::SubscribeToTask,
            K::CreatePushConfig,
            K::GetPushConfig,
            K::ListPushConfigs,
            K::DeletePushConfig,
            K::GetExtendedCard,
            K::InjectReminder,
            K::SubscribeEvents,
        ]
    };

    /// The method name: the JSON-RPC method, and what extension
    /// declarations list.
    pub fn method(self) -> &'static str {
        match self {
            Self::SendMessage => m::SEND_MESSAGE,
            Self::SendStreamingMessage => m::SEND_STREAMING_MESSAGE,
            Self::GetTask => m::GET_TASK,
            Self::ListTasks => m::LIST_TASKS,
            Self::CancelTask => m::CANCEL_TASK,
            Self::SubscribeToTask => m::SUBSCRIBE_TO_TASK,
            Self::CreatePushConfig => m::CREATE_PUSH_CONFIG,
            Self::GetPushConfig => m::GET_PUSH_CONFIG,
            Self::ListPushConfigs => m::LIST_PUSH_CONFIGS,
            Self::DeletePushConfig => m::DELETE_PUSH_CONFIG,
            Self::GetExtendedCard => m::GET_EXTENDED_CARD,
            Self::InjectReminder => reminders::METHOD,
            Self::SubscribeEvents => events::METHOD,
        }
    }

    /// The kind a JSON-RPC method names (the release-candidate spelling
    /// of ListTaskPushNotificationConfigs included).
    pub fn from_method(method: &str) -> Option<Self> {
        if method == m::LIST_PUSH_CONFIGS_RC {
            return Some(Self::ListPushConfigs);
        }
        Self::ALL.into_iter().find(|k| k.method() == method)
    }

    /// Whether the operation answers with a stream (and so takes a place
    /// under the stream cap).
    pub fn is_stream(self) -> bool {
        match self {
            Self::SendStreamingMessage | Self::SubscribeToTask | Self::SubscribeEvents => true,
            Self::SendMessage
            | Self::GetTask
            | Self::ListTasks
            | Self::CancelTask
            | Self::CreatePushConfig
            | Self::GetPushConfig
            | Self::ListPushConfigs
            | Self::DeletePushConfig
            | Self::GetExtendedCard
            | Self::InjectReminder => false,
        }
    }

    /// The params (JSON-RPC's, lent from the body, or REST's assembled
    /// from path, query and body) as this operation's request:
    /// InvalidParams naming the field.
    /// The events feed is ExtensionNotActivated unless the request
    /// activated its extension, whatever the params.
    pub fn decode(self, params: Params<'_>, ctx: &RequestContext) -> Result<Operation, A2aError> {
        Ok(match self {
            Self::SendMessage => Operation::SendMessage(params.decode()?),
            Self::SendStreamingMessage => Operation::SendStreamingMessage(params.decode()?),
            Self::GetTask => Operation::GetTask(params.decode()?),
            Self::ListTasks => Operation::ListTasks(params.decode()?),
            Self::CancelTask => Operation::CancelTask(params.decode()?),
            Self::SubscribeToTask => Operation::SubscribeToTask(params.decode()?),
            Self::CreatePushConfig => Operation::CreatePushConfig(params.decode()?),
            Self::GetPushConfig => Operation::GetPushConfig(params.decode()?),
            Self::ListPushConfigs => Operation::ListPushConfigs(params.decode()?),
            Self::DeletePushConfig => Operation::DeletePushConfig(params.decode()?),
            Self::GetExtendedCard => Operation::GetExtendedCard(params.decode()?),
            Self::InjectReminder => Operation::InjectReminder(params.decode()?),
            Self::SubscribeEvents => {
                if !ctx.activated.contains(events::URI) {
                    return Err(A2aError::new(
                        ErrorKind::ExtensionNotActivated,
                        format!(
                            "{} needs the extension {}; list it in the A2A-Extensions header",
                            events::METHOD,
                            events::URI
                        ),
                    )
                    .with_meta("uri", events::URI));
                }
                Operation::SubscribeEvents(events::SubscribeParams::decode(&params.into_value()?)?)
            }
        })
    }
}

// `ALL` holds each kind at the index of its discriminant, up to the last.
const _: () = {
    assert!(OperationKind::ALL.len() == OperationKind::SubscribeEvents as usize + 1);
    let mut i = 0;
    while i < OperationKind::ALL.len() {
        assert!(OperationKind::ALL[i] as usize == i);
        i += 1;
    }
};

/// MethodNotFound for a JSON-RPC method no kind has, with the A2A 1.0 name
/// when `method` is an A2A 0.3 one.
pub fn method_not_found(method: &str) -> A2aError {
    let mut text = format!("method {method:?} not found");
    if let Some(v1) = v1_name(method) {
        text.push_str(&format!("; {method:?} is an A2A 0.3 name and this agent speaks A2A 1.0: call {v1:?}"));
    }
    A2aError::new(ErrorKind::MethodNotFound, text).with_meta("method", method)
}

/// The A2A 1.0 method an A2A 0.3 JSON-RPC method name became.
fn v1_name(v03: &str) -> Option<&'static str> {
    Some(match v03 {
        "message/send" => m::SEND_MESSAGE,
        "message/stream" => m::SEND_STREAMING_MESSAGE,
        "tasks/get" => m::GET_TASK,
        "tasks/list" => m::LIST_TASKS,
        "tasks/cancel" => m::CANCEL_TASK,
        "tasks/resubscribe" => m::SUBSCRIBE_TO_TASK,
        "tasks/pushNotificationConfig/set" => m::CREATE_PUSH_CONFIG,
        "tasks/pushNotificationConfig/get" => m::GET_PUSH_CONFIG,
        "tasks/pushNotificationConfig/list" => m::LIST_PUSH_CONFIGS,
        "tasks/pushNotificationConfig/delete" => m::DELETE_PUSH_CONFIG,
        "agent/getAuthenticatedExtendedCard" => m::GET_EXTENDED_CARD,
        _ => return None,
    })
}

// Every binding's row is checked, gRPC's too: only with the binding built in.
#[cfg(all(test, feature = "grpc"))]
mod tests;
