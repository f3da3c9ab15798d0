//! The task engine. It owns the rules: who may see what, how a message is
//! routed, how a task moves between states, what is committed together and
//! when an event may be published. It speaks no HTTP and no SQL: the store,
//! the agent runtime and the push-URL policy are ports (traits) implemented
//! by other crates.

pub mod agent;
pub mod conversations;
pub mod engine;
pub mod gate;
pub mod principal;
pub mod record;
pub mod slots;
pub mod store;
pub mod transition;

pub use agent::{Agent, ConversationTurn, TaskControl, Turn};
pub use engine::{
    CommandHandler, CommandOutcome, Engine, EngineConfig, PushUrlPolicy, SendOutcome, StartTask, TaskEvents,
    TaskObserver,
};
pub use gate::{GateAnnouncement, GateBridge, GateKeeper};
pub use principal::{Principal, PrincipalRole};
pub use record::{LinkKind, OpenGate, OutboxItem, StatusEntry, TaskLink, TaskMeta, TaskRecord};
pub use store::{Batch, PushConfigRow, Store, StoreError, TaskPage, TaskQuery};
