//! The port through which an opened (or escalated) human gate reaches the
//! people it asks: a bridge delivers the question to a channel. A bridge
//! never decides who may answer; the engine does, when the answer arrives.

use crate::error::Error;
use crate::record::TaskRecord;
use agentd_proto::Message;
use async_trait::async_trait;
use serde_json::Value;

/// What a bridge delivers when a gate opens or is escalated.
#[derive(Clone, Debug, PartialEq)]
pub struct GateAnnouncement {
    /// The task that waits on the gate (the one to answer with `taskId`).
    pub task_id: String,
    /// The workflow run the gate belongs to (`<workflow>-<ULID>`), if any.
    pub run_id: Option<String>,
    /// The question, as shown to people.
    pub question: String,
    /// The JSON Schema the answer must satisfy, if the gate declares one.
    pub ask_schema: Option<Value>,
    /// The name of the channel (`@channel/<name>` without the prefix).
    pub channel: String,
    /// True when this is a re-announcement after `escalate_after`.
    pub escalation: bool,
    /// How to answer, in one line (e.g. the `agentd answer` command).
    pub answer_hint: String,
}

/// Delivers gate announcements to channels. Implementations must make the
/// delivery durable before returning (an outbox row), so a restart does not
/// lose an announcement.
#[async_trait]
pub trait GateBridge: Send + Sync + 'static {
    async fn announce(&self, announcement: GateAnnouncement) -> Result<(), Error>;

    /// The outbox row `announcement` becomes, checked but not queued, for a
    /// caller that commits it in the same batch as the change that opened
    /// (or escalated) the gate, so that no crash can separate the two.
    /// `None`: this bridge only queues its own deliveries (use `announce`).
    async fn delivery(
        &self,
        _announcement: &GateAnnouncement,
    ) -> Option<Result<crate::record::BridgeDelivery, Error>> {
        None
    }
}

/// Decides whether a message answers the gate open on a task. The engine
/// calls it under the task's lock, on a copy of the record, before the
/// answer is committed: on success the keeper has recorded the validated
/// answer on the record (and closed the gate), and the engine commits that
/// together with the message, so an acknowledged answer is never lost and
/// a refused one changes nothing.
pub trait GateKeeper: Send + Sync + 'static {
    /// Errors: InvalidParams listing every violation of the answer schema.
    fn accept(&self, rec: &mut TaskRecord, answer: &Message) -> Result<(), Error>;
}
