//! One delivery: the HTTP POST of an outbox item and the retry schedule
//! after a failure. A push item is the bare StreamResponse as
//! `application/a2a+json` with the config's credentials and token as
//! headers (A2A §4.3.3); a bridge item is the channel's JSON, signed for a
//! webhook channel with a secret (`bridges::sign`).

use super::ssrf::{GuardedResolver, SsrfGuard};
use crate::bridges::sign::{self, BridgeSecrets, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use agentd_client::{Backoff, LazyHttp, describe};
use agentd_core::{BridgeTarget, OutboxItem, OutboxTarget};
use agentd_proto::TaskPushNotificationConfig;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use reqwest::{Client, Url, redirect};
use std::sync::Arc;
use std::time::Duration;

/// The media type of a push body.
pub const PUSH_CONTENT_TYPE: &str = "application/a2a+json";
/// The header that carries a config's `token` (a2a-python's and 0.3's name).
pub const TOKEN_HEADER: &str = "x-a2a-notification-token";

/// How one attempt ended.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The receiver answered 2xx.
    Delivered,
    /// Worth retrying: error status, connect error, timeout, refused address.
    Failed(String),
    /// Can never succeed (the config itself is unusable): give up now.
    Permanent(String),
}

/// Posts outbox items with a client that cannot be led to private
/// addresses: guarded resolver, literal-IP check, no redirects, no proxy.
#[derive(Clone)]
pub(crate) struct Deliverer {
    client: LazyHttp,
    guard: SsrfGuard,
    timeout: Duration,
    secrets: BridgeSecrets,
}

impl Deliverer {
    pub(crate) fn new(guard: SsrfGuard, timeout: Duration, secrets: BridgeSecrets) -> Result<Self, String> {
        let client = LazyHttp::new(move || {
            Client::builder()
                .redirect(redirect::Policy::none())
                .no_proxy()
                .dns_resolver(Arc::new(GuardedResolver::new(guard)))
                .connect_timeout(timeout)
                .timeout(timeout)
                .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("cannot build the push HTTP client: {e}"))
        });
        Ok(Self { client, guard, timeout, secrets })
    }

    pub(crate) async fn deliver(&self, item: &OutboxItem) -> Outcome {
        if let OutboxTarget::Bridge(target) = &item.target
            && target.kind == crate::bridges::LOG_KIND
        {
            return log_announcement(target, &item.body);
        }
        let req = match &item.target {
            OutboxTarget::Push(config) => self.push_request(config, &item.body),
            OutboxTarget::Bridge(target) => self.bridge_request(target, &item.body),
        };
        match req {
            Ok(req) => send(req).await,
            Err(outcome) => outcome,
        }
    }

    /// The checks every target gets: a valid URL the guard allows.
    fn post(&self, url: &str) -> Result<reqwest::RequestBuilder, Outcome> {
        let url =
            Url::parse(url.trim()).map_err(|e| Outcome::Permanent(format!("url is not a valid URL: {e}")))?;
        if let Err(why) = self.guard.check_target(&url) {
            return Err(Outcome::Failed(format!("url refused: {why}")));
        }
        let client = self.client.get().map_err(Outcome::Failed)?;
        // The delivery span's trace context (`trace::delivery`), when tracing is on.
        Ok(agentd_client::trace::inject(client.post(url).timeout(self.timeout)))
    }

    fn push_request(
        &self,
        config: &TaskPushNotificationConfig,
        body: &str,
    ) -> Result<reqwest::RequestBuilder, Outcome> {
        let mut req = self
            .post(&config.url)?
            .header(CONTENT_TYPE, HeaderValue::from_static(PUSH_CONTENT_TYPE))
            .body(body.to_owned());
        if let Some(auth) = &config.authentication
            && !auth.credentials.is_empty()
        {
            let v = secret(&format!("{} {}", auth.scheme.trim(), auth.credentials)).ok_or_else(|| {
                Outcome::Permanent("authentication has characters not allowed in an HTTP header".into())
            })?;
            req = req.header(AUTHORIZATION, v);
        }
        if !config.token.is_empty() {
            let v = secret(&config.token).ok_or_else(|| {
                Outcome::Permanent("token has characters not allowed in an HTTP header".into())
            })?;
            req = req.header(HeaderName::from_static(TOKEN_HEADER), v);
        }
        Ok(req)
    }

    fn bridge_request(&self, target: &BridgeTarget, body: &str) -> Result<reqwest::RequestBuilder, Outcome> {
        let mut req = self
            .post(&target.url)?
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body.to_owned());
        // Signed per attempt, so the timestamp is the attempt's.
        if target.kind == "webhook"
            && let Some(key) = self.secrets.get(&target.channel)
        {
            let now = chrono::Utc::now().timestamp();
            req = req
                .header(HeaderName::from_static(TIMESTAMP_HEADER), now.to_string())
                .header(HeaderName::from_static(SIGNATURE_HEADER), sign::sign(key, now, body.as_bytes()));
        }
        Ok(req)
    }
}

/// A `log` channel: the announcement as one log line a person can act on.
fn log_announcement(target: &BridgeTarget, body: &str) -> Outcome {
    let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let field = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
    let lead =
        if v["escalation"] == true { "still waiting for an answer" } else { "a question needs an answer" };
    tracing::info!(
        channel = %target.channel,
        task = %field("taskId"),
        "gate: {lead}: {} (answer with: {})",
        field("question"),
        field("answerHint")
    );
    Outcome::Delivered
}

async fn send(req: reqwest::RequestBuilder) -> Outcome {
    match req.send().await {
        Ok(resp) if resp.status().is_success() => Outcome::Delivered,
        Ok(resp) => Outcome::Failed(format!("receiver answered {}", resp.status())),
        // Without the URL: it may carry credentials in its query.
        Err(e) if e.is_builder() => Outcome::Permanent(e.without_url().to_string()),
        // The resolver's SSRF refusal is one of the causes described.
        Err(e) => Outcome::Failed(describe(&e)),
    }
}

/// A header value marked sensitive (kept out of `Debug` output).
fn secret(s: &str) -> Option<HeaderValue> {
    let mut v = HeaderValue::from_str(s).ok()?;
    v.set_sensitive(true);
    Some(v)
}

/// The wait before attempt `attempts + 1`, after `attempts` (>= 1) failed
/// ones: `base * 2^(attempts-1)`, capped at `max`, then ±20% jitter.
pub(crate) fn backoff(base: Duration, max: Duration, attempts: u32) -> Duration {
    Backoff::spread(base, max, 0.2).delay(attempts.saturating_sub(1))
}

#[cfg(test)]
mod tests {
    use super::backoff;
    use std::time::Duration;

    /// The schedule itself is `agentd_client::Backoff`'s (tested there);
    /// here, that the first retry waits about `base`.
    #[test]
    fn the_first_retry_waits_the_base_and_the_third_four_times_it() {
        let (base, max) = (Duration::from_millis(1000), Duration::from_secs(300));
        for _ in 0..50 {
            let first = backoff(base, max, 1).as_millis();
            assert!((800..=1200).contains(&first), "{first}");
            let third = backoff(base, max, 3).as_millis();
            assert!((3200..=4800).contains(&third), "{third}");
        }
    }
}
