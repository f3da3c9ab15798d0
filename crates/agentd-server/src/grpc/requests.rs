//! Request and response messages of the eleven operations against the
//! generated prost types.

use super::convert::state_in;
use super::pb;
use super::wkt::{FieldError, metadata_in, metadata_out, opt, timestamp_in, timestamp_out};
use agentd_proto::{
    CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, ListTasksResponse, Message,
    SendMessageConfiguration, SendMessageRequest, SendMessageResponse, SubscribeToTaskRequest, Task,
    TaskPushConfigRef,
};
use pb::send_message_response::Payload;

impl From<pb::SendMessageConfiguration> for SendMessageConfiguration {
    fn from(c: pb::SendMessageConfiguration) -> Self {
        SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            task_push_notification_config: c.task_push_notification_config.map(Into::into),
            history_length: c.history_length,
            return_immediately: c.return_immediately,
        }
    }
}

impl From<SendMessageConfiguration> for pb::SendMessageConfiguration {
    fn from(c: SendMessageConfiguration) -> Self {
        pb::SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            task_push_notification_config: c.task_push_notification_config.map(Into::into),
            history_length: c.history_length,
            return_immediately: c.return_immediately,
        }
    }
}

impl TryFrom<pb::SendMessageRequest> for SendMessageRequest {
    type Error = FieldError;
    fn try_from(r: pb::SendMessageRequest) -> Result<Self, FieldError> {
        Ok(SendMessageRequest {
            tenant: r.tenant,
            // A missing message stays missing: the engine names it.
            message: opt(r.message, "message", Message::try_from)?,
            configuration: r.configuration.map(Into::into),
            metadata: metadata_in(r.metadata, "metadata")?,
        })
    }
}

impl From<SendMessageRequest> for pb::SendMessageRequest {
    fn from(r: SendMessageRequest) -> Self {
        pb::SendMessageRequest {
            tenant: r.tenant,
            message: r.message.map(Into::into),
            configuration: r.configuration.map(Into::into),
            metadata: metadata_out(r.metadata),
        }
    }
}

impl From<SendMessageResponse> for pb::SendMessageResponse {
    fn from(r: SendMessageResponse) -> Self {
        let payload = match r {
            SendMessageResponse::Task(t) => Payload::Task(t.into()),
            SendMessageResponse::Message(m) => Payload::Message(m.into()),
        };
        pb::SendMessageResponse { payload: Some(payload) }
    }
}

/// gRPC writes the answer itself, not JSON: the lent text is not used.
impl From<agentd_core::SendAnswer> for pb::SendMessageResponse {
    fn from(a: agentd_core::SendAnswer) -> Self {
        a.response.into()
    }
}

impl TryFrom<pb::SendMessageResponse> for SendMessageResponse {
    type Error = FieldError;
    fn try_from(r: pb::SendMessageResponse) -> Result<Self, FieldError> {
        Ok(match r.payload {
            None => {
                return Err(FieldError::new(
                    "payload",
                    "a SendMessageResponse must have `task` or `message`",
                ));
            }
            Some(Payload::Task(t)) => {
                SendMessageResponse::Task(Task::try_from(t).map_err(|e| e.under("task"))?)
            }
            Some(Payload::Message(m)) => {
                SendMessageResponse::Message(Message::try_from(m).map_err(|e| e.under("message"))?)
            }
        })
    }
}

impl From<pb::GetTaskRequest> for GetTaskRequest {
    fn from(r: pb::GetTaskRequest) -> Self {
        GetTaskRequest { tenant: r.tenant, id: r.id, history_length: r.history_length }
    }
}

impl TryFrom<pb::ListTasksRequest> for ListTasksRequest {
    type Error = FieldError;
    fn try_from(r: pb::ListTasksRequest) -> Result<Self, FieldError> {
        Ok(ListTasksRequest {
            tenant: r.tenant,
            context_id: r.context_id,
            status: state_in(r.status, "status")?,
            page_size: r.page_size,
            page_token: r.page_token,
            history_length: r.history_length,
            status_timestamp_after: opt(r.status_timestamp_after, "status_timestamp_after", timestamp_in)?,
            include_artifacts: r.include_artifacts,
        })
    }
}

impl From<ListTasksRequest> for pb::ListTasksRequest {
    fn from(r: ListTasksRequest) -> Self {
        pb::ListTasksRequest {
            tenant: r.tenant,
            context_id: r.context_id,
            status: r.status.number(),
            page_size: r.page_size,
            page_token: r.page_token,
            history_length: r.history_length,
            status_timestamp_after: r.status_timestamp_after.map(timestamp_out),
            include_artifacts: r.include_artifacts,
        }
    }
}

impl From<ListTasksResponse> for pb::ListTasksResponse {
    fn from(r: ListTasksResponse) -> Self {
        pb::ListTasksResponse {
            tasks: r.tasks.into_iter().map(Into::into).collect(),
            next_page_token: r.next_page_token,
            page_size: r.page_size,
            total_size: r.total_size,
        }
    }
}

impl TryFrom<pb::CancelTaskRequest> for CancelTaskRequest {
    type Error = FieldError;
    fn try_from(r: pb::CancelTaskRequest) -> Result<Self, FieldError> {
        Ok(CancelTaskRequest { tenant: r.tenant, id: r.id, metadata: metadata_in(r.metadata, "metadata")? })
    }
}

impl From<pb::SubscribeToTaskRequest> for SubscribeToTaskRequest {
    fn from(r: pb::SubscribeToTaskRequest) -> Self {
        SubscribeToTaskRequest { tenant: r.tenant, id: r.id }
    }
}

impl From<pb::GetTaskPushNotificationConfigRequest> for TaskPushConfigRef {
    fn from(r: pb::GetTaskPushNotificationConfigRequest) -> Self {
        TaskPushConfigRef { tenant: r.tenant, task_id: r.task_id, id: r.id }
    }
}

impl From<pb::DeleteTaskPushNotificationConfigRequest> for TaskPushConfigRef {
    fn from(r: pb::DeleteTaskPushNotificationConfigRequest) -> Self {
        TaskPushConfigRef { tenant: r.tenant, task_id: r.task_id, id: r.id }
    }
}

impl From<pb::ListTaskPushNotificationConfigsRequest> for ListTaskPushNotificationConfigsRequest {
    fn from(r: pb::ListTaskPushNotificationConfigsRequest) -> Self {
        ListTaskPushNotificationConfigsRequest {
            tenant: r.tenant,
            task_id: r.task_id,
            page_size: r.page_size,
            page_token: r.page_token,
        }
    }
}

impl From<ListTaskPushNotificationConfigsResponse> for pb::ListTaskPushNotificationConfigsResponse {
    fn from(r: ListTaskPushNotificationConfigsResponse) -> Self {
        pb::ListTaskPushNotificationConfigsResponse {
            configs: r.configs.into_iter().map(Into::into).collect(),
            next_page_token: r.next_page_token,
        }
    }
}

impl From<pb::GetExtendedAgentCardRequest> for GetExtendedAgentCardRequest {
    fn from(r: pb::GetExtendedAgentCardRequest) -> Self {
        GetExtendedAgentCardRequest { tenant: r.tenant }
    }
}
