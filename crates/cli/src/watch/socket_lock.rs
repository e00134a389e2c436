//! One monitor per target, whatever the path to its tmux socket: beside the
//! lock in the server's state folder (keyed by the socket's spelling, made
//! canonical, so a symlink is caught there), each local target is locked
//! under the socket file's device and inode, so a hard link to the socket,
//! or any other path to the same file, is the same lock.
//!
//! A socket that does not exist yet (a monitor started before its tmux
//! server) has no inode: the target is locked by spelling only until the
//! socket appears; each cycle looks (one `stat`), and takes the inode lock
//! then, and again when a restarted server made a new socket. A target
//! whose inode lock another monitor already holds is left to that monitor:
//! refused at start (exit 2), dropped and said once when found later.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use probes::fs::lock::Lock;

/// The socket file's identity: its device and inode.
pub(super) type SocketId = (u64, u64);

/// A target's lock under its socket's identity.
#[derive(Debug, Default)]
pub(super) struct SocketGuard {
    /// The identity last tried (held or not): not tried again until it changes.
    pub(super) tried: Option<SocketId>,
    /// The lock held under that identity, if it was taken.
    pub(super) _lock: Option<Lock>,
}

/// The identity of the socket file `path` names (following symlinks), if
/// it is a socket now.
pub(super) fn socket_id(path: &Path) -> Option<SocketId> {
    let meta = std::fs::metadata(path).ok()?;
    meta.file_type()
        .is_socket()
        .then(|| (meta.dev(), meta.ino()))
}

/// `<state>/session/by-socket`: beside the servers' folders, shared by them.
pub(super) fn folder(server_dir: &Path) -> PathBuf {
    server_dir.parent().unwrap_or(server_dir).join("by-socket")
}

/// The lock file of the target `key` under the socket identity `id`, in `folder`.
pub(super) fn lock_path(folder: &Path, id: SocketId, key: &str) -> PathBuf {
    folder.join(format!(
        "{:x}.{:x}.{}.lock",
        id.0,
        id.1,
        watchdog::session::fingerprint(key)
    ))
}

/// Removes the lock files no monitor holds (left by servers that restarted,
/// or by monitors that ended); a held one stays.
pub(super) fn sweep(server_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(folder(server_dir)) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if !entry.file_name().to_string_lossy().ends_with(".lock") {
            continue;
        }
        if let Ok(free) = probes::fs::lock::try_lock(&entry.path()) {
            free.remove();
        }
    }
}
