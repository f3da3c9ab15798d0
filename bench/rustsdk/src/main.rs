//! The official Rust A2A SDK server (`a2a-server-lf` 0.5.3,
//! `DefaultRequestHandler` over `InMemoryTaskStore`) serving the bench's
//! scenarios over JSON-RPC at `/`, with its agent card at
//! `/.well-known/agent-card.json`. Usage: `rustsdk-ref PORT`.
//!
//! * `tck-complete-task…` (the bench's SendMessage) and any other message:
//!   the executor completes the task at once (a status update to COMPLETED
//!   carrying an agent message, as the Python reference peer answers).
//! * `tck-input-required…` (fan-out): the SDK lets a client subscribe to a
//!   task only while its execution runs, so the executor reports
//!   INPUT_REQUIRED and keeps the execution open until the continuation
//!   message arrives (bounded by `HOLD_LIMIT`). Two pieces of glue make that
//!   fit the blocking JSON-RPC calls the bench makes, both through the SDK's
//!   own handler: the first message is sent on with `returnImmediately`, and
//!   the continuation (a message naming a held task) releases the held
//!   execution and answers with the task once its terminal event is out.
//! * GetTask and SubscribeToTask: the SDK's handler as it is.

use a2a::*;
use a2a_server::{
    AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore, RequestHandler,
    ServiceParams, StaticAgentCard, agent_card::agent_card_router, jsonrpc::jsonrpc_router,
};
use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// How long an INPUT_REQUIRED execution waits for its continuation.
const HOLD_LIMIT: Duration = Duration::from_secs(120);

/// Executions waiting for their continuation message, by task id.
type Held = Arc<Mutex<HashMap<TaskId, oneshot::Sender<()>>>>;

fn status(ctx: &ExecutorContext, state: TaskState, message: Option<Message>) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus { state, message, timestamp: None },
        metadata: None,
    })
}

fn agent_reply(ctx: &ExecutorContext) -> Message {
    let input = ctx.message.as_ref().and_then(Message::text).unwrap_or_default();
    let mut reply = Message::new(Role::Agent, vec![Part::text(format!("echo: {input}"))]);
    reply.task_id = Some(ctx.task_id.clone());
    reply.context_id = Some(ctx.context_id.clone());
    reply
}

fn message_id(ctx: &ExecutorContext) -> &str {
    ctx.message.as_ref().map_or("", |m| m.message_id.as_str())
}

struct Executor {
    held: Held,
}

impl AgentExecutor for Executor {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        if !message_id(&ctx).starts_with("tck-input-required") {
            let done = status(&ctx, TaskState::Completed, Some(agent_reply(&ctx)));
            return Box::pin(stream::once(async move { Ok(done) }));
        }
        let (release, released) = oneshot::channel();
        self.held.lock().expect("held map").insert(ctx.task_id.clone(), release);
        let waiting = status(&ctx, TaskState::InputRequired, None);
        let (held, task_id) = (self.held.clone(), ctx.task_id.clone());
        let finish = async move {
            let state = match tokio::time::timeout(HOLD_LIMIT, released).await {
                Ok(Ok(())) => TaskState::Completed,
                _ => TaskState::Canceled,
            };
            held.lock().expect("held map").remove(&task_id);
            Ok(status(&ctx, state, None))
        };
        Box::pin(stream::once(async move { Ok(waiting) }).chain(stream::once(finish)))
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let canceled = status(&ctx, TaskState::Canceled, None);
        Box::pin(stream::once(async move { Ok(canceled) }))
    }
}

/// The SDK's handler, with the two pieces of fan-out glue described above.
struct Handler {
    inner: DefaultRequestHandler,
    held: Held,
}

#[async_trait]
impl RequestHandler for Handler {
    async fn send_message(
        &self,
        params: &ServiceParams,
        mut req: SendMessageRequest,
    ) -> Result<SendMessageResponse, A2AError> {
        let release = req.message.task_id.as_ref().and_then(|id| self.held.lock().expect("held map").remove(id));
        if let (Some(release), Some(task_id)) = (release, req.message.task_id.clone()) {
            let mut events =
                self.inner.subscribe_to_task(params, SubscribeToTaskRequest { id: task_id.clone(), tenant: None }).await?;
            let _ = release.send(());
            while let Some(event) = events.next().await {
                event?;
            }
            let task = self.inner.get_task(params, GetTaskRequest { id: task_id, history_length: None, tenant: None }).await?;
            return Ok(SendMessageResponse::Task(task));
        }
        if req.message.message_id.starts_with("tck-input-required") {
            let configuration = req.configuration.get_or_insert_with(|| SendMessageConfiguration {
                accepted_output_modes: None,
                task_push_notification_config: None,
                history_length: None,
                return_immediately: None,
            });
            configuration.return_immediately = Some(true);
        }
        self.inner.send_message(params, req).await
    }
    async fn send_streaming_message(
        &self,
        params: &ServiceParams,
        req: SendMessageRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.inner.send_streaming_message(params, req).await
    }
    async fn get_task(&self, params: &ServiceParams, req: GetTaskRequest) -> Result<Task, A2AError> {
        self.inner.get_task(params, req).await
    }
    async fn list_tasks(&self, params: &ServiceParams, req: ListTasksRequest) -> Result<ListTasksResponse, A2AError> {
        self.inner.list_tasks(params, req).await
    }
    async fn cancel_task(&self, params: &ServiceParams, req: CancelTaskRequest) -> Result<Task, A2AError> {
        self.inner.cancel_task(params, req).await
    }
    async fn subscribe_to_task(
        &self,
        params: &ServiceParams,
        req: SubscribeToTaskRequest,
    ) -> Result<BoxStream<'static, Result<StreamResponse, A2AError>>, A2AError> {
        self.inner.subscribe_to_task(params, req).await
    }
    async fn create_push_config(
        &self,
        params: &ServiceParams,
        req: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.inner.create_push_config(params, req).await
    }
    async fn get_push_config(
        &self,
        params: &ServiceParams,
        req: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, A2AError> {
        self.inner.get_push_config(params, req).await
    }
    async fn list_push_configs(
        &self,
        params: &ServiceParams,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2AError> {
        self.inner.list_push_configs(params, req).await
    }
    async fn delete_push_config(
        &self,
        params: &ServiceParams,
        req: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), A2AError> {
        self.inner.delete_push_config(params, req).await
    }
    async fn get_extended_agent_card(
        &self,
        params: &ServiceParams,
        req: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, A2AError> {
        self.inner.get_extended_agent_card(params, req).await
    }
}

fn card(port: u16) -> AgentCard {
    serde_json::from_value(serde_json::json!({
        "name": "rustsdk-ref",
        "description": "a2a-server-lf 0.5.3 with its in-memory task store (bench reference)",
        "version": "0.5.3",
        "supportedInterfaces": [{"url": format!("http://127.0.0.1:{port}/"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [{"id": "echo", "name": "echo", "description": "echo / TCK scenarios", "tags": ["tck"]}]
    }))
    .expect("the agent card is valid")
}

#[tokio::main]
async fn main() {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).expect("usage: rustsdk-ref PORT");
    let held = Held::default();
    let inner = DefaultRequestHandler::new(Executor { held: held.clone() }, InMemoryTaskStore::new())
        .with_capabilities(AgentCapabilities { streaming: Some(true), push_notifications: Some(false), ..Default::default() });
    let handler = Arc::new(Handler { inner, held });
    let app = jsonrpc_router(handler).merge(agent_card_router(Arc::new(StaticAgentCard::new(card(port)))));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    axum::serve(listener, app).await.expect("serve");
}
