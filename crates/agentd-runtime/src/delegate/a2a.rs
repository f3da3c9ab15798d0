//! [`A2aDelegator`]: delegation over the official A2A 1.0 JSON-RPC wire.
//! Streams the peer's task when its card offers streaming, else sends with
//! `returnImmediately` and polls GetTask; either way the task id is known
//! early, so a cancel can reach the peer as CancelTask.

use super::client::PeerClient;
use super::peers::{Peer, PeerConfig};
use super::{DelegateError, DelegateRequest, Delegator, TaskWatch};
use agentd_proto::jsonrpc::methods;
use agentd_proto::{
    CancelTaskRequest, GetTaskRequest, Message, Role, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskState, TaskStatus, Timestamp, new_id,
};
use async_trait::async_trait;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Consecutive failed GetTask polls that end a delegation.
const POLL_FAILURES: u32 = 3;

/// Tuning of [`A2aDelegator`].
#[derive(Clone, Debug)]
pub struct DelegateOptions {
    /// The pause between GetTask polls (peers without streaming, or after a
    /// stream ended early).
    pub poll_interval: Duration,
    /// Timeout of each unary request (card, SendMessage, GetTask, CancelTask).
    pub request_timeout: Duration,
}

impl Default for DelegateOptions {
    fn default() -> Self {
        Self { poll_interval: Duration::from_millis(500), request_timeout: Duration::from_secs(30) }
    }
}

/// Sends work to the configured A2A peers.
pub struct A2aDelegator {
    peers: Vec<Peer>,
    http: agentd_client::LazyHttp,
    opts: DelegateOptions,
}

impl A2aDelegator {
    /// Checks every peer and reads its credentials now, so a bad entry
    /// stops the daemon at start instead of at the first delegation.
    pub fn new(peers: &[PeerConfig], opts: DelegateOptions) -> Result<Self, String> {
        let mut checked: Vec<Peer> = Vec::new();
        for c in peers {
            let p = Peer::from_config(c)?;
            if checked.iter().any(|q| q.name == p.name) {
                return Err(format!("a2a.peers: the name {:?} is used twice", p.name));
            }
            checked.push(p);
        }
        // No redirects: a bearer token goes only where the card says.
        let http = agentd_client::LazyHttp::new(|| {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(Duration::from_secs(10))
                .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("cannot build the A2A client: {e}"))
        });
        Ok(Self { peers: checked, http, opts })
    }

    async fn run(
        &self,
        peer: &Peer,
        begin: Begin,
        cancel: &CancellationToken,
        watch: &dyn TaskWatch,
    ) -> Result<Task, Failure> {
        let client = PeerClient::connect(self.http.get()?, peer, self.opts.request_timeout).await?;
        let mut follow = Follow { client: &client, task_id: None, poll: self.opts.poll_interval, watch };
        let outcome = tokio::select! {
            r = follow.begin(begin) => r,
            () = cancel.cancelled() => Err(Failure::Cancelled),
        };
        if matches!(outcome, Err(Failure::Cancelled | Failure::Unrecorded(_)))
            && let Some(id) = &follow.task_id
        {
            let req = CancelTaskRequest { id: id.clone(), ..Default::default() };
            if let Err(e) = client.call::<Task>(methods::CANCEL_TASK, &req).await {
                tracing::warn!(peer = %peer.name, task = %id, error = %e, "could not cancel the peer's task");
            }
        }
        outcome
    }

    fn peer(&self, name: &str) -> Result<&Peer, DelegateError> {
        self.peers.iter().find(|p| p.name == name).ok_or_else(|| DelegateError::UnknownPeer(name.to_owned()))
    }

    fn outcome(peer: &Peer, r: Result<Task, Failure>) -> Result<Task, DelegateError> {
        match r {
            Ok(task) => Ok(task),
            Err(Failure::Cancelled) => Err(DelegateError::Cancelled),
            Err(Failure::Peer(reason) | Failure::Unrecorded(reason)) => {
                Err(DelegateError::Peer { peer: peer.name.clone(), reason })
            }
        }
    }
}

/// How a delegation begins: sending a new message, or following the task
/// an earlier one started (after a restart).
enum Begin {
    Send(Message),
    Follow(String),
}

/// Nobody to tell of the peer's task.
struct Unwatched;

#[async_trait]
impl TaskWatch for Unwatched {
    async fn started(&self, _task_id: &str) -> Result<(), String> {
        Ok(())
    }
}

/// Why a delegation stopped without a task to return.
enum Failure {
    Peer(String),
    Cancelled,
    /// The watch could not record the peer's task: it is cancelled.
    Unrecorded(String),
}

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure::Peer(s)
    }
}

/// Following one delegated task; remembers its id for a cancel.
struct Follow<'a> {
    client: &'a PeerClient,
    task_id: Option<String>,
    poll: Duration,
    watch: &'a dyn TaskWatch,
}

/// A state the peer's task rests in: terminal, or waiting on someone.
fn settled(s: TaskState) -> bool {
    s.is_terminal() || s.is_interrupted()
}

impl Follow<'_> {
    async fn begin(&mut self, begin: Begin) -> Result<Task, Failure> {
        match begin {
            Begin::Send(m) if self.client.streaming => self.stream(m).await,
            Begin::Send(m) => self.send_and_poll(m).await,
            Begin::Follow(id) => {
                self.task_id = Some(id);
                self.poll().await
            }
        }
    }

    /// The peer named its task, which is still running: the watch hears of
    /// it before the delegation waits on.
    async fn named(&mut self, id: String) -> Result<(), Failure> {
        self.watch.started(&id).await.map_err(|e| {
            Failure::Unrecorded(format!("its task {id} could not be recorded, so it was cancelled: {e}"))
        })?;
        self.task_id = Some(id);
        Ok(())
    }

    async fn stream(&mut self, message: Message) -> Result<Task, Failure> {
        let sent = message.clone();
        let req = SendMessageRequest { message: Some(message), ..Default::default() };
        let mut events = self.client.stream(methods::SEND_STREAMING_MESSAGE, &req).await?;
        loop {
            let ev = match events.next().await {
                Ok(Some(ev)) => ev,
                Ok(None) => break,
                // Once the task is known, a broken stream is not the end
                // of it: polling takes over.
                Err(e) if self.task_id.is_some() => {
                    tracing::debug!(error = %e, "the peer's stream broke off; polling its task");
                    break;
                }
                Err(e) => return Err(Failure::Peer(e)),
            };
            let (id, state) = match ev {
                StreamResponse::Message(m) => return Ok(reply_as_task(sent, m)),
                StreamResponse::Task(t) => (t.id, t.status.state),
                StreamResponse::StatusUpdate(u) => (u.task_id, u.status.state),
                StreamResponse::ArtifactUpdate(_) => continue,
            };
            if settled(state) {
                if self.task_id.is_none() && !id.is_empty() {
                    self.task_id = Some(id);
                }
                break;
            }
            if self.task_id.is_none() && !id.is_empty() {
                self.named(id).await?;
            }
        }
        // The full task (all artifacts and history) in one read; a stream
        // that ended early is followed by polling.
        self.poll().await
    }

    async fn send_and_poll(&mut self, message: Message) -> Result<Task, Failure> {
        let sent = message.clone();
        let req = SendMessageRequest {
            message: Some(message),
            configuration: Some(SendMessageConfiguration { return_immediately: true, ..Default::default() }),
            ..Default::default()
        };
        match self.client.call::<SendMessageResponse>(methods::SEND_MESSAGE, &req).await? {
            SendMessageResponse::Message(m) => Ok(reply_as_task(sent, m)),
            SendMessageResponse::Task(t) if settled(t.status.state) && t.artifacts.is_some() => Ok(t),
            SendMessageResponse::Task(t) if settled(t.status.state) => {
                self.task_id = Some(t.id);
                self.poll().await
            }
            SendMessageResponse::Task(t) => {
                self.named(t.id).await?;
                self.poll().await
            }
        }
    }

    async fn poll(&mut self) -> Result<Task, Failure> {
        let Some(id) = self.task_id.clone() else {
            return Err(Failure::Peer("the stream ended before the peer named its task".into()));
        };
        let mut failures = 0;
        loop {
            let req = GetTaskRequest { id: id.clone(), ..Default::default() };
            match self.client.call::<Task>(methods::GET_TASK, &req).await {
                Ok(task) if settled(task.status.state) => return Ok(task),
                Ok(_) => failures = 0,
                // A blip (a peer restarting, a dropped connection) is
                // retried a few times before the delegation fails.
                Err(e) if failures + 1 < POLL_FAILURES => {
                    failures += 1;
                    tracing::debug!(task = %id, error = %e, "polling the peer's task failed; retrying");
                }
                Err(e) => return Err(Failure::Peer(e)),
            }
            tokio::time::sleep(self.poll).await;
        }
    }
}

/// A direct Message reply, as the completed task the port promises.
fn reply_as_task(sent: Message, reply: Message) -> Task {
    let id = if reply.task_id.is_empty() { new_id() } else { reply.task_id.clone() };
    Task {
        id,
        context_id: reply.context_id.clone(),
        status: TaskStatus {
            state: TaskState::Completed,
            message: Some(reply),
            timestamp: Some(Timestamp::now()),
        },
        artifacts: Some(Vec::new()),
        history: Some(vec![sent]),
        metadata: None,
    }
}

#[async_trait]
impl Delegator for A2aDelegator {
    fn peers(&self) -> Vec<String> {
        self.peers.iter().map(|p| p.name.clone()).collect()
    }

    async fn delegate(
        &self,
        request: DelegateRequest,
        cancel: CancellationToken,
    ) -> Result<Task, DelegateError> {
        self.delegate_watched(request, cancel, &Unwatched).await
    }

    async fn delegate_watched(
        &self,
        request: DelegateRequest,
        cancel: CancellationToken,
        watch: &dyn TaskWatch,
    ) -> Result<Task, DelegateError> {
        let peer = self.peer(&request.peer)?;
        if cancel.is_cancelled() {
            return Err(DelegateError::Cancelled);
        }
        let mut message = request.message;
        if message.message_id.is_empty() {
            message.message_id = new_id();
        }
        message.role = Role::User;
        tracing::debug!(peer = %peer.name, message = %message.message_id, "delegating to an A2A peer");
        Self::outcome(peer, self.run(peer, Begin::Send(message), &cancel, watch).await)
    }

    async fn follow(
        &self,
        peer: &str,
        task_id: &str,
        cancel: CancellationToken,
    ) -> Result<Task, DelegateError> {
        let peer = self.peer(peer)?;
        tracing::debug!(peer = %peer.name, task = %task_id, "following a delegated task again");
        Self::outcome(peer, self.run(peer, Begin::Follow(task_id.to_owned()), &cancel, &Unwatched).await)
    }
}
