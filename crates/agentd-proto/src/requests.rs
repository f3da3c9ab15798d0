//! Request and response messages of the eleven operations (§3.1, proto
//! `*Request` / `*Response`). Every multi-word field also accepts its
//! snake_case name, as ProtoJSON parsers must.

use crate::serde_util::{bool_default, i32_default, null_default, opt_bool, opt_i32};
use crate::types::{Message, Metadata, Task, TaskPushNotificationConfig, TaskState, Timestamp};
use serde::{Deserialize, Serialize};

/// `SendMessageConfiguration`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(
        default,
        alias = "accepted_output_modes",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, alias = "task_push_notification_config", skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    #[serde(
        default,
        alias = "return_immediately",
        deserialize_with = "bool_default",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub return_immediately: bool,
}

/// `SendMessageRequest` (SendMessage and SendStreamingMessage).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// REQUIRED; `None` is refused by validation with the field named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `GetTaskRequest`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, deserialize_with = "null_default")]
    pub id: String,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
}

/// `ListTasksRequest`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    #[serde(default, skip_serializing_if = "is_unspecified")]
    pub status: TaskState,
    #[serde(
        default,
        alias = "page_size",
        deserialize_with = "opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub page_size: Option<i32>,
    #[serde(
        default,
        alias = "page_token",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
    #[serde(
        default,
        alias = "history_length",
        deserialize_with = "opt_i32",
        skip_serializing_if = "Option::is_none"
    )]
    pub history_length: Option<i32>,
    #[serde(default, alias = "status_timestamp_after", skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<Timestamp>,
    #[serde(
        default,
        alias = "include_artifacts",
        deserialize_with = "opt_bool",
        skip_serializing_if = "Option::is_none"
    )]
    pub include_artifacts: Option<bool>,
}

fn is_unspecified(s: &TaskState) -> bool {
    *s == TaskState::Unspecified
}

/// `ListTasksResponse`: all four members are REQUIRED and always written,
/// `nextPageToken` as `""` on the last page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    #[serde(default)]
    pub tasks: Vec<Task>,
    #[serde(default, alias = "next_page_token")]
    pub next_page_token: String,
    #[serde(default, alias = "page_size")]
    pub page_size: i32,
    #[serde(default, alias = "total_size")]
    pub total_size: i32,
}

/// `CancelTaskRequest`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, deserialize_with = "null_default")]
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// `SubscribeToTaskRequest`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, deserialize_with = "null_default")]
    pub id: String,
}

/// `GetTaskPushNotificationConfigRequest` and
/// `DeleteTaskPushNotificationConfigRequest` (same shape).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushConfigRef {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, alias = "task_id", deserialize_with = "null_default")]
    pub task_id: String,
    #[serde(default, deserialize_with = "null_default")]
    pub id: String,
}

/// `ListTaskPushNotificationConfigsRequest`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, alias = "task_id", deserialize_with = "null_default")]
    pub task_id: String,
    #[serde(default, alias = "page_size", deserialize_with = "i32_default", skip_serializing_if = "is_zero")]
    pub page_size: i32,
    #[serde(
        default,
        alias = "page_token",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub page_token: String,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// `ListTaskPushNotificationConfigsResponse`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    #[serde(default)]
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default, alias = "next_page_token")]
    pub next_page_token: String,
}

/// `GetExtendedAgentCardRequest`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    #[serde(default, deserialize_with = "null_default", skip_serializing_if = "String::is_empty")]
    pub tenant: String,
}
