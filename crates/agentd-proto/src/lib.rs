//! A2A 1.0.1 on the wire: the ProtoJSON data model, the JSON-RPC 2.0 envelope
//! and the one table that maps every error to its codes on every binding.
//!
//! This crate knows nothing of tokio, HTTP frameworks or SQL. It is the only
//! crate that decides how a byte on the wire looks.
//!
//! The types are written by hand with serde rather than generated from
//! `a2a.proto`: ProtoJSON needs camelCase out, camelCase *and* snake_case in,
//! `.sssZ` timestamps, always-present REQUIRED members and member-based oneofs,
//! and generated pbjson code gets the last three wrong for A2A. The tests in
//! `tests/suite/protojson.rs` pin every one of those rules.

pub mod bounded;
pub mod card;
pub mod error;
pub mod exact;
pub mod ext;
pub mod fuzzing;
pub mod jsonrpc;
pub mod requests;
pub mod serde_util;
pub mod strict;
pub mod types;
pub mod validate;

pub use bounded::JsonLimits;
pub use card::*;
pub use error::{A2aError, ErrorKind, FieldViolation, GrpcCode};
pub use requests::*;
pub use types::*;

/// The protocol version this server speaks (`Major.Minor`).
pub const PROTOCOL_VERSION: &str = "1.0";
/// `domain` of every ErrorInfo this server sends.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
