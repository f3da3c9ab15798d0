//! The event log in SQLite: appends and retention inside the writer's
//! transaction, and the reads behind the feed's replay.

use crate::codec::err;
use crate::event_log::{self, EventColumns};
use agentd_core::{EventLogBounds, EventRecord, EventRetention, NewEvent, StoreError};
use rusqlite::{Connection, OptionalExtension, params};

/// An event at the seq the writer assigned: a seq taken already fails the
/// insert (the primary key) and with it the batch.
const APPEND: &str = "INSERT INTO events (seq, ts_ms, kind, task_id, owner, data_json, annotations_json)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// The highest seq ever assigned: the newest row's, or, when retention
/// emptied the log, the last one it removed.
const LAST_SEQ: &str = "SELECT MAX(COALESCE((SELECT MAX(seq) FROM events), 0), pruned_through)
    FROM event_log WHERE id = 1";

/// Appends `events` in order at the seqs after `last`, the highest seq
/// assigned before them, and moves `last` to the highest of theirs;
/// returns the seq of the first, `None` if there are none. The writer
/// thread, which assigns every seq, keeps `last` across its transactions
/// (read once with [`last_seq`], moved on by each commit): a seq of its
/// own instead of one past `MAX(seq)` saves every append a second cursor
/// and its seek, and an emptied log needs no special case.
pub(crate) fn append(
    tx: &Connection,
    events: &[NewEvent],
    last: &mut u64,
) -> Result<Option<u64>, StoreError> {
    if events.is_empty() {
        return Ok(None);
    }
    // One statement for all of them: each `prepare_cached` copies its SQL
    // into a new cache key.
    let mut append = tx.prepare_cached(APPEND).map_err(err("append event"))?;
    let first = *last + 1;
    for e in events {
        let seq = seq_param(*last + 1)?;
        let c = event_log::encode(e);
        append.execute(params![seq, c.0, c.1, c.2, c.3, c.4, c.5]).map_err(err("append event"))?;
        *last += 1;
    }
    Ok(Some(first))
}

/// The events of a committed batch with their seqs, moved out of it.
pub(crate) fn committed(events: Vec<NewEvent>, first: Option<u64>) -> Vec<EventRecord> {
    let Some(first) = first else { return Vec::new() };
    (first..).zip(events).map(|(seq, event)| EventRecord { seq, event }).collect()
}

/// Removes the prefix of the log that retention no longer keeps, at most
/// `max_removed` seqs of it (the next commit takes the next step); whether
/// it removed that many, so that more may remain.
pub(crate) fn prune(tx: &Connection, r: EventRetention) -> Result<bool, StoreError> {
    let bounds = EventLogBounds { last: last_seq(tx)?, pruned_through: pruned_through(tx)? };
    let window_end = r.window_end(bounds);
    // The oldest event still young within this step: the log is walked
    // from its start, so this reads the expired rows (about to go) and one
    // more, with no index on `ts_ms` for every commit to update. Events are
    // stamped when made, just before their commit, so the expired ones are
    // the oldest; one stamped a little earlier than a younger one before it
    // waits for that one to expire (retention keeps at least what it
    // promises).
    let young: Option<i64> = tx
        .query_row(
            "SELECT seq FROM events WHERE seq <= ?2 AND ts_ms >= ?1 ORDER BY seq LIMIT 1",
            params![r.min_ts_ms, seq_param(window_end)?],
            |row| row.get(0),
        )
        .optional()
        .map_err(err("find expired events"))?;
    let expired = match young {
        Some(seq) => u64::try_from(seq).map_err(err("event seq"))?.saturating_sub(1),
        None => window_end,
    };
    let Some(cutoff) = r.cutoff(bounds, expired) else {
        return Ok(false);
    };
    let whole_step = cutoff - bounds.pruned_through >= r.max_removed;
    let cutoff = seq_param(cutoff)?;
    tx.execute("DELETE FROM events WHERE seq <= ?1", params![cutoff]).map_err(err("prune events"))?;
    tx.execute("UPDATE event_log SET pruned_through = MAX(pruned_through, ?1) WHERE id = 1", params![cutoff])
        .map_err(err("record pruning"))?;
    Ok(whole_step)
}

fn seq_param(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(err("event seq"))
}

fn pruned_through(conn: &Connection) -> Result<u64, StoreError> {
    let pruned: i64 = conn
        .query_row("SELECT pruned_through FROM event_log WHERE id = 1", [], |row| row.get(0))
        .map_err(err("read event log bounds"))?;
    Ok(u64::try_from(pruned).unwrap_or(0))
}

pub(crate) fn last_seq(conn: &Connection) -> Result<u64, StoreError> {
    let last: i64 = conn.query_row(LAST_SEQ, [], |row| row.get(0)).map_err(err("read last event seq"))?;
    u64::try_from(last).map_err(err("event seq"))
}

pub(crate) fn bounds(conn: &mut Connection) -> Result<EventLogBounds, StoreError> {
    let tx = conn.transaction().map_err(err("begin read"))?;
    Ok(EventLogBounds { last: last_seq(&tx)?, pruned_through: pruned_through(&tx)? })
}

pub(crate) fn read(conn: &mut Connection, after: u64, limit: usize) -> Result<Vec<EventRecord>, StoreError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, ts_ms, kind, task_id, owner, data_json, annotations_json FROM events
             WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )
        .map_err(err("prepare read events"))?;
    let rows = stmt
        .query_map(params![after, limit], |row| {
            let cols: EventColumns =
                (row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?);
            Ok((row.get::<_, i64>(0)?, cols))
        })
        .map_err(err("read events"))?;
    let mut out = Vec::new();
    for r in rows {
        let (seq, cols) = r.map_err(err("read event row"))?;
        out.push(event_log::decode(u64::try_from(seq).map_err(err("event seq"))?, cols)?);
    }
    Ok(out)
}
