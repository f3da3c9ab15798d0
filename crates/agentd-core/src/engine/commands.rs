//! The command port (design §4 step 2, §7): a message that names no task
//! and carries a DataPart `{"agentd": {"op": …, …args}}` is a command, run
//! deterministically by the registered [`CommandHandler`] instead of
//! becoming a turn. Also the observer hook through which the runtime
//! learns that a task ended.

use super::{Engine, Runtime, SendOutcome, TaskEvents};
use crate::error::{Error, FieldPath};
use crate::fanout::Subscription;
use crate::principal::Principal;
use crate::record::TaskRecord;
use agentd_proto::{Message, Part, PartContent, Role, SendMessageConfiguration, TaskState, new_id};
use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

/// The key of the command object inside a DataPart.
pub const COMMAND_KEY: &str = "agentd";

/// What a command op answers.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // built once per request, never stored
pub enum CommandOutcome {
    /// A read op's result: the reply is a direct agent Message with this
    /// value as its one DataPart.
    Reply(Value),
    /// The task the op started (or continued): answered like a normal send
    /// (blocking waits per `returnImmediately`, streaming streams it).
    Started(TaskRecord),
}

/// Runs command ops. Implemented by the runtime; the engine only routes.
///
/// Errors: InvalidParams violations name fields relative to the command
/// object (`op`, `instruction`, `id`); the engine prefixes them with where
/// the command sat (`message.parts[i].data.agentd.`).
#[async_trait]
pub trait CommandHandler: Send + Sync + 'static {
    async fn run(
        &self,
        p: &Principal,
        op: &str,
        args: Value,
        runtime: &Runtime,
    ) -> Result<CommandOutcome, Error>;
}

/// Told after a task's terminal state was committed.
#[async_trait]
pub trait TaskObserver: Send + Sync + 'static {
    /// At once, under the task's lock: only what needs no await and does
    /// not call the engine. Whether [`TaskObserver::task_ended`] is wanted
    /// for this end: most ends want nothing more, and then no task is
    /// spawned for them.
    fn end_committed(&self, task_id: &str, state: TaskState) -> bool;
    /// Off the task's lock, in a spawned task, so it may call back into the
    /// engine; only when [`TaskObserver::end_committed`] asked for it.
    async fn task_ended(&self, runtime: &Runtime, task_id: &str, state: TaskState);
}

/// A command found in a message: which part, the op, its arguments.
pub(super) struct Command {
    part: usize,
    op: String,
    args: Value,
}

impl Command {
    fn prefix(&self) -> FieldPath {
        at(self.part)
    }
}

/// Where the command of part `i` sits: `message.parts[i].data.agentd`.
fn at(i: usize) -> FieldPath {
    FieldPath::of("message.parts").index(i).field("data").member(COMMAND_KEY)
}

/// The command a message carries, if any. A DataPart whose object has the
/// `agentd` member is a command; a malformed one is InvalidParams, and so
/// are two commands in one message.
pub(super) fn find(msg: &Message) -> Result<Option<Command>, Error> {
    let mut found: Option<Command> = None;
    for (i, part) in msg.parts.iter().enumerate() {
        let PartContent::Data(data) = &part.content else { continue };
        let Value::Object(data) = &**data else { continue };
        let Some(cmd) = data.get(COMMAND_KEY) else { continue };
        let field = at(i);
        if found.is_some() {
            return Err(Error::invalid(field, "a message carries at most one command"));
        }
        let Value::Object(obj) = cmd else {
            return Err(Error::invalid(field, "must be an object {\"op\": …, …arguments}"));
        };
        let mut args = obj.clone();
        let op = match args.remove("op") {
            Some(Value::String(op)) if !op.is_empty() => op,
            Some(_) => {
                return Err(Error::invalid(field.member("op"), "must be a non-empty string"));
            }
            None => return Err(Error::invalid(field.member("op"), "is required")),
        };
        found = Some(Command { part: i, op, args: Value::Object(args) });
    }
    Ok(found)
}

/// Puts the fields an InvalidParams error of a handler names under where
/// the command sat.
fn locate(e: Error, prefix: &FieldPath) -> Error {
    match e {
        Error::Invalid(invalid) => Error::Invalid(invalid.under(prefix)),
        other => other,
    }
}

impl Engine {
    pub(super) async fn run_command(
        &self,
        p: &Principal,
        command: Command,
        msg: &Message,
        cfg: &SendMessageConfiguration,
        close_on_interrupt: bool,
    ) -> Result<SendOutcome, Error> {
        let Some(handler) = &self.installed().commands else {
            return Err(Error::unsupported(
                "this agent runs no commands (the command extension is not set up)",
            ));
        };
        // A command's answer names the message's context: not one of
        // another principal's conversations.
        if !msg.context_id.is_empty() {
            self.refuse_foreign_context(p, &msg.context_id).await?;
        }
        let prefix = command.prefix();
        let outcome = handler
            .run(p, &command.op, command.args, Runtime::of(self))
            .await
            .map_err(|e| locate(e, &prefix))?;
        match outcome {
            CommandOutcome::Reply(value) => {
                let context_id = if msg.context_id.is_empty() { new_id() } else { msg.context_id.clone() };
                Ok(SendOutcome::Message(Message {
                    message_id: new_id(),
                    context_id,
                    role: Role::Agent,
                    parts: vec![Part::data(value)],
                    ..Message::default()
                }))
            }
            CommandOutcome::Started(rec) => {
                Ok(SendOutcome::Task(self.events_of(rec.id(), cfg.history_length, close_on_interrupt).await?))
            }
        }
    }

    /// The events of a task from now on: its current snapshot first (taken
    /// under its lock), then what follows. A terminal task yields only its
    /// snapshot.
    pub(super) async fn events_of(
        &self,
        id: &str,
        history_length: Option<i32>,
        close_on_interrupt: bool,
    ) -> Result<TaskEvents, Error> {
        loop {
            if let Some(slot) = self.slot(id).await? {
                let st = slot.state.lock().await;
                if st.detached {
                    continue;
                }
                let first = self.view(&st.record, history_length, true);
                return Ok(TaskEvents::new(self, first, slot.subscribe(), close_on_interrupt));
            }
            let rec = self.record(id).await?.ok_or_else(|| Error::task_not_found(id))?;
            let first = self.view(&rec, history_length, true);
            return Ok(TaskEvents::new(self, first, Subscription::closed(), close_on_interrupt));
        }
    }

    /// Waits until a task is terminal or waits for input, and returns its
    /// record then. For the runtime (a parent waiting on a subagent); no
    /// authorization.
    pub(crate) async fn settled(&self, id: &str) -> Result<TaskRecord, Error> {
        loop {
            // A stream cut off for lagging ends early: look again.
            self.events_of(id, Some(0), true).await?.settle().await;
            let rec = self.record(id).await?.ok_or_else(|| Error::task_not_found(id))?;
            if rec.state().is_terminal() || rec.state().is_interrupted() {
                return Ok(rec);
            }
        }
    }

    /// Tells the observers that a task ended: at once, then in a spawned
    /// task those that asked for more (the caller holds the task's lock).
    pub(super) fn notify_ended(&self, id: &str, state: TaskState) {
        let observers = &self.installed().observers;
        let wanted: Vec<Arc<dyn TaskObserver>> =
            observers.iter().filter(|o| o.end_committed(id, state)).cloned().collect();
        if wanted.is_empty() {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let (runtime, id) = (Runtime::new(self.annotating(false)), id.to_owned());
        self.inner.background.spawn_on(
            async move {
                for o in &wanted {
                    o.task_ended(&runtime, &id, state).await;
                }
            },
            &rt,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(parts: Vec<Part>) -> Message {
        Message { message_id: "m".into(), role: Role::User, parts, ..Message::default() }
    }

    #[test]
    fn a_data_part_with_the_agentd_member_is_a_command() {
        let m = msg(vec![Part::text("hi"), Part::data(json!({"agentd": {"op": "status", "x": 1}}))]);
        let c = find(&m).unwrap().unwrap();
        assert_eq!((c.part, c.op.as_str(), c.args.clone()), (1, "status", json!({"x": 1})));
        assert!(find(&msg(vec![Part::data(json!({"other": 1}))])).unwrap().is_none());
        assert!(find(&msg(vec![Part::text("{\"agentd\": {}}")])).unwrap().is_none());
    }

    #[test]
    fn malformed_commands_name_the_field() {
        let cases = [
            (json!({"agentd": "status"}), "message.parts[0].data.agentd"),
            (json!({"agentd": {}}), "message.parts[0].data.agentd.op"),
            (json!({"agentd": {"op": 5}}), "message.parts[0].data.agentd.op"),
        ];
        for (data, field) in cases {
            let e = find(&msg(vec![Part::data(data)])).err().unwrap();
            assert_eq!(first_field(&e), field);
        }
        let two = Part::data(json!({"agentd": {"op": "status"}}));
        let e = find(&msg(vec![two.clone(), two])).err().unwrap();
        assert_eq!(first_field(&e), "message.parts[1].data.agentd");
    }

    fn first_field(e: &Error) -> String {
        let Error::Invalid(e) = e else { panic!("not InvalidParams: {e:?}") };
        e.violations[0].field.to_string()
    }

    #[test]
    fn handler_fields_are_located_in_the_message() {
        let mut v = crate::error::Violations::default();
        v.add(FieldPath::default().member("op"), "unknown");
        v.add(FieldPath::default().member("name"), "bad");
        let e = locate(v.finish().unwrap_err(), &at(2));
        let Error::Invalid(e) = &e else { panic!("not InvalidParams: {e:?}") };
        let fields: Vec<String> = e.violations.iter().map(|v| v.field.to_string()).collect();
        assert_eq!(fields, ["message.parts[2].data.agentd.op", "message.parts[2].data.agentd.name"]);
        let message = e.to_string();
        assert!(message.contains("message.parts[2].data.agentd.op: unknown"), "{message}");
    }
}
