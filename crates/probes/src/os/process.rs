//! Is a process alive?
//!
//! Liveness is `kill(pid, 0)`: success or `EPERM` (it exists, it is just not
//! ours) is alive, `ESRCH` is dead. A ZOMBIE counts as dead: it has exited and
//! only waits for its parent to reap it, so an agent killed under a wrapper
//! that has not yet `wait`ed is already gone. That is read from the state
//! letter in `/proc/<pid>/stat`.

use crate::os::pid::Pid;

/// Does `pid` name a live (non-zombie) process?
pub fn is_alive(pid: Pid) -> bool {
    exists(pid) && !is_zombie(pid)
}

/// `kill(pid, 0)`: sends nothing, only asks. `EPERM` means it exists but is
/// not ours to signal. `Pid` guarantees a positive pid, so no group is addressed.
fn exists(pid: Pid) -> bool {
    let Some(raw) = rustix::process::Pid::from_raw(pid.get() as i32) else {
        return false;
    };
    match rustix::process::test_kill_process(raw) {
        Ok(()) => true,
        Err(error) => error == rustix::io::Errno::PERM,
    }
}

/// True when `/proc/<pid>/stat` says the process has exited (`Z` zombie or
/// `X` dead) but is not yet reaped. Unreadable means "not known to be a zombie".
fn is_zombie(pid: Pid) -> bool {
    crate::os::procfs::Stat::of(pid.get()).is_some_and(|stat| stat.has_exited())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_pid_is_alive() {
        let me = Pid::new(std::process::id()).unwrap();
        assert!(is_alive(me));
        assert!(!is_zombie(me));
    }

    #[test]
    fn pid_one_is_alive_even_when_we_may_not_signal_it() {
        // EPERM (as a non-root user) still means the process exists.
        assert!(is_alive(Pid::new(1).unwrap()));
    }

    #[test]
    fn a_reaped_process_is_dead_and_no_signal_reaches_anything() {
        // A shell that printed its own pid, exited and was reaped by `run`.
        let out = crate::run::run(
            &crate::run::Invocation::shell("echo $$"),
            &crate::run::Limits::default(),
        );
        let pid: u32 = out.success_stdout().unwrap().text().trim().parse().unwrap();
        let pid = Pid::new(pid).unwrap();
        assert!(!exists(pid), "kill(2) of a dead pid is ESRCH");
        assert!(!is_alive(pid));
        assert!(!is_zombie(pid));
        // The largest pid is never one: no process, and never a group.
        assert!(!is_alive(Pid::new(i32::MAX as u32).unwrap()));
    }
}
