//! `lf.a2a.v1.A2AService`: each rpc authenticates (`authorization`
//! metadata), checks `a2a-version` and activates `a2a-extensions` exactly as
//! the HTTP bindings do (the metadata *is* the request's header map),
//! converts the message into its [`Operation`], executes it as every
//! binding does and converts the outcome back.
//! Activated extensions are echoed in the `a2a-extensions` response metadata.

use super::pb::{self, a2a_service_server::A2aService};
use super::status::to_status;
use crate::admission::StreamSlot;
use crate::auth::{AuthFailure, Authenticated, PeerIdentity};
use crate::dispatch::{EventSource, Outcome, Reply, execute};
use crate::metrics::Binding;
use crate::operation::{Operation, OperationKind as K};
use crate::params::{RequestContext, authenticate, service_params};
use crate::state::AppState;
use agentd_core::slots::Published;
use agentd_proto::{A2aError, ErrorKind};
use futures::Stream;
use std::pin::Pin;
use tokio_util::sync::CancellationToken;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status};

type Result<T> = std::result::Result<Response<T>, Status>;
pub type EventStream = Pin<Box<dyn Stream<Item = std::result::Result<pb::StreamResponse, Status>> + Send>>;

pub struct A2aGrpc {
    state: AppState,
}

impl A2aGrpc {
    pub fn new(state: AppState) -> Self {
        Self { state }
    }

    /// Service parameters of the call, before any conversion or execution.
    async fn begin<T>(&self, req: Request<T>, kind: K) -> std::result::Result<(RequestContext, T), Status> {
        let (metadata, extensions, msg) = req.into_parts();
        let headers = metadata.into_headers();
        // Authenticated by the router's admission layer before the body
        // was read (`limits::admit`); a service used without it does it here.
        let principal = match extensions.get::<Authenticated>() {
            Some(Authenticated(p)) => p.clone(),
            None => authenticate(&self.state, &headers, extensions.get::<PeerIdentity>())
                .await
                .map_err(|f| unauthenticated(&self.state.auth, &f))?,
        };
        let ctx = service_params(&self.state, principal, &headers, None, kind.method())
            .map_err(|e| to_status(&e))?;
        Ok((ctx, msg))
    }

    /// A unary rpc: its request as the operation, executed, the outcome
    /// converted back.
    async fn unary<T, U: FromOutcome>(
        &self,
        req: Request<T>,
        kind: K,
        to_op: impl FnOnce(T) -> std::result::Result<Operation, A2aError> + Send,
    ) -> Result<U> {
        let (ctx, msg) = self.begin(req, kind).await?;
        let r = async {
            let op = to_op(msg)?;
            debug_assert_eq!(op.kind(), kind, "an rpc converts into its own operation");
            U::from_outcome(execute(&self.state, Binding::Grpc, &ctx, op).await.map_err(crate::errors::grpc)?)
                .ok_or_else(|| unexpected(kind))
        };
        finish(&ctx, r.await)
    }

    /// A server-streaming rpc: as [`Self::unary`], holding a place under
    /// the stream cap taken before the request is converted.
    async fn stream<T>(
        &self,
        req: Request<T>,
        kind: K,
        to_op: impl FnOnce(T) -> std::result::Result<Operation, A2aError> + Send,
    ) -> Result<EventStream> {
        let peer = req.extensions().get::<crate::auth::PeerAddr>().cloned();
        let (ctx, msg) = self.begin(req, kind).await?;
        let streams = &self.state.engine.metrics().streams;
        let holder = crate::params::budget_holder(&self.state, &ctx.principal, peer.as_ref());
        let slot = self.state.admission.stream(&streams.task_streams, &holder).map_err(|e| to_status(&e))?;
        let r = async {
            let op = to_op(msg)?;
            debug_assert_eq!(op.kind(), kind, "an rpc converts into its own operation");
            match execute(&self.state, Binding::Grpc, &ctx, op).await.map_err(crate::errors::grpc)? {
                Outcome::Stream(src) => Ok(src),
                Outcome::Value(_) | Outcome::Done => Err(unexpected(kind)),
            }
        };
        let shutdown = self.state.shutdown.clone();
        finish(&ctx, r.await.map(|src| Opened(events(src, shutdown, slot))))
    }
}

pub(super) fn unauthenticated(auth: &crate::auth::Authenticator, f: &AuthFailure) -> Status {
    if let AuthFailure::Unavailable(_) = f {
        return to_status(&A2aError::new(ErrorKind::Unavailable, f.message()));
    }
    let mut s = to_status(&A2aError::new(ErrorKind::Unauthenticated, f.message()));
    if let Ok(v) = MetadataValue::try_from(auth.challenge(f)) {
        s.metadata_mut().insert("www-authenticate", v);
    }
    s
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
                        Ok(ev) => Some((Ok(Published::into_event(ev).into()), Some(EventSource::Task(evs)))),
                        Err(e) => Some((Err(to_status(&crate::errors::grpc(e))), None)),
                    }
                }
            }
        }
    }))
}

#[tonic::async_trait]
impl A2aService for A2aGrpc {
    async fn send_message(&self, req: Request<pb::SendMessageRequest>) -> Result<pb::SendMessageResponse> {
        let limits = self.state.config.json;
        self.unary(req, K::SendMessage, |msg| {
            super::limits::check_send(&msg, limits)?;
            Ok(Operation::SendMessage(msg.try_into()?))
        })
        .await
    }

    type SendStreamingMessageStream = EventStream;

    async fn send_streaming_message(&self, req: Request<pb::SendMessageRequest>) -> Result<EventStream> {
        let limits = self.state.config.json;
        self.stream(req, K::SendStreamingMessage, |msg| {
            super::limits::check_send(&msg, limits)?;
            Ok(Operation::SendStreamingMessage(msg.try_into()?))
        })
        .await
    }

    async fn get_task(&self, req: Request<pb::GetTaskRequest>) -> Result<pb::Task> {
        self.unary(req, K::GetTask, |msg| Ok(Operation::GetTask(msg.into()))).await
    }

    async fn list_tasks(&self, req: Request<pb::ListTasksRequest>) -> Result<pb::ListTasksResponse> {
        self.unary(req, K::ListTasks, |msg| Ok(Operation::ListTasks(msg.try_into()?))).await
    }

    async fn cancel_task(&self, req: Request<pb::CancelTaskRequest>) -> Result<pb::Task> {
        let limits = self.state.config.json;
        self.unary(req, K::CancelTask, |msg| {
            super::limits::check_cancel(&msg, limits)?;
            Ok(Operation::CancelTask(msg.try_into()?))
        })
        .await
    }

    type SubscribeToTaskStream = EventStream;

    async fn subscribe_to_task(&self, req: Request<pb::SubscribeToTaskRequest>) -> Result<EventStream> {
        self.stream(req, K::SubscribeToTask, |msg| Ok(Operation::SubscribeToTask(msg.into()))).await
    }

    async fn create_task_push_notification_config(
        &self,
        req: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<pb::TaskPushNotificationConfig> {
        self.unary(req, K::CreatePushConfig, |msg| Ok(Operation::CreatePushConfig(msg.into()))).await
    }

    async fn get_task_push_notification_config(
        &self,
        req: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<pb::TaskPushNotificationConfig> {
        self.unary(req, K::GetPushConfig, |msg| Ok(Operation::GetPushConfig(msg.into()))).await
    }

    async fn list_task_push_notification_configs(
        &self,
        req: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<pb::ListTaskPushNotificationConfigsResponse> {
        self.unary(req, K::ListPushConfigs, |msg| Ok(Operation::ListPushConfigs(msg.into()))).await
    }

    async fn get_extended_agent_card(
        &self,
        req: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<pb::AgentCard> {
        self.unary(req, K::GetExtendedCard, |msg| Ok(Operation::GetExtendedCard(msg.into()))).await
    }

    async fn delete_task_push_notification_config(
        &self,
        req: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<()> {
        self.unary(req, K::DeletePushConfig, |msg| Ok(Operation::DeletePushConfig(msg.into()))).await
    }
}

/// The prost answer of a unary operation, taken from its outcome; `None`
/// when the outcome is not the one the rpc declares.
trait FromOutcome: Sized {
    fn from_outcome(o: Outcome) -> Option<Self>;
}

macro_rules! from_reply {
    ($pb:ty, $variant:ident) => {
        from_reply!($pb, $variant, |v| Some(v.into()));
    };
    ($pb:ty, $variant:ident, |$v:ident| $convert:expr) => {
        impl FromOutcome for $pb {
            fn from_outcome(o: Outcome) -> Option<Self> {
                match o {
                    Outcome::Value(reply) => match *reply {
                        Reply::$variant($v) => $convert,
                        _ => None,
                    },
                    _ => None,
                }
            }
        }
    };
}

from_reply!(pb::SendMessageResponse, Sent);
from_reply!(pb::ListTasksResponse, Tasks);
from_reply!(pb::TaskPushNotificationConfig, PushConfig);
from_reply!(pb::ListTaskPushNotificationConfigsResponse, PushConfigs);
from_reply!(pb::AgentCard, Card);

// GetTask's stored text is decoded here (a failure, logged where it is
// decoded, is an internal error).
from_reply!(pb::Task, Task, |v| v.into_task().ok().map(Into::into));

impl FromOutcome for () {
    fn from_outcome(o: Outcome) -> Option<Self> {
        matches!(o, Outcome::Done).then_some(())
    }
}

/// An operation answered with an outcome its rpc cannot carry: a bug of
/// this binding, logged and answered as an internal error.
fn unexpected(kind: K) -> A2aError {
    tracing::error!(operation = kind.method(), "the operation's outcome does not fit its gRPC answer");
    A2aError::internal()
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
