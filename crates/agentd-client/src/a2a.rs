//! The A2A methods (and agentd's extension methods) as typed calls.

use crate::client::{Client, EventStream};
use crate::error::ClientError;
use agentd_proto::ext::events::{self, Frame, SubscribeParams};
use agentd_proto::ext::reminders::{self, InjectTaskReminderRequest, InjectTaskReminderResponse};
use agentd_proto::jsonrpc::methods;
use agentd_proto::{
    AgentCard, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse, ListTasksRequest,
    ListTasksResponse, SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskPushConfigRef, TaskPushNotificationConfig,
};
use serde_json::Value;

impl Client {
    pub async fn send_message(&self, req: &SendMessageRequest) -> Result<SendMessageResponse, ClientError> {
        self.call(methods::SEND_MESSAGE, req).await
    }

    pub async fn send_streaming_message(
        &self,
        req: &SendMessageRequest,
    ) -> Result<EventStream<StreamResponse>, ClientError> {
        self.stream(methods::SEND_STREAMING_MESSAGE, req).await
    }

    pub async fn get_task(&self, req: &GetTaskRequest) -> Result<Task, ClientError> {
        self.call(methods::GET_TASK, req).await
    }

    pub async fn list_tasks(&self, req: &ListTasksRequest) -> Result<ListTasksResponse, ClientError> {
        self.call(methods::LIST_TASKS, req).await
    }

    pub async fn cancel_task(&self, req: &CancelTaskRequest) -> Result<Task, ClientError> {
        self.call(methods::CANCEL_TASK, req).await
    }

    pub async fn subscribe_to_task(
        &self,
        req: &SubscribeToTaskRequest,
    ) -> Result<EventStream<StreamResponse>, ClientError> {
        self.stream(methods::SUBSCRIBE_TO_TASK, req).await
    }

    pub async fn create_push_config(
        &self,
        config: &TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.call(methods::CREATE_PUSH_CONFIG, config).await
    }

    pub async fn get_push_config(
        &self,
        req: &TaskPushConfigRef,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.call(methods::GET_PUSH_CONFIG, req).await
    }

    pub async fn list_push_configs(
        &self,
        req: &ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        self.call(methods::LIST_PUSH_CONFIGS, req).await
    }

    pub async fn delete_push_config(&self, req: &TaskPushConfigRef) -> Result<(), ClientError> {
        self.call::<Value>(methods::DELETE_PUSH_CONFIG, req).await.map(drop)
    }

    pub async fn extended_card(&self) -> Result<AgentCard, ClientError> {
        self.call(methods::GET_EXTENDED_CARD, &GetExtendedAgentCardRequest::default()).await
    }

    /// `InjectTaskReminder` of agentd's reminders extension.
    pub async fn inject_reminder(
        &self,
        req: &InjectTaskReminderRequest,
    ) -> Result<InjectTaskReminderResponse, ClientError> {
        self.call(reminders::METHOD, req).await
    }

    /// agentd's events feed; the client must request [`events::URI`]
    /// ([`Client::with_extensions`]).
    pub async fn subscribe_events(
        &self,
        params: &SubscribeParams,
    ) -> Result<EventStream<Frame>, ClientError> {
        self.stream(events::METHOD, params).await
    }
}
