//! Delegation to other A2A agents: the port a workflow's `a2a.delegate`
//! step and the `delegate` agent tool call. An implementation sends the
//! objective to a configured peer over the official wire, follows the
//! peer's task to a terminal state and hands it back; cancelling the token
//! cancels the peer's task too.

mod a2a;
mod client;
mod peers;
mod tool;

pub use a2a::{A2aDelegator, DelegateOptions};
pub use peers::PeerConfig;
pub use tool::{DelegateTool, TOOL_NAME, answer_text};

use agentd_proto::{Message, Task};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

/// One delegation: which configured peer, and the message to send it.
#[derive(Clone, Debug)]
pub struct DelegateRequest {
    /// The `name` of an entry of `a2a.peers`.
    pub peer: String,
    /// The message to send (role user); its ids are filled in if empty.
    pub message: Message,
}

#[derive(Debug, thiserror::Error)]
pub enum DelegateError {
    #[error("no A2A peer named {0:?} is configured (a2a.peers)")]
    UnknownPeer(String),
    /// The peer could not be reached or answered with an error.
    #[error("peer {peer:?}: {reason}")]
    Peer { peer: String, reason: String },
    #[error("the delegation was cancelled")]
    Cancelled,
}

/// Told the id of the peer's task as soon as the peer names it, before
/// the delegation goes on waiting (the `delegate` tool journals it).
#[async_trait]
pub trait TaskWatch: Send + Sync {
    /// `Err` ends the delegation (and cancels the peer's task): what it
    /// started could not be recorded.
    async fn started(&self, task_id: &str) -> Result<(), String>;
}

/// Sends work to A2A peers.
#[async_trait]
pub trait Delegator: Send + Sync + 'static {
    /// The names of the configured peers.
    fn peers(&self) -> Vec<String>;
    /// Delegates and waits for the peer's task to end; returns it in its
    /// terminal (or INPUT_REQUIRED / AUTH_REQUIRED) state, or the direct
    /// reply wrapped as a completed task.
    async fn delegate(
        &self,
        request: DelegateRequest,
        cancel: CancellationToken,
    ) -> Result<Task, DelegateError>;
    /// [`Delegator::delegate`], telling `watch` the peer's task id once
    /// known and still running. By default nobody is told.
    async fn delegate_watched(
        &self,
        request: DelegateRequest,
        cancel: CancellationToken,
        _watch: &dyn TaskWatch,
    ) -> Result<Task, DelegateError> {
        self.delegate(request, cancel).await
    }
    /// Follows the task `task_id` an earlier delegation started at `peer`
    /// (after a restart) to its end, sending nothing new.
    async fn follow(
        &self,
        peer: &str,
        task_id: &str,
        _cancel: CancellationToken,
    ) -> Result<Task, DelegateError> {
        Err(DelegateError::Peer {
            peer: peer.to_owned(),
            reason: format!("this delegator cannot follow the task {task_id} again"),
        })
    }
}
