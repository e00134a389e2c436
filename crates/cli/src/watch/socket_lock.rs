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

use probes::fs::lock::{Lock, LockError};

use super::cycle::Watch;
use crate::output::say;

/// The socket file's identity: its device and inode.
pub(super) type SocketId = (u64, u64);

/// A target's lock under its socket's identity.
#[derive(Debug, Default)]
pub(super) struct SocketGuard {
    /// The identity last tried (held or not): not tried again until it changes.
    tried: Option<SocketId>,
    _lock: Option<Lock>,
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
fn folder(server_dir: &Path) -> PathBuf {
    server_dir.parent().unwrap_or(server_dir).join("by-socket")
}

fn lock_path(folder: &Path, id: SocketId, key: &str) -> PathBuf {
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

impl Watch<'_> {
    /// Takes each local target's lock under the socket's identity where it
    /// changed since last tried; returns the refusals (another monitor holds
    /// the same socket file's target), those targets no longer watched.
    pub(super) fn guard_socket(&mut self) -> Vec<String> {
        if self.watched.iter().all(|w| w.target.host.is_some()) {
            return Vec::new();
        }
        let shared = socket_id(&self.args.server.server().socket_file());
        let folder = folder(&self.state_dir);
        let mut refused = Vec::new();
        let mut made = None;
        self.watched.retain_mut(|watched| {
            // A target on a server of its own is locked under that socket.
            let id = match &watched.settings.server {
                Some(own) => socket_id(&own.socket_file()),
                None => shared,
            };
            let Some(id) = id else {
                return true;
            };
            if watched.target.host.is_some() || watched.socket.tried == Some(id) {
                return true;
            }
            // The old socket's lock goes: that server is gone.
            watched.socket = SocketGuard {
                tried: Some(id),
                _lock: None,
            };
            let made = made.get_or_insert_with(|| probes::fs::folder::ensure_private(&folder));
            match made {
                // Open to others: a lock there proves nothing, as the
                // state folder's would not (refused the same way).
                Err(probes::fs::folder::FolderError::Refused(why)) => {
                    refused.push(format!(
                        "{}: the lock folder will not do: {why}",
                        watched.target
                    ));
                    return false;
                }
                Err(err) => {
                    say(format_args!(
                        "bmb-monitor: watch: {}: {err}; not guarded against a monitor that reaches its socket by another path",
                        watched.target
                    ));
                    return true;
                }
                Ok(()) => {}
            }
            let path = lock_path(&folder, id, &watched.target.file_key());
            match probes::fs::lock::try_lock(&path) {
                Ok(lock) => {
                    watched.socket._lock = Some(lock);
                    true
                }
                Err(LockError::Held(pid)) => {
                    let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
                    refused.push(format!(
                        "{} is already watched by another bmb-monitor{by} on this server \
                         (the same tmux socket file, by another path)",
                        watched.target
                    ));
                    false
                }
                Err(LockError::Failed(why)) => {
                    say(format_args!(
                        "bmb-monitor: watch: {}: {why}; not guarded against a monitor that reaches its socket by another path",
                        watched.target
                    ));
                    true
                }
            }
        });
        if !refused.is_empty() {
            let names: Vec<watchdog::session::target::Target> =
                self.watched.iter().map(|w| w.target.clone()).collect();
            self.fleet
                .retarget(&names, self.args.interval, self.args.nudge_budget);
        }
        refused
    }
}
