//! Is a process alive, and what does a pid file say?
//!
//! Liveness is `kill(pid, 0)`: success or `EPERM` (it exists, it is just not
//! ours) is alive, `ESRCH` is dead. A ZOMBIE counts as dead: it has exited and
//! only waits for its parent to reap it, so an agent killed under a wrapper
//! that has not yet `wait`ed is already gone. That is read from the state
//! letter in `/proc/<pid>/stat`.
//!
//! A pid file has THREE answers, not two (seed `plot-worker-monitor`,
//! "the startup window"): alive, dead, or not recorded yet. Absent, empty,
//! garbage, `0` and negative numbers are all "not recorded yet", with a
//! reason a person can act on, and never "dead": reporting a death because a
//! birth has not been written down would make the loudest finding the least
//! trustworthy.

use std::path::Path;

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

/// What a pid file says about its process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidFileState {
    /// The pid it names is alive.
    Alive(Pid),
    /// The pid it names has exited (or is a zombie).
    Dead(Pid),
    /// The startup window (or a file no one can act on yet): never "dead".
    NotRecorded {
        /// Why no process can be named yet, for a person to act on.
        reason: String,
    },
}

/// Why a pid file's text names no single process. `shown` is its first 40
/// characters, trimmed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
enum PidError {
    Empty,
    /// `-1` signals every process, `-N` a group.
    Negative {
        shown: String,
    },
    NotANumber {
        shown: String,
    },
    /// Pid 0 addresses the caller's process group.
    Zero {
        shown: String,
    },
    OutOfRange {
        shown: String,
    },
}

impl std::fmt::Display for PidError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PidError::Empty => f.write_str("the pid file is empty"),
            PidError::Negative { shown } => write!(
                f,
                "the pid file holds {shown:?}, a negative number, which names no single process"
            ),
            PidError::NotANumber { shown } => {
                write!(f, "the pid file holds {shown:?}, which is not a process id")
            }
            PidError::Zero { shown } => write!(
                f,
                "the pid file holds {shown:?}; pid 0 names a process group, not a process"
            ),
            PidError::OutOfRange { shown } => write!(
                f,
                "the pid file holds {shown:?}, which is out of range for a process id"
            ),
        }
    }
}

impl std::error::Error for PidError {}

/// Parse a pid file's contents: surrounding whitespace is ignored; anything
/// else but a positive decimal number is "not recorded", with the reason.
fn parse_pid(text: &str) -> Result<Pid, PidError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(PidError::Empty);
    }
    let shown: String = trimmed.chars().take(40).collect();
    if let Some(rest) = trimmed.strip_prefix('-')
        && !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(PidError::Negative { shown });
    }
    if !trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return Err(PidError::NotANumber { shown });
    }
    match trimmed.parse::<u32>().ok().and_then(Pid::new) {
        Some(pid) => Ok(pid),
        None if trimmed.bytes().all(|b| b == b'0') => Err(PidError::Zero { shown }),
        None => Err(PidError::OutOfRange { shown }),
    }
}

/// The most a pid file may hold: digits, a sign, whitespace.
const PID_FILE_MAX_BYTES: u64 = 64;

/// Read `path` and ask whether its pid lives. Never fails: every problem is a
/// [`PidFileState::NotRecorded`] reason.
pub fn read_pid_file(path: &Path) -> PidFileState {
    // A pid file is a few bytes; more than that is not one (a 2 GB one was read whole).
    let bytes = match crate::fs::file::read_regular(path, PID_FILE_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(crate::fs::file::ReadError::Missing) => {
            return PidFileState::NotRecorded {
                reason: format!("the pid file {} does not exist yet", path.display()),
            };
        }
        Err(e) => {
            return PidFileState::NotRecorded {
                reason: format!("the pid file {} cannot be read: it {e}", path.display()),
            };
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    match parse_pid(&text) {
        Ok(pid) if is_alive(pid) => PidFileState::Alive(pid),
        Ok(pid) => PidFileState::Dead(pid),
        Err(reason) => PidFileState::NotRecorded {
            reason: format!("{reason} ({})", path.display()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_pid_accepts_a_positive_number_with_whitespace() {
        assert_eq!(parse_pid(" 4242\n"), Ok(Pid::new(4242).unwrap()));
    }

    #[test]
    fn parse_pid_refuses_what_names_no_single_process_with_a_reason() {
        for (text, says) in [
            ("", "empty"),
            ("  \n", "empty"),
            ("-1", "negative"),
            ("-42", "negative"),
            ("0", "pid 0"),
            ("000", "pid 0"),
            ("abc", "not a process id"),
            ("12 34", "not a process id"),
            ("+5", "not a process id"),
            ("99999999999", "out of range"),
            ("4294967295", "out of range"),
        ] {
            let reason = parse_pid(text).expect_err(text).to_string();
            assert!(reason.contains(says), "{text:?}: {reason}");
        }
    }

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

    #[test]
    fn pid_file_answers_not_recorded_for_absent_empty_and_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.pid");
        assert!(
            matches!(read_pid_file(&path), PidFileState::NotRecorded { reason } if reason.contains("does not exist"))
        );
        for text in ["", "-1", "0", "garbage\n"] {
            std::fs::write(&path, text).unwrap();
            assert!(
                matches!(read_pid_file(&path), PidFileState::NotRecorded { .. }),
                "{text:?}"
            );
        }
    }

    #[test]
    fn pid_file_answers_alive_then_dead_for_a_real_process() {
        #[expect(
            clippy::disallowed_methods,
            reason = "probes may spawn; this is the real process under test"
        )]
        let mut child = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        let pid = Pid::new(child.id()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.pid");
        std::fs::write(&path, format!("{pid}\n")).unwrap();
        assert_eq!(read_pid_file(&path), PidFileState::Alive(pid));
        child.kill().unwrap();
        // Killed but not yet reaped: a zombie, which is dead. Wait for the
        // kernel to finish the exit before asking.
        let mut state = read_pid_file(&path);
        for _ in 0..200 {
            if state == PidFileState::Dead(pid) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            state = read_pid_file(&path);
        }
        assert_eq!(state, PidFileState::Dead(pid), "a zombie counts as dead");
        child.wait().unwrap();
        assert_eq!(read_pid_file(&path), PidFileState::Dead(pid));
    }
}
