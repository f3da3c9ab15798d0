//! The operation table both bindings share: a method name and its params
//! (already assembled from body, path and query) in, a result or an event
//! stream out. A binding is a thin adapter around this.

use crate::errors::json;
use crate::params::RequestContext;
use crate::state::AppState;
use agentd_core::{EventFeed, SendOutcome, TaskEvents};
use agentd_proto::ext::{events, reminders, task_annotations};
use agentd_proto::jsonrpc::methods as m;
use agentd_proto::validate::decode;
use agentd_proto::{A2aError, ErrorKind, StreamResponse};
use serde_json::Value;

/// The result of an operation.
pub enum Outcome {
    /// A unary result.
    Value(Reply),
    /// A unary operation with no result (DeleteTaskPushNotificationConfig).
    Done,
    /// A streaming result.
    Stream(EventSource),
}

/// A unary result kept typed until the binding writes it, so it becomes
/// bytes once, straight into the response (no `Value` copy, exact size):
/// a task holding a big message is otherwise copied twice more on its way out.
pub struct Reply(Box<WriteFramed>);

/// Writes a result between a prefix and a suffix.
type WriteFramed = dyn FnOnce(&[u8], &[u8]) -> serde_json::Result<Vec<u8>> + Send;

impl Reply {
    fn of<T: serde::Serialize + Send + 'static>(v: T) -> Self {
        Self(Box::new(move |prefix, suffix| agentd_proto::exact::to_vec_framed(prefix, &v, suffix)))
    }

    /// The result's JSON between `prefix` and `suffix` (a binding's envelope).
    pub fn into_json(self, prefix: &[u8], suffix: &[u8]) -> Result<Vec<u8>, A2aError> {
        (self.0)(prefix, suffix).map_err(|e| {
            tracing::error!(error = %e, "could not serialize a result");
            A2aError::internal()
        })
    }
}

/// What a stream carries: a single direct message, a task's events, or
/// the events feed (JSON-RPC only).
pub enum EventSource {
    One(Box<StreamResponse>),
    Task(Box<TaskEvents>),
    Feed(Box<EventFeed>),
}

pub async fn dispatch(
    state: &AppState,
    ctx: &RequestContext,
    method: &str,
    params: Value,
) -> Result<Outcome, A2aError> {
    // Tasks carry the annotations exactly when the request activated them.
    let e = &state.engine.annotating(ctx.activated.contains(task_annotations::URI));
    let p = &ctx.principal;
    // Reminder lifecycle events reach only streams that activated the extension.
    let reminder_events = ctx.activated.contains(reminders::URI);
    let reply = match method {
        m::SEND_MESSAGE => Reply::of(e.send_message(p, decode(params)?).await.map_err(json)?),
        m::SEND_STREAMING_MESSAGE => {
            return Ok(Outcome::Stream(match e.send(p, decode(params)?, true).await.map_err(json)? {
                SendOutcome::Message(msg) => EventSource::One(Box::new(StreamResponse::Message(msg))),
                SendOutcome::Task(events) => {
                    EventSource::Task(Box::new(events.with_reminder_events(reminder_events)))
                }
            }));
        }
        m::GET_TASK => Reply::of(e.get_task(p, decode(params)?).await.map_err(json)?),
        m::LIST_TASKS => Reply::of(e.list_tasks(p, decode(params)?).await.map_err(json)?),
        m::CANCEL_TASK => Reply::of(e.cancel_task(p, decode(params)?).await.map_err(json)?),
        m::SUBSCRIBE_TO_TASK => {
            let events =
                e.subscribe(p, decode(params)?).await.map_err(json)?.with_reminder_events(reminder_events);
            return Ok(Outcome::Stream(EventSource::Task(Box::new(events))));
        }
        m::CREATE_PUSH_CONFIG => Reply::of(e.create_push_config(p, decode(params)?).await.map_err(json)?),
        m::GET_PUSH_CONFIG => Reply::of(e.get_push_config(p, decode(params)?).await.map_err(json)?),
        m::LIST_PUSH_CONFIGS | m::LIST_PUSH_CONFIGS_RC => {
            Reply::of(e.list_push_configs(p, decode(params)?).await.map_err(json)?)
        }
        m::DELETE_PUSH_CONFIG => {
            e.delete_push_config(p, decode(params)?).await.map_err(json)?;
            return Ok(Outcome::Done);
        }
        reminders::METHOD => Reply::of(e.inject_reminder(p, decode(params)?).await.map_err(json)?),
        m::GET_EXTENDED_CARD => {
            let _: agentd_proto::GetExtendedAgentCardRequest = decode(params)?;
            Reply::of(state.card.card.clone())
        }
        events::METHOD => {
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
            let params = events::SubscribeParams::decode(&params)?;
            return Ok(Outcome::Stream(EventSource::Feed(Box::new(
                e.subscribe_events(p, params).await.map_err(json)?,
            ))));
        }
        other => {
            let mut text = format!("method {other:?} not found");
            if let Some(v1) = v1_name(other) {
                text.push_str(&format!(
                    "; {other:?} is an A2A 0.3 name and this agent speaks A2A 1.0: call {v1:?}"
                ));
            }
            return Err(A2aError::new(ErrorKind::MethodNotFound, text).with_meta("method", other));
        }
    };
    Ok(Outcome::Value(reply))
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
