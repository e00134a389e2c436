//! The capture chain: many sessions' panes read in two invocations (one
//! `list-panes -a`, then one chained `display-message`/`capture-pane`
//! command per batch), each capture opened by a marker line carrying an
//! unpredictable nonce, and the output split back into per-pane captures.

use super::client::Tmux;
use super::error::TmuxError;
use crate::run::{Limits, Outcome, run};

/// One captured pane: its text, its first process's pid, and the name of
/// the process in its terminal's foreground, as tmux reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneCapture {
    /// The pane's text with its ink (`capture-pane -p -e`).
    pub text: String,
    /// `#{pane_id}` (`%N`): the pane that was read, so a key sent after it
    /// goes to that pane even if another one became active meanwhile.
    pub pane_id: Option<String>,
    /// `#{pane_pid}`: the pane's first process.
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
    /// `#{session_last_attached}` (epoch seconds), read with the activity:
    /// when a client last attached to the session, or when it was created
    /// if that is later (a grouped twin made detached). tmux moves the
    /// session's activity then too, so an activity equal to it is a person
    /// arriving (or a viewer attaching, or a twin made), not a key pressed.
    pub last_attached: Option<i64>,
    /// `#{window_active}` and `#{pane_active}`: the pane a client attached to
    /// the session types into. Keys pressed while another pane has the focus
    /// went there.
    pub focused: bool,
}

/// A pane a caller has seen before: its id (`%N`) and its first process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPane {
    /// `%N`.
    pub id: String,
    /// Its first process when seen; `None`: any.
    pub pid: Option<u32>,
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

/// A chain's arguments never pass this many bytes: tmux sends a command's
/// arguments in one message of at most 16 KiB, its header included, and
/// refuses a longer one ("command too long").
pub(crate) const CHAIN_MAX_BYTES: usize = 15 * 1024;
/// What one pane adds to a chain besides its target (twice, each with its
/// NUL): the commands, the marker and its format, each with its NUL; no
/// less than the real bytes at a five-digit index (a test checks).
pub(crate) const CHAIN_ENTRY_BYTES: usize = 280;

/// The capture chain's output bound: a base, plus this much per pane.
pub(crate) const CAPTURE_BASE_BYTES: usize = 8 << 20;
pub(crate) const CAPTURE_PER_PANE_BYTES: usize = 1 << 20;

impl Tmux {
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
            self.capture_chain(targets, &panes, &wanted[batch], nonce, &mut results);
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
        listed: &[(String, KnownPane)],
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
            args.extend(chain_entry(target, marker));
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
        read_chain(targets, wanted, &markers, &stdout, failure, results, listed);
    }

    /// The server's sessions from its pane listing, each with the session
    /// it is a twin of ([`ListedSession::shares_with`]). A server that is
    /// not running has none.
    pub fn listed_sessions(&self) -> Result<Vec<ListedSession>, TmuxError> {
        match self.list_all_panes() {
            Ok(panes) => Ok(listed_sessions(&panes)),
            Err(TmuxError::NoServer { .. }) => Ok(Vec::new()),
            Err(error) => Err(error),
        }
    }

    /// Every pane of the server: (session name, the pane). A server that is
    /// not running is [`TmuxError::NoServer`] for every target alike (one
    /// outage, not a missing session each), and says nothing of which
    /// sessions exist.
    fn list_all_panes(&self) -> Result<Vec<(String, KnownPane)>, TmuxError> {
        let inv = self.command(&["list-panes", "-a", "-F", LIST_FORMAT]);
        self.call(inv).map(|out| parse_list(&out))
    }
}

/// `list-panes -a`: each pane's id, first process, whether its window is
/// its session's current one and it that window's active pane (`11`: what
/// `=session:` names), and its session.
pub(crate) const LIST_FORMAT: &str =
    "#{pane_id} #{pane_pid} #{window_active}#{pane_active} #{session_name}";

/// Per target its capture, and the sessions the listing named.
pub type CapturesAndSessions = (Vec<Result<PaneCapture, TmuxError>>, Vec<ListedSession>);

/// A session a pane listing named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSession {
    /// `#{session_name}`.
    pub name: String,
    /// A session listed before it that holds every one of its panes (it is
    /// that session's twin in a session group, `new-session -t`): watching
    /// both would read, and act on, the same panes twice. `None`: it has a
    /// pane of its own.
    pub shares_with: Option<String>,
}

/// The sessions of a pane listing, once each, in the listing's order.
/// Linear in panes (each pane's sessions looked up once), as a cycle's
/// listing of a host of hundreds of panes is read every cycle.
pub(crate) fn listed_sessions(panes: &[(String, KnownPane)]) -> Vec<ListedSession> {
    use std::collections::HashMap;
    // Per pane id, the sessions that hold it; per session, its panes; both
    // in the listing's order.
    let mut holders: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut order: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for (session, pane) in panes {
        holders.entry(pane.id.as_str()).or_default().push(session);
        let index = *at.entry(session.as_str()).or_insert_with(|| {
            order.push((session, Vec::new()));
            order.len() - 1
        });
        order[index].1.push(pane.id.as_str());
    }
    order
        .iter()
        .enumerate()
        .map(|(index, (session, own))| {
            // A twin holds the first pane too: only its holders are asked.
            let shares_with = own.first().and_then(|first| {
                holders[first]
                    .iter()
                    .filter(|&&other| at[other] < index)
                    .find(|&&other| own.iter().all(|id| holders[id].contains(&other)))
            });
            ListedSession {
                name: session.to_string(),
                shares_with: shares_with.map(|s| s.to_string()),
            }
        })
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
/// length, twice) that each chain holds, each chain within
/// [`CHAIN_MAX_BYTES`] (about 55 short names to a chain).
pub(crate) fn chain_batches(
    target_lengths: impl Iterator<Item = usize>,
) -> Vec<std::ops::Range<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    let mut end = 0;
    for length in target_lengths {
        let entry = 2 * (length + 1) + CHAIN_ENTRY_BYTES;
        if end > start && bytes + entry > CHAIN_MAX_BYTES {
            batches.push(start..end);
            start = end;
            bytes = 0;
        }
        bytes += entry;
        end += 1;
    }
    if end > start {
        batches.push(start..end);
    }
    batches
}

/// One pane's commands in a chain: its marker line, then its text.
/// `-e`: the text with its ink, which tells a CLI's faint placeholder from
/// a person's draft in the box.
pub(crate) fn chain_entry<'a>(target: &'a str, marker_format: &'a str) -> [&'a str; 11] {
    [
        "display-message",
        "-p",
        "-t",
        target,
        marker_format,
        ";",
        "capture-pane",
        "-p",
        "-e",
        "-t",
        target,
    ]
}

/// The marker line that opens pane `index`'s capture in a chain.
pub(crate) fn chain_marker(nonce: &str, index: usize) -> String {
    format!("BMB-{nonce}-{index}")
}

/// The `display-message` format printing the marker line. It also carries
/// the pane's first process (for the second witness), the session's last
/// key time, last attach and creation as one word (is someone typing, or
/// did someone only arrive? read in the same instant, so an attach between
/// two reads cannot pass for a key) and its foreground command (is the
/// agent still there?). `#S` and `#D` are tmux's short names of
/// `#{session_name}` and `#{pane_id}`: a chain holds about 50 entries.
pub(crate) fn marker_format(marker: &str) -> String {
    format!(
        "{marker} #S #D #{{pane_pid}} #{{session_activity}}:#{{session_last_attached}}:#{{session_created}} #{{pane_dead}}#{{pane_in_mode}}#{{synchronize-panes}}#{{window_active}}#{{pane_active}} #{{pane_current_command}}"
    )
}

/// A marker line's session name and the fields after it: `wanted` when the
/// line starts with it and a pane id (`%` and digits) follows, else the
/// text before the first pane id (the name of the session the pane moved to).
fn session_field<'l>(line: &'l str, wanted: &str) -> (&'l str, &'l str) {
    let pane_id_at = |after: &str| {
        after
            .strip_prefix('%')
            .is_some_and(|digits| digits.bytes().next().is_some_and(|b| b.is_ascii_digit()))
    };
    if let Some(after) = line.strip_prefix(wanted).and_then(|a| a.strip_prefix(' '))
        && pane_id_at(after)
    {
        return (&line[..wanted.len()], after);
    }
    for (at, _) in line.match_indices(" %") {
        if pane_id_at(&line[at + 1..]) {
            return (&line[..at], &line[at + 1..]);
        }
    }
    line.split_once(' ').unwrap_or((line, ""))
}

/// Splits one chain's output (`stdout`, and `failure` when the chain gave
/// no whole answer) into the captures of `wanted` (indices into `targets`),
/// written into `results`. `listed`: the cycle's pane listing, which tells
/// a pane that moved to another session from one that two sessions share.
pub(crate) fn read_chain(
    targets: &[(String, Option<KnownPane>)],
    wanted: &[(usize, String)],
    markers: &[String],
    stdout: &str,
    failure: Option<TmuxError>,
    results: &mut [Result<PaneCapture, TmuxError>],
    listed: &[(String, KnownPane)],
) {
    {
        let mut current: Option<(usize, PaneCapture)> = None;
        let mut finished = Vec::new();
        let mut seen = vec![0usize; markers.len()];
        // Panes that moved to another session between the listing and the capture.
        let mut moved: Vec<(usize, String)> = Vec::new();
        // A marker line is its marker, then nothing or a space: a marker
        // holds no space (`chain_marker`), so it is the line's first word,
        // looked up at once, where trying every marker on every line made
        // a host's answer cost lines x panes (4,000 x 100 at 100 panes).
        let by_word: Option<std::collections::HashMap<&str, usize>> =
            (!markers.iter().any(|m| m.contains(' '))).then(|| {
                let mut map = std::collections::HashMap::with_capacity(markers.len());
                for (at, m) in markers.iter().enumerate() {
                    map.entry(m.as_str()).or_insert(at);
                }
                map
            });
        for line in stdout.split_inclusive('\n') {
            let bare = line.trim_end_matches('\n');
            let marked = match &by_word {
                Some(map) => {
                    let word = bare.split_once(' ').map_or(bare, |(word, _)| word);
                    map.get(word).map(|&at| (at, &bare[word.len()..]))
                }
                None => markers.iter().enumerate().find_map(|(at, m)| {
                    let rest = bare.strip_prefix(m.as_str())?;
                    (rest.is_empty() || rest.starts_with(' ')).then_some((at, rest))
                }),
            };
            if let Some((at, rest)) = marked {
                seen[at] += 1;
                finished.extend(current.take());
                // A session's name may hold spaces: it is the target's when
                // the pane id follows it.
                let (session, after) = session_field(rest.trim_start(), &targets[wanted[at].0].0);
                let mut fields = after.splitn(5, ' ');
                let pane_id = fields
                    .next()
                    .filter(|id| id.starts_with('%') && id[1..].bytes().all(|b| b.is_ascii_digit()))
                    .map(str::to_string);
                // Read by its id, a pane whose window two sessions share (a
                // session group, a linked window) is named by either: tmux
                // picks the one last used. The listing had it under both.
                let shared = listed
                    .iter()
                    .any(|(s, pane)| s == session && pane_id.as_deref() == Some(pane.id.as_str()));
                if session != targets[wanted[at].0].0 && !shared {
                    moved.push((wanted[at].0, session.to_string()));
                }
                let pane_pid = fields.next().and_then(|pid| pid.parse().ok());
                // `ACTIVITY:LAST_ATTACHED:CREATED`, the second empty when never
                // attached: the session's arrival is the later of the two.
                let mut times = fields.next().unwrap_or("").split(':');
                let activity = times.next().and_then(|at| at.parse().ok());
                let attached: Option<i64> = times.next().and_then(|at| at.parse().ok());
                let created: Option<i64> = times.next().and_then(|at| at.parse().ok());
                let last_attached = attached.max(created);
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
                        last_attached,
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
