//! The cycle's socket step: each local target locked under its socket
//! file's identity where it changed since last tried (`socket_lock.rs`
//! holds the lock and says why), a target another monitor holds dropped.

use probes::fs::lock::LockError;

use super::Watch;
use crate::output::say;
use crate::watch::socket_lock::{SocketGuard, folder, lock_path, socket_id};

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
