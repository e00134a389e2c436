//! Why tmux gave no answer: the error every tmux call returns, and the one
//! place tmux's own words are read.

use std::fmt;

use crate::run::{CommandFailed, Invocation, Outcome};

/// Why tmux gave no answer, or no pane's capture. Tmux's own words are read
/// in one place (where a call's outcome is interpreted), so a caller matches
/// a variant, never tmux's English.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TmuxError {
    /// No server listens on the socket: never started, or gone (however tmux
    /// words it: its socket still there or not, mid-exit or after).
    NoServer {
        /// The ssh alias the server was asked on; `None` on this machine.
        host: Option<String>,
    },
    /// The server has no session of that exact name.
    NoSession {
        /// The exact name asked for.
        session: String,
        /// The ssh alias the server was asked on; `None` on this machine.
        host: Option<String>,
    },
    /// tmux (or ssh before it) failed some other way, timed out or could not start.
    Failed(CommandFailed),
    /// The pane was moved to another session between the listing and the capture.
    PaneMoved {
        /// The session it was in when it was read.
        to: String,
    },
    /// The capture held this call's marker line more than once: a pane
    /// printed it, so its capture cannot be told from a forgery.
    MarkerRepeated {
        /// How many times the marker line was seen.
        count: usize,
    },
    /// The chained capture passed its output bound; the panes after the cut were not read.
    CaptureCut {
        /// The bound that was passed, in bytes.
        max_output: usize,
    },
    /// A `list-panes` row that is not `%N PID DEAD`.
    UnexpectedRow {
        /// The row as tmux printed it.
        line: String,
    },
    /// `display-message -p '#{pid}'` printed something that is not a pid.
    UnexpectedPid {
        /// What tmux printed.
        printed: String,
    },
}

impl fmt::Display for TmuxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let on = |host: &Option<String>| match host {
            Some(alias) => format!(" on {alias}"),
            None => String::new(),
        };
        match self {
            TmuxError::NoServer { host } => write!(f, "no tmux server is running{}", on(host)),
            TmuxError::NoSession { session, host } => {
                write!(f, "no tmux session named `{session}`{}", on(host))
            }
            TmuxError::Failed(failed) => write!(f, "{failed}"),
            TmuxError::PaneMoved { to } => write!(
                f,
                "the pane moved to another session ({to:?}) while it was read; not read this cycle"
            ),
            TmuxError::MarkerRepeated { count } => write!(
                f,
                "the capture held the monitor's marker line {count} times (a pane printed it); \
                 not read this cycle"
            ),
            TmuxError::CaptureCut { max_output } => write!(
                f,
                "the capture output passed {max_output} bytes and was cut; the panes after the cut are not read"
            ),
            TmuxError::UnexpectedRow { line } => write!(f, "unexpected list-panes row {line:?}"),
            TmuxError::UnexpectedPid { printed } => write!(f, "tmux gave its pid as {printed:?}"),
        }
    }
}

impl std::error::Error for TmuxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TmuxError::Failed(failed) => Some(failed),
            _ => None,
        }
    }
}

impl TmuxError {
    /// What a call that gave no answer means: the one place tmux's words are
    /// read. A server that is gone is one condition however tmux words it
    /// (its socket still there or not, mid-exit or after), so a caller that
    /// says an error once per change says it once.
    pub(crate) fn of_call(
        inv: &Invocation,
        outcome: &Outcome,
        session: Option<&str>,
        host: Option<String>,
    ) -> TmuxError {
        let said = |phrases: &[&str]| match outcome {
            Outcome::Exited {
                code: Some(code),
                stderr,
                ..
            } if *code != 0 => {
                let text = stderr.text();
                phrases.iter().any(|phrase| text.contains(phrase))
            }
            _ => false,
        };
        if said(&NO_SERVER) {
            return TmuxError::NoServer { host };
        }
        match session {
            Some(session) if said(&NO_SESSION) => TmuxError::NoSession {
                session: session.to_string(),
                host,
            },
            _ => TmuxError::Failed(CommandFailed::new(inv, outcome)),
        }
    }
}

/// What tmux says when no server listens on the socket (none was started,
/// or it is exiting or has exited): [`TmuxError::NoServer`].
const NO_SERVER: [&str; 4] = [
    "no server running",
    "error connecting to",
    "server exited unexpectedly",
    "lost server",
];

/// What tmux says when a `-t` target names no session: [`TmuxError::NoSession`].
const NO_SESSION: [&str; 1] = ["can't find session"];
