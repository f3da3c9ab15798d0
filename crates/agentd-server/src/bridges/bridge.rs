//! [`ChannelBridge`]: the [`GateBridge`] that queues an announcement as an
//! outbox row for its channel. The push worker delivers it (retries,
//! backoff, restarts, SSRF guard), signing webhook bodies when the
//! channel has a secret.

use super::body::{slack_body, webhook_body};
use super::channel::{Channel, DeclaredChannel, LOG};
use crate::push::SsrfGuard;
use agentd_core::{BridgeDelivery, BridgeTarget, Error, GateAnnouncement, GateBridge, Outbox};
use async_trait::async_trait;
use std::collections::BTreeMap;

/// The prefix a gate's `askChannel` may carry.
const CHANNEL_PREFIX: &str = "@channel/";

pub struct ChannelBridge {
    outbox: Outbox,
    /// Each declared channel, ready or with why it cannot be delivered to.
    channels: BTreeMap<String, Result<Channel, String>>,
    guard: SsrfGuard,
}

impl ChannelBridge {
    /// A bridge over the document's channels. A channel that cannot be
    /// delivered to (unknown kind, no target) does not stop the daemon: an
    /// announcement to it fails with the reason, and [`Self::problems`]
    /// lists them for a start-up warning.
    pub fn new(outbox: Outbox, declared: &[DeclaredChannel], guard: SsrfGuard) -> Self {
        let channels = declared.iter().map(|d| (d.name.clone(), Channel::from_declared(d))).collect();
        Self { outbox, channels, guard }
    }

    /// Why some declared channels cannot be delivered to.
    pub fn problems(&self) -> Vec<String> {
        self.channels.values().filter_map(|c| c.as_ref().err().cloned()).collect()
    }

    fn channel(&self, name: &str) -> Result<&Channel, Error> {
        let bare = name.strip_prefix(CHANNEL_PREFIX).unwrap_or(name);
        match self.channels.get(bare) {
            Some(Ok(c)) => Ok(c),
            Some(Err(why)) => Err(Error::invalid_input(why.clone())),
            None => {
                let names: Vec<&str> = self.channels.keys().map(String::as_str).collect();
                Err(Error::invalid_input(format!(
                    "no channel named {bare:?} is declared in the instruction document \
                         (::!channel{{name=… kind=… target=…}}); declared: [{}]",
                    names.join(", ")
                )))
            }
        }
    }
}

impl ChannelBridge {
    /// The outbox row an announcement becomes, checked (channel, kind,
    /// SSRF) but not queued: for a caller that commits it in its own batch,
    /// together with the change that opened the gate.
    pub async fn delivery(&self, a: &GateAnnouncement) -> Result<BridgeDelivery, Error> {
        let channel = self.channel(&a.channel)?;
        // Refused before queuing: a row that can never be delivered would
        // only retry. Delivery checks again (DNS may change).
        if channel.kind != LOG
            && let Err(why) = self.guard.check_url(&channel.url).await
        {
            return Err(Error::invalid_input(format!(
                "channel {:?}: its target is refused: {why}",
                channel.name
            )));
        }
        let body = match channel.kind.as_str() {
            "slack" => slack_body(a),
            _ => webhook_body(a, &channel.declared_target),
        };
        Ok(BridgeDelivery {
            task_id: a.task_id.clone(),
            target: BridgeTarget {
                channel: channel.name.clone(),
                kind: channel.kind.clone(),
                url: channel.url.clone(),
            },
            body: body.to_string(),
        })
    }
}

#[async_trait]
impl GateBridge for ChannelBridge {
    async fn announce(&self, a: GateAnnouncement) -> Result<(), Error> {
        let delivery = self.delivery(&a).await?;
        let channel = delivery.target.channel.clone();
        self.outbox.queue(delivery).await.map_err(|e| {
            tracing::error!(error = %e, channel = %channel, "could not queue a gate announcement");
            Error::Internal(format!("the announcement could not be queued: {e}"))
        })?;
        tracing::debug!(task = %a.task_id, channel = %channel, escalation = a.escalation, "gate announcement queued");
        Ok(())
    }

    async fn delivery(&self, a: &GateAnnouncement) -> Option<Result<BridgeDelivery, Error>> {
        Some(ChannelBridge::delivery(self, a).await)
    }
}
