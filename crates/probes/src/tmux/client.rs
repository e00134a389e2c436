//! The tmux client: one server's calls under a wall clock, and the plain
//! questions and keys (list panes and sessions, type a line into a pane);
//! locally or on an ssh alias.
//!
//! Every call goes through [`crate::run`] under a wall clock, so a hung or
//! dead server, or a host that accepts TCP and never answers, costs a timeout
//! and an error, never a frozen monitor. Sessions are addressed exactly
//! (`-t '=name:'`), never by prefix.

use std::time::Duration;

use super::error::TmuxError;
use super::server::Server;
use crate::run::{Invocation, Limits, Outcome, run};
use crate::ssh::{Remote, quote_expandable, quote_literal};
/// One row of `list-panes -F '#{pane_id} #{pane_pid} #{pane_dead}'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRow {
    /// `%N`.
    pub id: String,
    /// The pid of the pane's first process.
    pub pid: u32,
    /// `pane_dead` was `1`: the process ended and the pane remains (remain-on-exit).
    pub dead: bool,
}

/// How long after a nudge's text its Enter is pressed. Keys arriving in one
/// burst are a paste to a TUI that detects pastes by timing (Codex, Gemini
/// CLI), and an Enter inside a paste is not a submit; half a second is past
/// every such window measured on the pinned CLIs.
pub const ENTER_AFTER: Duration = Duration::from_millis(500);

/// A tmux client for one server, with the wall clock each call runs under.
#[derive(Debug, Clone)]
pub struct Tmux {
    /// Which server every call addresses.
    pub server: Server,
    /// The tmux-compatible binary; on a remote host, the remote shell expands it.
    pub program: String,
    /// The wall clock of each call.
    pub timeout: Duration,
    /// `None`: this machine. `Some`: every call goes through ssh to that alias.
    pub remote: Option<Remote>,
}

impl Tmux {
    /// A client of `server` on this machine, `tmux` on the PATH, 5 s per call.
    pub fn new(server: Server) -> Self {
        Tmux {
            server,
            program: "tmux".to_owned(),
            timeout: Duration::from_secs(5),
            remote: None,
        }
    }

    /// `tmux -u [-L NAME | -S PATH] ARGS…`, or the same as one remote shell command over ssh.
    pub(super) fn command(&self, args: &[&str]) -> Invocation {
        match &self.remote {
            // Untagged: a server this call starts (and every pane's
            // process, which inherits its environment) is never the
            // monitor's to end, not even as an orphan of a killed run.
            None => Invocation::new(&self.program)
                .env_remove(crate::run::RUN_TAG_VAR)
                .args(self.server_flags())
                .args(args),
            Some(remote) => remote.invocation(&self.bounded_remote_line(args)),
        }
    }

    /// [`Tmux::remote_line`] under the host's own `timeout` where it has
    /// one: a call this side gives up on (a stopped server) ends there too,
    /// instead of waiting on that host for ever as an orphan.
    ///
    /// Run by `sh`, as the remote loop is, whatever the login shell.
    pub(super) fn bounded_remote_line(&self, args: &[&str]) -> String {
        let limit = self.timeout.as_secs().max(1);
        let bound = format!(
            "if command -v timeout >/dev/null 2>&1; then exec timeout -k 1 {limit} \"$@\"; fi; exec \"$@\""
        );
        format!(
            "exec sh -c {} sh {}",
            quote_literal(&bound),
            self.remote_line(args)
        )
    }

    pub(super) fn call(&self, inv: Invocation) -> Result<String, TmuxError> {
        self.call_on(inv, None)
    }

    /// [`Tmux::call`], even while this process stops: the rest of an action
    /// already begun (a nudge's text typed, its Enter not yet) is finished
    /// rather than left half done in a person's box.
    pub(super) fn call_to_the_end(&self, inv: Invocation) -> Result<String, TmuxError> {
        let outcome = run(&inv, &Limits::with_timeout(self.timeout).for_cleanup());
        match outcome.success_stdout() {
            Some(out) => Ok(out.text()),
            None => Err(self.failure(&inv, &outcome, None)),
        }
    }

    /// [`Tmux::call`] for a command that addresses `session`, so that tmux
    /// not finding it is [`TmuxError::NoSession`].
    pub(super) fn call_on(
        &self,
        inv: Invocation,
        session: Option<&str>,
    ) -> Result<String, TmuxError> {
        let outcome = run(&inv, &Limits::with_timeout(self.timeout));
        match outcome.success_stdout() {
            Some(out) => Ok(out.text()),
            None => Err(self.failure(&inv, &outcome, session)),
        }
    }

    /// The ssh alias every call goes to, for errors; `None` on this machine.
    pub(super) fn host(&self) -> Option<String> {
        self.remote.as_ref().map(|remote| remote.alias.clone())
    }

    /// What a call that gave no answer means ([`TmuxError::of_call`]), with
    /// this client's host.
    pub(crate) fn failure(
        &self,
        inv: &Invocation,
        outcome: &Outcome,
        session: Option<&str>,
    ) -> TmuxError {
        TmuxError::of_call(inv, outcome, session, self.host())
    }

    /// The panes of ONE window: the window holding `target` (a pane id such as
    /// `%3`), or the server's current window when `target` is `None`. Never `-s`
    /// or `-a`: other windows and sessions belong to the user, not to us.
    pub fn list_panes(&self, target: Option<&str>) -> Result<Vec<PaneRow>, TmuxError> {
        let format = "#{pane_id} #{pane_pid} #{pane_dead}";
        let inv = match target {
            Some(target) => self.command(&["list-panes", "-t", target, "-F", format]),
            None => self.command(&["list-panes", "-F", format]),
        };
        let out = self.call(inv)?;
        out.lines()
            .filter(|line| !line.trim().is_empty())
            .map(parse_pane_row)
            .collect()
    }

    /// Every pane of a session, all its windows (`list-panes -s`): `%N` each.
    /// For a monitor looking for the pane its agent runs in.
    pub fn session_panes(&self, session: &str) -> Result<Vec<String>, TmuxError> {
        let target = format!("={session}:");
        let inv = self.command(&["list-panes", "-s", "-t", &target, "-F", "#{pane_id}"]);
        let out = self.call_on(inv, Some(session))?;
        Ok(out
            .lines()
            .map(str::trim)
            .filter(|id| id.starts_with('%'))
            .map(str::to_string)
            .collect())
    }

    /// Types `text` literally into `pane`, then presses Enter in a SEPARATE
    /// call, [`ENTER_AFTER`] later: sent together, or right after each other,
    /// a TUI takes the Enter as part of a paste (Codex 0.171 and Gemini 0.61
    /// dropped it, leaving the text unsent in the box).
    pub fn send_line(&self, pane: &str, text: &str) -> Result<(), TmuxError> {
        self.send_text(pane, text)?;
        std::thread::sleep(ENTER_AFTER);
        self.press_enter(pane)
    }

    /// Types `text` literally into `pane` (no Enter).
    pub fn send_text(&self, pane: &str, text: &str) -> Result<(), TmuxError> {
        self.call(self.command(&["send-keys", "-t", pane, "-l", "--", text]))
            .map(|_| ())
    }

    /// Presses Enter in `pane`, even while this process stops (the text
    /// before it is already typed).
    pub fn press_enter(&self, pane: &str) -> Result<(), TmuxError> {
        self.call_to_the_end(self.command(&["send-keys", "-t", pane, "Enter"]))
            .map(|_| ())
    }

    /// The session's last key time (`#{session_activity}`, epoch seconds)
    /// while `pane` has the focus (`None` while another pane has it: a
    /// person's keys go there) and `pane` with its ink (`capture-pane -p
    /// -e`), in one call, even while this process stops: what a nudge's
    /// Enter is checked against.
    pub fn key_time_and_pane(&self, pane: &str) -> Result<(Option<i64>, String), TmuxError> {
        let format = "#{session_activity} #{window_active}#{pane_active}";
        let args = [
            "display-message",
            "-p",
            "-t",
            pane,
            format,
            ";",
            "capture-pane",
            "-p",
            "-e",
            "-t",
            pane,
        ];
        let out = self.call_to_the_end(self.command(&args))?;
        let (first, rest) = out.split_once('\n').unwrap_or((out.as_str(), ""));
        let mut fields = first.split_whitespace();
        let at = fields.next().and_then(|at| at.parse().ok());
        Ok((at.filter(|_| fields.next() == Some("11")), rest.to_string()))
    }

    /// The names of the server's sessions. A server that is not running has none.
    pub fn list_sessions(&self) -> Result<Vec<String>, TmuxError> {
        let inv = self.command(&["list-sessions", "-F", "#{session_name}"]);
        match self.call(inv) {
            Ok(out) => Ok(out
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect()),
            Err(TmuxError::NoServer { .. }) => Ok(Vec::new()),
            Err(error) => Err(error),
        }
    }

    /// The alias's tmux command line for the REMOTE shell: the program
    /// (which that shell expands), the server's flags, then `args`, each quoted.
    pub(crate) fn remote_line(&self, args: &[&str]) -> String {
        let mut line = quote_expandable(&self.program);
        for word in self.server_flags().iter().chain(args) {
            line.push(' ');
            line.push_str(&quote_literal(word));
        }
        line
    }

    /// `-u`, then the server's socket flags. tmux writes every non-ASCII
    /// byte of a format (a session's name, a pane's title) as `_` unless
    /// the client's locale says UTF-8, which an ssh login or a systemd unit
    /// often does not: under `LANG=C`, `agent-é` would be listed as
    /// `agent-_`, a session that does not exist. `-u` says UTF-8 whatever
    /// the locale; a pane's captured text is the same either way.
    pub(super) fn server_flags(&self) -> Vec<&str> {
        let mut flags = vec!["-u"];
        match &self.server {
            Server::Default => {}
            Server::Name(name) => flags.extend(["-L", name.as_str()]),
            Server::Path(path) => flags.extend(["-S", path.as_str()]),
        }
        flags
    }
}

/// Parses `%3 12345 0`.
fn parse_pane_row(line: &str) -> Result<PaneRow, TmuxError> {
    let mut fields = line.split_whitespace();
    let bad = || TmuxError::UnexpectedRow {
        line: line.to_string(),
    };
    let id = fields
        .next()
        .filter(|id| id.starts_with('%'))
        .ok_or_else(bad)?;
    let pid = fields.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let dead = match fields.next() {
        Some("1") => true,
        Some("0") | Some("") | None => false,
        Some(_) => return Err(bad()),
    };
    Ok(PaneRow {
        id: id.to_owned(),
        pid,
        dead,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_and_garbage_is_named() {
        assert_eq!(
            parse_pane_row("%3 4242 1").unwrap(),
            PaneRow {
                id: "%3".into(),
                pid: 4242,
                dead: true
            }
        );
        assert!(!parse_pane_row("%0 1 0").unwrap().dead);
        let err = parse_pane_row("seven").unwrap_err();
        assert_eq!(err.to_string(), r#"unexpected list-panes row "seven""#);
        assert!(parse_pane_row("%1 x 0").is_err());
    }
}
