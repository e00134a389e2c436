//! One ssh round trip per remote host per cycle: the pane listing, every
//! watched pane's capture, every pane's processes (its foreground and
//! Claude Code's session file) and the targets' probes that run on the host,
//! in ONE request to a long-lived remote shell ([`HostSession`]).
//!
//! The session is one `ssh` (over the host's master connection) running a
//! `sh` loop that reads a request from its stdin up to an end line, runs it,
//! and answers on its stdout up to an end marker: a cycle forks no ssh
//! client. An answer that does not come complete within the deadline, or
//! that is longer than its bound, is the host's targets unreadable this
//! cycle; the session is killed and opened again at the next one. Every
//! tmux call and probe on the remote side runs under a remote deadline of
//! its own (`timeout`, or a shell watchdog where there is none), so a stuck
//! tmux is ended there, and the calls after it in the same request are not
//! started: at most one is ever stuck.
//!
//! Locally a capture is two tmux invocations (`list-panes -a`, then one
//! chain), the second built from the first's answer. Over ssh each would be
//! a round trip, and the processes a third; so here the remote shell makes
//! the choice the chain needs (the remembered pane while it is still its
//! session's with the same first process, else `=session:`) from the listing
//! it just read, and this side reads the same listing back to tell "no such
//! session" from a failed capture, with the same rule (`tmux::wanted_targets`).
//! The witness reads the pane the listing named (for `=session:`, the
//! session's current window's active pane); a capture that found another
//! pane there (the user switched in between) gets no reading
//! ([`HostRead::processes`] says whose pid was read).
//!
//! A pane whose screen cannot have changed since its last capture over the
//! same session is not captured again (the capture skip): the listing
//! carries each pane's key (`SCREEN_KEY`, led by `#{window_activity}`,
//! which moves on every output, in whole seconds), the host's clock is
//! read before it (bash's `printf '%(%s)T'`; under another shell there is
//! none and every pane is captured), and the request names, per target,
//! the key of the capture this side holds for its remembered pane when
//! that key's activity is strictly older than its capture's clock. The
//! host runs only the pane's display line when its listed key is that one
//! and says so (`SAME`); this side answers with the text it kept
//! ([`HostSession`]), keyed by pane id and dropped on any doubt.
//!
//! Every line the script prints that is not a pane's text starts with this
//! cycle's 128-bit nonce, so a pane cannot forge the end of a section; an
//! end marker seen more often than the script prints it voids every capture
//! of the host.

use crate::agent::claude::PaneProcesses;
use crate::remote::procs::{self, AgentMemory};
use crate::run::{Captured, CommandFailed, Invocation, Outcome, Session, SessionError};
use crate::ssh::quote_literal;
use crate::tmux::{self, KnownPane, PaneCapture, Tmux, TmuxError};

/// What one host's round trip read.
#[derive(Debug)]
pub struct HostRead {
    /// Per target, as [`Tmux::capture_panes`] gives them.
    pub captures: Result<Vec<Result<PaneCapture, TmuxError>>, TmuxError>,
    /// Per target: the pane processes read, and the first process of the
    /// pane they belong to (`None`: the call failed before it said, and the
    /// reading says why).
    pub processes: Vec<Option<(Option<u32>, PaneProcesses)>>,
    /// Per probe asked ([`RemoteProbe`]), in the order asked: how it ran on the host.
    pub probes: Vec<Outcome>,
    /// Every session the host's pane listing named, once each, in its
    /// order; `None` when the listing itself failed. What a target that
    /// names a pattern of sessions is discovered from, without a call of its own.
    pub sessions: Option<Vec<tmux::ListedSession>>,
    /// Per target (empty when none was): its capture's text is the pane's
    /// last one, not read again because the host said its screen cannot
    /// have changed since ([`HostSession`]'s capture skip). The rest of the
    /// capture (its marker line's fields) is this cycle's.
    pub reused: Vec<bool>,
}

/// A probe to run on the host inside the cycle's request: `sh -c COMMAND`
/// with `BMB_TARGET` set, under the probe deadline. As on this machine
/// ([`crate::run::Invocation::shell`]), the command reaches its shell
/// through the environment (then taken out of it), never its argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteProbe {
    /// The target the probe belongs to, set as `BMB_TARGET`.
    pub target: String,
    /// The shell command, run with `sh -c` on the host.
    pub command: String,
}

/// One host's long-lived session, opened on first use and again after it
/// died or was killed; what it learnt of the host's sessions (their tmux
/// ids, so the listing is read once, linearly) lives here too.
#[derive(Default)]
pub struct HostSession {
    session: Option<Session>,
    /// The request's end line, random per session.
    token: String,
    /// Session name -> its `session_id` digits, from the last listing.
    hints: std::collections::HashMap<String, String>,
    /// Pane id -> its last capture over this session, with the pane's key
    /// and the host's clock it was read under: what a pane the host says
    /// is unchanged is answered with. Emptied whenever the session closes
    /// or opens, and a pane's entry dropped on any doubt.
    screens: std::collections::HashMap<String, Screen>,
    /// How many times a session was opened (one ssh client each).
    pub opened: u64,
    /// What the open session's loop was started for: its tmux command line
    /// (program, server) and deadlines. A request for another (a reload
    /// named another server for the host) closes it and opens one for that:
    /// the loop keeps the line it was started with.
    opened_for: String,
}

/// A pane's last capture: its text, its key (what the capture depends on,
/// from the listing read before it, [`SCREEN_KEY`]) and the host's clock
/// (whole seconds) taken before that listing.
struct Screen {
    key: String,
    clock: i64,
    text: String,
}

impl Screen {
    /// The pane may be left uncaptured while its key stays this one: no
    /// output came in the second its capture's clock was read, nor after
    /// the key's `window_activity` (strictly before the clock: output later
    /// in that same second would not move the stamp).
    fn skippable(&self) -> bool {
        screen_activity(&self.key).is_some_and(|activity| activity < self.clock)
    }
}

/// The `window_activity` a [`SCREEN_KEY`] starts with.
fn screen_activity(key: &str) -> Option<i64> {
    key.split(':').next()?.parse().ok()
}

impl HostSession {
    /// Ends the session (its ssh client; the remote loop ends on EOF), and
    /// forgets the captures read over it.
    pub fn close(&mut self) {
        self.screens.clear();
        if let Some(mut session) = self.session.take() {
            session.kill();
        }
    }

    /// The ssh client's pid while a session is open.
    pub fn pid(&self) -> Option<u32> {
        self.session.as_ref().map(Session::id)
    }
}

/// The longest answer a host may give: the captures' bound, and room for
/// the processes and probes.
fn answer_bound(targets: usize, probes: usize) -> usize {
    tmux::CAPTURE_BASE_BYTES + targets * tmux::CAPTURE_PER_PANE_BYTES + probes * PROBE_BYTES
}

fn find_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// What a remote probe may print (a count): more is cut on the host.
const PROBE_BYTES: usize = 4096;

/// A label for the one call in error messages, instead of the whole script.
const SCRIPT_LABEL: &str = "<list-panes, capture-pane and the panes' processes>";

impl Tmux {
    /// [`Tmux::capture_panes`], [`crate::remote::procs::remote_panes`] and the
    /// probes in one request on this client's remote host, over `session`
    /// (opened here when it is not). `memory` is the host's known agents,
    /// read and updated; `probe_timeout` bounds each probe on the host. On
    /// this machine it is the capture alone.
    #[expect(
        clippy::too_many_arguments,
        reason = "one remote round trip takes every part of the cycle's request"
    )]
    pub fn read_remote_host(
        &self,
        session: &mut HostSession,
        targets: &[(String, Option<KnownPane>)],
        nonce: &str,
        with_session: bool,
        memory: &mut AgentMemory,
        probes: &[RemoteProbe],
        probe_timeout: std::time::Duration,
    ) -> HostRead {
        let Some(remote) = &self.remote else {
            let (captures, sessions) = match self.capture_panes_listed(targets, nonce) {
                Ok((captures, sessions)) => (Ok(captures), Some(sessions)),
                Err(error) => (Err(error), None),
            };
            return HostRead {
                captures,
                processes: vec![None; targets.len()],
                probes: Vec::new(),
                sessions,
                reused: Vec::new(),
            };
        };
        let open = |command: &str| remote.invocation(command);
        self.read_host_via(
            session,
            targets,
            nonce,
            with_session,
            memory,
            probes,
            probe_timeout,
            &open,
        )
    }

    /// [`Tmux::read_remote_host`] with the session opened by `open` (given
    /// the remote command): ssh to the host, or a local `sh` in tests.
    #[expect(
        clippy::too_many_arguments,
        reason = "one remote round trip takes every part of the cycle's request"
    )]
    fn read_host_via(
        &self,
        session: &mut HostSession,
        targets: &[(String, Option<KnownPane>)],
        nonce: &str,
        with_session: bool,
        memory: &mut AgentMemory,
        probes: &[RemoteProbe],
        probe_timeout: std::time::Duration,
        open: &dyn Fn(&str) -> Invocation,
    ) -> HostRead {
        let shown = open(SCRIPT_LABEL);
        let batches = host_batches(targets);
        // Opened before the request is made: a fresh session starts with no
        // capture to skip against.
        if let Err(failed) = self.open_session(session, probe_timeout, open) {
            let mut read = self.read_host_output(
                targets,
                &batches,
                nonce,
                with_session,
                &failed,
                &shown,
                &mut vec![false; targets.len()],
            );
            read.probes = read_probes(nonce, &failed, probes.len(), probe_timeout);
            return read;
        }
        // Per target, the key of the capture it may be answered with: its
        // remembered pane's last capture, when no output can have come since.
        let held: Vec<Option<String>> = targets
            .iter()
            .map(|(_, known)| {
                let screen = session.screens.get(&known.as_ref()?.id)?;
                screen.skippable().then(|| screen.key.clone())
            })
            .collect();
        let request = host_request(
            targets,
            &batches,
            nonce,
            with_session,
            memory,
            &session.hints,
            &held,
            probes,
            probe_timeout,
        );
        let bound = answer_bound(targets.len(), probes.len());
        // The host's own deadlines end first, so its answer says why.
        let grace = std::time::Duration::from_secs(3);
        let deadline = std::time::Instant::now()
            + self.timeout
            + probe_timeout * probe_rounds(probes.len())
            + grace;
        let outcome = self.ask(
            session,
            &request,
            nonce,
            deadline,
            bound,
            probe_timeout,
            open,
        );
        let mut unchanged = vec![false; targets.len()];
        let mut read = self.read_host_output(
            targets,
            &batches,
            nonce,
            with_session,
            &outcome,
            &shown,
            &mut unchanged,
        );
        read.probes = read_probes(nonce, &outcome, probes.len(), probe_timeout);
        let mut listed = Listed::default();
        if let Outcome::Exited { stdout, .. } = &outcome {
            listed = read_listing(nonce, &stdout.text());
            let hints = std::mem::take(&mut listed.hints);
            if !hints.is_empty() || read.captures.is_ok() {
                session.hints = hints;
            }
        }
        session.remember_screens(targets, &held, &unchanged, &listed, &mut read, &shown);
        for (root, processes) in read.processes.iter().flatten() {
            if let (Some(root), true) = (root, with_session) {
                memory.learn(*root, &processes.session);
            }
        }
        let roots: Vec<u32> = read
            .processes
            .iter()
            .flatten()
            .filter_map(|(r, _)| *r)
            .collect();
        if read.captures.is_ok() {
            memory.keep_only(&roots);
        }
        read
    }

    /// Opens `host`'s session when it has none (or its last one died),
    /// forgetting the captures read over any earlier one; the failure to
    /// start it as the call's outcome.
    fn open_session(
        &self,
        host: &mut HostSession,
        probe_timeout: std::time::Duration,
        open: &dyn Fn(&str) -> Invocation,
    ) -> Result<(), Outcome> {
        let opened_for = format!(
            "{} {:?} {:?}",
            self.remote_line(&[]),
            self.timeout,
            probe_timeout
        );
        if host.session.as_mut().is_some_and(|s| !s.alive()) || host.opened_for != opened_for {
            host.close();
        }
        if host.session.is_some() {
            return Ok(());
        }
        host.opened_for = opened_for;
        host.screens.clear();
        host.token = crate::tmux::fresh_nonce();
        let program = session_program(self, &host.token, probe_timeout);
        let command = session_command(&program);
        match Session::start(&open(&command)) {
            Ok(session) => {
                host.session = Some(session);
                host.opened += 1;
                Ok(())
            }
            Err(error) => Err(Outcome::FailedToSpawn {
                error: format!("ssh: {error}"),
            }),
        }
    }

    /// One request over the session, opened first when needed: its answer
    /// as the one-call [`Outcome`] the reading expects (the session killed
    /// when the answer failed).
    #[expect(
        clippy::too_many_arguments,
        reason = "one remote round trip takes every part of the cycle's request"
    )]
    fn ask(
        &self,
        host: &mut HostSession,
        request: &str,
        nonce: &str,
        deadline: std::time::Instant,
        bound: usize,
        probe_timeout: std::time::Duration,
        open: &dyn Fn(&str) -> Invocation,
    ) -> Outcome {
        if let Err(failed) = self.open_session(host, probe_timeout, open) {
            return failed;
        }
        let Some(session) = host.session.as_mut() else {
            return Outcome::FailedToSpawn {
                error: "ssh: no session".to_string(),
            };
        };
        session.send(
            format!(
                "BMB-LEN-{}\n{request}BMB-RUN-{}\n",
                request.len(),
                host.token
            )
            .into_bytes(),
        );
        let done = format!("\nBMB-{nonce}-DONE\n");
        let started = std::time::Instant::now();
        let answer = session.read_until(done.as_bytes(), deadline, bound);
        let stderr = session.stderr();
        match answer {
            Ok(bytes) => {
                let stuck = format!("\nBMB-{nonce}-STUCK\n");
                if find_bytes(&bytes, stuck.as_bytes()) {
                    host.close();
                }
                Outcome::Exited {
                    code: Some(0),
                    signal: None,
                    stdout: Captured {
                        bytes,
                        truncated: false,
                    },
                    stderr,
                }
            }
            Err(SessionError::TooLong { max }) => {
                host.close();
                Outcome::Exited {
                    code: Some(0),
                    signal: None,
                    stdout: Captured {
                        bytes: vec![0; max.min(1)],
                        truncated: true,
                    },
                    stderr,
                }
            }
            Err(SessionError::TimedOut { .. }) => {
                host.close();
                Outcome::TimedOut {
                    after: started.elapsed(),
                    stopping: false,
                    stdout: Captured::default(),
                    stderr,
                }
            }
            Err(SessionError::Closed { .. }) => {
                // ssh said why on stderr (a refused connection, a failed login).
                host.close();
                Outcome::Exited {
                    code: Some(255),
                    signal: None,
                    stdout: Captured::default(),
                    stderr,
                }
            }
        }
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one remote round trip takes every part of the cycle's request"
    )]
    fn read_host_output(
        &self,
        targets: &[(String, Option<KnownPane>)],
        batches: &[std::ops::Range<usize>],
        nonce: &str,
        with_session: bool,
        outcome: &Outcome,
        shown: &Invocation,
        unchanged: &mut [bool],
    ) -> HostRead {
        let (stdout, stderr) = match outcome {
            Outcome::Exited { stdout, stderr, .. } | Outcome::TimedOut { stdout, stderr, .. } => {
                (stdout.text(), stderr.clone())
            }
            Outcome::FailedToSpawn { .. } => (String::new(), Captured::default()),
        };
        // What a part the script did not finish gets: why the call ended.
        let overall: Option<TmuxError> = match outcome {
            Outcome::Exited {
                code: Some(0),
                stdout,
                ..
            } if stdout.truncated => Some(TmuxError::CaptureCut {
                max_output: stdout.bytes.len().max(answer_bound(targets.len(), 0)),
            }),
            Outcome::Exited { code: Some(0), .. } => None,
            _ => Some(self.failure(shown, outcome, None)),
        };
        let processes_failed = overall.as_ref().map(|_| {
            format!(
                "the session-file search on {} {}",
                self.remote.as_ref().map_or("", |r| r.alias.as_str()),
                outcome.describe()
            )
        });
        let failed_processes = || -> Vec<Option<(Option<u32>, PaneProcesses)>> {
            targets
                .iter()
                .map(|_| {
                    Some((
                        None,
                        procs::pane_processes(None, with_session, processes_failed.as_deref()),
                    ))
                })
                .collect()
        };
        let list_head = format!("BMB-{nonce}-LIST ");
        let list_end = format!("\nBMB-{nonce}-LISTEND\n");
        // What a chatty startup file of the remote shell printed first is skipped.
        let head_at = if stdout.starts_with(&list_head) {
            Some(0)
        } else {
            stdout.find(&format!("\n{list_head}")).map(|at| at + 1)
        };
        let Some(after_head) = head_at.map(|at| &stdout[at + list_head.len()..]) else {
            let error = overall.unwrap_or_else(|| self.failure(shown, outcome, None));
            return HostRead {
                captures: Err(error),
                processes: failed_processes(),
                probes: Vec::new(),
                sessions: None,
                reused: Vec::new(),
            };
        };
        let Some((listing, rest)) = after_head.split_once(&list_end) else {
            let error = overall.unwrap_or_else(|| self.failure(shown, outcome, None));
            return HostRead {
                captures: Err(error),
                processes: failed_processes(),
                probes: Vec::new(),
                sessions: None,
                reused: Vec::new(),
            };
        };
        let (code, rows) = listing.split_once('\n').unwrap_or((listing, ""));
        let panes = if code == "0" {
            tmux::parse_list(&without_session_ids(rows))
        } else {
            // No tmux server there (gone, or never started) fails every
            // target alike: one outage of the host, not a missing session
            // each, and no word on which sessions exist.
            let listed = exited_with(code.parse().ok(), rows.as_bytes(), &stderr);
            return HostRead {
                captures: Err(self.failure(shown, &listed, None)),
                processes: vec![None; targets.len()],
                probes: Vec::new(),
                sessions: None,
                reused: Vec::new(),
            };
        };
        let sessions = Some(tmux::listed_sessions(&panes));
        let mut results = self.no_session_results(targets);
        let wanted = tmux::wanted_targets(targets, &panes);

        // The chains, each closed by `\nEND <code>\n`.
        let end = format!("\nBMB-{nonce}-END ");
        let ends = rest.matches(&end).count();
        if ends > batches.len() {
            for (index, _) in &wanted {
                results[*index] = Err(TmuxError::MarkerRepeated { count: ends });
            }
            return HostRead {
                captures: Ok(results),
                processes: vec![None; targets.len()],
                probes: Vec::new(),
                sessions,
                reused: Vec::new(),
            };
        }
        let mut rest = rest;
        let mut finished = true;
        for batch in batches {
            let in_batch: Vec<(usize, String)> = wanted
                .iter()
                .filter(|(index, _)| batch.contains(index))
                .cloned()
                .collect();
            let markers: Vec<String> = in_batch
                .iter()
                .map(|(index, _)| tmux::chain_marker(nonce, *index))
                .collect();
            let (section, failure) = match rest.split_once(&end) {
                Some((section, after)) if finished => {
                    let (code, after) = after.split_once('\n').unwrap_or((after, ""));
                    rest = after;
                    let failure = (code != "0").then(|| {
                        self.failure(shown, &exited_with(code.parse().ok(), b"", &stderr), None)
                    });
                    let section = same_line(nonce, section, batch, unchanged);
                    (section.to_string(), failure)
                }
                _ => {
                    let cut = if finished {
                        rest.to_string()
                    } else {
                        String::new()
                    };
                    finished = false;
                    let failure = overall.clone().unwrap_or_else(|| {
                        TmuxError::Failed(CommandFailed {
                            command: shown.display(),
                            outcome: "ended before its capture did".to_string(),
                        })
                    });
                    (cut, Some(failure))
                }
            };
            // An empty chain printed nothing but the newline before its end.
            let section = if in_batch.is_empty() {
                String::new()
            } else {
                section
            };
            tmux::read_chain(
                targets,
                &in_batch,
                &markers,
                &section,
                failure,
                &mut results,
                &panes,
            );
        }

        let processes = if finished {
            let tag = format!("BMB-{nonce}-P");
            let mut read = procs::parse(&tag, rest);
            (0..targets.len())
                .map(|index| match read.remove(&index) {
                    Some(reading) => Some((
                        reading.root,
                        procs::pane_processes(
                            Some(reading),
                            with_session,
                            processes_failed.as_deref(),
                        ),
                    )),
                    // Cut short before it said anything of this pane.
                    None => processes_failed
                        .as_ref()
                        .map(|why| (None, procs::pane_processes(None, with_session, Some(why)))),
                })
                .collect()
        } else {
            failed_processes()
        };
        HostRead {
            captures: Ok(results),
            processes,
            probes: Vec::new(),
            sessions,
            reused: Vec::new(),
        }
    }
}

/// The script's chains: each entry counted as long as the longer of its two
/// possible targets, since the remote shell chooses between them.
fn host_batches(targets: &[(String, Option<KnownPane>)]) -> Vec<std::ops::Range<usize>> {
    tmux::chain_batches(
        targets.iter().map(|(session, known)| {
            (session.len() + 3).max(known.as_ref().map_or(0, |k| k.id.len()))
        }),
    )
}

/// An outcome for one command inside the script: its exit code, and what
/// it (or, lacking that, the whole call) wrote on stderr.
fn exited_with(code: Option<i32>, own_words: &[u8], call_stderr: &Captured) -> Outcome {
    let stderr = if own_words.iter().any(|b| !b.is_ascii_whitespace()) {
        Captured {
            bytes: own_words.to_vec(),
            truncated: false,
        }
    } else {
        call_stderr.clone()
    };
    Outcome::Exited {
        code: code.or(Some(1)),
        signal: None,
        stdout: Captured::default(),
        stderr,
    }
}

/// What a capture of a pane depends on besides its output, as one word
/// the listing carries per pane, led by `#{window_activity}` (which moves,
/// in whole seconds, on every output of the window's panes): its window,
/// first process, size, history, whether it is dead or in a mode, its
/// cursor and screen. The same key and no output since the capture's clock
/// is the same capture ([`Screen::skippable`]).
/// The fields of a pane's display line ([`tmux::marker_format`]) that are
/// not in the listing already: the session's key, attach and creation
/// times (one word, [`tmux::marker_format`]'s), the five flags, and
/// `#{pane_current_command}` after a `c` (it may be empty; tmux cuts it at
/// its first space). A pane the host does not capture again gets its
/// display line from these, without a tmux call of its own.
const SAME_FIELDS: &str = "#{session_activity}:#{session_last_attached}:#{session_created} #{pane_dead}#{pane_in_mode}#{synchronize-panes}#{window_active}#{pane_active} c#{pane_current_command}";

const SCREEN_KEY: &str = "#{window_activity}:#{window_id}:#{pane_pid}:#{pane_width}x#{pane_height}:#{history_size}:#{pane_dead}#{pane_in_mode}:#{cursor_x},#{cursor_y}:#{alternate_on}";

/// The listing the remote side asks for: [`tmux::LIST_FORMAT`] after each
/// session's tmux id, which the host script keys its lookups by, with each
/// pane's [`SCREEN_KEY`] and [`SAME_FIELDS`] before the session's name.
fn remote_list_format() -> String {
    format!(
        "#{{session_id}} #{{pane_id}} #{{pane_pid}} #{{window_active}}#{{pane_active}} {SCREEN_KEY} {SAME_FIELDS} #{{session_name}}"
    )
}

/// The listing's rows without their session ids and keys: [`tmux::LIST_FORMAT`]'s.
fn without_session_ids(rows: &str) -> String {
    rows.lines()
        .map(|row| {
            let fields: Vec<&str> = row.splitn(9, ' ').collect();
            match fields[..] {
                [sid, id, pid, active, _key, _, _, _, name] if sid.starts_with('$') => {
                    format!("{id} {pid} {active} {name}")
                }
                _ => row.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What an answer's listing and clock say, besides its panes.
#[derive(Default)]
struct Listed {
    /// Session name -> `session_id` digits.
    hints: std::collections::HashMap<String, String>,
    /// Pane id -> its [`SCREEN_KEY`]; `None` when the listing failed.
    keys: Option<std::collections::HashMap<String, String>>,
    /// The host's clock (epoch seconds) read before the listing, where its
    /// shell has one without a fork (bash); `None`: no capture is skipped.
    clock: Option<i64>,
}

/// Session name -> `session_id` digits and pane id -> key, from an
/// answer's listing, and the clock read before it.
fn read_listing(nonce: &str, answer: &str) -> Listed {
    let mut listed = Listed::default();
    let clock_head = format!("BMB-{nonce}-CLOCK ");
    listed.clock = answer
        .lines()
        .find_map(|line| line.strip_prefix(&clock_head))
        .and_then(|c| c.parse().ok());
    let head = format!("BMB-{nonce}-LIST 0\n");
    let Some(at) = answer.find(&head) else {
        return listed;
    };
    let rows = &answer[at + head.len()..];
    let end = format!("BMB-{nonce}-LISTEND");
    let mut keys = std::collections::HashMap::new();
    let mut ended = false;
    for row in rows.lines() {
        if row == end {
            ended = true;
            break;
        }
        let fields: Vec<&str> = row.splitn(9, ' ').collect();
        let [sid, id, _, _, key, _, _, _, name] = fields[..] else {
            continue;
        };
        if let Some(digits) = sid
            .strip_prefix('$')
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
        {
            listed
                .hints
                .entry(name.to_string())
                .or_insert_with(|| digits.to_string());
        }
        if id.starts_with('%') {
            keys.insert(id.to_string(), key.to_string());
        }
    }
    if ended {
        listed.keys = Some(keys);
    }
    listed
}

/// A chain's section without its first line, `SAME INDEX...` (the targets
/// of `batch` the host did not capture again, their display line alone),
/// which marks those targets in `unchanged`. A section without it is as it came.
fn same_line<'s>(
    nonce: &str,
    section: &'s str,
    batch: &std::ops::Range<usize>,
    unchanged: &mut [bool],
) -> &'s str {
    let head = format!("BMB-{nonce}-SAME");
    let Some(after) = section.strip_prefix(&head) else {
        return section;
    };
    let (line, rest) = after.split_once('\n').unwrap_or((after, ""));
    for index in line.split(' ').filter_map(|i| i.parse::<usize>().ok()) {
        if batch.contains(&index)
            && let Some(slot) = unchanged.get_mut(index)
        {
            *slot = true;
        }
    }
    rest
}

impl HostSession {
    /// Answers the captures the host did not read again with the texts
    /// kept for them, and keeps this cycle's: each under the key its pane
    /// was listed with and the clock read before. A pane said unchanged
    /// that does not match what is kept (another pane, another key, none
    /// kept) is an error this cycle; a pane not listed, not captured, or
    /// failed is forgotten, and a failed listing forgets them all.
    fn remember_screens(
        &mut self,
        targets: &[(String, Option<KnownPane>)],
        held: &[Option<String>],
        unchanged: &[bool],
        listed: &Listed,
        read: &mut HostRead,
        shown: &Invocation,
    ) {
        read.reused = vec![false; targets.len()];
        let (Ok(captures), Some(keys)) = (read.captures.as_mut(), listed.keys.as_ref()) else {
            self.screens.clear();
            return;
        };
        self.screens.retain(|id, _| keys.contains_key(id));
        for (index, capture) in captures.iter_mut().enumerate() {
            let known = targets[index].1.as_ref().map(|k| k.id.as_str());
            let said_same = unchanged.get(index).copied().unwrap_or(false);
            let Ok(pane) = capture.as_mut() else {
                if let Some(id) = known {
                    self.screens.remove(id);
                }
                continue;
            };
            let Some(id) = pane.pane_id.clone() else {
                if said_same {
                    *capture = Err(not_kept(shown, "no pane id"));
                }
                continue;
            };
            if said_same {
                let held = held.get(index).and_then(Option::as_deref);
                let kept = self.screens.get(&id).filter(|screen| {
                    Some(id.as_str()) == known
                        && held == Some(screen.key.as_str())
                        && keys.get(&id) == Some(&screen.key)
                });
                match kept {
                    Some(screen) => {
                        pane.text.clone_from(&screen.text);
                        read.reused[index] = true;
                    }
                    None => {
                        self.screens.remove(&id);
                        *capture = Err(not_kept(shown, &id));
                    }
                }
                continue;
            }
            match (keys.get(&id), listed.clock) {
                (Some(key), Some(clock)) => {
                    self.screens.insert(
                        id,
                        Screen {
                            key: key.clone(),
                            clock,
                            text: pane.text.clone(),
                        },
                    );
                }
                _ => {
                    self.screens.remove(&id);
                }
            }
        }
    }
}

/// A host that said a pane was unchanged which this side kept no capture of.
fn not_kept(shown: &Invocation, pane: &str) -> TmuxError {
    TmuxError::Failed(CommandFailed {
        command: shown.display(),
        outcome: format!("said pane {pane} was unchanged, but no capture of it is kept here"),
    })
}

/// The probes' answers (`PR KIND INDEX RC`, their output, `PE`), one per
/// probe asked; a probe the answer does not hold failed with the call.
fn read_probes(
    nonce: &str,
    outcome: &Outcome,
    asked: usize,
    probe_timeout: std::time::Duration,
) -> Vec<Outcome> {
    let failed = |why: &str| Outcome::FailedToSpawn {
        error: format!("the host gave no answer for it ({why})"),
    };
    let text = match outcome {
        Outcome::Exited {
            code: Some(0),
            stdout,
            ..
        } if !stdout.truncated => stdout.text(),
        other => return (0..asked).map(|_| failed(&other.describe())).collect(),
    };
    let head = format!("BMB-{nonce}-PR ");
    let end = format!("BMB-{nonce}-PE");
    let mut found: Vec<Option<Outcome>> = (0..asked).map(|_| None).collect();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix(&head) else {
            continue;
        };
        let mut fields = rest.split(' ');
        let (Some(index), Some(rc)) = (
            fields.next().and_then(|i| i.parse::<usize>().ok()),
            fields.next().and_then(|c| c.parse::<i32>().ok()),
        ) else {
            continue;
        };
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != end).collect();
        let Some(slot) = found.get_mut(index) else {
            continue;
        };
        let mut bytes = body.join("\n").into_bytes();
        if !bytes.is_empty() {
            bytes.push(b'\n');
        }
        *slot = Some(if rc == 124 || rc == 137 {
            Outcome::TimedOut {
                after: probe_timeout,
                stopping: false,
                stdout: Captured::default(),
                stderr: Captured::default(),
            }
        } else {
            Outcome::Exited {
                code: Some(rc),
                signal: None,
                stdout: Captured {
                    bytes,
                    truncated: false,
                },
                stderr: Captured::default(),
            }
        });
    }
    found
        .into_iter()
        .map(|o| o.unwrap_or_else(|| failed("its answer was cut short")))
        .collect()
}

/// The remote command that runs `program`: under `bash` where there is
/// one, else `sh`. dash's `read` takes one byte per system call, whatever
/// it reads; bash's reads a regular file (the listing, `/proc/<pid>/stat`,
/// a session file) in blocks and seeks back, and a counted request off the
/// channel in blocks (`read -N`): at 100 panes the remote shell's cost was
/// mostly those one-byte reads (PERFORMANCE.md). The script is POSIX sh and
/// runs alike under either; `BASH_ENV` is dropped so no startup file runs.
fn session_command(program: &str) -> String {
    format!(
        "exec sh -c {} sh {}",
        quote_literal(BOOT),
        quote_literal(program)
    )
}

/// [`session_command`]'s first shell: bash with the program when there is one.
const BOOT: &str = "if [ -z \"${BASH_VERSION-}\" ] && command -v bash >/dev/null 2>&1; then unset BASH_ENV; exec bash -c \"$1\" bash; fi; eval \"$1\"";

/// The remote loop: the functions once, then one request after another
/// from fd 3 (the ssh channel), each `BMB-LEN-<bytes>`, the request, and
/// `BMB-RUN-<token>`, run by `eval`; commands it starts read `/dev/null`.
/// bash 5 reads the request as one count of bytes (under the C locale, so
/// a count of bytes, not of characters); another shell line by line. EOF
/// ends it.
fn session_program(tmux: &Tmux, token: &str, probe_timeout: std::time::Duration) -> String {
    let limit = tmux.timeout.as_secs().max(1);
    format!(
        "set -f\nexec 3<&0 0</dev/null\n{functions}{session}\
         bmb_run() {{\n  if [ -n \"$bmb_stuck\" ]; then\n    echo 'tmux not run: an earlier tmux call of this cycle ran out of time' >&2\n    return 124\n  fi\n  bmb_deadline \"$bmb_limit\" {tmux} \"$@\"\n  bmb_rc=$?\n  case $bmb_rc in 124|137) bmb_stuck=1 ;; esac\n  return $bmb_rc\n}}\n\
         bmb_limit={limit}\nbmb_plimit={plimit}\n\
         bmb_fmt={format}\nbmb_list_fmt={list}\n\
         if command -v timeout >/dev/null 2>&1; then bmb_to=1; else bmb_to=; fi\n\
         {awk_check}bmb_pick_prog={pick}\nbmb_procs_prog={procs_awk}\n\
         bmb_ifs=$IFS\nbmb_dir=$(mktemp -d 2>/dev/null) || {{ bmb_dir=/tmp/bmb-session-$$; mkdir -m 700 \"$bmb_dir\" || exit 1; }}\n\
         trap 'rm -rf \"$bmb_dir\"' EXIT\ntrap 'exit 1' HUP TERM PIPE\n\
         case ${{BASH_VERSINFO-0}} in [5-9]|[1-9][0-9]) bmb_bash=1 ;; *) bmb_bash= ;; esac\n\
         while :; do\n  bmb_req=\n  IFS= read -r bmb_l <&3 || exit 0\n  bmb_len=${{bmb_l#BMB-LEN-}}\n  case $bmb_l in BMB-LEN-*) ;; *) exit 0 ;; esac\n\
           case $bmb_len in ''|*[!0-9]*) exit 0 ;; esac\n\
           if [ -n \"$bmb_bash\" ] && [ \"$bmb_len\" -gt 0 ]; then\n\
             bmb_lc=${{LC_ALL-}} bmb_lcset=${{LC_ALL+1}}\n    LC_ALL=C\n    IFS= read -r -N \"$bmb_len\" bmb_req <&3\n\
             if [ -n \"$bmb_lcset\" ]; then LC_ALL=$bmb_lc; else unset LC_ALL; fi\n    IFS= read -r bmb_l <&3\n\
           else\n    while IFS= read -r bmb_l <&3; do\n      [ \"$bmb_l\" = BMB-RUN-{token} ] && break\n      bmb_req=\"$bmb_req$bmb_l\n\"\n    done\n  fi\n\
           [ \"$bmb_l\" = BMB-RUN-{token} ] || exit 0\n  eval \"$bmb_req\"\ndone\n",
        functions = procs::functions(),
        session = SESSION_FUNCTIONS,
        tmux = tmux.remote_line(&[]),
        plimit = probe_timeout.as_secs().max(1),
        format = quote_literal(&tmux::marker_format("")[1..]),
        list = quote_literal(&remote_list_format()),
        awk_check = AWK_CHECK,
        pick = quote_literal(PICK_AWK),
        procs_awk = quote_literal(procs::awk_program()),
    )
}

/// Whether the session reads its panes with awk (`bmb_awk`), asked once.
const AWK_CHECK: &str = "if command -v awk >/dev/null 2>&1; then bmb_awk=1; else bmb_awk=; fi\n";

/// One cycle's request: the probes, then the targets and known agents as
/// data lines for `bmb_cycle` (the listing, the picks, the chains, the
/// processes; see [`SESSION_FUNCTIONS`]), then the end marker.
#[expect(
    clippy::too_many_arguments,
    reason = "one remote round trip takes every part of the cycle's request"
)]
fn host_request(
    targets: &[(String, Option<KnownPane>)],
    batches: &[std::ops::Range<usize>],
    nonce: &str,
    with_session: bool,
    memory: &AgentMemory,
    hints: &std::collections::HashMap<String, String>,
    held: &[Option<String>],
    probes: &[RemoteProbe],
    probe_timeout: std::time::Duration,
) -> String {
    use std::fmt::Write as _;
    // The probes first, side by side, and waited for before the panes are
    // read: the screen acted on is the freshest the request can give.
    let mut request = format!(
        "bmb_pl= bmb_pr= bmb_pn=0 bmb_pmax={PROBES_AT_ONCE} bmb_plimit={}\n",
        probe_timeout.as_secs().max(1)
    );
    for (index, probe) in probes.iter().enumerate() {
        let _ = writeln!(
            request,
            "bmb_probe {index} {} {}",
            quote_literal(&probe.target),
            quote_literal(&probe.command)
        );
    }
    if !probes.is_empty() {
        request.push_str("bmb_pwait\n");
    }
    // The targets as data lines the remote side reads with awk, or with
    // the shell's builtins where it has no awk (`bmb_cycle`).
    let mut data = String::new();
    let word = |value: &str| {
        if value.is_empty() || value.contains(char::is_whitespace) {
            "-".to_string()
        } else {
            value.to_string()
        }
    };
    for batch in batches {
        for index in batch.clone() {
            let (session, known) = &targets[index];
            // A name with a newline is in no listing row: no such session.
            if session.contains('\n') {
                continue;
            }
            let (id, pid) = known
                .as_ref()
                .map_or(("-".to_string(), "-".to_string()), |k| {
                    (
                        word(&k.id),
                        k.pid.map_or("-".to_string(), |p| p.to_string()),
                    )
                });
            let _ = writeln!(
                data,
                "w {index} {hint} {id} {pid} {held} {session}",
                hint = word(hints.get(session).map_or("-", String::as_str)),
                held = word(held.get(index).and_then(Option::as_deref).unwrap_or("-")),
            );
        }
        data.push_str("c\n");
    }
    data.push_str(&memory.data_lines(memory.roots()));
    let _ = writeln!(
        request,
        "bmb_data={}\nbmb_cycle {nonce} {}",
        quote_literal(&data),
        u8::from(with_session)
    );
    request.push_str("bmb_end\n");
    request
}

/// How many probes run at once on a host (as on the monitor's machine):
/// more wait for the oldest to end, so a request costs
/// `ceil(probes / PROBES_AT_ONCE)` probe deadlines at most.
pub const PROBES_AT_ONCE: usize = 8;

/// How many probe deadlines in a row `probes` probes on one host can take.
pub fn probe_rounds(probes: usize) -> u32 {
    u32::try_from(probes.div_ceil(PROBES_AT_ONCE)).unwrap_or(u32::MAX)
}

/// The session's functions. `bmb_cycle NONCE WITNESS` is a cycle's panes,
/// from the targets' data lines in `$bmb_data` (`w INDEX HINT ID PID HELD
/// SESSION` per target, `c` after each chain's batch, `k ROOT PID START
/// PATH` per known agent): `bmb_begin` reads the clock and lists the panes
/// once into a file; then, where the host has awk, one awk run picks every
/// target ([`PICK_AWK`]), the shell runs the chains it wrote, and one more
/// reads the processes (`bmb_procs_awk`); else the builtins do it all:
/// `bmb_rows` keys the listing by tmux id (`bmb_n_<sid>` a session's name,
/// `bmb_a_<sid>` its `=session:` pane's first process, `bmb_q_<sid>_<pane>`
/// a pane's session, first process and key, `bmb_m_<pane>` its display
/// fields), so each pick is a lookup,
/// linear in panes; `bmb_w INDEX HINT ID PID SESSION HELD` picks, as
/// `tmux::wanted_targets` does (the remembered pane while it is still its
/// session's with the same first process, else `=session:`), and adds the
/// pane to the chain; `bmb_chain` runs it; `bmb_procs` reads the processes.
/// Both print the same bytes
/// (`tests::the_awk_reading_answers_byte_for_byte_as_the_builtins_do`).
/// `bmb_run` is every tmux call, under the remote deadline; after one that
/// ran out the request starts no other. Probes run side by side
/// (`bmb_probe`), each under its deadline, before the listing, waited for
/// by `bmb_pwait`; `bmb_end` prints their answers and closes the answer.
const SESSION_FUNCTIONS: &str = r#"bmb_deadline() {
  bmb_dl=$1
  shift
  if [ -n "$bmb_to" ]; then
    timeout -k 1 "$bmb_dl" "$@"
    return $?
  fi
  "$@" &
  bmb_job=$!
  ( trap - EXIT; sleep "$bmb_dl"; kill -9 "$bmb_job" ) >/dev/null 2>&1 &
  bmb_dog=$!
  wait "$bmb_job"
  bmb_rc=$?
  kill "$bmb_dog" 2>/dev/null
  return $bmb_rc
}
bmb_begin() {
  bmb_nonce=$1 bmb_witness=$2 bmb_tag=BMB-$1-P bmb_stuck= bmb_roots= bmb_args=
  for bmb_v in $bmb_vars; do unset "$bmb_v"; done
  bmb_vars= bmb_sids= bmb_same= bmb_sl= bmb_tag0=BMB-$1-
  # The clock before the listing, and so before every capture: a pane whose
  # window_activity is older holds no output since (bash alone, fork-free).
  [ -z "$bmb_bash" ] || printf '%s %(%s)T\n' "BMB-$1-CLOCK" -1
  # Into a file, never a pipe: a client of a stopped server hands it
  # its output's descriptor, which would hold a pipe open after the client
  # was killed.
  bmb_run list-panes -a -F "$bmb_list_fmt" >"$bmb_dir/l" 2>&1
  bmb_rc=$?
  printf '%s %s\n' "BMB-$1-LIST" "$bmb_rc"
}
bmb_cycle() {
  bmb_begin "$1" "$2"
  if [ -n "$bmb_awk" ]; then
    if awk -v nonce="$1" -v rc="$bmb_rc" -v list="$bmb_dir/l" -v script="$bmb_dir/s" \
      -v known="$bmb_dir/k" -v witness="$2" "$bmb_pick_prog" <<BMB_DATA
$bmb_data
BMB_DATA
    then
      . "$bmb_dir/s"
      bmb_procs_awk 2>/dev/null
      return 0
    fi
    # No whole pick: this cycle's panes go unread, and the next cycles
    # are read by the builtins.
    bmb_awk=
    echo 'awk could not pick the panes; the shell reads them from the next cycle' >&2
    return 0
  fi
  bmb_rows
  IFS='
'
  for bmb_d in $bmb_data; do
    IFS=$bmb_ifs
    case $bmb_d in
      'w '*) bmb_wd "${bmb_d#w }" ;;
      c) bmb_chain ;;
      'k '*) bmb_known "${bmb_d#k }" ;;
    esac
  done
  IFS=$bmb_ifs
  bmb_procs 2>/dev/null
}
bmb_wd() {
  bmb_x=$1
  bmb_wi=${bmb_x%% *} bmb_x=${bmb_x#* }
  bmb_wh=${bmb_x%% *} bmb_x=${bmb_x#* }
  bmb_wk=${bmb_x%% *} bmb_x=${bmb_x#* }
  bmb_wp=${bmb_x%% *} bmb_x=${bmb_x#* }
  bmb_wy=${bmb_x%% *} bmb_x=${bmb_x#* }
  case $bmb_wi in ''|*[!0-9]*) return 0 ;; esac
  bmb_w "$bmb_wi" "$bmb_wh" "$bmb_wk" "$bmb_wp" "$bmb_x" "$bmb_wy"
}
bmb_rows() {
  while IFS= read -r bmb_row || [ -n "$bmb_row" ]; do
    printf '%s\n' "$bmb_row"
    [ "$bmb_rc" = 0 ] || continue
    IFS=' '
    set -- $bmb_row
    IFS=$bmb_ifs
    [ $# -ge 9 ] || continue
    bmb_s=${1#\$} bmb_i=${2#%}
    case $bmb_s in ''|*[!0-9]*) continue ;; esac
    case $bmb_i in ''|*[!0-9]*) continue ;; esac
    eval "bmb_seen=\${bmb_n_$bmb_s+1}"
    if [ -z "$bmb_seen" ]; then
      bmb_name=${bmb_row#"$1 $2 $3 $4 $5 $6 $7 $8 "}
      eval "bmb_n_$bmb_s=\$bmb_name"
      bmb_sids="$bmb_sids $bmb_s"
      bmb_vars="$bmb_vars bmb_n_$bmb_s bmb_a_$bmb_s"
    fi
    [ "$4" = 11 ] && eval "bmb_a_$bmb_s=\$3"
    # A pane two sessions share (a session group) is listed under each:
    # its pick is per session, its display line the one of the session
    # with the newest key time, which is the one tmux names for its id.
    eval "bmb_q_${bmb_s}_$bmb_i=\"\$bmb_s \$3 \$5\" bmb_ma=\${bmb_ma_$bmb_i-}"
    bmb_a6=${6%%:*}
    case $bmb_a6 in ''|*[!0-9]*) bmb_a6=0 ;; esac
    if [ -z "$bmb_ma" ] || [ "$bmb_a6" -gt "$bmb_ma" ]; then
      eval "bmb_m_$bmb_i=\"\$3 \$6 \$7 \${8#c}\" bmb_ma_$bmb_i=\$bmb_a6"
    fi
    bmb_vars="$bmb_vars bmb_q_${bmb_s}_$bmb_i bmb_m_$bmb_i bmb_ma_$bmb_i"
  done <"$bmb_dir/l"
  printf '%s\n' "BMB-$bmb_nonce-LISTEND"
}
bmb_w() {
  bmb_s=
  case $2 in ''|*[!0-9]*) ;; *) eval "[ \"\${bmb_n_$2-}\" = \"\$5\" ]" && bmb_s=$2 ;; esac
  if [ -z "$bmb_s" ]; then
    for bmb_x in $bmb_sids; do
      eval "[ \"\$bmb_n_$bmb_x\" = \"\$5\" ]" && { bmb_s=$bmb_x; break; }
    done
  fi
  [ -n "$bmb_s" ] || return 0
  bmb_t= bmb_r= bmb_keep=
  bmb_i=${3#%}
  case $3 in %*)
    case $bmb_i in ''|*[!0-9]*) ;; *)
      eval "bmb_kq=\${bmb_q_${bmb_s}_$bmb_i-}"
      bmb_kp=${bmb_kq#* }
      if [ "${bmb_kq%% *}" = "$bmb_s" ] && { [ "$4" = - ] || [ "${bmb_kp%% *}" = "$4" ]; }; then
        bmb_t=$3 bmb_r=${bmb_kp%% *}
        # The watcher holds this pane's capture under this very key.
        [ "$6" = "${bmb_kp#* }" ] && bmb_keep=1
      fi ;;
    esac ;;
  esac
  if [ -z "$bmb_t" ]; then
    bmb_t="=$5:"
    eval "bmb_r=\${bmb_a_$bmb_s-}"
  fi
  eval "bmb_t_$1=\$bmb_t"
  if [ -n "$bmb_keep" ]; then
    # Its display line from the listing: no tmux call for it.
    eval "bmb_sl=\"\$bmb_sl\${bmb_tag0}$1 \$5 \$3 \$bmb_m_$bmb_i
\""
    bmb_same="$bmb_same $1"
  else
    [ -z "$bmb_args" ] || bmb_args="$bmb_args ';'"
    bmb_args="$bmb_args display-message -p -t \"\$bmb_t_$1\" \"BMB-\$bmb_nonce-$1 \$bmb_fmt\""
    bmb_args="$bmb_args ';' capture-pane -p -e -t \"\$bmb_t_$1\""
  fi
  bmb_roots="$bmb_roots $1:$bmb_r"
}
bmb_chain() {
  printf '%s\n%s' "BMB-$bmb_nonce-SAME$bmb_same" "$bmb_sl"
  bmb_same= bmb_sl=
  if [ -n "$bmb_args" ]; then
    eval "bmb_run $bmb_args"
    bmb_rc=$?
  else
    bmb_rc=0
  fi
  bmb_args=
  printf '\n%s %s\n' "BMB-$bmb_nonce-END" "$bmb_rc"
}
bmb_probe() {
  # At most $bmb_pmax at once, as on the monitor's machine: the oldest is
  # waited for before one more starts.
  if [ "$bmb_pn" -ge "$bmb_pmax" ]; then
    bmb_x=${bmb_pl# }
    bmb_x=${bmb_x%% *}
    bmb_pl=${bmb_pl#" $bmb_x"}
    bmb_k=${bmb_x%%:*} bmb_j=${bmb_x#*:}
    wait "$bmb_j"
    bmb_pr="$bmb_pr $bmb_k:$?"
    bmb_pn=$((bmb_pn - 1))
  fi
  bmb_pn=$((bmb_pn + 1))
  ( trap - EXIT; BMB_TARGET=$2 BMB_SH_SCRIPT=$3; export BMB_TARGET BMB_SH_SCRIPT
    bmb_deadline "$bmb_plimit" sh -c '__bmb_sh_script=$BMB_SH_SCRIPT; unset BMB_SH_SCRIPT; eval "$__bmb_sh_script"'
  ) >"$bmb_dir/p$1" 2>/dev/null </dev/null &
  bmb_pl="$bmb_pl $1:$!"
}
bmb_pwait() {
  for bmb_x in $bmb_pl; do
    bmb_k=${bmb_x%%:*} bmb_j=${bmb_x#*:}
    wait "$bmb_j"
    bmb_pr="$bmb_pr $bmb_k:$?"
  done
  bmb_pl= bmb_pn=0
}
bmb_end() {
  for bmb_x in $bmb_pr; do
    bmb_k=${bmb_x%%:*} bmb_rc=${bmb_x#*:}
    printf '%s %s %s\n' "BMB-$bmb_nonce-PR" "$bmb_k" "$bmb_rc"
    bmb_n=0
    if [ -f "$bmb_dir/p$bmb_k" ]; then
      while IFS= read -r bmb_l || [ -n "$bmb_l" ]; do
        bmb_n=$((bmb_n + ${#bmb_l} + 1))
        [ "$bmb_n" -gt 4096 ] && break
        printf '%s\n' "$bmb_l"
      done < "$bmb_dir/p$bmb_k"
    fi
    printf '%s\n' "BMB-$bmb_nonce-PE"
  done
  bmb_pr=
  # After a tmux call ran out of time this channel may still be written to
  # by that server when it wakes: the session ends, and a fresh one serves
  # the next request.
  [ -z "$bmb_stuck" ] || printf '\n%s\n' "BMB-$bmb_nonce-STUCK"
  printf '\n%s\n' "BMB-$bmb_nonce-DONE"
  [ -z "$bmb_stuck" ] || exit 0
}
"#;

/// `bmb_cycle`'s pick in one awk run (`-v nonce rc list script known
/// witness`, the data lines on stdin), where the builtins' `bmb_rows` and
/// `bmb_w` interpreted ~1.75 ms a pane (PERFORMANCE.md): it prints the
/// listing's rows and `LISTEND` as `bmb_rows` does, and writes to `script`
/// the shell that runs the chains as `bmb_w` and `bmb_chain` would (each
/// target's `bmb_t_<i>`, each batch's `bmb_same` and `bmb_args`, then
/// `bmb_roots`), the shell glob of each pane's foreground leader's
/// `children` files (`bmb_globs`: awk cannot list a folder), and the check
/// that each known agent's session file is a readable regular file
/// (`bmb_kok`: awk cannot stat, and would wait on a FIFO); the known
/// agents' lines go to `known` for [`procs`]'s awk.
const PICK_AWK: &str = r#"
function q(s) { gsub(/'/, "'\\''", s); return "'" s "'" }
BEGIN {
  while ((getline row < list) > 0) {
    print row
    if (rc != "0") continue
    m = split(row, f, / +/)
    if (f[1] == "") { for (j = 1; j < m; j++) f[j] = f[j + 1]; m-- }
    if (m > 0 && f[m] == "") m--
    if (m < 9) continue
    s = f[1]; sub(/^\$/, "", s); i = f[2]; sub(/^%/, "", i)
    if (s !~ /^[0-9]+$/ || i !~ /^[0-9]+$/) continue
    if (!(s in name)) {
      pre = f[1] " " f[2] " " f[3] " " f[4] " " f[5] " " f[6] " " f[7] " " f[8] " "
      name[s] = (substr(row, 1, length(pre)) == pre) ? substr(row, length(pre) + 1) : row
      sids[++nsids] = s
    }
    if (f[4] == "11") act[s] = f[3]
    qv[s ":" i] = s " " f[3] " " f[5]
    a6 = f[6]; sub(/:.*/, "", a6); if (a6 !~ /^[0-9]+$/) a6 = 0
    if (!(i in mv) || a6 + 0 > ma[i] + 0) {
      mv[i] = f[3] " " f[6] " " f[7] " " substr(f[8], 2); ma[i] = a6
    }
  }
  close(list)
  print "BMB-" nonce "-LISTEND"
  printf "" > known
  args = same = sl = roots = checks = ""
}
$1 == "c" {
  print "bmb_same=" q(same) " bmb_sl=" q(sl) " bmb_args=" q(args) "\nbmb_chain" > script
  same = sl = args = ""
  next
}
$1 == "k" {
  if (witness != 1) next
  print > known
  path = $0
  for (j = 1; j <= 4; j++) sub(/^[^ ]* /, "", path)
  checks = checks " " q(path)
  next
}
$1 == "w" && NF >= 7 && $2 ~ /^[0-9]+$/ {
  idx = $2; hint = $3; id = $4; pid = $5; held = $6
  sess = $0
  for (j = 1; j <= 6; j++) sub(/^[^ ]* /, "", sess)
  s = ""
  if (hint ~ /^[0-9]+$/ && (hint in name) && name[hint] == sess) s = hint
  if (s == "") for (j = 1; j <= nsids; j++) if (name[sids[j]] == sess) { s = sids[j]; break }
  if (s == "") next
  t = rt = keep = ""
  if (substr(id, 1, 1) == "%" && substr(id, 2) ~ /^[0-9]+$/) {
    kq = qv[s ":" substr(id, 2)]
    sp = index(kq, " "); kq1 = sp ? substr(kq, 1, sp - 1) : kq; kp = sp ? substr(kq, sp + 1) : kq
    sp = index(kp, " "); kp1 = sp ? substr(kp, 1, sp - 1) : kp; kp2 = sp ? substr(kp, sp + 1) : kp
    if (kq1 == s && (pid == "-" || kp1 == pid)) {
      t = id; rt = kp1
      if (held == kp2) keep = 1
    }
  }
  if (t == "") { t = "=" sess ":"; rt = (s in act) ? act[s] : "" }
  print "bmb_t_" idx "=" q(t) > script
  if (keep) {
    same = same " " idx
    sl = sl "BMB-" nonce "-" idx " " sess " " id " " mv[substr(id, 2)] "\n"
  } else {
    if (args != "") args = args " ';'"
    args = args " display-message -p -t \"$bmb_t_" idx "\" \"BMB-$bmb_nonce-" idx " $bmb_fmt\""
    args = args " ';' capture-pane -p -e -t \"$bmb_t_" idx "\""
  }
  roots = roots " " idx ":" rt
}
END {
  print "bmb_roots=" q(roots) > script
  n = split(roots, kr, " "); globs = ""
  for (j = 1; j <= n; j++) {
    c = index(kr[j], ":"); r = substr(kr[j], c + 1)
    if (r !~ /^[0-9]+$/) continue
    sf = "/proc/" r "/stat"
    if ((getline line < sf) > 0 && match(line, /.*\)/)) {
      m = split(substr(line, RLENGTH + 1), x)
      if (m >= 20 && x[6] ~ /^[0-9]+$/ && x[6] != "0" && !(x[6] in seen)) {
        seen[x[6]] = 1
        globs = globs " /proc/" x[6] "/task/*/children"
      }
    }
    close(sf)
  }
  print "bmb_globs=" q(globs) > script
  print "bmb_kok=" > script
  if (checks != "") print "for bmb_p in" checks "; do if [ -f \"$bmb_p\" ] && [ -r \"$bmb_p\" ]; then bmb_kok=${bmb_kok}1; else bmb_kok=${bmb_kok}0; fi; done" > script
}
"#;

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::ssh::Remote;
    use crate::tmux::Server;

    /// A private tmux server in a temporary folder, ended on drop.
    struct Private {
        tmux: Tmux,
        _dir: tempfile::TempDir,
    }

    impl Drop for Private {
        fn drop(&mut self) {
            let _ = self.tmux.kill_server();
        }
    }

    fn private(sessions: &[(&str, &str)]) -> Private {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock").to_string_lossy().into_owned();
        let tmux = Tmux::new(Server::Path(socket));
        let private = Private { tmux, _dir: dir };
        let shell = |script: &str| vec!["sh".to_string(), "-c".to_string(), script.to_string()];
        let (first, script) = sessions[0];
        private
            .tmux
            .start_private_server(first, (80, 24), &shell(script))
            .unwrap();
        for (name, script) in &sessions[1..] {
            private
                .tmux
                .new_detached_session(name, &shell(script))
                .unwrap();
        }
        private
    }

    /// The session's loop run by a local `sh` as the remote shell would run
    /// it, and read back as [`Tmux::read_remote_host`] reads it.
    fn read(tmux: &Tmux, targets: &[(String, Option<KnownPane>)], nonce: &str) -> HostRead {
        read_over(&mut HostSession::default(), tmux, targets, nonce, &[])
    }

    fn as_remote(tmux: &Tmux) -> Tmux {
        Tmux {
            remote: Some(Remote::new("box", None)),
            ..tmux.clone()
        }
    }

    fn local_sh(command: &str) -> Invocation {
        Invocation::new("sh").arg("-c").arg(command)
    }

    fn read_over(
        session: &mut HostSession,
        tmux: &Tmux,
        targets: &[(String, Option<KnownPane>)],
        nonce: &str,
        probes: &[RemoteProbe],
    ) -> HostRead {
        as_remote(tmux).read_host_via(
            session,
            targets,
            nonce,
            true,
            &mut AgentMemory::default(),
            probes,
            Duration::from_secs(5),
            &local_sh,
        )
    }

    /// [`read_over`] for the probes' tests: no agent's session file asked
    /// for, each probe under `probe_timeout`, a fresh nonce.
    fn probe_over(
        session: &mut HostSession,
        tmux: &Tmux,
        targets: &[(String, Option<KnownPane>)],
        probes: &[RemoteProbe],
        probe_timeout: Duration,
    ) -> HostRead {
        as_remote(tmux).read_host_via(
            session,
            targets,
            &crate::tmux::fresh_nonce(),
            false,
            &mut AgentMemory::default(),
            probes,
            probe_timeout,
            &local_sh,
        )
    }

    /// The session as on a host without bash: the program under `sh`.
    fn sh_only(command: &str) -> Invocation {
        local_sh(&command.replacen(&quote_literal(BOOT), &quote_literal("eval \"$1\""), 1))
    }

    #[test]
    fn a_session_answers_alike_under_bash_and_under_sh_alone() {
        let server = private(&[
            ("one", "echo this-is-one; exec sleep 600"),
            ("zwei", "echo this-is-zwei; exec sleep 600"),
        ]);
        wait_drawn(&server.tmux, "one", "this-is-one");
        wait_drawn(&server.tmux, "zwei", "this-is-zwei");
        let targets = [target("one", None), target("zwei", None)];
        // Bytes that are not characters of their own, in the request: bash
        // reads the request by its count of bytes.
        let probes = [RemoteProbe {
            target: "zwei".to_string(),
            command: "echo gr\u{fc}n \u{2014} $BMB_TARGET".to_string(),
        }];
        // A UTF-8 locale, where bash counts characters unless told otherwise.
        let bash = |command: &str| local_sh(command).env("LC_ALL", "C.UTF-8");
        let sh = |command: &str| sh_only(command).env("LC_ALL", "C.UTF-8");
        type Open<'o> = &'o dyn Fn(&str) -> Invocation;
        let shells: [(Open, &str); 2] = [(&bash, "bash"), (&sh, "sh")];
        for (open, shell) in shells {
            let mut session = HostSession::default();
            for cycle in 0..3 {
                let nonce = crate::tmux::fresh_nonce();
                let read = as_remote(&server.tmux).read_host_via(
                    &mut session,
                    &targets,
                    &nonce,
                    true,
                    &mut AgentMemory::default(),
                    &probes,
                    Duration::from_secs(5),
                    open,
                );
                assert!(
                    matches!(&read.probes[..], [Outcome::Exited { code: Some(0), stdout, .. }] if stdout.text() == "gr\u{fc}n \u{2014} zwei\n"),
                    "{shell}, cycle {cycle}: {:?}",
                    read.probes
                );
                let captures = read.captures.expect("answered");
                for (capture, text) in captures.iter().zip(["this-is-one", "this-is-zwei"]) {
                    assert!(
                        capture.as_ref().is_ok_and(|c| c.text.contains(text)),
                        "{shell}, cycle {cycle}: {capture:?}"
                    );
                }
                for processes in &read.processes {
                    let (_, processes) = processes.as_ref().expect("read");
                    let front = processes.foreground.as_ref().expect("a foreground");
                    assert_eq!(front.comm, "sleep", "{shell}, cycle {cycle}");
                }
            }
            let pid = session.pid().expect("open");
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
            assert_eq!(comm.trim(), shell, "the shell the session runs");
            assert_eq!(session.opened, 1, "{shell}: one session for three cycles");
            session.close();
        }
    }

    /// The session as on a host without awk: the builtins read every pane.
    fn without_awk(command: &str) -> Invocation {
        local_sh(&command.replacen(AWK_CHECK, "bmb_awk=\n", 1))
    }

    /// A folder whose `awk` logs each run to `log` and then runs the real
    /// one; with `fail_reading`, the processes' reading fails after it
    /// printed all it read (as mawk's exit on a read error would).
    fn logging_awk(
        dir: &std::path::Path,
        log: &std::path::Path,
        fail_reading: bool,
        real: &str,
    ) -> String {
        let fail = if fail_reading {
            format!("case \"$*\" in *max_bytes=*) {real} \"$@\"; exit 2 ;; esac\n")
        } else {
            String::new()
        };
        let awk = dir.join("awk");
        std::fs::write(
            &awk,
            format!(
                "#!/bin/sh\necho run >> '{}'\n{fail}exec {real} \"$@\"\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&awk, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// One cycle's raw answer over `host`, its clock line taken out (the
    /// one part that may differ between two reads of the same panes).
    fn raw_answer(
        tmux: &Tmux,
        host: &mut HostSession,
        open: &dyn Fn(&str) -> Invocation,
        targets: &[(String, Option<KnownPane>)],
        nonce: &str,
        memory: &AgentMemory,
    ) -> String {
        let remote = as_remote(tmux);
        let batches = host_batches(targets);
        let held = vec![None; targets.len()];
        let timeout = Duration::from_secs(5);
        let request = host_request(
            targets,
            &batches,
            nonce,
            true,
            memory,
            &host.hints,
            &held,
            &[],
            timeout,
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        match remote.ask(host, &request, nonce, deadline, 1 << 24, timeout, open) {
            Outcome::Exited { stdout, .. } => {
                let clock = format!("BMB-{nonce}-CLOCK ");
                stdout
                    .text()
                    .split_inclusive('\n')
                    .filter(|line| !line.starts_with(&clock))
                    .collect()
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_awk_reading_answers_byte_for_byte_as_the_builtins_do() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        // A process whose name holds parentheses, and an agent that writes
        // its own session file under its HOME.
        let odd = dir.path().join("a) (b) c");
        std::fs::copy("/bin/sleep", &odd).unwrap();
        let agent = format!(
            r#"export HOME='{home}'; mkdir -p "$HOME/.claude/sessions"; printf '{{"status":"busy"}}\n{{"x":1}}' > "$HOME/.claude/sessions/$$.json"; echo agent-ready; exec sleep 600"#,
            home = home.display()
        );
        let odd_pane = format!("echo odd-ready; exec '{}' 600", odd.display());
        // A shell running a child in front (read as a child running), and
        // one reading its terminal with a child behind it (read as none).
        let server = private(&[
            ("one", "echo one-ready; exec sleep 600"),
            ("it's two", &odd_pane),
            ("agent", &agent),
            ("busy", "echo busy-ready; sleep 600; :"),
            ("reader", "sleep 600 & echo reader-ready; read x"),
        ]);
        for (session, ready) in [
            ("one", "one-ready"),
            ("it's two", "odd-ready"),
            ("agent", "agent-ready"),
            ("busy", "busy-ready"),
            ("reader", "reader-ready"),
        ] {
            wait_drawn(&server.tmux, session, ready);
        }
        // More targets than one chain holds, so the answer has two chains.
        let names = ["one", "it's two", "agent", "gone", "busy", "reader"];
        let targets: Vec<_> = (0..64)
            .map(|i| target(names[i % names.len()], None))
            .collect();
        assert!(host_batches(&targets).len() >= 2);
        // Each awk a host may have (scripts/test installs them): mawk
        // (Debian's default), gawk and busybox's.
        let awks: Vec<(&str, String, std::path::PathBuf)> = [
            ("mawk", "/usr/bin/mawk"),
            ("gawk", "/usr/bin/gawk"),
            ("busybox", "/usr/bin/busybox awk"),
        ]
        .into_iter()
        .map(|(name, real)| {
            let program = real.split(' ').next().unwrap_or(real);
            assert!(
                std::path::Path::new(program).exists(),
                "{program} is missing: scripts/test installs it"
            );
            let folder = dir.path().join(name);
            std::fs::create_dir(&folder).unwrap();
            let log = folder.join("awk.log");
            (name, logging_awk(&folder, &log, false, real), log)
        })
        .collect();
        let runs = |log: &std::path::Path| {
            std::fs::read_to_string(log)
                .unwrap_or_default()
                .lines()
                .count()
        };

        // First sight (the agent searched for), then known (its file read
        // again), then its file turned into a FIFO and into a folder (not read).
        let mut memory = AgentMemory::default();
        let mut awk_hosts: Vec<HostSession> = awks.iter().map(|_| HostSession::default()).collect();
        let mut sh_host = HostSession::default();
        let with_mawk = |command: &str| local_sh(command).env("PATH", &awks[0].1);
        let agent_root = server.tmux.list_panes(Some("=agent:")).unwrap()[0].pid;
        let file = home.join(format!(".claude/sessions/{agent_root}.json"));
        for step in ["searched", "known", "fifo", "folder"] {
            match step {
                "fifo" => {
                    std::fs::remove_file(&file).unwrap();
                    rustix::fs::mkfifoat(rustix::fs::CWD, &file, rustix::fs::Mode::RUSR).unwrap();
                }
                "folder" => {
                    std::fs::remove_file(&file).unwrap();
                    std::fs::create_dir(&file).unwrap();
                }
                _ => {}
            }
            let nonce = crate::tmux::fresh_nonce();
            let by_sh = raw_answer(
                &server.tmux,
                &mut sh_host,
                &without_awk,
                &targets,
                &nonce,
                &memory,
            );
            for ((name, path, log), host) in awks.iter().zip(&mut awk_hosts) {
                // busybox's awk cannot split at NULs, so it reads no
                // process's environment: the search finds no agent there
                // (as before this reading; README says so).
                if step == "searched" && *name == "busybox" {
                    continue;
                }
                let with_awk = |command: &str| local_sh(command).env("PATH", path);
                let before = runs(log);
                let by_awk = raw_answer(&server.tmux, host, &with_awk, &targets, &nonce, &memory);
                assert!(
                    runs(log) >= before + 2,
                    "{step}: {name}'s reading ran ({} runs)",
                    runs(log) - before
                );
                let differ = by_awk.lines().zip(by_sh.lines()).find(|(a, b)| a != b);
                assert_eq!(
                    by_awk, by_sh,
                    "{step}, {name}: first differing line {differ:?}"
                );
            }
            let by_awk = by_sh;
            assert!(
                by_awk.contains(&format!("BMB-{nonce}-LISTEND\n")),
                "{by_awk}"
            );
            assert!(by_awk.contains("-FG 1 0 a) (b) c\n"), "{by_awk}");
            assert!(by_awk.contains("-FG 4 1 "), "busy: {by_awk}");
            assert!(by_awk.contains("-FG 5 0 "), "reader: {by_awk}");
            let session_line = format!("-S 2 {agent_root} ");
            match step {
                "searched" | "known" => {
                    assert!(by_awk.contains(&session_line), "{step}: {by_awk}");
                    assert!(
                        by_awk.contains("{\"status\":\"busy\"}\n{\"x\":1}\n"),
                        "{by_awk}"
                    );
                }
                _ => assert!(
                    by_awk.contains("-N 2\n") && !by_awk.contains(&session_line),
                    "{step}: {by_awk}"
                ),
            }
            if step == "searched" {
                // What this side learns from the answer, as a cycle would.
                let read = as_remote(&server.tmux).read_host_via(
                    &mut HostSession::default(),
                    &targets,
                    &crate::tmux::fresh_nonce(),
                    true,
                    &mut memory,
                    &[],
                    Duration::from_secs(5),
                    &with_mawk,
                );
                assert!(read.captures.is_ok());
                assert_eq!(memory.get(agent_root).map(|a| a.pid), Some(agent_root));
            }
        }
        for host in &mut awk_hosts {
            host.close();
        }
        sh_host.close();
    }

    #[test]
    fn a_failed_awk_reading_of_the_processes_is_read_again_by_the_builtins() {
        let dir = tempfile::tempdir().unwrap();
        let server = private(&[("one", "echo one-ready; exec sleep 600")]);
        wait_drawn(&server.tmux, "one", "one-ready");
        let log = dir.path().join("awk.log");
        let path = logging_awk(dir.path(), &log, true, "/usr/bin/mawk");
        let failing = |command: &str| local_sh(command).env("PATH", &path);
        let targets = [target("one", None)];
        let mut host = HostSession::default();
        let nonce = crate::tmux::fresh_nonce();
        let answer = raw_answer(
            &server.tmux,
            &mut host,
            &failing,
            &targets,
            &nonce,
            &AgentMemory::default(),
        );
        assert!(
            answer.contains(&format!("BMB-{nonce}-P-AGAIN\n")),
            "{answer}"
        );
        assert_eq!(
            answer.matches(&format!("BMB-{nonce}-P-R 0 ")).count(),
            2,
            "{answer}"
        );
        host.close();
        let read = as_remote(&server.tmux).read_host_via(
            &mut HostSession::default(),
            &targets,
            &crate::tmux::fresh_nonce(),
            true,
            &mut AgentMemory::default(),
            &[],
            Duration::from_secs(5),
            &failing,
        );
        let (_, processes) = read.processes[0].as_ref().expect("read");
        assert_eq!(
            processes.foreground.as_ref().map(|f| f.comm.as_str()),
            Some("sleep")
        );
        assert!(
            matches!(processes.session, crate::agent::claude::SessionSearch::None),
            "{:?}",
            processes.session
        );
    }

    fn target(session: &str, known: Option<KnownPane>) -> (String, Option<KnownPane>) {
        (session.to_string(), known)
    }

    #[test]
    fn one_script_lists_captures_and_reads_the_processes_of_the_panes_it_chose() {
        let server = private(&[
            ("one", "echo this-is-one; exec sleep 600"),
            ("two", "echo this-is-two; exec sleep 600"),
        ]);
        let deadline = Instant::now() + Duration::from_secs(20);
        let drawn = |name: &str| {
            let shown = server
                .tmux
                .capture_sessions(&[name.to_string()], "x")
                .unwrap();
            shown[0].as_ref().is_ok_and(|c| c.text.contains("this-is-"))
        };
        while !(drawn("one") && drawn("two")) {
            assert!(Instant::now() < deadline, "the panes never drew");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Two's pane is remembered; a pane id that is gone falls back to `=one:`.
        let two = server.tmux.list_panes(Some("=two:")).unwrap().remove(0);
        let targets = [
            target(
                "one",
                Some(KnownPane {
                    id: "%99".into(),
                    pid: None,
                }),
            ),
            target(
                "two",
                Some(KnownPane {
                    id: two.id.clone(),
                    pid: Some(two.pid),
                }),
            ),
            target("gone", None),
        ];
        let nonce = crate::tmux::fresh_nonce();
        let read = read(&server.tmux, &targets, &nonce);
        let captures = read.captures.expect("the host answered");
        let one = captures[0].as_ref().expect("one captured");
        assert!(one.text.contains("this-is-one"), "{one:?}");
        let two_read = captures[1].as_ref().expect("two captured");
        assert!(two_read.text.contains("this-is-two"), "{two_read:?}");
        assert_eq!(two_read.pane_id.as_deref(), Some(two.id.as_str()));
        assert!(
            matches!(&captures[2], Err(TmuxError::NoSession { session, host: Some(h) }) if session == "gone" && h == "box"),
            "{:?}",
            captures[2]
        );
        for (index, capture) in captures.iter().take(2).enumerate() {
            let (root, processes) = read.processes[index].as_ref().expect("read");
            let capture = capture.as_ref().unwrap();
            assert_eq!(
                *root, capture.pane_pid,
                "the witness read the pane captured"
            );
            let front = processes.foreground.as_ref().expect("a foreground");
            assert_eq!(front.comm, "sleep");
            assert!(
                matches!(processes.session, crate::agent::claude::SessionSearch::None),
                "{:?}",
                processes.session
            );
        }
        assert!(read.processes[2].is_none());
    }

    /// Waits (bounded) until `pane` of `tmux` shows `text`.
    fn wait_drawn(tmux: &Tmux, session: &str, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let shown = tmux.capture_sessions(&[session.to_string()], "x").unwrap();
            if shown[0].as_ref().is_ok_and(|c| c.text.contains(text)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{session} never drew {text}: {shown:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn one_session_answers_every_cycle_and_one_that_was_killed_is_opened_again() {
        let server = private(&[("one", "echo this-is-one; exec sleep 600")]);
        wait_drawn(&server.tmux, "one", "this-is-one");
        let targets = [target("one", None)];
        let mut session = HostSession::default();
        let before = crate::run::spawned_by_this_thread();
        for _ in 0..3 {
            let nonce = crate::tmux::fresh_nonce();
            let read = read_over(&mut session, &server.tmux, &targets, &nonce, &[]);
            let captures = read.captures.expect("answered");
            assert!(
                captures[0]
                    .as_ref()
                    .is_ok_and(|c| c.text.contains("this-is-one"))
            );
        }
        assert_eq!(
            crate::run::spawned_by_this_thread() - before,
            1,
            "one process for three cycles"
        );
        assert_eq!(session.opened, 1);
        let pid = session.pid().expect("open");
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while crate::os::pid::Pid::new(pid).is_some_and(crate::os::process::is_alive) {
            assert!(Instant::now() < deadline, "the session did not die");
            std::thread::sleep(Duration::from_millis(10));
        }
        let nonce = crate::tmux::fresh_nonce();
        let read = read_over(&mut session, &server.tmux, &targets, &nonce, &[]);
        assert!(read.captures.is_ok_and(|c| c[0].is_ok()), "read again");
        assert_eq!(session.opened, 2, "opened again");
        session.close();
    }

    /// A pane that prints each line written to `fifo` over its current
    /// line (`\r`, no newline): lines of one length leave its cursor, and
    /// so every part of its key but `window_activity`, as they were.
    fn overwriting_pane(fifo: &std::path::Path) -> String {
        format!(
            "mkfifo '{0}' && exec 3<>'{0}' && printf 'ready-000' && while IFS= read -r l <&3; do printf '\\r%s' \"$l\"; done",
            fifo.display()
        )
    }

    fn say_to(fifo: &std::path::Path, line: &str) {
        use std::io::Write as _;
        let mut pipe = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
        writeln!(pipe, "{line}").unwrap();
    }

    /// `tmux -S SOCKET ARGS`'s output, on the private server of `tmux`.
    fn on_server(tmux: &Tmux, args: &[&str]) -> String {
        let Server::Path(socket) = &tmux.server else {
            unreachable!()
        };
        let shown = crate::run::run(
            &Invocation::new("tmux")
                .args(["-S", socket.as_str()])
                .args(args),
            &crate::run::Limits::default(),
        );
        shown
            .success_stdout()
            .unwrap_or_else(|| panic!("{args:?}: {shown:?}"))
            .text()
    }

    /// The pane's `#{window_activity}` (epoch seconds).
    fn activity(tmux: &Tmux, session: &str) -> i64 {
        let target = format!("={session}:");
        on_server(
            tmux,
            &["display-message", "-p", "-t", &target, "#{window_activity}"],
        )
        .trim()
        .parse()
        .unwrap()
    }

    fn epoch_now() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    /// Waits (bounded) until the clock's whole second is past the pane's
    /// last output: a capture then is one no later output can hide from.
    fn wait_past_activity(tmux: &Tmux, session: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while epoch_now() <= activity(tmux, session) {
            assert!(Instant::now() < deadline, "the clock stood still");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn known_pane(tmux: &Tmux, session: &str) -> KnownPane {
        let pane = tmux
            .list_panes(Some(&format!("={session}:")))
            .unwrap()
            .remove(0);
        KnownPane {
            id: pane.id,
            pid: Some(pane.pid),
        }
    }

    /// One cycle over `session`: the target's capture and whether its text was reused.
    fn cycle(
        session: &mut HostSession,
        tmux: &Tmux,
        targets: &[(String, Option<KnownPane>)],
    ) -> (PaneCapture, bool) {
        cycle_over(session, tmux, targets, &local_sh)
    }

    /// [`cycle`] over the session `open` starts.
    fn cycle_over(
        session: &mut HostSession,
        tmux: &Tmux,
        targets: &[(String, Option<KnownPane>)],
        open: &dyn Fn(&str) -> Invocation,
    ) -> (PaneCapture, bool) {
        let nonce = crate::tmux::fresh_nonce();
        let read = as_remote(tmux).read_host_via(
            session,
            targets,
            &nonce,
            true,
            &mut AgentMemory::default(),
            &[],
            Duration::from_secs(5),
            open,
        );
        let reused = read.reused[0];
        let capture = read
            .captures
            .expect("answered")
            .remove(0)
            .expect("captured");
        (capture, reused)
    }

    /// An attach moves the session's activity as a key does (even a
    /// read-only client's): both readings, this machine's chain and the
    /// host's session, with awk and with the builtins, carry the session's
    /// last attach beside it, equal to it after the attach and older than
    /// it after a key, so the watcher can tell a person who looks from one
    /// who types (issue 21, item 8).
    #[test]
    fn an_attach_reads_as_the_sessions_last_attach_and_a_key_after_it_as_newer() {
        let server = private(&[("agent", "echo ready; exec sleep 600")]);
        wait_drawn(&server.tmux, "agent", "ready");
        let Server::Path(inner) = &server.tmux.server else {
            unreachable!("a private server has a path")
        };
        let targets = [target("agent", None)];
        let mut sessions = [HostSession::default(), HostSession::default()];
        let mut readings = |what: &str| -> Vec<(Option<i64>, Option<i64>)> {
            let local = server
                .tmux
                .capture_sessions(&["agent".to_string()], &crate::tmux::fresh_nonce())
                .unwrap()
                .remove(0)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let [awk, builtins] = &mut sessions;
            let remote = [
                (awk, &local_sh as &dyn Fn(&str) -> Invocation),
                (builtins, &without_awk),
            ]
            .into_iter()
            .map(|(session, open)| cycle_over(session, &server.tmux, &targets, open).0);
            std::iter::once(local)
                .chain(remote)
                .map(|c| (c.activity, c.last_attached))
                .collect()
        };
        // Never attached: the session's arrival is its creation, which its
        // activity still is (no key since).
        for (activity, attached) in readings("never attached") {
            assert!(
                activity.is_some() && attached == activity,
                "{activity:?} {attached:?}"
            );
        }
        let attach = format!("env -u TMUX tmux -S '{inner}' attach -r -t =agent");
        let outer = private(&[("look", &attach)]);
        let deadline = Instant::now() + Duration::from_secs(20);
        let at = loop {
            let read = readings("the attach");
            if read.iter().all(|(a, b)| a.is_some() && a == b) {
                break read[0].0.unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "the attach never read as one: {read:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        // A key in the attach's own second would read as the attach.
        while epoch_now() <= at {
            assert!(Instant::now() < deadline, "the clock stood still");
            std::thread::sleep(Duration::from_millis(20));
        }
        on_server(&outer.tmux, &["send-keys", "-t", "=look:", "x"]);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let read = readings("the key");
            if read.iter().all(|&(a, b)| a > b && b == Some(at)) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the key never read as newer: {read:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Over ssh too, with awk and with the builtins: a pane a grouped
    /// session shares is picked by its id (the listing names it under each
    /// session), and a person's key through the twin is the key time read,
    /// as the nudge's own check reads it (found by review: the pick kept the
    /// twin's row, read `=agent:`, and every nudge's Enter was withheld
    /// while keys through the twin went unseen).
    #[test]
    fn a_remote_pane_shared_with_a_grouped_session_is_read_by_its_id_with_the_twins_keys() {
        let server = private(&[("agent", "echo ready; exec sleep 600")]);
        wait_drawn(&server.tmux, "agent", "ready");
        let Server::Path(inner) = &server.tmux.server else {
            unreachable!("a private server has a path")
        };
        on_server(
            &server.tmux,
            &["new-session", "-d", "-t", "=agent", "-s", "view"],
        );
        let targets = [target("agent", Some(known_pane(&server.tmux, "agent")))];
        let mut sessions = [HostSession::default(), HostSession::default()];
        let mut readings = || -> Vec<PaneCapture> {
            let [awk, builtins] = &mut sessions;
            [
                (awk, &local_sh as &dyn Fn(&str) -> Invocation),
                (builtins, &without_awk),
            ]
            .into_iter()
            .map(|(session, open)| cycle_over(session, &server.tmux, &targets, open).0)
            .collect()
        };
        let outer = private(&[(
            "person",
            &format!("env -u TMUX tmux -S '{inner}' attach -t =view"),
        )]);
        let deadline = Instant::now() + Duration::from_secs(20);
        let attached = loop {
            let read = readings();
            if let Some(at) = read[0].last_attached.filter(|_| {
                read.iter()
                    .all(|c| c.activity.is_some() && c.activity == c.last_attached)
            }) {
                break at;
            }
            assert!(
                Instant::now() < deadline,
                "the attach was never read: {read:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        while epoch_now() <= attached {
            assert!(Instant::now() < deadline, "the clock stood still");
            std::thread::sleep(Duration::from_millis(20));
        }
        on_server(&outer.tmux, &["send-keys", "-t", "=person:", "x"]);
        loop {
            let read = readings();
            if read
                .iter()
                .all(|c| c.activity.is_some_and(|at| at > attached))
            {
                assert!(read.iter().all(|c| c.text.contains("ready")), "{read:?}");
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the twin's key was never read: {read:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A request for another server than the one the host's loop was
    /// started for (a reload changed `[hosts.X]`) closes the loop and opens
    /// one for it: the old loop read the old server while the nudges went
    /// to the new one, into another session (found by review).
    #[test]
    fn a_request_for_another_server_opens_a_session_for_it() {
        let a = private(&[("agent", "echo from-a; exec sleep 600")]);
        let b = private(&[
            ("other", "echo other-b; exec sleep 600"),
            ("agent", "echo from-b; exec sleep 600"),
        ]);
        wait_drawn(&a.tmux, "agent", "from-a");
        wait_drawn(&b.tmux, "agent", "from-b");
        let targets = [target("agent", None)];
        let mut session = HostSession::default();
        let (first, _) = cycle(&mut session, &a.tmux, &targets);
        assert!(first.text.contains("from-a"), "{first:?}");
        let (again, _) = cycle(&mut session, &a.tmux, &targets);
        assert!(again.text.contains("from-a") && session.opened == 1);
        let (moved, _) = cycle(&mut session, &b.tmux, &targets);
        assert!(moved.text.contains("from-b"), "{moved:?}");
        assert_eq!(session.opened, 2);
        session.close();
    }

    #[test]
    fn a_still_pane_is_captured_once_and_read_again_after_output_a_resize_or_a_new_session() {
        let scratch = tempfile::tempdir().unwrap();
        let fifo = scratch.path().join("say");
        let server = private(&[("one", &overwriting_pane(&fifo))]);
        wait_drawn(&server.tmux, "one", "ready-000");
        let targets = [target("one", Some(known_pane(&server.tmux, "one")))];
        // With awk and with the builtins alone: a kept pane's display line
        // is made from the listing, and must read as tmux's own.
        type Open<'o> = &'o dyn Fn(&str) -> Invocation;
        let ways: [(Open, &str, u16); 2] = [(&local_sh, "awk", 60), (&without_awk, "builtins", 70)];
        let mut small = None;
        for (open, way, width) in ways {
            let cycle =
                |session: &mut HostSession| cycle_over(session, &server.tmux, &targets, open);
            wait_past_activity(&server.tmux, "one");
            let mut session = HostSession::default();
            let (first, reused) = cycle(&mut session);
            assert!(!reused && first.text.contains("-"), "{way}: {first:?}");
            for round in 0..3 {
                let (again, reused) = cycle(&mut session);
                assert!(
                    reused,
                    "{way}, round {round}: a still pane was captured again"
                );
                assert_eq!(again, first, "{way}, round {round}: the same capture");
            }
            // Output: captured again, and its text is the new one.
            let said = format!("moved-{width}");
            say_to(&fifo, &said);
            wait_drawn(&server.tmux, "one", &said);
            let (moved, reused) = cycle(&mut session);
            assert!(!reused && moved.text.contains(&said), "{way}: {moved:?}");
            wait_past_activity(&server.tmux, "one");
            cycle(&mut session);
            let (_, reused) = cycle(&mut session);
            assert!(reused, "{way}: still again");
            // A resize, which prints nothing: captured again, at its new size.
            on_server(
                &server.tmux,
                &[
                    "resize-window",
                    "-t",
                    "=one:",
                    "-x",
                    &width.to_string(),
                    "-y",
                    "20",
                ],
            );
            let (resized, reused) = cycle(&mut session);
            assert!(!reused, "{way}: a resized pane was not captured again");
            assert_eq!(resized.text.lines().count(), 20, "{way}: {resized:?}");
            wait_past_activity(&server.tmux, "one");
            cycle(&mut session);
            let (_, reused) = cycle(&mut session);
            assert!(reused, "{way}: still at its new size");
            session.close();
            small = Some(resized);
        }
        let small = small.expect("read");
        let mut session = HostSession::default();
        cycle(&mut session, &server.tmux, &targets);
        // A session opened again keeps nothing of the last one.
        session.close();
        let (fresh, reused) = cycle(&mut session, &server.tmux, &targets);
        assert!(!reused, "a new session reused an old capture");
        assert_eq!(fresh.text, small.text);
        assert_eq!(session.opened, 2);
        session.close();
        // Without bash there is no fork-free clock: every cycle captures.
        let mut plain = HostSession::default();
        for round in 0..3 {
            let nonce = crate::tmux::fresh_nonce();
            let read = as_remote(&server.tmux).read_host_via(
                &mut plain,
                &targets,
                &nonce,
                true,
                &mut AgentMemory::default(),
                &[],
                Duration::from_secs(5),
                &sh_only,
            );
            assert_eq!(read.reused, [false], "round {round} under sh");
            let captures = read.captures.expect("answered");
            assert_eq!(captures[0].as_ref().map(|c| &c.text), Ok(&small.text));
        }
        plain.close();
    }

    /// Output in the very second of a capture (after it) does not move the
    /// pane's whole-second `window_activity`: the next cycle reads it all
    /// the same.
    #[test]
    fn output_in_the_second_of_a_capture_after_it_is_read_at_the_next_cycle() {
        let scratch = tempfile::tempdir().unwrap();
        let fifo = scratch.path().join("say");
        let server = private(&[("one", &overwriting_pane(&fifo))]);
        wait_drawn(&server.tmux, "one", "ready-000");
        let targets = [target("one", Some(known_pane(&server.tmux, "one")))];
        let mut session = HostSession::default();
        let mut driven = 0;
        for attempt in 0..40 {
            // Start at a fresh second: both outputs and the capture between
            // them fall in it, unless the machine is too slow this time.
            let start = epoch_now();
            while epoch_now() == start {
                std::thread::sleep(Duration::from_millis(2));
            }
            let second = epoch_now();
            let before = format!("befor-{attempt:03}");
            say_to(&fifo, &before);
            wait_drawn(&server.tmux, "one", &before);
            let (shown, _) = cycle(&mut session, &server.tmux, &targets);
            assert!(shown.text.contains(&before), "{shown:?}");
            let after = format!("after-{attempt:03}");
            say_to(&fifo, &after);
            wait_drawn(&server.tmux, "one", &after);
            let clock = session.screens.values().map(|s| s.clock).max();
            let same_second = clock == Some(second)
                && activity(&server.tmux, "one") == second
                && epoch_now() == second;
            let (next, _) = cycle(&mut session, &server.tmux, &targets);
            assert!(next.text.contains(&after), "attempt {attempt}: {next:?}");
            if same_second {
                driven += 1;
                if driven == 3 {
                    break;
                }
            }
        }
        assert_eq!(driven, 3, "output never fell in the second of its capture");
        session.close();
    }

    #[test]
    fn probes_ride_in_the_request_each_under_its_deadline() {
        let server = private(&[("one", "echo this-is-one; exec sleep 600")]);
        let targets = [target("one", None)];
        let probes = [
            RemoteProbe {
                target: "box:one".into(),
                command: "printf '%s\\n' \"$BMB_TARGET\" | wc -c".into(),
            },
            RemoteProbe {
                target: "box:one".into(),
                command: "exec sleep 600".into(),
            },
            RemoteProbe {
                target: "it's".into(),
                command: "echo \"$BMB_TARGET\"; exit 3".into(),
            },
        ];
        let mut session = HostSession::default();
        let read = probe_over(
            &mut session,
            &server.tmux,
            &targets,
            &probes,
            Duration::from_secs(1),
        );
        assert_eq!(read.probes.len(), 3);
        assert_eq!(
            read.probes[0]
                .success_stdout()
                .map(|o| o.text().trim().to_string()),
            Some("8".to_string()),
            "{:?}",
            read.probes[0]
        );
        assert!(
            matches!(read.probes[1], Outcome::TimedOut { .. }),
            "{:?}",
            read.probes[1]
        );
        assert!(
            matches!(&read.probes[2], Outcome::Exited { code: Some(3), stdout, .. } if stdout.text() == "it's\n"),
            "{:?}",
            read.probes[2]
        );
        assert!(read.captures.is_ok());
        // The next request over the same session: only its own probe's answer.
        let again = probe_over(
            &mut session,
            &server.tmux,
            &targets,
            &probes[2..],
            Duration::from_secs(1),
        );
        assert_eq!(session.opened, 1, "the same session");
        assert_eq!(again.probes.len(), 1);
        assert!(
            matches!(&again.probes[0], Outcome::Exited { code: Some(3), .. }),
            "{:?}",
            again.probes[0]
        );
        assert!(again.captures.is_ok_and(|c| c[0].is_ok()));
        session.close();
    }

    /// As on the monitor's machine, a host runs at most [`PROBES_AT_ONCE`]
    /// probes at once: each marks itself running while it runs and says how
    /// many were marked, which never exceeds the bound; every one answers.
    #[test]
    fn a_hosts_probes_run_at_most_eight_at_once_and_all_answer() {
        let server = private(&[("one", "echo this-is-one; exec sleep 600")]);
        let targets = [target("one", None)];
        let scratch = tempfile::tempdir().unwrap();
        let running = scratch.path().join("running");
        std::fs::create_dir(&running).unwrap();
        let command = format!(
            "d='{}'; : > \"$d/$BMB_TARGET\"; ls \"$d\" | wc -l; sleep 0.3; rm \"$d/$BMB_TARGET\"",
            running.display()
        );
        let probes: Vec<RemoteProbe> = (0..20)
            .map(|i| RemoteProbe {
                target: format!("t{i}"),
                command: command.clone(),
            })
            .collect();
        let mut session = HostSession::default();
        let read = probe_over(
            &mut session,
            &server.tmux,
            &targets,
            &probes,
            Duration::from_secs(20),
        );
        session.close();
        assert_eq!(read.probes.len(), 20);
        let counts: Vec<usize> = read
            .probes
            .iter()
            .map(|p| {
                p.success_stdout()
                    .and_then(|o| o.text().trim().parse().ok())
                    .unwrap_or_else(|| panic!("{p:?}"))
            })
            .collect();
        assert!(
            counts.iter().all(|&n| (1..=PROBES_AT_ONCE).contains(&n)),
            "{counts:?}"
        );
        assert!(read.captures.is_ok_and(|c| c[0].is_ok()));
    }

    #[test]
    fn a_remote_probes_command_is_in_no_argv_on_the_host() {
        let server = private(&[("one", "echo this-is-one; exec sleep 600")]);
        let targets = [target("one", None)];
        // Prints 1 when its own shell's argv holds its text (the mark).
        let probes = [RemoteProbe {
            target: "box:one".into(),
            command: "case \"$(tr '\\0' ' ' < /proc/$$/cmdline)\" in *ARGV-MARK*) echo 1;; *) echo 0;; esac; [ -z \"$BMB_SH_SCRIPT\" ] || echo 2".into(),
        }];
        let nonce = crate::tmux::fresh_nonce();
        let mut session = HostSession::default();
        let read = read_over(&mut session, &server.tmux, &targets, &nonce, &probes);
        assert_eq!(
            read.probes[0].success_stdout().map(|o| o.text()),
            Some("0\n".to_string()),
            "{:?}",
            read.probes[0]
        );
        session.close();
    }

    /// Live tmux clients of `socket` other than its server.
    fn clients_of(socket: &str, server: u32) -> usize {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
            .filter(|&pid| pid != server)
            .filter(|&pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    let c = String::from_utf8_lossy(&c).replace('\0', " ");
                    c.contains(socket) && c.contains("list-panes") && !c.starts_with("timeout")
                })
            })
            .count()
    }

    #[test]
    fn a_stopped_tmux_server_leaves_no_stuck_client_behind_a_cycle() {
        let server = private(&[("one", "echo this-is-one; exec sleep 600")]);
        wait_drawn(&server.tmux, "one", "this-is-one");
        let Server::Path(socket) = &server.tmux.server else {
            unreachable!()
        };
        let socket = socket.clone();
        let shown = crate::run::run(
            &Invocation::new("tmux").args(["-S", &socket, "display-message", "-p", "#{pid}"]),
            &crate::run::Limits::default(),
        );
        let pid: u32 = shown
            .success_stdout()
            .expect("the server's pid")
            .text()
            .trim()
            .parse()
            .unwrap();
        let tmux = Tmux {
            timeout: Duration::from_secs(1),
            ..server.tmux.clone()
        };
        let _stopped = crate::tmux::tests::Stopped::new(pid);
        let mut session = HostSession::default();
        let targets = [target("one", None)];
        for _ in 0..3 {
            let nonce = crate::tmux::fresh_nonce();
            let read = read_over(&mut session, &tmux, &targets, &nonce, &[]);
            assert!(read.captures.is_err(), "{:?}", read.captures);
            // The host's deadline ended its tmux before it answered.
            assert_eq!(
                clients_of(&socket, pid),
                0,
                "a stuck tmux survived its cycle"
            );
        }
        // Each answered in time, and its session then ended (that server may
        // still write to its channel when it wakes).
        assert_eq!(session.opened, 3);
        session.close();
    }

    #[test]
    fn what_a_remote_startup_file_prints_first_is_skipped() {
        let server = private(&[("one", "echo this-is-one; exec sleep 600")]);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let shown = server
                .tmux
                .capture_sessions(&["one".to_string()], "x")
                .unwrap();
            if shown[0]
                .as_ref()
                .is_ok_and(|c| c.text.contains("this-is-one"))
            {
                break;
            }
            assert!(Instant::now() < deadline, "the pane never drew");
            std::thread::sleep(Duration::from_millis(20));
        }
        let targets = [target("one", None)];
        let nonce = crate::tmux::fresh_nonce();
        let chatty = |command: &str| {
            local_sh(&format!(
                "echo 'Welcome to box'; echo 'no newline at the end' | tr -d '\\n'; echo; {command}"
            ))
        };
        let read = as_remote(&server.tmux).read_host_via(
            &mut HostSession::default(),
            &targets,
            &nonce,
            true,
            &mut AgentMemory::default(),
            &[],
            Duration::from_secs(5),
            &chatty,
        );
        let captures = read.captures.expect("the host answered");
        assert!(
            captures[0]
                .as_ref()
                .is_ok_and(|c| c.text.contains("this-is-one")),
            "{captures:?}"
        );
    }

    #[test]
    fn a_pane_that_prints_the_end_marker_voids_the_hosts_captures() {
        let nonce = crate::tmux::fresh_nonce();
        let forger = format!("printf '\\nBMB-{nonce}-END 0\\n'; exec sleep 600");
        let server = private(&[("honest", "echo fine; exec sleep 600"), ("forger", &forger)]);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let shown = server
                .tmux
                .capture_sessions(&["forger".to_string()], "x")
                .unwrap();
            if shown[0].as_ref().is_ok_and(|c| c.text.contains("-END 0")) {
                break;
            }
            assert!(Instant::now() < deadline, "the forger never drew");
            std::thread::sleep(Duration::from_millis(20));
        }
        let targets = [target("honest", None), target("forger", None)];
        let captures = read(&server.tmux, &targets, &nonce).captures.unwrap();
        for capture in &captures {
            assert!(
                matches!(capture, Err(TmuxError::MarkerRepeated { count: 2 })),
                "{capture:?}"
            );
        }
    }

    #[test]
    fn a_server_that_is_not_running_fails_every_target_alike_and_a_missing_tmux_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("none").to_string_lossy().into_owned();
        let tmux = Tmux::new(Server::Path(socket));
        // One outage for the host (one page), not a missing session per
        // target, and no word on which sessions exist (a pattern's are kept).
        let targets = [target("s", None), target("t", None)];
        let nonce = crate::tmux::fresh_nonce();
        let read_none = read(&tmux, &targets, &nonce);
        assert!(
            matches!(&read_none.captures, Err(TmuxError::NoServer { .. })),
            "{:?}",
            read_none.captures
        );
        assert_eq!(read_none.sessions, None);
        let missing = Tmux {
            program: "/nonexistent/tmux".to_string(),
            ..tmux
        };
        let failed = read(&missing, &targets, &nonce);
        assert!(
            matches!(&failed.captures, Err(TmuxError::Failed(_))),
            "{:?}",
            failed.captures
        );
    }
}
