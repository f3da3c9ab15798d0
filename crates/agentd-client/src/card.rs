//! Reading an agent's card (an HTTP GET, not a JSON-RPC call).

use crate::client::{bearer, read_bounded};
use crate::error::ClientError;
use agentd_proto::AgentCard;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION};
use std::time::Duration;

/// Fetches the card at `url` (`/.well-known/agent-card.json`), sending the
/// bearer token if one is given; a card over `max_bytes` is refused.
pub async fn fetch_card(
    http: &reqwest::Client,
    url: Url,
    token: Option<&str>,
    timeout: Duration,
    max_bytes: usize,
) -> Result<AgentCard, ClientError> {
    let mut rb = http.get(url).timeout(timeout).header(ACCEPT, "application/json");
    if let Some(token) = token {
        rb = rb.header(AUTHORIZATION, bearer(token)?);
    }
    let resp = rb.send().await.map_err(ClientError::Transport)?;
    if !resp.status().is_success() {
        return Err(ClientError::Status { status: resp.status().as_u16(), body: String::new() });
    }
    let buf = read_bounded(resp, max_bytes).await?;
    serde_json::from_slice(&buf).map_err(ClientError::UnexpectedResult)
}
