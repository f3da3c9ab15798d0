//! One A2A peer over `agentd_client`: reads its card, picks the JSONRPC
//! interface, and says what went wrong in words for the model and the
//! workflow that delegated (which peer call failed, and how).

use super::peers::Peer;
use agentd_client::{Client, ClientError, EventStream, describe, fetch_card};
use agentd_proto::StreamResponse;
use agentd_proto::jsonrpc::methods;
use reqwest::StatusCode;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The binding name of JSON-RPC interfaces in a card.
const JSONRPC_BINDING: &str = "JSONRPC";
/// The largest card, unary answer or stream event read, in bytes.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// A peer's JSON-RPC endpoint, found through its card.
pub(crate) struct PeerClient {
    client: Client,
    pub streaming: bool,
}

impl PeerClient {
    /// Fetches the card and picks its JSON-RPC interface (a 1.x one first).
    pub(crate) async fn connect(
        http: &reqwest::Client,
        peer: &Peer,
        timeout: Duration,
    ) -> Result<Self, String> {
        let url = peer.card_url()?;
        let token = peer.token.as_ref().map(|t| t.expose());
        let card = fetch_card(http, url, token, timeout, MAX_BODY).await.map_err(|e| match e {
            ClientError::Transport(e) => format!("cannot fetch its agent card: {}", describe(&e)),
            ClientError::Status { status, .. } => {
                format!("its agent card answered HTTP {}", status_text(status))
            }
            ClientError::BadHeader(_) => credentials_unusable(),
            ClientError::UnexpectedResult(e) => {
                format!("its agent card is not valid: not the expected JSON: {e}")
            }
            e => format!("its agent card is not valid: {}", answer_problem(e)),
        })?;
        let jsonrpc: Vec<_> = card
            .supported_interfaces
            .iter()
            .filter(|i| i.protocol_binding.eq_ignore_ascii_case(JSONRPC_BINDING))
            .collect();
        let chosen = jsonrpc.iter().find(|i| i.protocol_version.starts_with("1.")).or(jsonrpc.first());
        let Some(interface) = chosen else {
            let offered: Vec<&str> =
                card.supported_interfaces.iter().map(|i| i.protocol_binding.as_str()).collect();
            return Err(format!("its card offers no JSONRPC interface (offered: [{}])", offered.join(", ")));
        };
        // A relative interface URL is read against the base URL.
        let endpoint = peer
            .base
            .join(&interface.url)
            .map_err(|e| format!("its JSONRPC interface URL {:?} is not a URL: {e}", interface.url))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(format!("its JSONRPC interface URL {endpoint} is not http(s)"));
        }
        // The token is for the configured peer: a card (maybe tampered
        // with) may not send it elsewhere.
        if peer.token.is_some() && endpoint.origin() != peer.base.origin() {
            return Err(format!(
                "its card puts the JSONRPC interface at {}, another origin than the configured URL; \
                 credentials are only sent to the configured origin (set a2a.peers[{}].url to it)",
                endpoint.origin().ascii_serialization(),
                peer.name
            ));
        }
        let mut client = Client::new(http.clone(), endpoint).with_timeout(timeout).with_max_answer(MAX_BODY);
        if let Some(token) = token {
            client = client.with_bearer(token).map_err(|_| credentials_unusable())?;
        }
        Ok(Self { client, streaming: card.capabilities.streaming == Some(true) })
    }

    /// A unary call; the `result` member decoded as `T`.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, String> {
        self.client.call(method, params).await.map_err(|e| call_failed(method, e))
    }

    /// A streaming call: the events of the SSE answer, or the error the
    /// peer answered before opening the stream.
    pub(crate) async fn stream(&self, method: &str, params: &impl Serialize) -> Result<PeerStream, String> {
        let events = self.client.stream(method, params).await.map_err(|e| call_failed(method, e))?;
        Ok(PeerStream { events })
    }
}

/// The events of one SSE answer.
pub(crate) struct PeerStream {
    events: EventStream<StreamResponse>,
}

impl PeerStream {
    /// The next event; `None` when the peer closed the stream.
    pub(crate) async fn next(&mut self) -> Result<Option<StreamResponse>, String> {
        self.events.next().await.map_err(|e| match e {
            ClientError::BrokenOff(e) => format!("the event stream broke off: {}", describe(&e)),
            ClientError::NotJson(e) => format!("an event is not JSON: {e}"),
            e => call_failed(methods::SEND_STREAMING_MESSAGE, e),
        })
    }
}

fn credentials_unusable() -> String {
    "its credentials have characters not allowed in an HTTP header".to_owned()
}

/// `404 Not Found`.
fn status_text(status: u16) -> String {
    StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string())
}

/// What the peer answered, or why there is no answer, for `method`.
fn call_failed(method: &str, e: ClientError) -> String {
    let answered = |status: u16, detail: &str| {
        let hint = if status == 401 { " (check the peer's credentials in a2a.peers)" } else { "" };
        format!("{method} answered HTTP {}{hint}: {}", status_text(status), detail.trim())
    };
    match e {
        ClientError::Transport(e) => format!("{method} failed: {}", describe(&e)),
        ClientError::Status { status, body } => answered(status, &body),
        ClientError::Refused(r) if r.http_status != 200 => {
            answered(r.http_status, r.message.as_deref().unwrap_or(""))
        }
        ClientError::Refused(r) => {
            let message = r.message.as_deref().unwrap_or("an error without a message");
            let code = r.code.map_or_else(|| "null".to_owned(), |c| c.to_string());
            format!("{method} was refused: {message} ({code})")
        }
        ClientError::BadHeader(_) => credentials_unusable(),
        ClientError::Sse(e) => format!("the event stream: {e}"),
        e => format!("{method}: {}", answer_problem(e)),
    }
}

/// Why an answer that came is not usable.
fn answer_problem(e: ClientError) -> String {
    match e {
        ClientError::BrokenOff(e) => format!("reading the answer: {}", describe(&e)),
        ClientError::NotJson(e) => format!("not the expected JSON: {e}"),
        e => e.to_string(),
    }
}
