//! An exclusive lock held for a process's lifetime (`File::try_lock`, which
//! is `flock(2)` on Linux): two monitors of one target would each spend the
//! nudge budget.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::fs::file::IoCause;

/// Held while alive; the kernel releases it when the process ends, however it ends.
#[derive(Debug)]
pub struct Lock {
    file: File,
    path: std::path::PathBuf,
    previous_run: Option<String>,
}

impl Lock {
    /// The run (`os::run_id::this_run`) that held this lock last, as it
    /// wrote it: whose orphans a restarted monitor ends.
    pub fn previous_run(&self) -> Option<&str> {
        self.previous_run.as_deref()
    }

    /// Lets go and removes the file: safe, as a taker checks after locking
    /// that the file it locked is still the one at the path.
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
        drop(self.file);
    }
}

/// Whether `file` is still the file at `path` (not one removed or replaced
/// since it was opened).
fn still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
        _ => false,
    }
}

/// Why a lock was not taken: the two answers a caller must tell apart
/// (another holder is an error, a lock that cannot be taken a warning), so
/// deliberately exhaustive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// Another process holds it; its pid as it wrote it, if readable.
    Held(Option<u32>),
    /// The file could not be opened or locked: what failed, naming the file.
    Failed(LockFailure),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Held(Some(pid)) => write!(f, "the lock is held by pid {pid}"),
            LockError::Held(None) => f.write_str("the lock is held by another process"),
            LockError::Failed(why) => why.fmt(f),
        }
    }
}

impl std::error::Error for LockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockError::Held(_) => None,
            LockError::Failed(why) => why.source(),
        }
    }
}

/// What failed when a lock file could not be opened or locked; each names
/// the file, and keeps the OS's error as its
/// [`source`](std::error::Error::source).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LockFailure {
    /// The file could not be opened or made (a missing or read-only folder).
    Open {
        /// The lock file.
        path: PathBuf,
        /// Why open(2) failed.
        error: IoCause,
    },
    /// flock(2) failed for another reason than a holder.
    Lock {
        /// The lock file.
        path: PathBuf,
        /// Why flock(2) failed.
        error: IoCause,
    },
    /// Each file locked had been removed from the path by then, every time
    /// it was tried.
    Vanishing {
        /// The lock file.
        path: PathBuf,
    },
}

impl std::fmt::Display for LockFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockFailure::Open { path, error } => {
                write!(f, "cannot open lock file {}: {error}", path.display())
            }
            LockFailure::Lock { path, error } => {
                write!(f, "cannot lock {}: {error}", path.display())
            }
            LockFailure::Vanishing { path } => write!(
                f,
                "cannot lock {}: it is removed as soon as it is made",
                path.display()
            ),
        }
    }
}

impl std::error::Error for LockFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LockFailure::Open { error, .. } | LockFailure::Lock { error, .. } => Some(error.io()),
            LockFailure::Vanishing { .. } => None,
        }
    }
}

/// Takes the lock at `path` without waiting, and writes this process's pid into it.
pub fn try_lock(path: &Path) -> Result<Lock, LockError> {
    // A holder that removed the file ([`Lock::remove`]) between our open and
    // our lock leaves us holding a file no one else can find: open again.
    for _ in 0..8 {
        let lock = try_lock_once(path)?;
        if still_at(&lock.file, path) {
            return Ok(lock);
        }
    }
    Err(LockError::Failed(LockFailure::Vanishing {
        path: path.to_path_buf(),
    }))
}

fn try_lock_once(path: &Path) -> Result<Lock, LockError> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|error| {
            LockError::Failed(LockFailure::Open {
                path: path.to_path_buf(),
                error: error.into(),
            })
        })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let pid = text.lines().next().and_then(|l| l.trim().parse().ok());
            return Err(LockError::Held(pid));
        }
        Err(TryLockError::Error(error)) => {
            return Err(LockError::Failed(LockFailure::Lock {
                path: path.to_path_buf(),
                error: error.into(),
            }));
        }
    }
    // What the last holder wrote: `<pid>\nrun <run>\n` (a bare pid before runs were kept).
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    let previous_run = text
        .lines()
        .find_map(|line| line.strip_prefix("run "))
        .map(|run| run.trim().to_string())
        .filter(|run| !run.is_empty());
    let _ = file.set_len(0);
    let _ = file.seek(SeekFrom::Start(0));
    let _ = write!(
        file,
        "{}\nrun {}\n",
        std::process::id(),
        crate::os::run_id::this_run()
    );
    Ok(Lock {
        file,
        path: path.to_path_buf(),
        previous_run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_pid_until_it_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.lock");
        let first = try_lock(&path).unwrap();
        // flock locks belong to the open file description: a second open is a second holder.
        assert_eq!(
            try_lock(&path).unwrap_err(),
            LockError::Held(Some(std::process::id()))
        );
        drop(first);
        // Freed; a child another test's thread forks at this instant holds a
        // copy of the descriptor (and so the lock) until its exec closes it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while let Err(err) = try_lock(&path) {
            assert!(std::time::Instant::now() < deadline, "never freed: {err}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let held = |pid| LockError::Held(pid).to_string();
        assert_eq!(held(Some(7)), "the lock is held by pid 7");
        assert_eq!(held(None), "the lock is held by another process");
    }

    #[test]
    fn the_lock_excludes_another_process_and_is_freed_when_its_holder_dies() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.lock");
        // flock(1) holds the lock in a child that prints once it has it, then sleeps.
        let script = format!(
            "exec 9>>'{}'; flock -n 9 || exit 9; echo locked; exec sleep 300",
            path.display()
        );
        let holder = crate::run::Background::start(
            &crate::run::Invocation::shell(script),
            Some(File::create(dir.path().join("out")).unwrap()),
        )
        .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::fs::read_to_string(dir.path().join("out")).unwrap() != "locked\n" {
            assert!(
                std::time::Instant::now() < deadline,
                "flock(1) never took it"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // It wrote no pid, so the holder is unknown, and it is still held.
        assert_eq!(try_lock(&path).unwrap_err(), LockError::Held(None));
        holder.stop();
        assert!(
            try_lock(&path).is_ok(),
            "the kernel released a dead holder's lock"
        );
    }

    #[test]
    fn a_removed_lock_is_free_and_a_fresh_one_at_its_path_excludes_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.lock");
        let first = try_lock(&path).unwrap();
        assert_eq!(first.previous_run(), None);
        drop(first);
        let again = try_lock(&path).unwrap();
        assert_eq!(again.previous_run(), Some(crate::os::run_id::this_run()));
        again.remove();
        assert!(!path.exists());
        let second = try_lock(&path).unwrap();
        assert!(matches!(try_lock(&path), Err(LockError::Held(_))));
        drop(second);
    }

    #[test]
    fn a_lock_that_cannot_be_opened_is_a_failure_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-folder/t.lock");
        match try_lock(&path) {
            Err(error @ LockError::Failed(_)) => {
                let message = error.to_string();
                assert_eq!(
                    message,
                    format!(
                        "cannot open lock file {}: No such file or directory (os error 2)",
                        path.display()
                    )
                );
                // The OS's error itself, kept for a caller that asks its kind.
                let source = std::error::Error::source(&error).expect("the io error is kept");
                let io = source.downcast_ref::<std::io::Error>().unwrap();
                assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
    }
}
