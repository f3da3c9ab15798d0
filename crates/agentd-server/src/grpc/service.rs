//! `lf.a2a.v1.A2AService`: each rpc authenticates (`authorization`
//! metadata), checks `a2a-version` and activates `a2a-extensions` exactly as
//! the HTTP bindings do (the metadata *is* the request's header map),
//! converts the message, calls the engine and converts the answer back.
//! Activated extensions are echoed in the `a2a-extensions` response metadata.

use super::pb::{self, a2a_service_server::A2aService};
use super::status::to_status;
use crate::admission::StreamSlot;
use crate::auth::AuthFailure;
use crate::dispatch::EventSource;
use crate::errors::grpc;
use crate::params::{RequestContext, authenticate, service_params};
use crate::state::AppState;
use agentd_core::SendOutcome;
use agentd_proto::jsonrpc::methods as m;
use agentd_proto::{A2aError, ErrorKind, StreamResponse};
use futures::Stream;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};

type Result<T> = std::result::Result<Response<T>, Status>;
pub type EventStream = Pin<Box<dyn Stream<Item = std::result::Result<pb::StreamResponse, Status>> + Send>>;

pub struct A2aGrpc {
    state: AppState,
    /// The card in its prost form, converted once.
    card: pb::AgentCard,
}

impl A2aGrpc {
    pub fn new(state: AppState) -> Self {
        let card = state.card.card.clone().into();
        Self { state, card }
    }

    /// Service parameters of the call, before any conversion or dispatch.
    fn begin<T>(&self, req: Request<T>, method: &str) -> std::result::Result<(RequestContext, T), Status> {
        let (metadata, _, msg) = req.into_parts();
        let headers = metadata.into_headers();
        let principal = authenticate(&self.state, &headers).map_err(unauthenticated)?;
        let ctx =
            service_params(&self.state, principal, &headers, None, method).map_err(|e| to_status(&e))?;
        Ok((ctx, msg))
    }

    /// The engine as this call sees it: Tasks annotated when the call
    /// activated the task-annotations extension.
    fn engine(&self, ctx: &RequestContext) -> agentd_core::Engine {
        self.state.engine.annotating(ctx.activated.contains(agentd_proto::ext::task_annotations::URI))
    }

    fn shutdown(&self) -> CancellationToken {
        self.state.shutdown.clone()
    }
}

fn unauthenticated(f: AuthFailure) -> Status {
    let (msg, challenge) = match f {
        AuthFailure::Missing => {
            ("this agent requires a bearer token (authorization: Bearer <token>)", "Bearer realm=\"agentd\"")
        }
        AuthFailure::Invalid => {
            ("the bearer token is not valid", "Bearer realm=\"agentd\", error=\"invalid_token\"")
        }
    };
    let mut s = to_status(&A2aError::new(ErrorKind::Unauthenticated, msg));
    s.metadata_mut().insert("www-authenticate", MetadataValue::from_static(challenge));
    s
}

/// Whether the request's streams show reminder lifecycle events.
fn reminder_events(ctx: &RequestContext) -> bool {
    ctx.activated.contains(agentd_proto::ext::reminders::URI)
}

/// The answer, with the activated extensions echoed on success and failure.
fn finish<T, U: From<T>>(ctx: &RequestContext, r: std::result::Result<T, A2aError>) -> Result<U> {
    let echo = ctx.activated.header_value().and_then(|v| MetadataValue::try_from(v).ok());
    match r {
        Ok(v) => {
            let mut resp = Response::new(U::from(v));
            if let Some(v) = echo {
                resp.metadata_mut().insert("a2a-extensions", v);
            }
            Ok(resp)
        }
        Err(e) => {
            let mut s = to_status(&e);
            if let Some(v) = echo {
                s.metadata_mut().insert("a2a-extensions", v);
            }
            Err(s)
        }
    }
}

/// A stream's events as gRPC messages. An error (a subscriber that fell
/// too far behind) ends the stream with that status; so does shutdown.
/// `slot`, its place under the stream cap, is held until it ends.
fn events(src: EventSource, shutdown: CancellationToken, slot: StreamSlot) -> EventStream {
    Box::pin(futures::stream::unfold(Some(src), move |phase| {
        let _held = &slot;
        let shutdown = shutdown.clone();
        async move {
            match phase? {
                EventSource::One(ev) => Some((Ok((*ev).into()), None)),
                // The events feed is a JSON-RPC method; gRPC never opens one.
                EventSource::Feed(_) => None,
                EventSource::Task(mut evs) => {
                    let next = tokio::select! {
                        // Events already published go out first (see sse.rs).
                        biased;
                        n = evs.next() => n,
                        () = shutdown.cancelled() => {
                            let e = A2aError::new(ErrorKind::Unavailable, "the server is shutting down; resubscribe");
                            return Some((Err(to_status(&e)), None));
                        }
                    };
                    match next? {
                        Ok(ev) => Some((Ok(Arc::unwrap_or_clone(ev).into()), Some(EventSource::Task(evs)))),
                        Err(e) => Some((Err(to_status(&grpc(e))), None)),
                    }
                }
            }
        }
    }))
}

#[tonic::async_trait]
impl A2aService for A2aGrpc {
    async fn send_message(&self, req: Request<pb::SendMessageRequest>) -> Result<pb::SendMessageResponse> {
        let (ctx, msg) = self.begin(req, m::SEND_MESSAGE)?;
        let r = async {
            super::limits::check_send(&msg, self.state.config.json)?;
            self.engine(&ctx).send_message(&ctx.principal, msg.try_into()?).await.map_err(grpc)
        }
        .await;
        finish(&ctx, r)
    }

    type SendStreamingMessageStream = EventStream;

    async fn send_streaming_message(&self, req: Request<pb::SendMessageRequest>) -> Result<EventStream> {
        let (ctx, msg) = self.begin(req, m::SEND_STREAMING_MESSAGE)?;
        let slot = self.state.admission.stream().map_err(|e| to_status(&e))?;
        let r = async {
            super::limits::check_send(&msg, self.state.config.json)?;
            Ok(match self.engine(&ctx).send(&ctx.principal, msg.try_into()?, true).await.map_err(grpc)? {
                SendOutcome::Message(msg) => EventSource::One(Box::new(StreamResponse::Message(msg))),
                SendOutcome::Task(evs) => {
                    EventSource::Task(Box::new(evs.with_reminder_events(reminder_events(&ctx))))
                }
            })
        }
        .await;
        finish(&ctx, r.map(|src| Opened(events(src, self.shutdown(), slot))))
    }

    async fn get_task(&self, req: Request<pb::GetTaskRequest>) -> Result<pb::Task> {
        let (ctx, msg) = self.begin(req, m::GET_TASK)?;
        finish(&ctx, self.engine(&ctx).get_task(&ctx.principal, msg.into()).await.map_err(grpc))
    }

    async fn list_tasks(&self, req: Request<pb::ListTasksRequest>) -> Result<pb::ListTasksResponse> {
        let (ctx, msg) = self.begin(req, m::LIST_TASKS)?;
        let r =
            async { self.engine(&ctx).list_tasks(&ctx.principal, msg.try_into()?).await.map_err(grpc) }.await;
        finish(&ctx, r)
    }

    async fn cancel_task(&self, req: Request<pb::CancelTaskRequest>) -> Result<pb::Task> {
        let (ctx, msg) = self.begin(req, m::CANCEL_TASK)?;
        let r = async { self.engine(&ctx).cancel_task(&ctx.principal, msg.try_into()?).await.map_err(grpc) }
            .await;
        finish(&ctx, r)
    }

    type SubscribeToTaskStream = EventStream;

    async fn subscribe_to_task(&self, req: Request<pb::SubscribeToTaskRequest>) -> Result<EventStream> {
        let (ctx, msg) = self.begin(req, m::SUBSCRIBE_TO_TASK)?;
        let slot = self.state.admission.stream().map_err(|e| to_status(&e))?;
        let r = self.engine(&ctx).subscribe(&ctx.principal, msg.into()).await.map_err(grpc);
        let r = r.map(|evs| evs.with_reminder_events(reminder_events(&ctx)));
        finish(&ctx, r.map(|evs| Opened(events(EventSource::Task(Box::new(evs)), self.shutdown(), slot))))
    }

    async fn create_task_push_notification_config(
        &self,
        req: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<pb::TaskPushNotificationConfig> {
        let (ctx, msg) = self.begin(req, m::CREATE_PUSH_CONFIG)?;
        finish(&ctx, self.engine(&ctx).create_push_config(&ctx.principal, msg.into()).await.map_err(grpc))
    }

    async fn get_task_push_notification_config(
        &self,
        req: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<pb::TaskPushNotificationConfig> {
        let (ctx, msg) = self.begin(req, m::GET_PUSH_CONFIG)?;
        finish(&ctx, self.engine(&ctx).get_push_config(&ctx.principal, msg.into()).await.map_err(grpc))
    }

    async fn list_task_push_notification_configs(
        &self,
        req: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse> {
        let (ctx, msg) = self.begin(req, m::LIST_PUSH_CONFIGS)?;
        finish(&ctx, self.engine(&ctx).list_push_configs(&ctx.principal, msg.into()).await.map_err(grpc))
    }

    async fn get_extended_agent_card(
        &self,
        req: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<pb::AgentCard> {
        let (ctx, _) = self.begin(req, m::GET_EXTENDED_CARD)?;
        finish(&ctx, Ok::<_, A2aError>(self.card.clone()))
    }

    async fn delete_task_push_notification_config(
        &self,
        req: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<()> {
        let (ctx, msg) = self.begin(req, m::DELETE_PUSH_CONFIG)?;
        finish(&ctx, self.engine(&ctx).delete_push_config(&ctx.principal, msg.into()).await.map_err(grpc))
    }
}

/// An opened event stream (lets [`finish`] convert with `From`). Streams
/// open only after the operation succeeded, so an unknown or terminal task
/// is an error status before the first message.
struct Opened(EventStream);

impl From<Opened> for EventStream {
    fn from(s: Opened) -> Self {
        s.0
    }
}
