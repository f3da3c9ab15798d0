//! The data directory belongs to one daemon: `agentd serve` takes an
//! exclusive lock on `<data-dir>/agentd.lock` before it opens the store and
//! holds it for the life of the process. A second daemon on the same
//! directory would run recovery over the first one's working tasks; it
//! refuses to start instead, naming the holder's pid. The lock is the
//! operating system's (`flock`), so it goes away with the process, even
//! after `kill -9`; the file itself stays and only names the last holder.

use anyhow::Context;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

/// The lock file's name inside the data directory.
pub const LOCK_FILE: &str = "agentd.lock";

/// Held while the daemon runs; dropping it releases the directory.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

/// Locks `dir` (which must exist) for this process and writes our pid into
/// the lock file; refuses when another process holds it.
pub fn lock(dir: &Path) -> anyhow::Result<DataDirLock> {
    let path = dir.join(LOCK_FILE);
    let mut file =
        OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).with_context(
            || {
                format!(
                    "the data directory {} is not writable: cannot open its lock file {}",
                    dir.display(),
                    path.display()
                )
            },
        )?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => anyhow::bail!(refusal(dir, &path, holder(&mut file))),
        Err(TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock the data directory ({})", path.display()));
        }
    }
    // Ours now: replace the last holder's pid with ours. Not synced: the
    // pid only names the holder to a second daemon while this one runs; a
    // crash releases the lock, and the next holder writes its own.
    let pid = std::process::id();
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{pid}"))
        .with_context(|| format!("cannot write the lock file {}", path.display()))?;
    Ok(DataDirLock { _file: file })
}

/// The pid the holder wrote, if it has written it yet.
fn holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn refusal(dir: &Path, path: &Path, pid: Option<u32>) -> String {
    let who = match pid {
        Some(pid) => format!("another agentd process (pid {pid})"),
        None => "another agentd process".to_owned(),
    };
    format!(
        "the data directory {} is in use by {who}, which holds {}; one daemon per data directory \
         (a second one would fail the first one's running tasks): stop it, or give this one another --data-dir",
        dir.display(),
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_directory_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = lock(dir.path()).expect("first lock");
        let written = std::fs::read_to_string(dir.path().join(LOCK_FILE)).expect("read");
        assert_eq!(written.trim(), std::process::id().to_string(), "the holder's pid is in the file");
        let err = lock(dir.path()).expect_err("a second lock is refused").to_string();
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        assert!(err.contains("--data-dir"), "says what to do: {err}");
        drop(first);
        lock(dir.path()).expect("free again once the holder is gone");
    }
}
