//! The tmux adapter: list panes and sessions, capture many sessions' panes in
//! two invocations, type a line into a pane; locally or on an ssh alias.
//!
//! Every call goes through [`crate::run`] under a wall clock, so a hung or
//! dead server, or a host that accepts TCP and never answers, costs a timeout
//! and an error, never a frozen monitor. Sessions are addressed exactly
//! (`-t '=name:'`), never by prefix.

use std::fmt;
use std::time::Duration;

use crate::run::{CommandFailed, Invocation, Limits, Outcome, run};
use crate::remote::ssh::{Remote, quote_expandable, quote_literal};

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
        session: String,
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
    MarkerRepeated { count: usize },
    /// The chained capture passed its output bound; the panes after the cut were not read.
    CaptureCut { max_output: usize },
    /// A `list-panes` row that is not `%N PID DEAD`.
    UnexpectedRow { line: String },
    /// `display-message -p '#{pid}'` printed something that is not a pid.
    UnexpectedPid { printed: String },
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

impl std::error::Error for TmuxError {}

/// Which tmux server to talk to: the default one, `-L NAME`, or `-S PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Server {
    /// The server `$TMUX` (or the default socket) names.
    #[default]
    Default,
    /// `tmux -L NAME`: a socket called NAME in tmux's socket directory.
    Name(String),
    /// `tmux -S PATH`: a socket at PATH.
    Path(String),
}

impl Server {
    /// The socket file this server listens on, on this machine, as tmux
    /// finds it: `-S PATH` itself, `-L NAME` and the default one in
    /// `${TMUX_TMPDIR:-/tmp}/tmux-<uid>/` (the default one is `$TMUX`'s when
    /// inside tmux), with symlinks resolved where the file exists. Two
    /// spellings of one server give one path, so it identifies the server.
    pub fn socket_file(&self) -> std::path::PathBuf {
        let dir = || {
            let base = std::env::var_os("TMUX_TMPDIR")
                .filter(|d| !d.is_empty())
                .map_or_else(
                    || std::path::PathBuf::from("/tmp"),
                    std::path::PathBuf::from,
                );
            base.join(format!("tmux-{}", rustix::process::getuid().as_raw()))
        };
        let path = match self {
            Server::Path(path) => std::path::PathBuf::from(path),
            Server::Name(name) => dir().join(name),
            Server::Default => std::env::var("TMUX")
                .ok()
                .and_then(|tmux| tmux.split(',').next().map(std::path::PathBuf::from))
                .filter(|path| !path.as_os_str().is_empty())
                .unwrap_or_else(|| dir().join("default")),
        };
        let absolute = if path.is_absolute() {
            path
        } else {
            std::env::current_dir().map_or(path.clone(), |cwd| cwd.join(&path))
        };
        absolute.canonicalize().unwrap_or(absolute)
    }
}

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

/// One captured pane: its text, its first process's pid, and the name of
/// the process in its terminal's foreground, as tmux reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneCapture {
    pub text: String,
    /// `#{pane_id}` (`%N`): the pane that was read, so a key sent after it
    /// goes to that pane even if another one became active meanwhile.
    pub pane_id: Option<String>,
    pub pane_pid: Option<u32>,
    /// `#{pane_current_command}`: `bash` after the agent exited, `claude` or
    /// `node` while it runs.
    pub current_command: Option<String>,
    /// `#{pane_dead}`: the pane's program ended (the pane stays, remain-on-exit).
    pub dead: bool,
    /// `#{pane_in_mode}`: copy mode or another tmux mode has the keys, not the program.
    pub in_mode: bool,
    /// `#{synchronize-panes}`: the window copies each key to all its panes.
    pub synchronized: bool,
    /// `#{session_activity}`: when a key was last pressed in the session
    /// (epoch seconds), by a client attached to it; tmux's own `send-keys`
    /// and the pane's output never move it.
    pub activity: Option<i64>,
    /// `#{window_active}` and `#{pane_active}`: the pane a client attached to
    /// the session types into. Keys pressed while another pane has the focus
    /// went there.
    pub focused: bool,
}

/// A capture nonce no process can predict: 128 bits from the OS's random
/// source, in hex. When the source fails (it does not on Linux after boot),
/// the time and pid are mixed in, and the duplicate-marker check still keeps
/// each pane's capture its own or an error.
pub fn fresh_nonce() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (now ^ (u128::from(std::process::id()) << 96)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// How long after a nudge's text its Enter is pressed. Keys arriving in one
/// burst are a paste to a TUI that detects pastes by timing (Codex, Gemini
/// CLI), and an Enter inside a paste is not a submit; half a second is past
/// every such window measured on the pinned CLIs.
pub const ENTER_AFTER: Duration = Duration::from_millis(500);

/// A chain is cut before it passes this many bytes of arguments.
const CHAIN_MAX_BYTES: usize = 10 * 1024;
/// What one pane adds to a chain besides its target (twice): the commands,
/// the marker and its format.
const CHAIN_ENTRY_BYTES: usize = 160;

/// A pane a caller has seen before: its id (`%N`) and its first process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPane {
    pub id: String,
    pub pid: Option<u32>,
}

/// A tmux client for one server, with the wall clock each call runs under.
#[derive(Debug, Clone)]
pub struct Tmux {
    pub server: Server,
    /// The tmux-compatible binary; on a remote host, the remote shell expands it.
    pub program: String,
    pub timeout: Duration,
    /// `None`: this machine. `Some`: every call goes through ssh to that alias.
    pub remote: Option<Remote>,
}

impl Tmux {
    pub fn new(server: Server) -> Self {
        Tmux {
            server,
            program: "tmux".to_owned(),
            timeout: Duration::from_secs(5),
            remote: None,
        }
    }

    /// `tmux [-L NAME | -S PATH] ARGS…`, or the same as one remote shell command over ssh.
    fn command(&self, args: &[&str]) -> Invocation {
        match &self.remote {
            // Untagged: a server this call starts (and every pane's
            // process, which inherits its environment) is never the
            // monitor's to end, not even as an orphan of a killed run.
            None => Invocation::new(&self.program)
                .env_remove(crate::run::RUN_TAG_VAR)
                .args(self.server_flags())
                .args(args),
            Some(remote) => remote.invocation(&self.remote_line(args)),
        }
    }

    fn call(&self, inv: Invocation) -> Result<String, TmuxError> {
        self.call_on(inv, None)
    }

    /// [`Tmux::call`], even while this process stops: the rest of an action
    /// already begun (a nudge's text typed, its Enter not yet) is finished
    /// rather than left half done in a person's box.
    fn call_to_the_end(&self, inv: Invocation) -> Result<String, TmuxError> {
        let outcome = run(&inv, &Limits::with_timeout(self.timeout).for_cleanup());
        match outcome.success_stdout() {
            Some(out) => Ok(out.text()),
            None => Err(self.failure(&inv, &outcome, None)),
        }
    }

    /// [`Tmux::call`] for a command that addresses `session`, so that tmux
    /// not finding it is [`TmuxError::NoSession`].
    fn call_on(&self, inv: Invocation, session: Option<&str>) -> Result<String, TmuxError> {
        let outcome = run(&inv, &Limits::with_timeout(self.timeout));
        match outcome.success_stdout() {
            Some(out) => Ok(out.text()),
            None => Err(self.failure(&inv, &outcome, session)),
        }
    }

    /// The ssh alias every call goes to, for errors; `None` on this machine.
    fn host(&self) -> Option<String> {
        self.remote.as_ref().map(|remote| remote.alias.clone())
    }

    /// What a call that gave no answer means: the one place tmux's words are
    /// read. A server that is gone is one condition however tmux words it
    /// (its socket still there or not, mid-exit or after), so a caller that
    /// says an error once per change says it once.
    pub(crate) fn failure(
        &self,
        inv: &Invocation,
        outcome: &Outcome,
        session: Option<&str>,
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
        let host = self.host();
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

    /// Captures the active pane of each session (`capture-pane -p -t '=NAME:'`)
    /// in two invocations for up to about 60 sessions: `list-panes -a`, then
    /// one chained command (`;`) for the sessions that exist, each capture
    /// preceded by a marker line carrying `nonce` so the output can be split
    /// (tmux caps a command at 16 KiB, so each further batch costs one more).
    /// Per session: its pane text, or why it could not be captured.
    ///
    /// `nonce` must be one no process can predict, fresh per call
    /// ([`fresh_nonce`]): a pane that printed a marker line could otherwise
    /// pose as the next pane's capture. A marker seen more than once (a pane
    /// that read the tmux command line and raced it) makes the panes it could
    /// belong to errors: a pane's capture is its own or an error.
    pub fn capture_sessions(
        &self,
        sessions: &[String],
        nonce: &str,
    ) -> Result<Vec<Result<PaneCapture, TmuxError>>, TmuxError> {
        let targets: Vec<(String, Option<KnownPane>)> =
            sessions.iter().map(|s| (s.clone(), None)).collect();
        self.capture_panes(&targets, nonce)
    }

    /// As [`Tmux::capture_sessions`], where a session may name the pane to
    /// read (the one its agent was seen in): that pane while it still belongs
    /// to the session and still has the same first process (a restarted
    /// server reuses pane ids), else the session's active pane.
    pub fn capture_panes(
        &self,
        targets: &[(String, Option<KnownPane>)],
        nonce: &str,
    ) -> Result<Vec<Result<PaneCapture, TmuxError>>, TmuxError> {
        self.capture_panes_listed(targets, nonce)
            .map(|(captures, _)| captures)
    }

    /// As [`Tmux::capture_panes`], with every session the listing named
    /// (once each, in its order): what a pattern of sessions is matched
    /// against, at no cost of its own.
    pub fn capture_panes_listed(
        &self,
        targets: &[(String, Option<KnownPane>)],
        nonce: &str,
    ) -> Result<CapturesAndSessions, TmuxError> {
        // One listing answers both questions: which sessions exist, and
        // whether a remembered pane still belongs to its session.
        let panes = self.list_all_panes()?;
        let mut results = self.no_session_results(targets);
        let wanted = wanted_targets(targets, &panes);
        for batch in chain_batches(wanted.iter().map(|(_, target)| target.len())) {
            self.capture_chain(targets, &wanted[batch], nonce, &mut results);
        }
        Ok((results, listed_sessions(&panes)))
    }

    /// Every target "no such session" until its capture says otherwise.
    pub(crate) fn no_session_results(
        &self,
        targets: &[(String, Option<KnownPane>)],
    ) -> Vec<Result<PaneCapture, TmuxError>> {
        let host = self.host();
        targets
            .iter()
            .map(|(session, _)| {
                Err(TmuxError::NoSession {
                    session: session.clone(),
                    host: host.clone(),
                })
            })
            .collect()
    }

    /// One chained invocation capturing `wanted` (indices into `targets`,
    /// and the tmux target to read for each), its results written into
    /// `results`.
    fn capture_chain(
        &self,
        targets: &[(String, Option<KnownPane>)],
        wanted: &[(usize, String)],
        nonce: &str,
        results: &mut [Result<PaneCapture, TmuxError>],
    ) {
        let markers: Vec<String> = wanted
            .iter()
            .map(|(i, _)| chain_marker(nonce, *i))
            .collect();
        let formats: Vec<String> = markers.iter().map(|m| marker_format(m)).collect();
        let mut args: Vec<&str> = Vec::new();
        for ((_, target), marker) in wanted.iter().zip(&formats) {
            if !args.is_empty() {
                args.push(";");
            }
            // `-e`: the text with its ink, which tells a CLI's faint
            // placeholder from a person's draft in the box.
            args.extend([
                "display-message",
                "-p",
                "-t",
                target,
                marker,
                ";",
                "capture-pane",
                "-p",
                "-e",
                "-t",
                target,
            ]);
        }
        let inv = self.command(&args);
        // Room for every pane, however large: a pane cut short loses its
        // bottom, which is the part that is read.
        let limits = Limits {
            max_output: CAPTURE_BASE_BYTES + wanted.len() * CAPTURE_PER_PANE_BYTES,
            ..Limits::with_timeout(self.timeout)
        };
        let outcome = run(&inv, &limits);
        let (stdout, failure) = match &outcome {
            Outcome::Exited {
                code: Some(0),
                stdout,
                ..
            } if stdout.truncated => (
                stdout.text(),
                Some(TmuxError::CaptureCut {
                    max_output: limits.max_output,
                }),
            ),
            Outcome::Exited {
                code: Some(0),
                stdout,
                ..
            } => (stdout.text(), None),
            Outcome::Exited { stdout, .. } | Outcome::TimedOut { stdout, .. } => {
                (stdout.text(), Some(self.failure(&inv, &outcome, None)))
            }
            Outcome::FailedToSpawn { .. } => {
                (String::new(), Some(self.failure(&inv, &outcome, None)))
            }
        };
        read_chain(targets, wanted, &markers, &stdout, failure, results);
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

    fn server_flags(&self) -> Vec<&str> {
        match &self.server {
            Server::Default => Vec::new(),
            Server::Name(name) => vec!["-L", name],
            Server::Path(path) => vec!["-S", path],
        }
    }
}

/// `list-panes -a`: each pane's id, first process, whether its window is
/// its session's current one and it that window's active pane (`11`: what
/// `=session:` names), and its session.
pub(crate) const LIST_FORMAT: &str =
    "#{pane_id} #{pane_pid} #{window_active}#{pane_active} #{session_name}";

/// Per target its capture, and the sessions the listing named.
pub type CapturesAndSessions = (Vec<Result<PaneCapture, TmuxError>>, Vec<String>);

/// The sessions of a pane listing, once each, in the listing's order.
pub(crate) fn listed_sessions(panes: &[(String, KnownPane)]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    panes
        .iter()
        .filter(|(session, _)| seen.insert(session.as_str()))
        .map(|(session, _)| session.clone())
        .collect()
}

/// [`LIST_FORMAT`]'s rows: (session, the pane). A line that is not a row
/// (not starting with a pane id) is none.
pub(crate) fn parse_list(out: &str) -> Vec<(String, KnownPane)> {
    out.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(4, ' ');
            let id = fields.next().filter(|id| id.starts_with('%'))?.to_owned();
            let pid = fields.next()?.parse().ok();
            let _active = fields.next()?;
            let session = fields.next()?.to_owned();
            Some((session, KnownPane { id, pid }))
        })
        .collect()
}

/// The targets whose session exists, each with the tmux target to read:
/// the remembered pane while it still belongs to its session with the same
/// first process (a restarted server reuses pane ids), else `=session:`.
pub(crate) fn wanted_targets(
    targets: &[(String, Option<KnownPane>)],
    panes: &[(String, KnownPane)],
) -> Vec<(usize, String)> {
    targets
        .iter()
        .enumerate()
        .filter(|(_, (s, _))| panes.iter().any(|(session, _)| session == s))
        .map(|(i, (s, known))| {
            let kept = known.as_ref().filter(|known| {
                panes.iter().any(|(session, pane)| {
                    session == s
                        && pane.id == known.id
                        && (known.pid.is_none() || pane.pid == known.pid)
                })
            });
            (i, kept.map_or_else(|| format!("={s}:"), |k| k.id.clone()))
        })
        .collect()
}

/// tmux refuses a command longer than its message size (16 KiB), so a long
/// chain is split: the ranges of entries (each naming a target of the given
/// length, twice) that each chain holds, about 60 short names to a chain.
pub(crate) fn chain_batches(
    target_lengths: impl Iterator<Item = usize>,
) -> Vec<std::ops::Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    let mut end = 0;
    for length in target_lengths {
        if end > start && bytes >= CHAIN_MAX_BYTES {
            batches.push(start..end);
            start = end;
            bytes = 0;
        }
        bytes += 2 * length + CHAIN_ENTRY_BYTES;
        end += 1;
    }
    if end > start {
        batches.push(start..end);
    }
    batches
}

/// The marker line that opens pane `index`'s capture in a chain.
pub(crate) fn chain_marker(nonce: &str, index: usize) -> String {
    format!("BMB-{nonce}-{index}")
}

/// The `display-message` format printing the marker line. It also carries
/// the pane's first process (for the second witness), the session's last
/// key time (is someone typing?) and its foreground command (is the agent
/// still there?).
pub(crate) fn marker_format(marker: &str) -> String {
    format!(
        "{marker} #{{session_name}} #{{pane_id}} #{{pane_pid}} #{{session_activity}} #{{pane_dead}}#{{pane_in_mode}}#{{synchronize-panes}}#{{window_active}}#{{pane_active}} #{{pane_current_command}}"
    )
}

/// Splits one chain's output (`stdout`, and `failure` when the chain gave
/// no whole answer) into the captures of `wanted` (indices into `targets`),
/// written into `results`.
pub(crate) fn read_chain(
    targets: &[(String, Option<KnownPane>)],
    wanted: &[(usize, String)],
    markers: &[String],
    stdout: &str,
    failure: Option<TmuxError>,
    results: &mut [Result<PaneCapture, TmuxError>],
) {
    {
        let mut current: Option<(usize, PaneCapture)> = None;
        let mut finished = Vec::new();
        let mut seen = vec![0usize; markers.len()];
        // Panes that moved to another session between the listing and the capture.
        let mut moved: Vec<(usize, String)> = Vec::new();
        for line in stdout.split_inclusive('\n') {
            let bare = line.trim_end_matches('\n');
            let marked = markers.iter().enumerate().find_map(|(at, m)| {
                let rest = bare.strip_prefix(m.as_str())?;
                (rest.is_empty() || rest.starts_with(' ')).then_some((at, rest))
            });
            if let Some((at, rest)) = marked {
                seen[at] += 1;
                finished.extend(current.take());
                let mut fields = rest.trim_start().splitn(6, ' ');
                let session = fields.next().unwrap_or("");
                if session != targets[wanted[at].0].0 {
                    moved.push((wanted[at].0, session.to_string()));
                }
                let pane_id = fields
                    .next()
                    .filter(|id| id.starts_with('%') && id[1..].bytes().all(|b| b.is_ascii_digit()))
                    .map(str::to_string);
                let pane_pid = fields.next().and_then(|pid| pid.parse().ok());
                let activity = fields.next().and_then(|at| at.parse().ok());
                // Five flags in one word: pane_dead, pane_in_mode,
                // synchronize-panes, window_active, pane_active.
                let flags = fields.next().unwrap_or("").as_bytes();
                let flag = |at: usize| flags.get(at) == Some(&b'1');
                let (dead, in_mode, synchronized) = (flag(0), flag(1), flag(2));
                let focused = flag(3) && flag(4);
                let current_command = fields
                    .next()
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string);
                current = Some((
                    wanted[at].0,
                    PaneCapture {
                        text: String::new(),
                        pane_id,
                        pane_pid,
                        current_command,
                        dead,
                        in_mode,
                        synchronized,
                        activity,
                        focused,
                    },
                ));
            } else if let Some((_, capture)) = current.as_mut() {
                capture.text.push_str(line);
            }
        }
        // The last capture is complete only if the whole chain succeeded.
        if failure.is_none() {
            finished.extend(current.take());
        }
        for (index, capture) in finished {
            results[index] = Ok(capture);
        }
        for (index, to) in moved {
            results[index] = Err(TmuxError::PaneMoved { to });
        }
        // A marker printed twice: its own pane and the one before it (whose
        // text held the copy) cannot be told apart from a forgery.
        for (at, &count) in seen.iter().enumerate().filter(|&(_, &count)| count > 1) {
            for suspect in [at.checked_sub(1), Some(at)].into_iter().flatten() {
                results[wanted[suspect].0] = Err(TmuxError::MarkerRepeated { count });
            }
        }
        if let Some(failure) = failure {
            for (index, _) in wanted {
                if results[*index].is_err() {
                    results[*index] = Err(failure.clone());
                }
            }
        }
    }
}

impl Tmux {
    /// Every pane of the server: (session name, the pane). A server that is
    /// not running has none.
    fn list_all_panes(&self) -> Result<Vec<(String, KnownPane)>, TmuxError> {
        let inv = self.command(&["list-panes", "-a", "-F", LIST_FORMAT]);
        match self.call(inv) {
            Ok(out) => Ok(parse_list(&out)),
            Err(TmuxError::NoServer { .. }) => Ok(Vec::new()),
            Err(error) => Err(error),
        }
    }

    /// Starts a detached session running `command` (argv, no shell).
    pub fn new_detached_session(&self, name: &str, command: &[String]) -> Result<(), TmuxError> {
        let mut args = vec!["new-session", "-d", "-s", name, "--"];
        args.extend(command.iter().map(String::as_str));
        self.call(self.command(&args)).map(|_| ())
    }

    /// Ends the session named exactly `name`.
    pub fn kill_session(&self, name: &str) -> Result<(), TmuxError> {
        let target = format!("={name}");
        self.call_on(self.command(&["kill-session", "-t", &target]), Some(name))
            .map(|_| ())
    }

    /// Ends the whole server (tests end their private servers this way).
    /// Ends the server, even while this process stops (it is clean-up).
    pub fn kill_server(&self) -> Result<(), TmuxError> {
        let inv = self.command(&["kill-server"]);
        let outcome = run(&inv, &Limits::with_timeout(self.timeout).for_cleanup());
        match outcome.success_stdout() {
            Some(_) => Ok(()),
            None => Err(self.failure(&inv, &outcome, None)),
        }
    }

    /// Starts a server of its own with no configuration file (`-f
    /// /dev/null`, so no `.tmux.conf` changes what its panes show), its first
    /// session `name` sized `cols`×`rows` and running `command`; returns the
    /// server's pid, which its owner waits for when it ends it.
    pub fn start_private_server(
        &self,
        name: &str,
        (cols, rows): (u16, u16),
        command: &[String],
    ) -> Result<u32, TmuxError> {
        let (cols, rows) = (cols.to_string(), rows.to_string());
        let mut args = vec![
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            &cols,
            "-y",
            &rows,
            "--",
        ];
        args.extend(command.iter().map(String::as_str));
        self.call(self.command(&args))?;
        let pid = self.call(self.command(&["display-message", "-p", "#{pid}"]))?;
        pid.trim().parse().map_err(|_| TmuxError::UnexpectedPid {
            printed: pid.trim().to_string(),
        })
    }

    /// Replaces whatever runs in `pane` with `command` (`respawn-pane -k`).
    pub fn respawn_pane(&self, pane: &str, command: &[String]) -> Result<(), TmuxError> {
        let mut args = vec!["respawn-pane", "-k", "-t", pane, "--"];
        args.extend(command.iter().map(String::as_str));
        self.call(self.command(&args)).map(|_| ())
    }
}

/// The capture chain's output bound: a base, plus this much per pane.
pub(crate) const CAPTURE_BASE_BYTES: usize = 8 << 20;
pub(crate) const CAPTURE_PER_PANE_BYTES: usize = 1 << 20;

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

    /// A private server on a socket inside a temporary folder, ended on drop.
    struct PrivateServer {
        tmux: Tmux,
        _dir: tempfile::TempDir,
    }

    impl PrivateServer {
        fn start(sessions: &[&str]) -> PrivateServer {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("sock").to_string_lossy().into_owned();
            let tmux = Tmux::new(Server::Path(socket));
            for (i, name) in sessions.iter().enumerate() {
                let script = format!("printf 'pane of {name}\\nline {i}\\n'; exec sleep 600");
                let command = ["sh".to_string(), "-c".to_string(), script];
                tmux.new_detached_session(name, &command).unwrap();
            }
            PrivateServer { tmux, _dir: dir }
        }
    }

    impl Drop for PrivateServer {
        fn drop(&mut self) {
            let _ = self.tmux.kill_server();
        }
    }

    #[test]
    fn two_spellings_of_one_server_name_one_socket_file() {
        let dir = tempfile::tempdir().unwrap();
        let by_name = Server::Name("bmb-spelling-test".to_string()).socket_file();
        assert!(by_name.ends_with("bmb-spelling-test"), "{by_name:?}");
        let by_path = Server::Path(by_name.to_string_lossy().into_owned()).socket_file();
        assert_eq!(by_name, by_path);
        // A symlink to a socket file is that socket file.
        let real = dir.path().join("real.sock");
        std::fs::write(&real, "").unwrap();
        let link = dir.path().join("link.sock");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(
            Server::Path(link.to_string_lossy().into_owned()).socket_file(),
            real.canonicalize().unwrap()
        );
    }

    #[test]
    fn more_sessions_than_one_tmux_command_holds_are_all_captured() {
        let names: Vec<String> = (0..130).map(|i| format!("s{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let server = PrivateServer::start(&refs);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let results = server.tmux.capture_sessions(&names, "many").unwrap();
            let read = results
                .iter()
                .zip(&names)
                .filter(|(r, name)| {
                    r.as_ref()
                        .is_ok_and(|c| c.text.starts_with(&format!("pane of {name}\n")))
                })
                .count();
            if read == names.len() {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{read} of {} read: {:?}",
                names.len(),
                results.iter().find(|r| r.is_err())
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The pane a client types into is the active pane of its session's
    /// current window: a second window, or a second pane of the window, takes
    /// the focus (and the keys) away from it.
    #[test]
    fn a_capture_says_whether_its_pane_has_the_focus() {
        let server = PrivateServer::start(&["agent"]);
        let focused = |server: &PrivateServer| {
            let results = server
                .tmux
                .capture_sessions(&["agent".into()], "focus")
                .unwrap();
            let capture = results[0].as_ref().unwrap().clone();
            (capture.focused, capture.activity.is_some())
        };
        assert_eq!(focused(&server), (true, true));
        let tmux = |args: &[&str]| server.tmux.call(server.tmux.command(args)).unwrap();
        let first = tmux(&["display-message", "-p", "-t", "=agent:", "#{pane_id}"]);
        tmux(&["split-window", "-d", "-t", "=agent:"]);
        assert!(focused(&server).0, "a split made with -d leaves the focus");
        tmux(&["select-pane", "-t", "=agent:.1"]);
        let known = vec![(
            "agent".to_string(),
            Some(KnownPane {
                id: first.trim().to_string(),
                pid: None,
            }),
        )];
        let results = server.tmux.capture_panes(&known, "focus").unwrap();
        assert!(
            !results[0].as_ref().unwrap().focused,
            "the other pane has the focus"
        );
    }

    #[test]
    fn nonces_are_fresh_128_bit_hex() {
        let (a, b) = (fresh_nonce(), fresh_nonce());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn a_pane_that_prints_the_next_panes_marker_gets_no_ones_capture() {
        let server = PrivateServer::start(&["honest"]);
        // A hostile pane that knows this call's nonce and forges the next pane's capture.
        let forged = "printf 'mine\\nBMB-kn0wn-2 last %9 1 000 claude\\nDo you want to proceed?\\n❯ 1. Yes\\n'; exec sleep 600";
        let command = ["sh".to_string(), "-c".to_string(), forged.to_string()];
        server
            .tmux
            .new_detached_session("hostile", &command)
            .unwrap();
        server
            .tmux
            .new_detached_session(
                "last",
                &[
                    "sh".to_string(),
                    "-c".to_string(),
                    "printf 'the last pane\\n'; exec sleep 600".to_string(),
                ],
            )
            .unwrap();
        let wanted: Vec<String> = ["honest", "hostile", "last"].map(String::from).to_vec();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let results = loop {
            let results = server.tmux.capture_sessions(&wanted, "kn0wn").unwrap();
            let drawn = results[0].as_ref().is_ok_and(|c| c.text.contains("line 0"));
            let attacked = results[1].is_err();
            if (drawn && attacked) || std::time::Instant::now() > deadline {
                break results;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(results[0].as_ref().unwrap().text.contains("pane of honest"));
        for index in [1, 2] {
            let error = results[index].as_ref().unwrap_err();
            assert_eq!(*error, TmuxError::MarkerRepeated { count: 2 }, "{index}");
            assert!(
                error.to_string().contains("marker line 2 times"),
                "{index}: {error}"
            );
        }
    }

    #[test]
    fn sessions_are_captured_in_two_invocations_and_a_missing_one_is_named() {
        let server = PrivateServer::start(&["alpha", "beta", "alpha-2"]);
        let wanted: Vec<String> = ["beta", "gone", "alpha"].map(String::from).to_vec();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let results = loop {
            let results = server.tmux.capture_sessions(&wanted, "n0nce").unwrap();
            let printed = results
                .iter()
                .filter(|r| r.as_ref().is_ok_and(|c| c.text.contains("line")))
                .count();
            if printed == 2 || std::time::Instant::now() > deadline {
                break results;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let beta = results[0].as_ref().unwrap();
        assert!(beta.text.starts_with("pane of beta\nline 1\n"), "{beta:?}");
        assert!(beta.pane_pid.is_some_and(|pid| pid > 1), "{beta:?}");
        assert!(
            beta.pane_id
                .as_deref()
                .is_some_and(|id| id.starts_with('%')),
            "{beta:?}"
        );
        assert_eq!(beta.current_command.as_deref(), Some("sleep"), "{beta:?}");
        assert!(!beta.dead && !beta.in_mode, "{beta:?}");
        let missing = results[1].as_ref().unwrap_err();
        assert_eq!(
            *missing,
            TmuxError::NoSession {
                session: "gone".into(),
                host: None
            }
        );
        assert_eq!(missing.to_string(), "no tmux session named `gone`");
        // `=alpha:` is exact: never the `alpha-2` session by prefix.
        assert!(
            results[2]
                .as_ref()
                .unwrap()
                .text
                .starts_with("pane of alpha\nline 0\n")
        );
        assert_eq!(server.tmux.list_sessions().unwrap().len(), 3);
    }

    #[test]
    fn many_large_panes_are_captured_whole_not_cut_at_an_output_bound() {
        // 60 panes of 250x80 filled to the brim: over 1 MiB in one chain.
        let server = PrivateServer::start(&[]);
        let names: Vec<String> = (0..60).map(|i| format!("big{i}")).collect();
        for name in &names {
            let script = format!(
                "i=0; while [ $i -lt 79 ]; do printf '%0249d\\n' $i; i=$((i+1)); done; printf 'END {name}'; exec sleep 600"
            );
            let args = [
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                "250",
                "-y",
                "80",
                "sh",
                "-c",
                &script,
            ];
            server.tmux.call(server.tmux.command(&args)).unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let results = server.tmux.capture_sessions(&names, "big").unwrap();
            let whole = results
                .iter()
                .zip(&names)
                .filter(|(r, name)| {
                    r.as_ref()
                        .is_ok_and(|c| c.text.trim_end().ends_with(&format!("END {name}")))
                })
                .count();
            let bytes: usize = results
                .iter()
                .filter_map(|r| r.as_ref().ok())
                .map(|c| c.text.len())
                .sum();
            if whole == names.len() {
                assert!(
                    bytes > 1 << 20,
                    "the test must pass the old 1 MiB bound: {bytes}"
                );
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{whole} of 60 panes came back whole"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    #[test]
    fn a_server_that_is_not_running_has_no_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let tmux = Tmux::new(Server::Path(
            dir.path().join("none").to_string_lossy().into_owned(),
        ));
        assert_eq!(tmux.list_sessions().unwrap(), Vec::<String>::new());
        let results = tmux.capture_sessions(&["x".to_string()], "n").unwrap();
        assert!(matches!(&results[0], Err(TmuxError::NoSession { session, .. }) if session == "x"));
        // A call addressed to a session: without a server, the server is what is missing.
        assert_eq!(
            tmux.kill_session("x"),
            Err(TmuxError::NoServer { host: None })
        );
    }

    #[test]
    fn a_missing_server_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let tmux = Tmux::new(Server::Path(
            dir.path().join("no-server").to_string_lossy().into_owned(),
        ));
        let err = tmux.list_panes(None).unwrap_err();
        assert_eq!(err, TmuxError::NoServer { host: None });
        assert_eq!(err.to_string(), "no tmux server is running");
    }

    #[test]
    fn a_session_tmux_cannot_find_is_no_session_on_a_running_server() {
        let server = PrivateServer::start(&["here"]);
        assert_eq!(
            server.tmux.kill_session("elsewhere"),
            Err(TmuxError::NoSession {
                session: "elsewhere".into(),
                host: None
            })
        );
        assert!(matches!(
            server.tmux.session_panes("elsewhere"),
            Err(TmuxError::NoSession { .. })
        ));
        assert_eq!(server.tmux.session_panes("here").map(|p| p.len()), Ok(1));
    }

    #[test]
    fn a_private_server_has_its_size_its_pid_and_a_pane_that_can_be_respawned() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock").to_string_lossy().into_owned();
        let server = PrivateServer {
            tmux: Tmux::new(Server::Path(socket)),
            _dir: dir,
        };
        let sh = |script: &str| ["sh".to_string(), "-c".to_string(), script.to_string()];
        let pid = server
            .tmux
            .start_private_server("demo", (90, 20), &sh("echo first; exec sleep 600"))
            .unwrap();
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        let size = server
            .tmux
            .call(server.tmux.command(&[
                "display-message",
                "-p",
                "-t",
                "=demo:",
                "#{window_width}x#{window_height}",
            ]))
            .unwrap();
        assert_eq!(size.trim(), "90x20");
        server
            .tmux
            .respawn_pane("=demo:", &sh("echo second; exec sleep 600"))
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let shown = server
                .tmux
                .capture_sessions(&["demo".to_string()], "n")
                .unwrap();
            let text = shown[0]
                .as_ref()
                .map(|c| c.text.clone())
                .unwrap_or_default();
            if text.contains("second") {
                assert!(!text.contains("first"), "{text}");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "never respawned: {text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
