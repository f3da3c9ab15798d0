//! Runs an [`Operation`] for any binding: the one place an operation meets
//! the engine. A binding decodes its request into an `Operation`, calls
//! [`execute`] and writes the [`Outcome`] in its own form.

use crate::metrics::Binding;
use crate::operation::Operation;
use crate::params::RequestContext;
use crate::state::AppState;
use agentd_core::{EventFeed, SendAnswer, SendOutcome, TaskAnswer, TaskEvents};
use agentd_proto::ext::reminders::InjectTaskReminderResponse;
use agentd_proto::ext::{reminders, task_annotations};
use agentd_proto::{
    A2aError, AgentCard, ListTaskPushNotificationConfigsResponse, ListTasksResponse, StreamResponse,
    TaskPushNotificationConfig,
};
use std::future::Future;
use std::pin::Pin;

/// The result of an operation.
pub enum Outcome {
    /// A unary result.
    Value(Box<Reply>),
    /// A unary operation with no result (DeleteTaskPushNotificationConfig).
    Done,
    /// A streaming result.
    Stream(EventSource),
}

/// A unary result, kept typed until the binding writes it: JSON bindings
/// serialize it once, straight into the response (no `Value` copy, exact
/// size: a task holding a big message is otherwise copied twice more on
/// its way out); gRPC converts it to its prost message.
pub enum Reply {
    /// SendMessage's answer, written from its lent JSON when it has one.
    Sent(SendAnswer),
    /// GetTask's answer, written from its stored text when it has one.
    Task(TaskAnswer),
    Tasks(ListTasksResponse),
    PushConfig(TaskPushNotificationConfig),
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    Card(AgentCard),
    Reminder(InjectTaskReminderResponse),
}

impl Reply {
    /// The result's JSON between `prefix` and `suffix` (a binding's envelope).
    pub fn into_json(self, prefix: &[u8], suffix: &[u8]) -> Result<Vec<u8>, A2aError> {
        use agentd_proto::exact::to_vec_framed as framed;
        match self {
            Reply::Sent(SendAnswer { whole: Some(whole), .. }) => {
                Ok(whole.view_framed(&[prefix, b"{\"task\":"], &[b"}", suffix]))
            }
            Reply::Sent(v) => framed(prefix, &v.response, suffix),
            Reply::Task(TaskAnswer::Text(text)) => Ok([prefix, text.as_bytes(), suffix].concat()),
            Reply::Task(TaskAnswer::Task(v)) => framed(prefix, &v, suffix),
            Reply::Tasks(v) => framed(prefix, &v, suffix),
            Reply::PushConfig(v) => framed(prefix, &v, suffix),
            Reply::PushConfigs(v) => framed(prefix, &v, suffix),
            Reply::Card(v) => framed(prefix, &v, suffix),
            Reply::Reminder(v) => framed(prefix, &v, suffix),
        }
        .map_err(|e| {
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

/// An operation under way: boxed once, whichever it is, so that what
/// holds it (a binding's handler, the connection's request future) stays
/// small. A future holds room for the largest one it may await and every
/// move copies all of that room: unboxed, each request's future was as
/// large as the largest operation's (6 KiB for a JSON-RPC request).
type Running<'a> = Pin<Box<dyn Future<Output = Result<Outcome, agentd_core::Error>> + Send + 'a>>;

/// Runs `op` as the caller of `ctx`, with what the request activated.
/// The engine's results meet the bindings here only, whichever binding the
/// operation came from. Its errors stay domain errors: each binding turns
/// them into wire errors with `errors::json` or `errors::grpc`, which
/// differ in how they name fields.
pub fn execute<'a>(
    state: &'a AppState,
    binding: Binding,
    ctx: &'a RequestContext,
    op: Operation,
) -> impl Future<Output = Result<Outcome, agentd_core::Error>> + Send + 'a {
    crate::trace::describe(&op);
    let (kind, started) = (op.kind(), std::time::Instant::now());
    let running = run(state, ctx, op);
    async move {
        let result = running.await;
        crate::metrics::record(state, kind, binding, result.as_ref().err().map(|e| e.kind()), started);
        result
    }
}

fn run<'a>(state: &'a AppState, ctx: &'a RequestContext, op: Operation) -> Running<'a> {
    // Tasks carry the annotations exactly when the request activated them.
    let e = state.engine.annotating(ctx.activated.contains(task_annotations::URI));
    let p = &ctx.principal;
    // Reminder lifecycle events reach only streams that activated the extension.
    let reminder_events = ctx.activated.contains(reminders::URI);
    match op {
        Operation::SendMessage(req) => {
            Box::pin(async move { value(Reply::Sent(e.send_message_answer(p, req).await?)) })
        }
        Operation::SendStreamingMessage(req) => Box::pin(async move {
            Ok(Outcome::Stream(match e.send(p, req, true).await? {
                SendOutcome::Message(msg) => EventSource::One(Box::new(StreamResponse::Message(msg))),
                SendOutcome::Task(events) => {
                    EventSource::Task(Box::new(events.with_reminder_events(reminder_events)))
                }
            }))
        }),
        Operation::GetTask(req) => {
            Box::pin(async move { value(Reply::Task(e.get_task_answer(p, req).await?)) })
        }
        Operation::ListTasks(req) => {
            Box::pin(async move { value(Reply::Tasks(e.list_tasks(p, req).await?)) })
        }
        Operation::CancelTask(req) => {
            Box::pin(async move { value(Reply::Task(TaskAnswer::Task(e.cancel_task(p, req).await?))) })
        }
        Operation::SubscribeToTask(req) => Box::pin(async move {
            let events = e.subscribe(p, req).await?.with_reminder_events(reminder_events);
            Ok(Outcome::Stream(EventSource::Task(Box::new(events))))
        }),
        Operation::CreatePushConfig(req) => {
            Box::pin(async move { value(Reply::PushConfig(e.create_push_config(p, req).await?)) })
        }
        Operation::GetPushConfig(req) => {
            Box::pin(async move { value(Reply::PushConfig(e.get_push_config(p, req).await?)) })
        }
        Operation::ListPushConfigs(req) => {
            Box::pin(async move { value(Reply::PushConfigs(e.list_push_configs(p, req).await?)) })
        }
        Operation::DeletePushConfig(req) => Box::pin(async move {
            e.delete_push_config(p, req).await?;
            Ok(Outcome::Done)
        }),
        Operation::GetExtendedCard(_) => {
            Box::pin(std::future::ready(value(Reply::Card(state.card.card.clone()))))
        }
        Operation::InjectReminder(req) => {
            Box::pin(async move { value(Reply::Reminder(e.inject_reminder(p, req).await?)) })
        }
        Operation::SubscribeEvents(params) => Box::pin(async move {
            Ok(Outcome::Stream(EventSource::Feed(Box::new(e.subscribe_events(p, params).await?))))
        }),
    }
}

/// A unary operation's result.
fn value(reply: Reply) -> Result<Outcome, agentd_core::Error> {
    crate::trace::answered(&reply);
    Ok(Outcome::Value(Box::new(reply)))
}
