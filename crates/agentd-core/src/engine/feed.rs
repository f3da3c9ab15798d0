//! `agentd.events/SubscribeToEvents`: replay from the durable log, then live
//! events, with no gap and no duplicate across the seam.
//!
//! The feed subscribes to the store's committed events *before* it reads
//! where the log stands, so every event is either in the log read or in
//! the receiver (or both: anything at or below the position already
//! delivered is skipped). A subscriber too slow for the receiver's bounded
//! buffer goes back to reading the log; only one that falls behind what
//! retention keeps is closed (`goodbye`, reason `lagged`).

use super::Engine;
use crate::error::Error;
use crate::events::EventRecord;
use crate::principal::Principal;
use crate::store::Store;
use agentd_proto::ext::events::{Event, EventKind, Hello, SubscribeParams, VERSION};
use agentd_proto::ext::task_annotations;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::broadcast::{self, error::RecvError};

/// Events read from the log per page while replaying.
const REPLAY_PAGE: usize = 256;

/// What the feed yields after its `hello`.
#[derive(Debug, PartialEq)]
pub enum FeedItem {
    Event(Event),
    /// The subscriber fell behind what the log retains; the feed ends.
    Lagged,
}

pub struct EventFeed {
    store: Arc<dyn Store>,
    rx: broadcast::Receiver<Arc<EventRecord>>,
    principal: Principal,
    kinds: Option<Vec<EventKind>>,
    annotate: bool,
    hello: Hello,
    /// The last `seq` delivered or passed over (not visible, not asked for).
    position: u64,
    /// Reading the log rather than the receiver.
    replaying: bool,
    pending: VecDeque<Arc<EventRecord>>,
    done: bool,
}

impl Engine {
    /// Opens the feed for `p`. Task events carry the task annotations when
    /// this handle annotates (see [`Engine::annotating`]).
    #[tracing::instrument(name = "subscribe_events", level = "debug", skip_all)]
    pub async fn subscribe_events(&self, p: &Principal, params: SubscribeParams) -> Result<EventFeed, Error> {
        let store = self.inner.store.clone();
        let rx = store.subscribe_events();
        let bounds = store.event_log_bounds().await?;
        let (position, resume, resync) = match params.from_seq {
            None => (bounds.last, false, false),
            // Events after `n` were removed, or `n` was never assigned.
            Some(n) if n < bounds.pruned_through || n > bounds.last => (bounds.last, false, true),
            Some(n) => (n, true, false),
        };
        Ok(EventFeed {
            store,
            rx,
            principal: p.clone(),
            kinds: params.kinds,
            annotate: self.annotate,
            hello: Hello { seq: bounds.last, resume, resync, version: VERSION },
            position,
            replaying: resume,
            pending: VecDeque::new(),
            done: false,
        })
    }
}

impl EventFeed {
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// The last `seq` this feed delivered or passed over: where a client
    /// resumes.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The next event this principal may see, in `seq` order; `None` when
    /// the log's notifications end (the store closed).
    pub async fn next(&mut self) -> Option<Result<FeedItem, Error>> {
        if self.done {
            return None;
        }
        loop {
            while let Some(rec) = self.pending.pop_front() {
                if rec.seq <= self.position {
                    continue;
                }
                self.position = rec.seq;
                if let Some(ev) = self.deliverable(&rec) {
                    return Some(Ok(FeedItem::Event(ev)));
                }
            }
            if self.replaying {
                match self.read_page().await {
                    Ok(true) => {}
                    Ok(false) => self.replaying = false,
                    Err(e) => {
                        self.done = true;
                        return Some(Err(e));
                    }
                }
                if self.done {
                    return Some(Ok(FeedItem::Lagged));
                }
                continue;
            }
            match self.rx.recv().await {
                Ok(rec) => self.pending.push_back(rec),
                // Back to the log from where this feed is.
                Err(RecvError::Lagged(_)) => self.replaying = true,
                Err(RecvError::Closed) => return None,
            }
        }
    }

    /// Reads the next page after the position into `pending`; `false` when
    /// the log has nothing more. Marks the feed done when events after the
    /// position were removed by retention.
    async fn read_page(&mut self) -> Result<bool, Error> {
        let page = self.store.read_events(self.position, REPLAY_PAGE).await?;
        let bounds = self.store.event_log_bounds().await?;
        if bounds.pruned_through > self.position {
            self.done = true;
            return Ok(false);
        }
        let more = !page.is_empty();
        self.pending.extend(page.into_iter().map(Arc::new));
        Ok(more)
    }

    fn deliverable(&self, rec: &EventRecord) -> Option<Event> {
        let ev = &rec.event;
        let visible = ev.owner.as_deref().is_none_or(|o| self.principal.can_see(o));
        let wanted = self.kinds.as_ref().is_none_or(|k| k.contains(&ev.kind));
        if !visible || !wanted {
            return None;
        }
        let mut data = ev.data.to_value();
        if let (true, Some(a), Value::Object(task)) = (self.annotate, &ev.annotations, &mut data) {
            let meta = task.entry("metadata").or_insert_with(|| Value::Object(Default::default()));
            if let Value::Object(m) = meta {
                m.insert(task_annotations::URI.to_owned(), a.to_value());
            }
        }
        Some(Event { seq: rec.seq, ts: ev.ts, kind: ev.kind, data })
    }
}
