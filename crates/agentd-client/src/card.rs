//! Reading an agent's card (an HTTP GET, not a JSON-RPC call).

use crate::client::DEFAULT_MAX_ANSWER;
use crate::error::ClientError;
use agentd_proto::AgentCard;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderValue};
use std::time::Duration;

/// Fetches the card at `url` (`/.well-known/agent-card.json`), sending the
/// bearer token if one is given.
pub async fn fetch_card(
    http: &reqwest::Client,
    url: Url,
    bearer: Option<&str>,
    timeout: Duration,
) -> Result<AgentCard, ClientError> {
    let mut rb = http.get(url).timeout(timeout).header(ACCEPT, "application/json");
    if let Some(token) = bearer {
        let mut v = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .map_err(|_| ClientError::BadHeader("the token"))?;
        v.set_sensitive(true);
        rb = rb.header(AUTHORIZATION, v);
    }
    let mut resp = rb.send().await.map_err(ClientError::Transport)?;
    if !resp.status().is_success() {
        return Err(ClientError::Status { status: resp.status().as_u16(), body: String::new() });
    }
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(ClientError::BrokenOff)? {
        if buf.len() + chunk.len() > DEFAULT_MAX_ANSWER {
            return Err(ClientError::TooLarge(DEFAULT_MAX_ANSWER));
        }
        buf.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&buf).map_err(ClientError::UnexpectedResult)
}
