//! The task engine. It owns the rules: who may see what, how a message is
//! routed, how a task moves between states, what is committed together and
//! when an event may be published. It speaks no HTTP and no SQL: the store,
//! the agent runtime and the push-URL policy are ports (traits) implemented
//! by other crates.

pub mod agent;
pub mod annotations;
pub mod approval;
pub mod background;
pub mod claims;
pub mod conversations;
pub mod engine;
pub mod error;
pub mod events;
pub mod fanout;
pub mod gate;
pub mod journal;
pub mod lease;
pub mod principal;
pub mod record;
pub mod reminder;
pub mod slots;
pub mod store;
pub mod transition;

pub use agent::{Agent, ConversationTurn, TaskControl, Turn};
pub use approval::{ApprovalOutcome, ApprovalRequest, PendingApproval};
pub use background::Background;
pub use engine::{
    CommandHandler, CommandOutcome, Drained, Engine, EngineBuilder, EngineConfig, Halted, Outbox,
    PushUrlPolicy, ReplicaConfig, Runtime, SendAnswer, SendOutcome, StartTask, TaskAnswer, TaskEvents,
    TaskObserver,
};
pub use engine::{EventFeed, FeedItem};
pub use error::{Error, FieldPath, Invalid, Naming, Segment, Violation, Violations};
pub use events::{
    EVENT_PRUNE_STEP, EventJson, EventLogBounds, EventRecord, EventRetention, NewEvent, WholeTask,
};
pub use gate::{GateAnnouncement, GateBridge, GateKeeper};
pub use journal::{
    JournalEntry, JournalToolCall, ModelInput, ModelStep, StepRecord, ToolOutcome, ToolProgress, ToolStart,
};
pub use lease::{Fence, LeaseRow, Leases, ReplicaRow, task_resource};
pub use principal::{Principal, PrincipalRole};
pub use record::{
    BridgeDelivery, BridgeTarget, LinkKind, OpenGate, OutboxItem, OutboxTarget, StatusEntry, TaskLink,
    TaskMeta, TaskRecord,
};
pub use reminder::{DeliveredReminder, ReminderEnd, ReminderLimits, ReminderRecord};
pub use store::{
    Batch, ClosedContext, PushConfigRow, Store, StoreError, TaskMetaRow, TaskPage, TaskQuery, TaskText,
    prune_step_by_bounds,
};
