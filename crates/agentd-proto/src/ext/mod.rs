//! Payload types of the agentd extensions, one module each.

pub mod reminders;
