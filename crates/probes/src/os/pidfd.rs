//! Liveness of many pids, pass after pass, cheaply: one pidfd per pid, held
//! open, and a zero-timeout `poll` on it each time.
//!
//! A pidfd turns readable when its process exits, zombie or reaped, so it
//! answers "has it exited?" without reading `/proc/<pid>/stat` (the costly
//! part of [`crate::os::process::is_alive`]) and without being fooled by a
//! recycled pid: the fd names the process, not the number. Where a pidfd
//! cannot be had (an old kernel, the fd limit), it falls back to
//! [`crate::os::process::is_alive`].

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::process::{PidfdFlags, pidfd_open};

use crate::os::pid::Pid;
use crate::os::process;

/// At most this many pidfds are held; past it, pids are checked the slow way.
const MAX_HELD: usize = 512;

/// Open pidfds by pid: what a watcher of the same pids keeps between passes.
#[derive(Debug, Default)]
pub(crate) struct Liveness {
    held: HashMap<u32, OwnedFd>,
}

impl Liveness {
    /// Is `pid` alive (and not a zombie)?
    pub(crate) fn is_alive(&mut self, pid: Pid) -> bool {
        if let Some(fd) = self.held.get(&pid.get()) {
            if exited(fd) {
                self.held.remove(&pid.get());
                return false;
            }
            return true;
        }
        if self.held.len() < MAX_HELD
            && let Some(raw) = rustix::process::Pid::from_raw(pid.get() as i32)
        {
            match pidfd_open(raw, PidfdFlags::empty()) {
                Ok(fd) if exited(&fd) => return false,
                Ok(fd) => {
                    self.held.insert(pid.get(), fd);
                    return true;
                }
                Err(Errno::SRCH) => return false,
                // An old kernel (ENOSYS), the fd limit: the slow way.
                Err(_) => {}
            }
        }
        process::is_alive(pid)
    }
}

/// A pidfd polls readable once its process has exited.
fn exited(fd: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&now)), Ok(n) if n > 0)
        && fds[0].revents().intersects(PollFlags::IN | PollFlags::HUP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Invocation, Limits, run};

    #[test]
    fn our_own_pid_is_alive_and_a_reaped_one_is_not() {
        let mut live = Liveness::default();
        let me = Pid::new(std::process::id()).unwrap();
        assert!(live.is_alive(me));
        assert!(live.is_alive(me), "asked again through the held pidfd");
        // A process that ran and was reaped: `sh` prints its own pid and exits.
        let out = run(&Invocation::shell("echo $$"), &Limits::default());
        let pid: u32 = out.success_stdout().unwrap().text().trim().parse().unwrap();
        assert!(!live.is_alive(Pid::new(pid).unwrap()));
    }

    #[test]
    fn a_held_pid_that_exits_is_seen_dead() {
        #[expect(
            clippy::disallowed_methods,
            reason = "probes may spawn; a child we control"
        )]
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = Pid::new(child.id()).unwrap();
        let mut live = Liveness::default();
        assert!(live.is_alive(pid));
        child.kill().unwrap();
        // Not yet reaped: a zombie, which counts as dead.
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!live.is_alive(pid));
        child.wait().unwrap();
        assert!(!live.is_alive(pid));
    }
}
