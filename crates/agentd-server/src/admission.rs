//! Budgets a request takes a share of before it costs memory or a stream
//! slot: request body bytes in flight (a weighted semaphore: N big requests
//! queue for their share instead of multiplying the daemon's memory) and
//! open streams (SSE and gRPC server streams, which outlive the idle
//! timeout of their connection).
//!
//! Body shares are taken by an authenticated caller only, and each holder
//! (a principal; without credentials configured, a peer address) holds at
//! most its own part of the budget: one caller announcing big bodies and
//! never sending them waits for itself, not the others for it.

use crate::operation::OperationKind;
use crate::state::ServerConfig;
use agentd_metrics::{Gauge, Metrics};
use agentd_proto::{A2aError, ErrorKind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
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
    /// Each holder's part of `body_kib`, in KiB.
    body_parts: Arc<Parts>,
    /// Answer bytes not yet written to their clients, sized as the body
    /// budget (`answers.rs`).
    answer_kib: Arc<Semaphore>,
    answer_parts: Arc<Parts>,
    /// The size of either budget, in KiB.
    budget_kib: usize,
    streams: Arc<Semaphore>,
    max_streams: usize,
    /// Each holder's part of `streams`.
    stream_parts: Arc<Parts>,
}

/// The part of a budget each holder has, by holder; an entry lives while
/// a share of its holder is held or waited for.
struct Parts {
    by_holder: Mutex<HashMap<String, Arc<Semaphore>>>,
    /// What one holder may hold at once.
    per_holder: usize,
}

impl Parts {
    fn new(per_holder: usize) -> Arc<Self> {
        Arc::new(Self { by_holder: Mutex::default(), per_holder })
    }

    /// The KiB a share of `bytes` takes: at most a holder's whole part,
    /// so that one request or answer of any size can go alone.
    fn kib_of(&self, bytes: usize) -> u32 {
        u32::try_from(bytes.div_ceil(1024).min(self.per_holder)).unwrap_or(u32::MAX)
    }

    /// An empty share of `holder`'s part, to take units into. Made before
    /// any wait (and the one reference to the part besides the map's): a
    /// caller that goes away while waiting removes the holder's entry if it
    /// was the last.
    fn share(self: &Arc<Self>, holder: &str) -> HolderShare {
        let part = {
            let mut map = self.by_holder.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(holder.to_owned()).or_insert_with(|| Arc::new(Semaphore::new(self.per_holder))).clone()
        };
        HolderShare { parts: self.clone(), key: holder.to_owned(), part, units: 0 }
    }
}

/// A share of the body budget, held until the request is answered: the
/// holder's part (released after the budget's, it is dropped last).
pub struct BodyShare {
    _budget: Option<OwnedSemaphorePermit>,
    _holder: Option<HolderShare>,
}

/// A share of the answer budget, held by the answer's bytes until hyper
/// has written them and let them go.
pub struct AnswerShare {
    _budget: OwnedSemaphorePermit,
    _holder: HolderShare,
}

/// Units taken from one holder's part. The entry of the holder is removed
/// when its last share is given back (or its last waiter gave up).
struct HolderShare {
    parts: Arc<Parts>,
    key: String,
    part: Arc<Semaphore>,
    units: u32,
}

impl Drop for HolderShare {
    fn drop(&mut self) {
        self.part.add_permits(self.units as usize);
        let mut map = self.parts.by_holder.lock().unwrap_or_else(|p| p.into_inner());
        // The map's reference and this one: nobody else holds or waits.
        if Arc::strong_count(&self.part) == 2 {
            map.remove(&self.key);
        }
    }
}

/// One of the stream slots, held by the open stream; it counts in its
/// gauge (`agentd_task_streams_open` or `agentd_feed_subscribers`) while held.
/// Its fields are held for their drops: the permit and the holder's share.
pub struct StreamSlot(#[allow(dead_code)] OwnedSemaphorePermit, Gauge, #[allow(dead_code)] HolderShare);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.1.dec();
    }
}

impl Admission {
    pub fn new(cfg: &ServerConfig) -> Self {
        let body_kib_total = cfg.max_body_bytes_in_flight.div_ceil(1024).max(1);
        let body_kib_per_holder =
            cfg.max_body_bytes_in_flight_per_principal.div_ceil(1024).clamp(1, body_kib_total);
        Self {
            body_kib: Arc::new(Semaphore::new(body_kib_total)),
            body_parts: Parts::new(body_kib_per_holder),
            answer_kib: Arc::new(Semaphore::new(body_kib_total)),
            answer_parts: Parts::new(body_kib_per_holder),
            budget_kib: body_kib_total,
            streams: Arc::new(Semaphore::new(cfg.max_streams)),
            max_streams: cfg.max_streams,
            stream_parts: Parts::new(cfg.max_streams_per_principal.clamp(1, cfg.max_streams.max(1))),
        }
    }

    /// Waits for a share of `bytes` of the body budget (nothing for small
    /// shares) for `holder` (see [`crate::params::budget_holder`]): first
    /// from the holder's own part, then from the budget. A share larger
    /// than a holder's part is that part.
    pub async fn body(&self, holder: &str, bytes: usize) -> BodyShare {
        if bytes <= UNCOUNTED_BODY_BYTES {
            return BodyShare { _budget: None, _holder: None };
        }
        let kib = self.body_parts.kib_of(bytes);
        let mut share = self.body_parts.share(holder);
        // The semaphores are never closed.
        if let Ok(p) = share.part.acquire_many(kib).await {
            p.forget();
            share.units = kib;
        }
        let budget = self.body_kib.clone().acquire_many_owned(kib).await.ok();
        BodyShare { _budget: budget, _holder: Some(share) }
    }

    /// A share of `bytes` of the answer budget for `holder` (nothing for
    /// small answers), taken without waiting: the answer is already in
    /// memory, and waiting would hold it. Refused (Unavailable, naming the
    /// limit) when the holder's part, or the budget, is held by answers its
    /// clients have not read yet. A share larger than a holder's part is
    /// that part, so one answer of any size can always go out alone.
    pub fn answer(&self, holder: &str, bytes: usize) -> Result<Option<AnswerShare>, A2aError> {
        if bytes <= UNCOUNTED_BODY_BYTES {
            return Ok(None);
        }
        let kib = self.answer_parts.kib_of(bytes);
        let mut share = self.answer_parts.share(holder);
        match share.part.try_acquire_many(kib) {
            Ok(p) => {
                p.forget();
                share.units = kib;
            }
            Err(_) => {
                return Err(answers_unread(
                    "your earlier answers, not yet read by your clients, hold your part of the \
                     answer budget (server.max_body_bytes_in_flight_per_principal); read them first",
                    "server.max_body_bytes_in_flight_per_principal",
                    self.answer_parts.per_holder,
                ));
            }
        }
        match self.answer_kib.clone().try_acquire_many_owned(kib) {
            Ok(budget) => Ok(Some(AnswerShare { _budget: budget, _holder: share })),
            Err(_) => Err(answers_unread(
                "answers not yet read by their clients hold this server's answer budget \
                 (server.max_body_bytes_in_flight); try again later",
                "server.max_body_bytes_in_flight",
                self.budget_kib,
            )),
        }
    }

    /// A stream slot for `op` if it streams, held by `holder` (see
    /// [`crate::params::budget_holder`]); refused when all are taken, or
    /// the holder's part of them.
    pub fn stream_for(
        &self,
        op: OperationKind,
        m: &Metrics,
        holder: &str,
    ) -> Result<Option<StreamSlot>, A2aError> {
        if !op.is_stream() {
            return Ok(None);
        }
        let gauge = if op == OperationKind::SubscribeEvents {
            &m.streams.feed_subscribers
        } else {
            &m.streams.task_streams
        };
        self.stream(gauge, holder).map(Some)
    }

    /// A stream slot counted in `gauge`, held by `holder`; Unavailable
    /// naming the limit when all are taken, or the holder's part of them.
    pub fn stream(&self, gauge: &Gauge, holder: &str) -> Result<StreamSlot, A2aError> {
        let mut mine = self.stream_parts.share(holder);
        match mine.part.try_acquire() {
            Ok(p) => {
                p.forget();
                mine.units = 1;
            }
            Err(_) => {
                let max = self.stream_parts.per_holder;
                return Err(A2aError::new(
                    ErrorKind::Unavailable,
                    format!(
                        "you have {max} streams open, the most one caller may (server.max_streams_per_principal); \
                         close one first"
                    ),
                )
                .with_meta("limit", "server.max_streams_per_principal")
                .with_meta("limitValue", max.to_string()));
            }
        }
        let slot = |permit| {
            gauge.inc();
            StreamSlot(permit, gauge.clone(), mine)
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

/// Unavailable: an answer refused for want of a share of the answer budget.
fn answers_unread(message: &str, limit: &str, kib: usize) -> A2aError {
    A2aError::new(ErrorKind::Unavailable, message)
        .with_meta("limit", limit)
        .with_meta("limitValue", (kib * 1024).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(bytes_in_flight: usize, streams: usize) -> Admission {
        Admission::new(&ServerConfig {
            max_body_bytes_in_flight: bytes_in_flight,
            max_body_bytes_in_flight_per_principal: bytes_in_flight,
            max_streams: streams,
            ..ServerConfig::default()
        })
    }

    #[tokio::test]
    async fn big_bodies_queue_for_their_share_small_ones_do_not() {
        let a = admission(1024 * 1024, 1);
        let first = a.body("a", 600 * 1024).await;
        let second = a.body("b", 600 * 1024);
        tokio::pin!(second);
        assert!(futures::poll!(second.as_mut()).is_pending(), "over the budget: queued");
        assert!(futures::poll!(Box::pin(a.body("b", UNCOUNTED_BODY_BYTES))).is_ready(), "small bodies pass");
        drop(first);
        assert!(futures::poll!(second.as_mut()).is_ready(), "admitted once the first is done");
    }

    #[tokio::test]
    async fn one_holder_takes_at_most_its_part_of_the_budget() {
        let a = Admission::new(&ServerConfig {
            max_body_bytes_in_flight: 4 << 20,
            max_body_bytes_in_flight_per_principal: 1 << 20,
            ..ServerConfig::default()
        });
        // A share over the part is the part: it never waits for more.
        let big = a.body("user:mallory", 4 << 20).await;
        let again = a.body("user:mallory", 512 << 10);
        tokio::pin!(again);
        assert!(futures::poll!(again.as_mut()).is_pending(), "its part is taken: it waits for itself");
        for other in ["user:alice", "user:bob", "peer:127.0.0.1"] {
            let s = Box::pin(a.body(other, 1 << 20));
            assert!(futures::poll!(s).is_ready(), "{other} is not held up by another holder");
        }
        drop(big);
        assert!(futures::poll!(again.as_mut()).is_ready(), "its own share came back");
        assert!(
            a.body_parts.by_holder.lock().unwrap().is_empty(),
            "no entry is kept for a holder holding nothing"
        );
        // A waiter that goes away leaves no entry either.
        let held = a.body("user:x", 1 << 20).await;
        let mut waiting = Box::pin(a.body("user:x", 1 << 20));
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        drop((held, waiting));
        assert!(a.body_parts.by_holder.lock().unwrap().is_empty());
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
        let slot = a.stream_for(OperationKind::SubscribeToTask, &m, "user:a").unwrap();
        assert!(slot.is_some());
        assert!(
            a.stream_for(OperationKind::GetTask, &m, "user:a").unwrap().is_none(),
            "unary methods take no slot"
        );
        let e = a.stream_for(OperationKind::SendStreamingMessage, &m, "user:b").err().expect("refused");
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert!(e.message.contains("server.max_streams"), "{}", e.message);
        assert_eq!(m.streams.task_streams.get(), 1, "an open stream is counted");
        drop(slot);
        assert_eq!(m.streams.task_streams.get(), 0, "and no longer once it ended");
        assert!(
            a.stream(&m.streams.task_streams, "user:b").is_ok(),
            "the slot comes back when the stream ends"
        );
    }

    #[test]
    fn one_caller_holds_at_most_its_part_of_the_streams() {
        let a = Admission::new(&ServerConfig {
            max_streams: 8,
            max_streams_per_principal: 2,
            ..ServerConfig::default()
        });
        let m = agentd_metrics::Metrics::new();
        let gauge = &m.streams.task_streams;
        let mine = [a.stream(gauge, "user:mallory").unwrap(), a.stream(gauge, "user:mallory").unwrap()];
        let e = a.stream(gauge, "user:mallory").err().expect("over its part");
        assert_eq!(e.kind, ErrorKind::Unavailable);
        assert!(e.message.contains("server.max_streams_per_principal"), "{}", e.message);
        let others: Vec<_> =
            (0..6).map(|i| a.stream(gauge, &format!("user:{i}")).expect("the others' places")).collect();
        assert!(
            a.stream(gauge, "user:alice").err().expect("all taken").message.contains("server.max_streams")
        );
        drop(mine);
        assert!(a.stream(gauge, "user:mallory").is_ok(), "its places come back when its streams end");
        assert!(
            a.stream_parts.by_holder.lock().unwrap().len() <= 7,
            "a holder with no stream leaves the map"
        );
        drop(others);
    }
}
