//! Budgets a request takes a share of before it costs memory or a stream
//! slot: request body bytes in flight (a weighted semaphore: N big requests
//! queue for their share instead of multiplying the daemon's memory) and
//! open streams (SSE and gRPC server streams, which outlive the idle
//! timeout of their connection).

use crate::operation::OperationKind;
use crate::state::ServerConfig;
use agentd_metrics::{Gauge, Metrics};
use agentd_proto::{A2aError, ErrorKind};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Shares at most this big are not counted: they cost little, and small
/// requests (GetTask, ListTasks, a short message) must not queue behind
/// big ones.
pub const UNCOUNTED_BODY_BYTES: usize = 64 * 1024;

/// What one JSON value is charged: a body of small numbers holds one value
/// per two bytes, and each costs far more parsed than its two bytes.
pub const VALUE_CHARGE_BYTES: usize = 64;

/// The share of a body of `bytes`: its length, or, when more, what the
/// values it can hold are charged (at most `max_values` of them, one per
/// two bytes).
pub fn charge(bytes: usize, max_values: usize) -> usize {
    bytes.max((bytes / 2 + 1).min(max_values).saturating_mul(VALUE_CHARGE_BYTES))
}

pub struct Admission {
    /// In KiB, so the largest budget fits the semaphore's u32 requests.
    body_kib: Arc<Semaphore>,
    body_kib_total: usize,
    streams: Arc<Semaphore>,
    max_streams: usize,
}

/// A share of the body budget, held until the request is answered.
pub struct BodyShare(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// One of the stream slots, held by the open stream; it counts in its
/// gauge (`agentd_task_streams_open` or `agentd_feed_subscribers`) while held.
pub struct StreamSlot(#[allow(dead_code)] OwnedSemaphorePermit, Gauge);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.1.dec();
    }
}

impl Admission {
    pub fn new(cfg: &ServerConfig) -> Self {
        let body_kib_total = cfg.max_body_bytes_in_flight.div_ceil(1024).max(1);
        Self {
            body_kib: Arc::new(Semaphore::new(body_kib_total)),
            body_kib_total,
            streams: Arc::new(Semaphore::new(cfg.max_streams)),
            max_streams: cfg.max_streams,
        }
    }

    /// Waits for a share of `bytes` of the body budget (nothing for small
    /// shares); see [`charge`].
    pub async fn body(&self, bytes: usize) -> BodyShare {
        if bytes <= UNCOUNTED_BODY_BYTES {
            return BodyShare(None);
        }
        // A body larger than the whole budget waits for all of it.
        let kib = bytes.div_ceil(1024).min(self.body_kib_total);
        let kib = u32::try_from(kib).unwrap_or(u32::MAX);
        // The semaphore is never closed.
        BodyShare(self.body_kib.clone().acquire_many_owned(kib).await.ok())
    }

    /// A stream slot for `op` if it streams; refused when all are taken.
    pub fn stream_for(&self, op: OperationKind, m: &Metrics) -> Result<Option<StreamSlot>, A2aError> {
        if !op.is_stream() {
            return Ok(None);
        }
        let gauge = if op == OperationKind::SubscribeEvents {
            &m.streams.feed_subscribers
        } else {
            &m.streams.task_streams
        };
        self.stream(gauge).map(Some)
    }

    /// A stream slot counted in `gauge`; Unavailable naming the limit when
    /// all are taken.
    pub fn stream(&self, gauge: &Gauge) -> Result<StreamSlot, A2aError> {
        let slot = |permit| {
            gauge.inc();
            StreamSlot(permit, gauge.clone())
        };
        self.streams.clone().try_acquire_owned().map(slot).map_err(|_| {
            A2aError::new(
                ErrorKind::Unavailable,
                format!(
                    "this server has {} streams open, its limit (server.max_streams); try again later",
                    self.max_streams
                ),
            )
            .with_meta("limit", "server.max_streams")
            .with_meta("limitValue", self.max_streams.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(bytes_in_flight: usize, streams: usize) -> Admission {
        Admission::new(&ServerConfig {
            max_body_bytes_in_flight: bytes_in_flight,
            max_streams: streams,
            ..ServerConfig::default()
        })
    }

    #[tokio::test]
    async fn big_bodies_queue_for_their_share_small_ones_do_not() {
        let a = admission(1024 * 1024, 1);
        let first = a.body(600 * 1024).await;
        let second = a.body(600 * 1024);
        tokio::pin!(second);
        assert!(futures::poll!(second.as_mut()).is_pending(), "over the budget: queued");
        assert!(futures::poll!(Box::pin(a.body(UNCOUNTED_BODY_BYTES))).is_ready(), "small bodies pass");
        drop(first);
        assert!(futures::poll!(second.as_mut()).is_ready(), "admitted once the first is done");
    }

    #[test]
    fn value_dense_bodies_are_charged_by_the_values_they_can_hold() {
        assert_eq!(charge(4 << 20, 20_000), 4 << 20, "a big body: its length");
        assert_eq!(charge(40_000, 20_000), 20_000 * VALUE_CHARGE_BYTES);
        assert_eq!(charge(100, 20_000), 51 * VALUE_CHARGE_BYTES);
        assert!(charge(1024, 20_000) <= UNCOUNTED_BODY_BYTES, "small requests pass");
    }

    #[test]
    fn streams_over_the_cap_are_refused_naming_the_limit() {
        let a = admission(1024 * 1024, 1);
        let m = agentd_metrics::Metrics::new();
        let slot = a.stream_for(OperationKind::SubscribeToTask, &m).unwrap();
        assert!(slot.is_some());
        assert!(a.stream_for(OperationKind::GetTask, &m).unwrap().is_none(), "unary methods take no slot");
        let e = a.stream_for(OperationKind::SendStreamingMessage, &m).err().expect("refused");
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert!(e.message.contains("server.max_streams"), "{}", e.message);
        assert_eq!(m.streams.task_streams.get(), 1, "an open stream is counted");
        drop(slot);
        assert_eq!(m.streams.task_streams.get(), 0, "and no longer once it ended");
        assert!(a.stream(&m.streams.task_streams).is_ok(), "the slot comes back when the stream ends");
    }
}
