//! The session monitor (seed `omega-session-monitor.txt`) for one target, as
//! a state machine: an observation in (the captured pane, the work and
//! progress probes), a poll report and actions out. The loop that captures,
//! persists, sends and alerts lives in the CLI; everything decided lives here.
//!
//! WORKING: nothing. QUESTION: escalate once per distinct question, verbatim,
//! never a key. STALLED: nudge, the budget bound to progress. BLOCKED:
//! escalate once with the work number and the last transition, never nudge.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};

use classify::{BoxText, Context, Echo, FailureKind, Profiles, State, UsageLimit, Verdict, Work};
use jiff::{SignedDuration, Timestamp};

use crate::session::witness::{Witness, combine};
use ledger::session::{EscalationKind, SessionMemory, SessionRecord};

/// The seed's defaults.
pub const DEFAULT_BUDGET: u32 = 5;
pub const DEFAULT_NUDGE_TEXT: &str = "Please continue with the next step of your plan.";
/// An unchanged pane is re-decided at least this often, because the work
/// probe can change without the pane changing.
pub const RECLASSIFY_EVERY: u32 = 5;
/// Polls of an unchanged pane after which nothing inferred is believed: not
/// activity read from the transcript's shape, not the session file
/// overruling a stop (a turn that runs changes the screen).
pub const STILL_PANE_PATIENCE: u32 = 3;
/// After a usage limit's reset, how long before its one nudge: the CLI's
/// clock and this machine's may differ by seconds, and the CLI may continue
/// by itself (Claude Code 2.1.332 re-sent its turn 50 to 90 s after the
/// reset, checking every 30 s): then the pane is WORKING and nothing is done.
pub const RESET_MARGIN: SignedDuration = SignedDuration::from_secs(55);
/// Polls in a row whose capture failed after which the operator is told
/// (a server restarting, a host rebooting are a poll or two).
pub const CAPTURE_FAILURE_PATIENCE: u32 = 3;

#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub budget: u32,
    pub nudge_text: String,
    pub reclassify_every: u32,
    /// The profile this pane is always read with (a config file's `profile`
    /// for a CLI whose screen the markers cannot tell apart); `None`: the
    /// one whose markers the pane shows, as `auto` picks it. A name no
    /// profile in force has (a user's profile removed since) reads as `None`.
    pub profile: Option<String>,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            budget: DEFAULT_BUDGET,
            nudge_text: DEFAULT_NUDGE_TEXT.to_string(),
            reclassify_every: RECLASSIFY_EVERY,
            profile: None,
        }
    }
}

/// One poll's readings for one target.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    /// The pane, or why it could not be captured.
    pub capture: Result<&'a str, &'a str>,
    pub work: Work,
    /// The progress probe's reading; `None` when absent or unreadable.
    pub progress: Option<u64>,
    /// The agent's own account of its state, where one was found (`crate::session::witness`).
    pub witness: Option<&'a Witness>,
    /// What runs in the foreground of the pane's terminal, where it could be read.
    pub foreground: Option<&'a Foreground>,
    /// The agent CLI's version, where its own files give it (Claude Code's session file).
    pub cli_version: Option<&'a str>,
    /// The pane that was read (`%N`) and its first process, where tmux said.
    pub pane_id: Option<&'a str>,
    pub pane_pid: Option<u32>,
    /// When a key was last pressed in the pane's session (epoch seconds,
    /// tmux's `#{session_activity}`), where tmux said: a person at the
    /// keyboard since the last poll means no typing this poll.
    pub activity: Option<i64>,
    /// Whether the pane has the focus (the active pane of its session's
    /// current window: where an attached client's keys go); `None`: unknown,
    /// read as focused. A key counts unless the pane had no focus both at the
    /// last poll and now (a person working in another pane).
    pub focused: Option<bool>,
    /// The time of this poll, for what the screen says about time (a usage
    /// limit's reset). `None`: unknown, so no reset can be read.
    pub now: Option<Now<'a>>,
}

/// The time of a poll, and the time zone database as a port (the monitor
/// reads no file): a usage limit's `resets 4:20pm (Asia/Tbilisi)` needs both.
#[derive(Clone, Copy)]
pub struct Now<'a> {
    /// The local time, in this machine's zone (what a CLI prints without a zone name).
    pub local: &'a jiff::ZonedDateTime,
    /// A time zone by its tz database name (`Asia/Tbilisi`), if there is one.
    pub zones: &'a dyn Fn(&str) -> Option<jiff::tz::TimeZone>,
}

impl fmt::Debug for Now<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Now")
            .field("local", self.local)
            .finish_non_exhaustive()
    }
}

/// Why a stop that would be nudged is not typed into this poll (and is not
/// escalated for it): someone may be at the keyboard, or the screen has not
/// held still for a whole interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A new watcher has not seen the screen hold still yet.
    NewWatcher,
    /// The screen changed since the last poll (the box among it).
    ScreenMoved,
    /// A key was pressed in the session since the last poll.
    KeyPressed,
}

impl Wait {
    /// The machine word (`--json`'s `not_typed_because`).
    pub fn word(self) -> &'static str {
        match self {
            Wait::NewWatcher | Wait::ScreenMoved => "settling",
            Wait::KeyPressed => "typing",
        }
    }

    fn why(self) -> &'static str {
        match self {
            Wait::NewWatcher => "a new watcher waits for the screen to hold still one interval",
            Wait::ScreenMoved => "the screen changed since the last poll",
            Wait::KeyPressed => "a key was pressed in the session since the last poll",
        }
    }
}

/// The foreground of a pane's terminal: the process tmux names
/// (`#{pane_current_command}`, from its `argv[0]`) and, where the process
/// table can be read, its executable's name and whether a child of it runs
/// in the foreground process group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Foreground {
    pub command: String,
    /// The name `/proc` gives it (`exec -a agentsh bash` is still `bash`).
    pub process: Option<String>,
    /// `Some(true)`: a child runs in the foreground group (a wrapper's
    /// agent). `None`: unknown (its processes were not read).
    pub running_child: Option<bool>,
    /// tmux says the pane's program ended (`#{pane_dead}`, remain-on-exit).
    pub dead: bool,
    /// tmux says the pane is in copy mode or another mode (`#{pane_in_mode}`).
    pub in_mode: bool,
    /// tmux copies the pane's keys to every pane of its window
    /// (`#{synchronize-panes}`): a nudge would reach them all.
    pub synchronized: bool,
    /// The running children of the front process in its group (what a
    /// wrapper shell waits on: `ssh` under `bash -c 'ssh box; bash'`).
    pub children_in_front: Vec<String>,
    /// The terminal wrappers the front process was found behind (`script`).
    pub outer: Vec<String>,
}

/// Interactive shells: in the foreground with nothing under them, the agent
/// that ran in the pane has exited or crashed, whatever its last frame shows.
pub const SHELLS: &[&str] = &[
    "bash", "rbash", "zsh", "sh", "dash", "fish", "ksh", "ksh93", "mksh", "pdksh", "tcsh", "csh",
    "ash", "yash", "posh", "nu", "elvish", "pwsh",
];

/// Programs that give what they run a terminal of their own and pass the
/// pane's keys and screen through: the pane shows that inner terminal, so
/// its foreground is what is judged (an idle shell behind `script` or sudo is
/// an idle shell).
pub const TERMINAL_WRAPPERS: &[&str] = &[
    "script",
    "sudo",
    "su",
    "unbuffer",
    "poetry",
    "pipenv",
    "asciinema",
    "ttyrec",
    "expect",
];

/// Programs that show another terminal's screen and pass keys on to it: what
/// runs behind them cannot be checked from here, so nothing is typed through
/// them (watch the inner session itself, `host:session`).
pub const RELAYS: &[&str] = &[
    "tmux",
    "screen",
    "ssh",
    "mosh-client",
    "mosh",
    "et",
    "telnet",
    "sshpass",
    "autossh",
];

impl Foreground {
    /// The names it goes by, without a login shell's `-` or a path.
    fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.command.as_str())
            .chain(self.process.as_deref())
            .map(|name| {
                let name = name.trim_start_matches('-');
                name.rsplit('/').next().unwrap_or(name)
            })
    }

    /// The shell, when one is in the foreground with nothing running in
    /// front under it: its background or stopped jobs (a suspended agent)
    /// do not count, a wrapper's agent (`bash -c claude`) does; an unknown
    /// child count on a shell is read as exited (a keystroke into a shell
    /// runs as a command).
    pub fn idle_shell(&self) -> Option<&'static str> {
        let shell = self
            .names()
            .find_map(|name| SHELLS.iter().find(|&&shell| shell == name))?;
        (self.running_child != Some(true)).then_some(*shell)
    }

    /// Why the agent is gone, if it is: the pane's program ended, or an idle
    /// shell is in front.
    pub fn gone(&self) -> Option<String> {
        if self.dead {
            return Some(format!(
                "the pane's program ({}) ended and its pane is dead",
                self.command
            ));
        }
        self.idle_shell().map(|shell| {
            format!("a shell ({shell}) is in the foreground with nothing running under it")
        })
    }

    /// The relay in front, if one is: the front program itself, a wrapper
    /// it was found behind, or what a shell in front waits on (`bash -c 'ssh
    /// box; bash'`). An agent's own children are its business: an MCP server
    /// started as `ssh` is no relay of the pane's.
    pub fn relay(&self) -> Option<&'static str> {
        let shell_in_front = self.names().any(|name| SHELLS.contains(&name));
        let waited_on = self
            .children_in_front
            .iter()
            .filter(|_| shell_in_front)
            .map(String::as_str);
        self.names()
            .chain(self.outer.iter().map(String::as_str))
            .chain(waited_on)
            .find_map(|name| RELAYS.iter().find(|&&relay| relay == name))
            .copied()
    }
}

/// Why a stop is not typed into: escalated once, never nudged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// No input box the pane's profile knows is on screen.
    NoInputBox,
    /// A shell is in the foreground with nothing under it: the agent exited or crashed.
    AgentExited,
    /// A relay (ssh, a nested tmux) is in the foreground: the screen behind it cannot be checked.
    Relay,
    /// The pane is in copy mode (or another tmux mode), which takes the keys.
    PaneInMode,
    /// The window's panes are synchronised: a key would reach every one of them.
    Synchronized,
}

impl Refusal {
    /// The machine word (`BMB_REASON`, `--json`).
    pub fn word(self) -> &'static str {
        match self {
            Refusal::NoInputBox => "unreadable",
            Refusal::AgentExited => "agent_exited",
            Refusal::Relay => "relay",
            Refusal::PaneInMode => "pane_in_mode",
            Refusal::Synchronized => "synchronized",
        }
    }
}

/// What the monitor did in one poll, in the order it did it. Each is
/// worded in one place (its `Display`), and the poll line and `--json` carry
/// those words unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Done {
    /// The progress probe advanced: the nudge budget starts over.
    BudgetReset { from: u64, to: u64 },
    /// A person's key in the session: the nudge budget starts over.
    BudgetRenewed,
    /// The pane could not be captured this poll.
    CaptureFailed,
    /// Captures failed for [`CAPTURE_FAILURE_PATIENCE`] polls in a row: the operator was told.
    EscalatedUnreadablePane,
    /// The pane and the agent's own account disagree (said once per pair):
    /// what each says, and the state that was taken if it is not the pane's.
    WitnessesDisagree {
        pane: State,
        witness: &'static str,
        so: Option<State>,
    },
    /// The agent still says it is busy, but the pane has not moved for
    /// [`STILL_PANE_PATIENCE`] polls: the pane decides from now on.
    PaneDecides { witness: &'static str },
    /// The agent waits for a human, its dialog not drawn yet: not nudged.
    QuestionPending,
    /// A question was relayed to the operator, not answered.
    EscalatedQuestion,
    /// A nudge was typed: the `used`-th of `budget`.
    Nudged { used: u32, budget: u32 },
    /// The budget ran out without progress: escalated to a human, not nudged.
    EscalatedBudgetSpent,
    /// Nothing is left to do: escalated, never nudged.
    EscalatedBlocked,
    /// A stop that must not be typed into, with why; escalated the first time.
    Refused {
        refusal: Refusal,
        why: String,
        escalated: bool,
    },
    /// The profile read this pane's input box before and cannot now, with
    /// the same program in front: likely a UI change of the CLI (said once).
    LikelyUiChange {
        profile: String,
        version: Option<String>,
    },
    /// New failure text for one signal.
    NewFailure { kind: FailureKind, text: String },
    /// A stop that would be nudged, not typed into this poll, and why.
    NotYet(Wait),
    /// A draft waits in the box (a person's, or `own`: this monitor's unsent
    /// nudge): not typed into; escalated the first poll it held still.
    DraftWaiting { own: bool, escalated: bool },
    /// A usage limit holds the stop until its reset (`HH:MM`): neither
    /// nudged nor escalated; said when it starts or changes.
    Held { until: String },
    /// A usage limit whose reset cannot be read, or still on screen after
    /// the reset's one nudge: escalated, not nudged.
    EscalatedUsageLimit,
}

impl fmt::Display for Done {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Done::BudgetReset { from, to } => {
                write!(f, "nudge budget reset (progress {from} → {to})")
            }
            Done::BudgetRenewed => {
                f.write_str("nudge budget renewed (a key was pressed in the session)")
            }
            Done::CaptureFailed => f.write_str("capture failed"),
            Done::EscalatedUnreadablePane => f.write_str("escalated: the pane cannot be read"),
            Done::WitnessesDisagree { pane, witness, so } => {
                write!(
                    f,
                    "witnesses disagree: the pane reads {pane}, Claude Code says {witness}"
                )?;
                match so {
                    Some(state) => write!(f, ", so {state}"),
                    None => Ok(()),
                }
            }
            Done::PaneDecides { witness } => write!(
                f,
                "Claude Code still says {witness} but the pane has not changed in {STILL_PANE_PATIENCE} polls: the pane decides"
            ),
            Done::QuestionPending => {
                f.write_str("question pending (the dialog is not on screen yet), not nudged")
            }
            Done::EscalatedQuestion => f.write_str("escalated to the operator, NOT answered"),
            Done::Nudged { used, budget } => write!(f, "nudged ({used}/{budget})"),
            Done::EscalatedBudgetSpent | Done::EscalatedBlocked => {
                f.write_str("not nudged, escalated")
            }
            Done::Refused {
                why,
                escalated: false,
                ..
            } => write!(f, "not nudged ({why})"),
            Done::Refused {
                why,
                escalated: true,
                ..
            } => write!(f, "not nudged ({why}), escalated"),
            Done::LikelyUiChange { profile, version } => {
                write!(
                    f,
                    "likely UI change: the {profile} profile read this pane's input box before and cannot now"
                )?;
                match version {
                    Some(version) => write!(f, " (version {version})"),
                    None => Ok(()),
                }
            }
            Done::NewFailure { kind, text } => write!(f, "new failure ({}): {text}", kind.name()),
            Done::NotYet(wait) => write!(f, "not nudged yet ({})", wait.why()),
            Done::DraftWaiting { own, escalated } => {
                f.write_str(match own {
                    false => "not typed into: a draft is waiting in the box",
                    true => "not typed into: the box holds this monitor's own nudge, not sent",
                })?;
                match escalated {
                    true => f.write_str(", escalated"),
                    false => Ok(()),
                }
            }
            Done::Held { until } => write!(f, "held until {until} (usage limit)"),
            Done::EscalatedUsageLimit => f.write_str("usage limit: not nudged, escalated"),
        }
    }
}

/// What the loop must do, in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Persist this record (the monitor has already applied it to its memory).
    /// An alert's latch is not one of these: it travels with its [`Alert`].
    Record(SessionRecord),
    /// Type this text into the pane, then Enter as a separate call.
    Send(String),
    /// Tell the operator through the alert funnel.
    Alert(Alert),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// The verdict that caused it (`BMB_STATE`).
    pub state: State,
    /// A short machine word (`BMB_REASON`): `question`, `blocked`,
    /// `escalate_to_human`, `failure`, `unreadable`, `agent_exited`.
    pub reason: &'static str,
    /// The message, unsanitised: the sink strips or escapes it for its medium.
    pub message: String,
    /// What the monitor latched when it decided to send this; a delivery
    /// that fails is handed back to [`TargetMonitor::alert_failed`].
    pub latch: Latch,
    /// The record of that latch, already applied to the monitor's memory:
    /// the loop journals it only once the alert was delivered, so a crash
    /// while the alert runs (or one that failed) leaves it due after a
    /// restart, never "sent" when nobody got it.
    pub record: SessionRecord,
}

/// The memory an alert set, one per signal (seed defect 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Latch {
    Escalation(EscalationKind),
    /// A failure signal's name.
    Failure(String),
}

/// One poll's line: every field, every time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollReport {
    pub target: String,
    /// `None` when the pane could not be captured.
    pub state: Option<State>,
    pub work: Work,
    pub progress: Option<u64>,
    pub nudges_used: u32,
    pub budget: u32,
    /// What was done this poll, in order (each renders to the seed's words).
    pub done: Vec<Done>,
    /// The rule and evidence line of the verdict, for `--json`.
    pub rule: Option<&'static str>,
    pub evidence: Option<String>,
    /// A capture error, given in full only when it differs from the last one.
    pub error: Option<String>,
    /// The pane's own verdict, before the second witness (equal to `state` without one).
    pub pane_state: Option<State>,
    /// The second witness's word (`busy`, `idle`, `waiting`, `none`), if one was asked.
    pub witness: Option<&'static str>,
    /// Polls so far where the pane and the witness disagreed.
    pub disagreements: u64,
    /// Whether a nudge could be typed this poll: a stop, the live input box
    /// recognised, the agent still running. `false` when no pane was read.
    pub typing_safe: bool,
    /// Why a stop was not typed into, if it was not.
    pub refusal: Option<Refusal>,
    /// Polls so far whose stop showed no input box the profile knows.
    pub unrecognised: u64,
    /// The pane's profile read its live input box this poll, with nothing
    /// refusing it: the pane the agent is in, which a caller may keep reading
    /// when another pane of the session becomes active.
    pub agent_seen: bool,
    /// Why a stop that would be nudged was not typed into this poll, though
    /// nothing refused its screen: `settling`, `typing`, `draft` or `usage_limit`.
    pub deferred: Option<&'static str>,
    /// While a usage limit holds the stop: until when (`HH:MM`, local).
    pub held_until: Option<String>,
    /// The same instant, in epoch seconds (the board's and the metrics').
    pub held_until_epoch: Option<i64>,
}

impl PollReport {
    /// `MONITOR · <target> · <STATE> · work=N · progress=N · nudges k/B[ · done] · HH:MM:SS`
    pub fn line(&self, clock: &str) -> String {
        let state = self.state.map_or("?", State::as_str);
        let progress = self
            .progress
            .map_or_else(|| "?".to_string(), |p| p.to_string());
        let mut line = format!(
            "MONITOR · {} · {state} · work={} · progress={progress} · nudges {}/{}",
            self.target,
            self.work.display(),
            self.nudges_used,
            self.budget
        );
        for done in &self.done {
            line.push_str(" · ");
            line.push_str(&done.to_string());
        }
        line.push_str(" · ");
        line.push_str(clock);
        line
    }
}

/// The session monitor's state for one target.
#[derive(Debug)]
pub struct TargetMonitor {
    target: String,
    config: SessionConfig,
    memory: SessionMemory,
    echo: Echo,
    last_hash: Option<u64>,
    last_work: Work,
    last_verdict: Option<Verdict>,
    polls_since_classify: u32,
    last_error: Option<String>,
    /// How many times the pane was classified (the rest reused a verdict).
    pub classifications: u64,
    /// Polls where the pane and the second witness disagreed.
    pub disagreements: u64,
    /// The disagreement last said, so a lasting one is said once.
    last_disagreement: Option<(State, &'static str)>,
    /// Consecutive polls that captured the same pane text.
    unchanged_polls: u32,
    /// The agent CLI last recognised in this pane.
    profile: Option<String>,
    /// Claude Code's own session file was found for this pane's process:
    /// the agent is Claude Code, whatever its screen shows.
    witnessed_claude: bool,
    /// Polls whose stop showed no input box the profile knows.
    pub unrecognised: u64,
    /// Polls in a row whose capture failed.
    failed_captures: u32,
    /// The foreground program (tmux's name for it) the last time this pane's
    /// input box was recognised: a screen not recognised later with the same
    /// program in front is likely a UI change (said once).
    box_seen: Option<Option<String>>,
    ui_change_said: bool,
    /// The profiles the pane is read with (the built-ins, or the user's too).
    profiles: std::sync::Arc<Profiles>,
    /// The screen as last seen, its ink left out (a redrawn cursor is no
    /// change), and polls in a row it held still: a nudge waits for one.
    still_hash: Option<u64>,
    still_polls: u32,
    /// The session's last key time and this monitor's last poll (epoch
    /// seconds), as the previous poll saw them.
    last_activity: Option<i64>,
    last_poll_at: Option<i64>,
    /// Whether the pane had the focus at the last poll.
    last_focused: bool,
    /// The usage-limit reset last said as held.
    held_said: Option<Timestamp>,
}

impl TargetMonitor {
    /// A monitor that resumes from `memory` (replayed from its journal).
    pub fn new(
        target: impl Into<String>,
        config: SessionConfig,
        memory: SessionMemory,
    ) -> TargetMonitor {
        let echo = Echo::new(&memory.sent);
        // A stop seen before a restart: the same screen now held still since.
        let (still_hash, last_activity) = memory
            .stop_seen
            .map_or((None, None), |(hash, activity)| (Some(hash), activity));
        TargetMonitor {
            target: target.into(),
            config,
            memory,
            echo,
            last_hash: None,
            last_work: Work::Unknown,
            last_verdict: None,
            polls_since_classify: 0,
            last_error: None,
            classifications: 0,
            disagreements: 0,
            last_disagreement: None,
            unchanged_polls: 0,
            profile: None,
            witnessed_claude: false,
            unrecognised: 0,
            failed_captures: 0,
            box_seen: None,
            ui_change_said: false,
            profiles: builtin_profiles(),
            still_hash,
            still_polls: 0,
            last_activity,
            last_poll_at: None,
            last_focused: true,
            held_said: None,
        }
    }

    pub fn memory(&self) -> &SessionMemory {
        &self.memory
    }

    /// The agent CLI's profile that last recognised this pane, if one did;
    /// else `claude` when Claude Code's own session file names the pane's
    /// process (its permission dialog carries no profile's markers), for
    /// the alerts' and the metrics' `cli` label.
    pub fn profile(&self) -> Option<&str> {
        self.profile
            .as_deref()
            .or(self.witnessed_claude.then_some("claude"))
    }

    /// A pane that cannot be read for [`CAPTURE_FAILURE_PATIENCE`] polls in a
    /// row is watched by nobody: said once through the funnel, re-armed by
    /// the next capture that works (a silence nothing bounds is the one
    /// failure the seed forbids).
    fn on_capture_failing(&mut self, error: &str, actions: &mut Vec<Action>, done: &mut Vec<Done>) {
        let patient = self.failed_captures < CAPTURE_FAILURE_PATIENCE;
        if patient
            || self
                .memory
                .escalated
                .contains_key(&EscalationKind::CaptureFailed)
        {
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::CaptureFailed,
            key: String::new(),
        };
        self.memory.apply(&latch_record);
        let message = format!(
            "{} cannot be read: {} polls in a row failed to capture its pane, so nothing watches it. \
             The last error: {error}",
            self.target, self.failed_captures
        );
        actions.push(Action::Alert(Alert {
            state: State::Stalled,
            reason: "capture_failed",
            message,
            latch: Latch::Escalation(EscalationKind::CaptureFailed),
            record: latch_record,
        }));
        done.push(Done::EscalatedUnreadablePane);
    }

    /// Reads the pane with these profiles from the next poll on (the user's
    /// profile folder changed); the pane is classified afresh.
    pub fn set_profiles(&mut self, profiles: std::sync::Arc<Profiles>) {
        self.profiles = profiles;
        self.last_hash = None;
        self.last_verdict = None;
    }

    /// Runs with `config` from the next poll on (a reloaded config file
    /// changed the budget, the nudge or the profile): what the monitor
    /// remembers (nudges used, what was escalated, the echo ledger) stays,
    /// and the pane is classified afresh.
    pub fn set_config(&mut self, config: SessionConfig) {
        self.config = config;
        self.last_hash = None;
        self.last_verdict = None;
    }

    /// Whether `pane`'s box holds `text` and nothing else, or still nothing
    /// (the CLI has not drawn it yet): a nudge just typed, checked before its
    /// Enter. Anything else there (a person's key joined it) and the Enter
    /// must not be pressed.
    pub fn box_holds_only(&self, pane: &str, text: &str) -> bool {
        let profiles = &*self.profiles;
        let profile = self
            .forced_profile()
            .or_else(|| self.profile.as_deref().and_then(|name| profiles.get(name)));
        // No echo: our own text then reads as what it is, a draft in the box.
        let context = Context::new(profiles).with_profile(profile);
        let verdict = classify::classify_with(pane, Work::Available(1), &context);
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        match &verdict.box_text {
            BoxText::Draft(typed) => words(typed) == words(text),
            BoxText::Empty | BoxText::Placeholder | BoxText::OwnText => true,
        }
    }

    /// The profile the config forces on this pane, when one in force has its name.
    fn forced_profile(&self) -> Option<&classify::Profile> {
        self.config
            .profile
            .as_deref()
            .and_then(|name| self.profiles.get(name))
    }

    /// An alert that could not be delivered did not reach anyone: undo its
    /// latch so the next poll sends it again. Returns the records to persist.
    pub fn alert_failed(&mut self, alert: &Alert) -> Vec<SessionRecord> {
        let record = match &alert.latch {
            Latch::Escalation(kind) => SessionRecord::Rearmed { kind: *kind },
            Latch::Failure(signal) => SessionRecord::FailureRetracted {
                signal: signal.clone(),
            },
        };
        self.memory.apply(&record);
        vec![record]
    }

    pub fn poll(&mut self, observation: Observation<'_>) -> (PollReport, Vec<Action>) {
        if let Some(witness) = observation.witness {
            self.witnessed_claude = !matches!(witness, Witness::Absent(_));
        }
        let mut actions = Vec::new();
        let mut done = Vec::new();
        self.track_progress(observation.progress, &mut actions, &mut done);
        let mut report = PollReport {
            target: self.target.clone(),
            state: None,
            work: observation.work,
            // What the probe said this poll: `?` when it said nothing usable.
            progress: observation.progress,
            nudges_used: self.memory.nudges_used,
            budget: self.config.budget,
            done: Vec::new(),
            rule: None,
            evidence: None,
            error: None,
            pane_state: None,
            witness: observation.witness.map(Witness::word),
            disagreements: self.disagreements,
            typing_safe: false,
            refusal: None,
            unrecognised: self.unrecognised,
            agent_seen: false,
            deferred: None,
            held_until: None,
            held_until_epoch: None,
        };
        let key_pressed = self.key_pressed(observation);
        self.renew_budget(key_pressed, &mut actions, &mut done);
        let pane = match observation.capture {
            Ok(pane) => {
                self.last_error = None;
                self.failed_captures = 0;
                if self
                    .memory
                    .escalated
                    .contains_key(&EscalationKind::CaptureFailed)
                {
                    let record = SessionRecord::Rearmed {
                        kind: EscalationKind::CaptureFailed,
                    };
                    self.record(record, &mut actions);
                }
                pane
            }
            Err(error) => {
                // Rendered in full once per change; the loop goes on.
                if self.last_error.as_deref() != Some(error) {
                    report.error = Some(error.to_string());
                    self.last_error = Some(error.to_string());
                }
                done.push(Done::CaptureFailed);
                self.failed_captures += 1;
                self.on_capture_failing(error, &mut actions, &mut done);
                report.done = done;
                return (report, actions);
            }
        };
        let verdict = self.verdict(pane, observation.work);
        self.track_stillness(pane, &verdict);
        let mut state = self.second_witness(verdict.state, observation.witness, &mut done);
        let exited = observation.foreground.and_then(Foreground::gone);
        if exited.is_some() {
            // Whatever the last frame shows (a spinner, a dialog), nothing
            // runs there any more: it is a stop, and the work probe says which.
            state = observation.work.stop().0;
        }
        let stop = matches!(state, State::Stalled | State::Blocked);
        // The agent is not (or no longer) what this pane shows.
        let elsewhere =
            exited.is_some() || observation.foreground.and_then(Foreground::relay).is_some();
        let refused = stop
            .then(|| refusal_of(&verdict, observation.foreground, exited))
            .flatten();
        let refusal = refused.as_ref().map(|(refusal, _)| *refusal);
        // Borrowed: a poll that changes nothing allocates nothing for it.
        let front = observation.foreground.map(|f| f.command.as_str());
        let seen_with =
            |seen: &Option<Option<String>>| seen.as_ref().map(|s| s.as_deref()) == Some(front);
        if verdict.input_box && refusal.is_none() && !seen_with(&self.box_seen) {
            self.box_seen = Some(front.map(str::to_string));
        }
        if refusal == Some(Refusal::NoInputBox) {
            self.unrecognised += 1;
        }
        report.typing_safe = stop && refusal.is_none();
        report.agent_seen = verdict.input_box && !elsewhere;
        let remembered = self
            .memory
            .agent_pane
            .as_ref()
            .map(|(pane, _)| pane.as_str());
        if let Some(pane) = observation.pane_id {
            let here = (pane.to_string(), observation.pane_pid);
            if report.agent_seen && self.memory.agent_pane.as_ref() != Some(&here) {
                let (pane, pid) = here;
                self.record(SessionRecord::AgentPane { pane, pid }, &mut actions);
            } else if remembered == Some(pane)
                && matches!(refusal, Some(Refusal::AgentExited | Refusal::Relay))
            {
                // The agent left the pane it was seen in: read the session's
                // active pane again from the next poll (once this is said).
                self.record(SessionRecord::AgentPaneForgotten, &mut actions);
            }
        }
        report.refusal = refusal;
        report.unrecognised = self.unrecognised;
        report.state = Some(state);
        report.pane_state = Some(verdict.state);
        report.rule = Some(verdict.rule.name());
        report.evidence = verdict.evidence.as_ref().map(|e| e.text.clone());
        self.rearm(state, refusal, &verdict, &mut actions);
        // A limit off screen (the CLI continued, or another verdict) is over.
        let limit_shown = stop && verdict.usage_limit.is_some();
        if !limit_shown && self.memory.limit_seen.is_some() {
            self.record(SessionRecord::LimitGone, &mut actions);
        }
        // The pane's own stop too (a witness's `busy` over it): a working
        // pane, which changes every poll, writes nothing.
        if stop || matches!(verdict.state, State::Stalled | State::Blocked) {
            self.remember_stop(observation.activity, &mut actions);
        }
        if let Some((refusal, why)) = refused {
            // A screen the profile read before, unreadable now while the
            // same program is in front: the CLI changed how it draws.
            let ui_change = refusal == Refusal::NoInputBox && seen_with(&self.box_seen);
            self.on_refused(
                &verdict,
                (refusal, &why),
                ui_change,
                observation,
                pane,
                &mut actions,
                &mut done,
            );
            if self.polls_since_classify == 0 {
                self.report_new_failures(pane, &mut actions, &mut done);
            }
            report.nudges_used = self.memory.nudges_used;
            report.disagreements = self.disagreements;
            report.done = done;
            return (report, actions);
        }
        match state {
            State::Working => {}
            State::Question if verdict.state != State::Question => {
                if self.unchanged_polls < STILL_PANE_PATIENCE && !waiting_without_a_box(&verdict) {
                    // The agent waits for a human but the dialog is not drawn
                    // yet: never nudged, escalated once its text can be relayed.
                    done.push(Done::QuestionPending);
                } else {
                    // Still no readable dialog: relay what the screen shows.
                    let shown = Verdict {
                        dialog: bottom_lines(pane, 15),
                        ..verdict.clone()
                    };
                    self.on_question(&shown, &mut actions, &mut done);
                }
            }
            State::Question => self.on_question(&verdict, &mut actions, &mut done),
            State::Stalled => {
                let wait = key_pressed.then_some(Wait::KeyPressed).or(self.unsettled());
                self.on_stalled(
                    observation,
                    (&verdict, wait),
                    &mut report,
                    &mut actions,
                    &mut done,
                );
                if report.deferred.is_some() {
                    report.typing_safe = false;
                }
            }
            State::Blocked => self.on_blocked(pane, observation.work, &mut actions, &mut done),
        }
        if self.polls_since_classify == 0 {
            self.report_new_failures(pane, &mut actions, &mut done);
        }
        report.nudges_used = self.memory.nudges_used;
        report.disagreements = self.disagreements;
        report.done = done;
        (report, actions)
    }

    /// Combines the pane verdict with the agent's own account (see
    /// `crate::session::witness` for the rule), counts disagreements, and says a new
    /// one once.
    fn second_witness(
        &mut self,
        pane: State,
        witness: Option<&Witness>,
        done: &mut Vec<Done>,
    ) -> State {
        let Some(witness) = witness else { return pane };
        let combined = combine(pane, witness);
        if !combined.disagree {
            self.last_disagreement = None;
            return combined.state;
        }
        self.disagreements += 1;
        // The file overrules a stop only while the pane moves or for a few
        // polls: a turn that runs changes the screen, and a silence that
        // nothing bounds is the one failure the seed forbids.
        // A `waiting` agent stays a QUESTION (never nudged: a nudge could land
        // in a dialog the pane reader cannot see); it is escalated once the
        // patience runs out, with what the screen shows.
        let patient = self.unchanged_polls < STILL_PANE_PATIENCE;
        let busy_overrule = combined.overruled && combined.state == State::Working;
        let state = if busy_overrule && !patient {
            pane
        } else {
            combined.state
        };
        let pair = (pane, witness.word());
        if self.last_disagreement != Some(pair) {
            self.last_disagreement = Some(pair);
            done.push(Done::WitnessesDisagree {
                pane,
                witness: witness.word(),
                so: (state != pane).then_some(state),
            });
        } else if busy_overrule && self.unchanged_polls == STILL_PANE_PATIENCE {
            done.push(Done::PaneDecides {
                witness: witness.word(),
            });
        }
        state
    }

    /// The pane's verdict. Activity inferred from the transcript's shape, on
    /// a screen that has not moved for a while, is not activity: a turn that
    /// runs changes the screen, so the pane is then read as a stop.
    fn verdict(&mut self, pane: &str, work: Work) -> Verdict {
        let mut verdict = self.classify_pane(pane, work);
        if verdict.rule.infers_activity() && self.unchanged_polls >= STILL_PANE_PATIENCE {
            (verdict.state, verdict.rule) = work.stop();
        }
        verdict
    }

    /// Classifies only a pane that changed, or one not re-decided for a while.
    fn classify_pane(&mut self, pane: &str, work: Work) -> Verdict {
        let mut hasher = DefaultHasher::new();
        pane.hash(&mut hasher);
        let hash = hasher.finish();
        self.unchanged_polls = if self.last_hash == Some(hash) {
            self.unchanged_polls + 1
        } else {
            0
        };
        let fresh = self.last_hash == Some(hash)
            && self.last_work == work
            && self.polls_since_classify + 1 < self.config.reclassify_every;
        if let (true, Some(verdict)) = (fresh, &self.last_verdict) {
            self.polls_since_classify += 1;
            return verdict.clone();
        }
        // The profile that last recognised this pane stays in force while no
        // profile's markers are on screen (a long reply fills the bottom lines).
        // A profile the config forces is read with whatever the screen shows.
        let profiles = &*self.profiles;
        let forced = self
            .config
            .profile
            .as_deref()
            .and_then(|name| profiles.get(name));
        let detected = forced.or_else(|| classify::detect_profile(pane, profiles));
        if let Some(profile) = detected {
            self.profile = Some(profile.name.clone());
        }
        let profile =
            detected.or_else(|| self.profile.as_deref().and_then(|name| profiles.get(name)));
        let context = Context::new(profiles)
            .with_profile(profile)
            .with_echo(&self.echo);
        let verdict = classify::classify_with(pane, work, &context);
        self.classifications += 1;
        self.last_hash = Some(hash);
        self.last_work = work;
        self.last_verdict = Some(verdict.clone());
        self.polls_since_classify = 0;
        verdict
    }

    fn record(&mut self, record: SessionRecord, actions: &mut Vec<Action>) {
        self.memory.apply(&record);
        if let SessionRecord::Sent { text } = &record {
            self.echo.record(text);
        }
        actions.push(Action::Record(record));
    }

    /// Progress advancing resets the nudge budget, and says so.
    fn track_progress(
        &mut self,
        progress: Option<u64>,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let Some(now) = progress else { return };
        match self.memory.progress {
            Some(before) if now > before => {
                self.record(
                    SessionRecord::BudgetReset {
                        from: before,
                        to: now,
                    },
                    actions,
                );
                done.push(Done::BudgetReset {
                    from: before,
                    to: now,
                });
            }
            // Progress is a high-water mark: a reading that went backwards (a
            // flapping or restarted probe) must not buy a fresh budget.
            Some(_) => {}
            None => self.record(SessionRecord::Progress { value: now }, actions),
        }
    }

    /// A person's key in the session (the shared keyboard) ends the episode
    /// the budget counted: someone is at the pane, and what the agent does
    /// next is a new story, with a new budget.
    fn renew_budget(&mut self, key_pressed: bool, actions: &mut Vec<Action>, done: &mut Vec<Done>) {
        let spent = self
            .memory
            .escalated
            .contains_key(&EscalationKind::BudgetSpent);
        if key_pressed && (self.memory.nudges_used > 0 || spent) {
            self.record(SessionRecord::BudgetRenewed, actions);
            done.push(Done::BudgetRenewed);
        }
    }

    /// An escalation may be sent again once the pane shows another verdict
    /// (for a refused stop: another verdict, or a stop that can be typed into).
    fn rearm(
        &mut self,
        state: State,
        refusal: Option<Refusal>,
        verdict: &Verdict,
        actions: &mut Vec<Action>,
    ) {
        let stop = matches!(state, State::Stalled | State::Blocked);
        for (kind, held) in [
            (EscalationKind::Question, state == State::Question),
            (EscalationKind::Blocked, state == State::Blocked),
            // A spent budget's episode ends when the pane works again: its
            // alert resolves (the budget stays spent until progress or a
            // person's key, so the next stop is escalated, not nudged).
            (EscalationKind::BudgetSpent, state != State::Working),
            (EscalationKind::Unreadable, refusal.is_some()),
            (EscalationKind::Draft, stop && !verdict.box_text.is_empty()),
            (
                EscalationKind::UsageLimit,
                stop && verdict.usage_limit.is_some(),
            ),
        ] {
            if !held && self.memory.escalated.contains_key(&kind) {
                self.record(SessionRecord::Rearmed { kind }, actions);
            }
        }
    }

    /// A stop that must not be typed into: never nudged, escalated once (one
    /// latch whatever the reason, so a screen that flips between two reasons
    /// is not paged twice) with the screen's bottom lines verbatim (the sink
    /// sanitises them). The state word stays the work probe's, as the seed has it.
    #[allow(clippy::too_many_arguments)]
    fn on_refused(
        &mut self,
        verdict: &Verdict,
        (refusal, why): (Refusal, &str),
        ui_change: bool,
        observation: Observation<'_>,
        pane: &str,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let ui_change = ui_change && !self.ui_change_said;
        if ui_change {
            self.ui_change_said = true;
            done.push(Done::LikelyUiChange {
                profile: verdict.profile.clone(),
                version: observation.cli_version.map(str::to_string),
            });
        }
        let key = REFUSED_KEY.to_string();
        if self
            .memory
            .escalated
            .contains_key(&EscalationKind::Unreadable)
        {
            done.push(Done::Refused {
                refusal,
                why: why.to_string(),
                escalated: false,
            });
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::Unreadable,
            key,
        };
        self.memory.apply(&latch_record);
        let state = observation.work.stop().0;
        let mut message = format!(
            "{state} on {}: {why}, so it was NOT typed into (a keystroke could answer a dialog or run as a command). \
             work={}. This needs a human.",
            self.target,
            observation.work.display()
        );
        if ui_change {
            message.push_str(&format!(
                "\nLikely UI change: the {} profile recognised this pane's input box before.",
                verdict.profile
            ));
            if let Some(version) = observation.cli_version {
                message.push_str(&format!(" The CLI reports version {version}."));
            }
        }
        message.push_str("\n\nThe bottom of the screen:\n");
        message.push_str(&bottom_lines(pane, 15).join("\n"));
        actions.push(Action::Alert(Alert {
            state,
            reason: refusal.word(),
            message,
            latch: Latch::Escalation(EscalationKind::Unreadable),
            record: latch_record,
        }));
        done.push(Done::Refused {
            refusal,
            why: why.to_string(),
            escalated: true,
        });
    }

    fn on_question(&mut self, verdict: &Verdict, actions: &mut Vec<Action>, done: &mut Vec<Done>) {
        let dialog = verdict.dialog.join("\n");
        let key = fingerprint(&question_text(&dialog));
        if self.memory.escalated.get(&EscalationKind::Question) == Some(&key) {
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::Question,
            key,
        };
        self.memory.apply(&latch_record);
        let message = format!(
            "QUESTION on {}: the agent is waiting for a human. It was NOT answered.\n\n{}",
            self.target,
            dialog.trim_matches('\n')
        );
        actions.push(Action::Alert(Alert {
            state: State::Question,
            reason: "question",
            message,
            latch: Latch::Escalation(EscalationKind::Question),
            record: latch_record,
        }));
        done.push(Done::EscalatedQuestion);
    }

    /// A stop with work left: held while a usage limit has not reset,
    /// nudged within the budget once nobody is at the keyboard and the
    /// screen held still, never typed over a draft; escalated once the
    /// budget is spent. The verdict's `note` is what its profile says the
    /// nudge should add (Codex's background terminal: check it with /ps).
    fn on_stalled(
        &mut self,
        observation: Observation<'_>,
        (verdict, wait): (&Verdict, Option<Wait>),
        report: &mut PollReport,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let mut reset_due = None;
        if let Some(limit) = &verdict.usage_limit {
            match self.on_usage_limit(limit, observation, report, actions, done) {
                LimitHold::Handled => return,
                LimitHold::ResetPassed(at) => reset_due = Some(at),
            }
        }
        let budget = self.config.budget;
        if self.memory.nudges_used < budget {
            if let Some(wait) = wait {
                report.deferred = Some(wait.word());
                done.push(Done::NotYet(wait));
                return;
            }
            if !verdict.box_text.is_empty() {
                report.deferred = Some("draft");
                self.on_draft(&verdict.box_text, observation.work, actions, done);
                return;
            }
            let used = self.memory.nudges_used + 1;
            let text = match verdict.note.as_deref() {
                Some(note) => format!("{} Note: {note}.", self.config.nudge_text),
                None => self.config.nudge_text.clone(),
            };
            // Into the echo ledger BEFORE it is sent, so it can never come back as a signal.
            self.record(SessionRecord::Sent { text: text.clone() }, actions);
            self.record(SessionRecord::Nudged { used }, actions);
            actions.push(Action::Send(text));
            done.push(Done::Nudged { used, budget });
            if let (Some(at), Some((line, _, _))) = (reset_due, &self.memory.limit_seen) {
                let record = SessionRecord::LimitSeen {
                    line: line.clone(),
                    reset: at.as_second(),
                    nudged: true,
                };
                self.record(record, actions);
            }
            return;
        }
        if self
            .memory
            .escalated
            .contains_key(&EscalationKind::BudgetSpent)
        {
            return;
        }
        let key = budget.to_string();
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::BudgetSpent,
            key,
        };
        self.memory.apply(&latch_record);
        let progress = observation
            .progress
            .or(self.memory.progress)
            .map_or("?".to_string(), |p| p.to_string());
        let message = format!(
            "escalate_to_human: {} is STALLED and {budget} nudges produced no progress (progress={progress}, work={}). \
             Nudging has stopped; this needs a human.",
            self.target,
            observation.work.display()
        );
        actions.push(Action::Alert(Alert {
            state: State::Stalled,
            reason: "escalate_to_human",
            message,
            latch: Latch::Escalation(EscalationKind::BudgetSpent),
            record: latch_record,
        }));
        done.push(Done::EscalatedBudgetSpent);
    }

    /// A draft that held still in the box of a stop due a nudge: never typed
    /// over (the person's words and ours would be sent as one), escalated
    /// once with the draft quoted; our own unsent nudge never gets a second copy.
    fn on_draft(
        &mut self,
        box_text: &BoxText,
        work: Work,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let own = matches!(box_text, BoxText::OwnText);
        if self.memory.escalated.contains_key(&EscalationKind::Draft) {
            done.push(Done::DraftWaiting {
                own,
                escalated: false,
            });
            return;
        }
        let mut message = format!(
            "STALLED on {}: not typed into: {}. Nothing was typed (work={}); this needs a human: \
             send it or empty the box, and the stop is nudged once it holds still.",
            self.target,
            match own {
                false => "a draft is waiting in the box",
                true => "the box holds this monitor's own nudge, typed but not sent",
            },
            work.display()
        );
        if let BoxText::Draft(draft) = box_text {
            message.push_str("\n\nThe draft:\n");
            message.push_str(draft);
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::Draft,
            key: fingerprint(&message),
        };
        self.memory.apply(&latch_record);
        actions.push(Action::Alert(Alert {
            state: State::Stalled,
            reason: "draft",
            message,
            latch: Latch::Escalation(EscalationKind::Draft),
            record: latch_record,
        }));
        done.push(Done::DraftWaiting {
            own,
            escalated: true,
        });
    }

    /// A stop its CLI says a usage limit caused. Until the reset (plus
    /// [`RESET_MARGIN`]) it is held: no nudge, no escalation, said once per
    /// reset. After it, one nudge (the caller's, within the budget); the
    /// limit still on screen after that nudge, or a reset that cannot be
    /// read, is escalated once and never nudged.
    fn on_usage_limit(
        &mut self,
        limit: &UsageLimit,
        observation: Observation<'_>,
        report: &mut PollReport,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) -> LimitHold {
        let now = observation.now;
        let line = fingerprint(&limit.line);
        let anchored = match &self.memory.limit_seen {
            Some((seen, reset, nudged)) if *seen == line => Some((*reset, *nudged)),
            _ => None,
        };
        // Read once, when first seen: a wait counts from then, not from each poll.
        let at = match anchored {
            Some((reset, _)) => Timestamp::from_second(reset).ok(),
            None => limit.reset.as_deref().zip(now).and_then(|(phrase, now)| {
                crate::session::usage_limit::reset_at(phrase, now.local, now.zones)
            }),
        };
        if let (Some(at), None) = (at, anchored) {
            let record = SessionRecord::LimitSeen {
                line: line.clone(),
                reset: at.as_second(),
                nudged: false,
            };
            self.record(record, actions);
        }
        let (Some(at), Some(now)) = (at, now) else {
            let why = match limit.reset {
                Some(_) => "its reset time cannot be read",
                None => "the screen gives no reset time",
            };
            self.escalate_usage_limit(limit, why, observation.work, actions, done);
            return LimitHold::Handled;
        };
        if now.local.timestamp() < at + RESET_MARGIN {
            let until = crate::session::usage_limit::hhmm(at, now.local);
            if self.held_said != Some(at) {
                self.held_said = Some(at);
                done.push(Done::Held {
                    until: until.clone(),
                });
            }
            report.deferred = Some("usage_limit");
            report.held_until = Some(until);
            report.held_until_epoch = Some(at.as_second());
            return LimitHold::Handled;
        }
        if anchored.is_some_and(|(_, nudged)| nudged) {
            let why = format!(
                "it is still on screen after the reset at {} and one nudge",
                crate::session::usage_limit::hhmm(at, now.local)
            );
            self.escalate_usage_limit(limit, &why, observation.work, actions, done);
            return LimitHold::Handled;
        }
        LimitHold::ResetPassed(at)
    }

    fn escalate_usage_limit(
        &mut self,
        limit: &UsageLimit,
        why: &str,
        work: Work,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        if self
            .memory
            .escalated
            .contains_key(&EscalationKind::UsageLimit)
        {
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::UsageLimit,
            key: fingerprint(&limit.line),
        };
        self.memory.apply(&latch_record);
        let message = format!(
            "STALLED on {}: a usage limit stopped the agent and {why}, so it was not nudged (work={}). \
             This needs a human.\n\n{}",
            self.target,
            work.display(),
            limit.line.trim()
        );
        actions.push(Action::Alert(Alert {
            state: State::Stalled,
            reason: "usage_limit",
            message,
            latch: Latch::Escalation(EscalationKind::UsageLimit),
            record: latch_record,
        }));
        done.push(Done::EscalatedUsageLimit);
    }

    /// Whether a key was pressed in the session since the last poll: its
    /// last key time moved, or is no older than the last poll's second
    /// (tmux counts whole seconds, so a key in that second may be after it).
    fn key_pressed(&mut self, observation: Observation<'_>) -> bool {
        let now = observation.now.map(|now| now.local.timestamp().as_second());
        let focused = observation.focused.unwrap_or(true);
        let was_focused = std::mem::replace(&mut self.last_focused, focused);
        let pressed = match (observation.activity, self.last_activity) {
            (Some(activity), Some(before)) => {
                activity != before || self.last_poll_at.is_some_and(|at| activity >= at)
            }
            _ => false,
        } && (focused || was_focused);
        self.last_activity = observation.activity.or(self.last_activity);
        self.last_poll_at = now.or(self.last_poll_at);
        pressed
    }

    /// Journals a stop's screen when it changed, so a restarted monitor
    /// knows whether it held still meanwhile (a working pane, which changes
    /// every poll, writes nothing).
    fn remember_stop(&mut self, activity: Option<i64>, actions: &mut Vec<Action>) {
        let Some(hash) = self.still_hash else { return };
        let seen = (hash, activity.or(self.last_activity));
        if self.memory.stop_seen != Some(seen) {
            let (hash, activity) = seen;
            self.record(SessionRecord::StopSeen { hash, activity }, actions);
        }
    }

    /// Counts the polls the stop held still: the same verdict, its box (from
    /// its top rule to its closing one) and the few newest lines above it the
    /// same text, its ink left out. A person typing changes the box, a key that changes nothing
    /// there moves the session's activity; what else moves on screen (a
    /// clock in the status bar, a line redrawn in the transcript) is no one
    /// at the keyboard, and must not keep a stop from ever holding still.
    /// A screen with no box the profile knows counts whole.
    fn track_stillness(&mut self, pane: &str, verdict: &Verdict) {
        let mut hasher = DefaultHasher::new();
        match verdict.region.kind {
            classify::RegionKind::InputBox => {
                let first = verdict.region.first.min(pane.len());
                let last = verdict.region.last.min(pane.len());
                let end = pane[last..].find('\n').map_or(pane.len(), |i| last + i);
                let boxed = pane.get(first.min(end)..end).unwrap_or(pane);
                plain_hash(boxed).hash(&mut hasher);
                // The newest lines above the box too: a turn that ran between
                // two polls left its reply and turn end there.
                let above = pane.get(..first).unwrap_or("").lines().rev();
                for line in above.filter(|l| !l.trim().is_empty()).take(NEWEST_LINES) {
                    plain_hash(line).hash(&mut hasher);
                }
            }
            _ => plain_hash(pane).hash(&mut hasher),
        }
        (verdict.state, verdict.rule.name()).hash(&mut hasher);
        let hash = hasher.finish();
        self.still_polls = match self.still_hash == Some(hash) {
            true => self.still_polls + 1,
            false => 0,
        };
        self.still_hash = Some(hash);
    }

    /// Why the stop has not held still for a whole interval, if it has not.
    fn unsettled(&self) -> Option<Wait> {
        match (self.still_polls, self.classifications) {
            (0, 0..=1) => Some(Wait::NewWatcher),
            (0, _) => Some(Wait::ScreenMoved),
            _ => None,
        }
    }

    fn on_blocked(
        &mut self,
        pane: &str,
        work: Work,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        if self.memory.escalated.contains_key(&EscalationKind::Blocked) {
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::Blocked,
            key: work.display(),
        };
        self.memory.apply(&latch_record);
        let context = Context::new(&self.profiles)
            .with_profile(self.forced_profile())
            .with_echo(&self.echo);
        let transition = classify::signals(pane, &context).transition;
        let last =
            transition.map_or_else(|| "none shown".to_string(), |t| t.text.trim().to_string());
        let message = format!(
            "BLOCKED on {}: the agent stopped and the work probe says nothing is left (work={}). \
             It was not nudged. Last transition: {last}",
            self.target,
            work.display()
        );
        actions.push(Action::Alert(Alert {
            state: State::Blocked,
            reason: "blocked",
            message,
            latch: Latch::Escalation(EscalationKind::Blocked),
            record: latch_record,
        }));
        done.push(Done::EscalatedBlocked);
    }

    /// New failure text, one latch per signal, never cleared on resume.
    fn report_new_failures(&mut self, pane: &str, actions: &mut Vec<Action>, done: &mut Vec<Done>) {
        let context = Context::new(&self.profiles)
            .with_profile(self.forced_profile())
            .with_echo(&self.echo);
        let failures = classify::signals(pane, &context).failures;
        for failure in failures {
            let signal = failure.kind.name().to_string();
            let text = failure.evidence.text.trim().to_string();
            if self.memory.failures.get(&signal) == Some(&text) {
                continue;
            }
            let latch_record = SessionRecord::FailureReported {
                signal: signal.clone(),
                text: text.clone(),
            };
            self.memory.apply(&latch_record);
            let state = self
                .last_verdict
                .as_ref()
                .map_or(State::Stalled, |v| v.state);
            let message = format!("new failure on {} ({signal}): {text}", self.target);
            actions.push(Action::Alert(Alert {
                state,
                reason: "failure",
                message,
                latch: Latch::Failure(signal.clone()),
                record: latch_record,
            }));
            done.push(Done::NewFailure {
                kind: failure.kind,
                text,
            });
        }
    }
}

/// Why a stop must not be typed into, and the words for it, if it must not:
/// the agent gone from the pane, a relay in front, a tmux mode or
/// synchronised panes taking the keys, or no input box the profile knows.
fn refusal_of(
    verdict: &Verdict,
    foreground: Option<&Foreground>,
    exited: Option<String>,
) -> Option<(Refusal, String)> {
    if let Some(gone) = exited {
        return Some((Refusal::AgentExited, format!("the agent exited: {gone}")));
    }
    if let Some(relay) = foreground.and_then(Foreground::relay) {
        let why = format!(
            "the pane runs {relay}, which relays a terminal this monitor cannot check (watch that session itself)"
        );
        return Some((Refusal::Relay, why));
    }
    if foreground.is_some_and(|f| f.in_mode) {
        let why =
            "the pane is in a tmux mode (copy mode): keys would go to the mode, not the agent";
        return Some((Refusal::PaneInMode, why.to_string()));
    }
    if foreground.is_some_and(|f| f.synchronized) {
        let why =
            "the window's panes are synchronised (synchronize-panes): a key would reach every pane";
        return Some((Refusal::Synchronized, why.to_string()));
    }
    (!verdict.input_box).then(|| (Refusal::NoInputBox, "no input box recognised".to_string()))
}

/// How many non-blank lines above the box count for whether a stop held
/// still: where a turn that ran between two polls leaves its end.
const NEWEST_LINES: usize = 3;

/// What a usage limit leaves the nudge to do.
enum LimitHold {
    /// Held, or escalated: nothing is typed this poll.
    Handled,
    /// The reset (this one) has passed: its one nudge is due.
    ResetPassed(Timestamp),
}

/// A hash of the text a pane shows, its SGR and other CSI sequences left
/// out, so the same screen redrawn in other ink hashes the same.
fn plain_hash(pane: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    let mut chars = pane.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        c.hash(&mut hasher);
    }
    hasher.finish()
}

/// The agent's `waiting` overruled a stop whose screen shows no input box the
/// profile knows: a dialog is up that the pane reader cannot read (one taller
/// than the pane, its key line cut off). Nothing on screen will change until a
/// human answers it, so it is relayed at once with what the screen shows, not
/// after [`STILL_PANE_PATIENCE`] polls, and stays a QUESTION while that holds.
/// With the box on screen the dialog may not be drawn yet: the patience holds.
fn waiting_without_a_box(verdict: &Verdict) -> bool {
    !verdict.input_box
}

/// The one key of a refused stop's escalation, whatever its reason.
const REFUSED_KEY: &str = "refused";

/// The built-in profiles, shared by every monitor that has no others.
pub fn builtin_profiles() -> std::sync::Arc<Profiles> {
    static BUILTIN: std::sync::OnceLock<std::sync::Arc<Profiles>> = std::sync::OnceLock::new();
    BUILTIN
        .get_or_init(|| std::sync::Arc::new(Profiles::builtin().clone()))
        .clone()
}

/// The last `count` non-blank lines of a pane, top to bottom.
fn bottom_lines(pane: &str, count: usize) -> Vec<String> {
    let mut lines: Vec<String> = pane
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(count)
        .map(|l| l.trim_end().to_string())
        .collect();
    lines.reverse();
    lines
}

/// A question's text without what moves while a human looks at it: the
/// selection cursor, check marks and radio dots. Moving the cursor or ticking
/// a box is the same question, escalated once.
fn question_text(dialog: &str) -> String {
    const MOVING: &[char] = &[
        '❯', '›', '>', '●', '○', '◯', '◉', '☐', '☒', '✔', '✓', '✗', '■', '□', '◼', '◻',
    ];
    dialog
        .lines()
        .map(|line| {
            let line = line
                .replace("[ ]", "")
                .replace("[x]", "")
                .replace("[X]", "")
                .replace("[✔]", "");
            line.chars()
                .filter(|c| !MOVING.contains(c))
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a pane shows an agent to watch: a profile recognises its screen
/// and tmux does not say a shell is its foreground program (an agent's last
/// frame above a shell prompt is an exited agent). At first sight, a target
/// whose active pane does not is searched for a pane that does.
pub fn shows_an_agent(text: &str, current_command: Option<&str>, profiles: &Profiles) -> bool {
    let shell_in_front = current_command.is_some_and(|command| {
        Foreground {
            command: command.to_string(),
            ..Foreground::default()
        }
        .idle_shell()
        .is_some()
    });
    !shell_in_front && classify::detect_profile(text, profiles).is_some()
}

/// Whether a probe command must run once per target: only one that reads
/// `BMB_TARGET` can answer differently for each; any other runs once a cycle.
pub fn probe_runs_per_target(command: &str) -> bool {
    command.contains("BMB_TARGET")
}

/// A stable key for a text (FNV-1a, so it survives a restart and a
/// rebuild): a question's, or a target's too long for a file name.
pub fn fingerprint(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.trim().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// A poll of `target` that read `state` from a permission dialog, for the
/// tests of what reads a poll's report (the board, the alerts).
#[cfg(test)]
pub(crate) fn sample_report(target: &str, state: Option<State>) -> PollReport {
    PollReport {
        target: target.into(),
        state,
        work: Work::Unknown,
        progress: None,
        nudges_used: 0,
        budget: 5,
        done: Vec::new(),
        rule: state.map(|_| "question-dialog"),
        evidence: state.map(|_| "Do you want to proceed?".to_string()),
        error: None,
        pane_state: state,
        witness: None,
        disagreements: 0,
        typing_safe: false,
        refusal: None,
        unrecognised: 0,
        agent_seen: false,
        deferred: None,
        held_until: None,
        held_until_epoch: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_probe_that_reads_its_target_runs_per_target() {
        assert!(probe_runs_per_target("grep -c . \"todo-$BMB_TARGET\""));
        assert!(probe_runs_per_target("count ${BMB_TARGET}"));
        assert!(!probe_runs_per_target("echo 3"));
    }

    /// Every `Done`, worded as the poll line and `--json` have always said it.
    #[test]
    fn each_thing_done_has_the_seeds_words() {
        let cases = [
            (
                Done::BudgetReset { from: 41, to: 42 },
                "nudge budget reset (progress 41 → 42)",
            ),
            (Done::CaptureFailed, "capture failed"),
            (
                Done::EscalatedUnreadablePane,
                "escalated: the pane cannot be read",
            ),
            (
                Done::WitnessesDisagree {
                    pane: State::Stalled,
                    witness: "busy",
                    so: Some(State::Working),
                },
                "witnesses disagree: the pane reads STALLED, Claude Code says busy, so WORKING",
            ),
            (
                Done::WitnessesDisagree {
                    pane: State::Working,
                    witness: "idle",
                    so: None,
                },
                "witnesses disagree: the pane reads WORKING, Claude Code says idle",
            ),
            (
                Done::PaneDecides { witness: "busy" },
                "Claude Code still says busy but the pane has not changed in 3 polls: the pane decides",
            ),
            (
                Done::QuestionPending,
                "question pending (the dialog is not on screen yet), not nudged",
            ),
            (
                Done::EscalatedQuestion,
                "escalated to the operator, NOT answered",
            ),
            (Done::Nudged { used: 2, budget: 5 }, "nudged (2/5)"),
            (Done::EscalatedBudgetSpent, "not nudged, escalated"),
            (Done::EscalatedBlocked, "not nudged, escalated"),
            (
                Done::Refused {
                    refusal: Refusal::NoInputBox,
                    why: "no input box recognised".into(),
                    escalated: true,
                },
                "not nudged (no input box recognised), escalated",
            ),
            (
                Done::Refused {
                    refusal: Refusal::NoInputBox,
                    why: "no input box recognised".into(),
                    escalated: false,
                },
                "not nudged (no input box recognised)",
            ),
            (
                Done::LikelyUiChange {
                    profile: "claude".into(),
                    version: Some("2.1.332".into()),
                },
                "likely UI change: the claude profile read this pane's input box before and cannot now (version 2.1.332)",
            ),
            (
                Done::LikelyUiChange {
                    profile: "codex".into(),
                    version: None,
                },
                "likely UI change: the codex profile read this pane's input box before and cannot now",
            ),
            (
                Done::NewFailure {
                    kind: FailureKind::ExitCode,
                    text: "Error: Exit code 2".into(),
                },
                "new failure (exit-code): Error: Exit code 2",
            ),
        ];
        for (done, words) in cases {
            assert_eq!(done.to_string(), words, "{done:?}");
        }
    }
}
