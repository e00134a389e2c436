//! What a pid file says: its process alive, dead, or not recorded yet.
//!
//! A pid file has THREE answers, not two (seed `plot-worker-monitor`,
//! "the startup window"): alive, dead, or not recorded yet. Absent, empty,
//! garbage, `0` and negative numbers are all "not recorded yet", with a
//! reason a person can act on, and never "dead": reporting a death because a
//! birth has not been written down would make the loudest finding the least
//! trustworthy.

use std::path::Path;

use crate::fs::file::{ReadError, read_regular};
use crate::os::pid::Pid;
use crate::os::process::is_alive;

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
    let bytes = match read_regular(path, PID_FILE_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(ReadError::Missing) => {
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
