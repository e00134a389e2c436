//! An exclusive lock held for a process's lifetime (`flock(2)` on a file):
//! two monitors of one target would each spend the nudge budget.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

/// Held while alive; the kernel releases it when the process ends, however it ends.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// Why a lock was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum LockError {
    /// Another process holds it; its pid as it wrote it, if readable.
    Held(Option<u32>),
    /// The file could not be opened or locked.
    Failed(String),
}

/// Takes the lock at `path` without waiting, and writes this process's pid into it.
pub fn try_lock(path: &Path) -> Result<Lock, LockError> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| LockError::Failed(format!("cannot open lock file {}: {e}", path.display())))?;
    // SAFETY: flock on a file descriptor we own; no memory is involved.
    let status = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if status != 0 {
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(LockError::Held(text.trim().parse().ok()));
        }
        return Err(LockError::Failed(format!(
            "cannot lock {}: {error}",
            path.display()
        )));
    }
    let _ = file.set_len(0);
    let _ = file.seek(SeekFrom::Start(0));
    let _ = write!(file, "{}", std::process::id());
    Ok(Lock { _file: file })
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
        assert!(try_lock(&path).is_ok());
    }
}
