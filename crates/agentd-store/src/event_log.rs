//! What both backends share about the event log: the channel committed
//! events are announced on, and the stored form of an event.

use agentd_core::{EventJson, EventRecord, NewEvent, StoreError};
use agentd_proto::Timestamp;
use agentd_proto::ext::events::EventKind;
use std::sync::Arc;
use tokio::sync::{Notify, broadcast};

/// Committed events buffered for live feeds; a feed further behind reads
/// the log instead.
pub(crate) const CHANNEL_CAPACITY: usize = 1024;

/// What a backend announces after a commit: its events, in `seq` order,
/// on a channel live feeds follow, and that outbox rows were queued, to the
/// one delivery worker waiting for them.
#[derive(Debug, Clone)]
pub(crate) struct Announcer {
    events: broadcast::Sender<Arc<EventRecord>>,
    outbox: Arc<Notify>,
}

impl Default for Announcer {
    fn default() -> Self {
        Self { events: broadcast::channel(CHANNEL_CAPACITY).0, outbox: Arc::default() }
    }
}

impl Announcer {
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<EventRecord>> {
        self.events.subscribe()
    }
    /// Whether a live feed follows the announcements.
    pub(crate) fn followed(&self) -> bool {
        self.events.receiver_count() > 0
    }
    /// Announces events that are committed (no receiver is not an error).
    pub(crate) fn announce(&self, events: impl IntoIterator<Item = EventRecord>) {
        for e in events {
            let _ = self.events.send(Arc::new(e));
        }
    }
    /// Outbox rows were committed: wakes the waiter, or the next one.
    pub(crate) fn outbox_queued(&self) {
        self.outbox.notify_one();
    }
    /// Returns once rows were queued since the last return.
    pub(crate) async fn outbox_wait(&self) {
        self.outbox.notified().await;
    }
}

/// An event as columns: `(ts_ms, kind, task_id, owner, data_json, annotations_json)`.
pub(crate) type EventColumns = (i64, String, Option<String>, Option<String>, String, Option<String>);

/// An event's columns for a write, borrowed from it: its JSON was
/// serialized when the event was made and is written as it is.
pub(crate) type EventRow<'a> =
    (i64, &'static str, Option<&'a str>, Option<&'a str>, &'a str, Option<&'a str>);

pub(crate) fn encode(e: &NewEvent) -> EventRow<'_> {
    (
        e.ts.millis(),
        e.kind.as_str(),
        e.task_id.as_deref(),
        e.owner.as_deref(),
        e.data.as_str(),
        e.annotations.as_ref().map(EventJson::as_str),
    )
}

pub(crate) fn decode(seq: u64, c: EventColumns) -> Result<EventRecord, StoreError> {
    let (ts_ms, kind, task_id, owner, data, annotations) = c;
    let ts = Timestamp::from_millis(ts_ms)
        .ok_or_else(|| StoreError::backend(format!("event {seq}: bad ts {ts_ms}")))?;
    let kind = EventKind::parse(&kind)
        .ok_or_else(|| StoreError::backend(format!("event {seq}: unknown kind {kind}")))?;
    Ok(EventRecord {
        seq,
        event: NewEvent {
            ts,
            kind,
            task_id,
            owner,
            data: EventJson::from_stored(data),
            annotations: annotations.map(EventJson::from_stored),
        },
    })
}
