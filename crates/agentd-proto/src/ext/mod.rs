//! The wire types and schema bundles of agentd's own A2A extensions, one
//! module each. [`schema`] holds what they share.

pub mod events;
pub mod reminders;
pub mod schema;
pub mod task_annotations;
