//! WAL checkpoints off the commit path.
//!
//! SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL
//! past 1,000 frames: that commit's callers, and every batch queued behind
//! it, wait while it copies the pages to the database file and syncs it
//! (a SendMessage p99 at c=64 of 22 – 25 ms with it, 20 – 22 ms with the
//! checkpoints here). Here the writer's connection only counts frames
//! (its WAL hook replaces the automatic checkpoint) and, once the WAL is
//! past [`CHECKPOINT_FRAMES`], wakes a checkpointer thread (started then)
//! that does the copying and syncing on a connection of its own while
//! commits go on. A passive checkpoint cannot reset the WAL while new
//! frames keep coming, so when the checkpointer is done the writer finishes
//! on its connection, between two groups and after their callers were
//! answered: what is left is what was committed meanwhile, a few frames.
//! The next write then starts the WAL over. Should the checkpointer stop answering (a failed
//! checkpoint still says it is done; a dead thread does not), the writer
//! checkpoints on its own connection from [`WAL_FRAMES_CAP`] on, so the
//! WAL stays bounded whatever happens to the checkpointer.
//!
//! Checkpoints never touch durability: a commit is in the synced WAL
//! before it is acknowledged, checkpointed or not.

use super::schema::open_checkpointer;
use crate::codec::err;
use agentd_core::StoreError;
use rusqlite::Connection;
use rusqlite::hooks::Wal;
use std::cell::Cell;
use std::fs::File;
use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

/// The WAL's size, in frames, past which it is checkpointed (SQLite's own
/// default for its automatic checkpoint).
pub(crate) const CHECKPOINT_FRAMES: u32 = 1_000;
/// The WAL's size from which the writer checkpoints after every commit
/// without waiting for the checkpointer to say it is done (one that
/// stopped never says it; one still at work makes the writer's attempt
/// return at once).
pub(crate) const WAL_FRAMES_CAP: u32 = 4 * CHECKPOINT_FRAMES;

thread_local! {
    /// The frames in the WAL after the last commit of this thread's
    /// connection, set by its WAL hook. (The hook takes a plain function:
    /// the writer's thread is the one that commits, so a thread-local
    /// reaches it without any sharing.)
    static WAL_FRAMES: Cell<u32> = const { Cell::new(0) };
}

fn note_wal_frames(_: &Wal, frames: c_int) -> rusqlite::Result<()> {
    WAL_FRAMES.set(u32::try_from(frames).unwrap_or(0));
    Ok(())
}

/// Where the checkpointer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Stage {
    Idle = 0,
    Running = 1,
    Done = 2,
}

impl Stage {
    fn from_u8(v: u8) -> Stage {
        match v {
            1 => Stage::Running,
            2 => Stage::Done,
            _ => Stage::Idle,
        }
    }
}

/// What the writer does after a commit.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Nothing,
    /// Wake the checkpointer.
    Wake,
    /// Checkpoint on the writer's connection.
    Finish,
}

fn next_step(frames: u32, stage: Stage) -> Step {
    match stage {
        _ if frames < CHECKPOINT_FRAMES => Step::Nothing,
        Stage::Idle => Step::Wake,
        Stage::Running if frames < WAL_FRAMES_CAP => Step::Nothing,
        Stage::Running | Stage::Done => Step::Finish,
    }
}

/// The writer's side: owned by the writer thread. Dropping it stops the
/// checkpointer thread and waits for it.
pub(crate) struct Checkpoints {
    path: PathBuf,
    synchronous_full: bool,
    stage: Arc<AtomicU8>,
    helper: Helper,
}

/// The checkpointer thread: started at the first checkpoint, so a start of
/// the daemon does not pay for it.
enum Helper {
    NotYet,
    Started {
        wake: SyncSender<()>,
        thread: JoinHandle<()>,
    },
    /// It could not start or stopped: the writer checkpoints alone.
    Gone,
}

impl Checkpoints {
    /// Installs the frame count on the writer's connection, which turns
    /// SQLite's automatic checkpoint off.
    pub(crate) fn new(writer: &Connection, path: &Path, synchronous_full: bool) -> Self {
        writer.wal_hook(Some(note_wal_frames));
        Self {
            path: path.to_owned(),
            synchronous_full,
            stage: Arc::new(AtomicU8::new(Stage::Idle as u8)),
            helper: Helper::NotYet,
        }
    }

    /// Called by the writer after each group it committed (and answered).
    pub(crate) fn after_commit(&mut self, writer: &Connection) {
        let stage = Stage::from_u8(self.stage.load(Ordering::Acquire));
        match next_step(WAL_FRAMES.get(), stage) {
            Step::Nothing => {}
            Step::Wake => {
                // Running before the wake, so the thread's Done comes after.
                self.stage.store(Stage::Running as u8, Ordering::Release);
                if !self.wake() {
                    self.stage.store(Stage::Idle as u8, Ordering::Release);
                    self.finish(writer);
                }
            }
            Step::Finish => self.finish(writer),
        }
    }

    /// Wakes the checkpointer, starting it the first time; false when
    /// there is none to wake.
    fn wake(&mut self) -> bool {
        if let Helper::NotYet = self.helper {
            self.helper = match start(&self.path, self.synchronous_full, &self.stage) {
                Ok((wake, thread)) => Helper::Started { wake, thread },
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the WAL checkpointer; the writer checkpoints alone");
                    Helper::Gone
                }
            };
        }
        let Helper::Started { wake, .. } = &self.helper else { return false };
        match wake.try_send(()) {
            Ok(()) | Err(TrySendError::Full(())) => true,
            Err(TrySendError::Disconnected(())) => {
                self.stop();
                false
            }
        }
    }

    fn finish(&self, writer: &Connection) {
        if let Err(e) = checkpoint(writer) {
            tracing::warn!(error = %e, "WAL checkpoint failed; the next commit tries again");
        }
        // Running stays Running: the checkpointer still at work sets Done.
        let _ = self.stage.compare_exchange(
            Stage::Done as u8,
            Stage::Idle as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        WAL_FRAMES.set(0);
    }

    /// Stops the checkpointer thread, if any, and waits for it.
    fn stop(&mut self) {
        if let Helper::Started { wake, thread } = std::mem::replace(&mut self.helper, Helper::Gone) {
            drop(wake);
            if thread.join().is_err() {
                tracing::error!("store checkpoint thread panicked");
            }
        }
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the checkpointer thread on a connection of its own.
fn start(
    path: &Path,
    synchronous_full: bool,
    stage: &Arc<AtomicU8>,
) -> Result<(SyncSender<()>, JoinHandle<()>), StoreError> {
    let conn = open_checkpointer(path, synchronous_full)?;
    let db = File::open(path).map_err(err("open the database file"))?;
    let (wake, woken) = sync_channel(1);
    let stage = Arc::clone(stage);
    let thread = std::thread::Builder::new()
        .name("agentd-store-checkpointer".into())
        .spawn(move || run(&conn, &db, &woken, &stage))
        .map_err(err("spawn checkpoint thread"))?;
    Ok((wake, thread))
}

fn run(conn: &Connection, db: &File, woken: &Receiver<()>, stage: &AtomicU8) {
    while woken.recv().is_ok() {
        // SQLite syncs the database file only after a checkpoint that
        // reached the WAL's end, which one racing the writer never does:
        // the writer's finishing checkpoint would then sync every page
        // copied here (10 ms under load). Synced here, it syncs its few.
        if let Err(e) = checkpoint(conn).and_then(|()| db.sync_data().map_err(err("sync the database"))) {
            tracing::warn!(error = %e, "WAL checkpoint failed; the writer finishes it");
        }
        stage.store(Stage::Done as u8, Ordering::Release);
    }
}

/// A passive checkpoint: copies what it can without waiting for anyone.
fn checkpoint(conn: &Connection) -> Result<(), StoreError> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())).map_err(err("checkpoint"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_wakes_the_checkpointer_then_finishes_after_it() {
        assert_eq!(next_step(CHECKPOINT_FRAMES - 1, Stage::Idle), Step::Nothing);
        assert_eq!(next_step(CHECKPOINT_FRAMES - 1, Stage::Done), Step::Nothing);
        assert_eq!(next_step(CHECKPOINT_FRAMES, Stage::Idle), Step::Wake);
        assert_eq!(next_step(CHECKPOINT_FRAMES, Stage::Running), Step::Nothing);
        assert_eq!(next_step(WAL_FRAMES_CAP - 1, Stage::Running), Step::Nothing);
        assert_eq!(next_step(CHECKPOINT_FRAMES, Stage::Done), Step::Finish);
    }

    #[test]
    fn past_the_cap_the_writer_does_not_wait_for_the_checkpointer() {
        assert_eq!(next_step(WAL_FRAMES_CAP, Stage::Running), Step::Finish);
        assert_eq!(next_step(WAL_FRAMES_CAP, Stage::Idle), Step::Wake);
    }

    /// Commits far more than the cap in WAL frames: the WAL file, which
    /// keeps the largest size it reached, stays within the cap and one
    /// round of commits, and every task reads back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_stays_bounded_under_many_commits() {
        use crate::conformance::build::{record, tasks_batch};
        use crate::{SqliteOptions, SqliteStore};
        use agentd_core::{Store, TaskQuery};
        use agentd_proto::TaskState::Working;

        const ROUNDS: usize = 60;
        const TASKS: usize = 4 * 25;
        let dir = tempfile::TempDir::new().expect("temp dir");
        let path = dir.path().join("agentd.db");
        let store = SqliteStore::open(&path, SqliteOptions { synchronous_full: false }).expect("open");
        let filler = serde_json::json!({ "filler": "x".repeat(5_000) });
        let commit = |round: usize, w: usize| {
            let recs = (0..TASKS / 4)
                .map(|n| {
                    let id = format!("r{round:02}-w{w}-{n:02}");
                    let mut rec = record((&id, "alice", "ctx", Working, 1_000));
                    rec.task.metadata = filler.as_object().cloned();
                    rec
                })
                .collect();
            store.commit(tasks_batch(recs))
        };
        for round in 0..ROUNDS {
            // Four commits at once, so the writer groups them.
            let done = tokio::join!(commit(round, 0), commit(round, 1), commit(round, 2), commit(round, 3));
            for outcome in <[_; 4]>::from(done) {
                outcome.expect("commit");
            }
        }
        let frame = 4096 + 24;
        let bound = 32 + u64::from(WAL_FRAMES_CAP) * frame + (TASKS as u64) * 2 * frame;
        // Every page of the database was written to the WAL at least once:
        // without checkpoints the WAL would be past the bound.
        let db = std::fs::metadata(&path).expect("the database file").len();
        let wal = std::fs::metadata(dir.path().join("agentd.db-wal")).expect("the WAL file").len();
        assert!(db > bound, "the test writes too little: a database of {db} bytes");
        assert!(wal <= bound, "a WAL of {wal} bytes, more than {bound}");
        let page = store.list_tasks(&TaskQuery { limit: 10_000, ..Default::default() }).await.expect("list");
        assert_eq!(page.total as usize, ROUNDS * TASKS);
    }
}
