//! The session monitor's vocabulary: what it did in a poll, what it asks
//! the loop to do, and the poll line, each worded in one place (the seed's
//! words, unchanged on the MONITOR line and in `--json`).

use std::fmt;

use classify::{FailureKind, State, Work};
use ledger::session::{EscalationKind, SessionRecord};

use super::STILL_PANE_PATIENCE;

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
    /// The machine word (`--json`'s `refusal` and `not_typed_because`;
    /// `BMB_REASON` through [`Reason::Refused`]).
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

/// Why the operator was told: the machine word of an escalation
/// (`BMB_REASON`, the metrics' `reason` label) and the alert name an alert
/// manager routes, silences and groups on. Both are worded here only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// A dialog or question waits for a human (`question`).
    Question,
    /// Stopped with nothing left to do (`blocked`).
    Blocked,
    /// The nudge budget ran out without progress (`escalate_to_human`).
    BudgetSpent,
    /// A stop that must not be typed into, worded by its refusal.
    Refused(Refusal),
    /// The pane could not be captured for several polls (`capture_failed`).
    CaptureFailed,
    /// New failure text on screen (`failure`).
    Failure,
    /// A draft waits in the box of a stop due a nudge (`draft`).
    Draft,
    /// A usage limit that cannot be waited out (`usage_limit`).
    UsageLimit,
}

impl Reason {
    /// Every reason the session monitor gives, for what lists them all
    /// (the alert names a kept alert may carry, the tests).
    pub const ALL: [Reason; 12] = [
        Reason::Question,
        Reason::Blocked,
        Reason::BudgetSpent,
        Reason::Refused(Refusal::NoInputBox),
        Reason::Refused(Refusal::AgentExited),
        Reason::Refused(Refusal::Relay),
        Reason::Refused(Refusal::PaneInMode),
        Reason::Refused(Refusal::Synchronized),
        Reason::CaptureFailed,
        Reason::Failure,
        Reason::Draft,
        Reason::UsageLimit,
    ];

    /// The machine word (`BMB_REASON`, the metrics' `reason` label, the
    /// alert line on stderr).
    pub fn word(self) -> &'static str {
        match self {
            Reason::Question => "question",
            Reason::Blocked => "blocked",
            Reason::BudgetSpent => "escalate_to_human",
            Reason::Refused(refusal) => refusal.word(),
            Reason::CaptureFailed => "capture_failed",
            Reason::Failure => "failure",
            Reason::Draft => "draft",
            Reason::UsageLimit => "usage_limit",
        }
    }

    /// The alert name (`alertname`) an alert manager routes on.
    pub fn alert_name(self) -> &'static str {
        match self {
            Reason::Question => "BmbQuestion",
            Reason::Blocked => "BmbBlocked",
            Reason::BudgetSpent => "BmbBudgetSpent",
            Reason::Refused(Refusal::NoInputBox) => "BmbUnreadableScreen",
            Reason::Refused(Refusal::AgentExited) => "BmbAgentGone",
            Reason::Refused(Refusal::Relay) => "BmbRelayInFront",
            Reason::Refused(Refusal::PaneInMode) => "BmbPaneInMode",
            Reason::Refused(Refusal::Synchronized) => "BmbPanesSynchronized",
            Reason::CaptureFailed => "BmbCaptureFailing",
            Reason::Failure => "BmbNewFailure",
            Reason::Draft => "BmbDraftWaiting",
            Reason::UsageLimit => "BmbUsageLimit",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

impl Reason {
    /// The reason whose [`word`](Reason::word) this is; `None` for a word
    /// this build does not give (one a newer monitor wrote).
    pub fn from_word(word: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|reason| reason.word() == word)
    }
}

/// Ordered by their words, so a map keyed by reasons lists them as a map
/// keyed by their words did (the board's JSON, the metrics' order).
impl Ord for Reason {
    fn cmp(&self, other: &Reason) -> std::cmp::Ordering {
        self.word().cmp(other.word())
    }
}

impl PartialOrd for Reason {
    fn partial_cmp(&self, other: &Reason) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Written as its word, on the wire as in `BMB_REASON`.
impl serde::Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.word())
    }
}

/// Read from its word; a word this build does not give is an error naming it.
impl<'de> serde::Deserialize<'de> for Reason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Reason, D::Error> {
        let word = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Reason::from_word(&word)
            .ok_or_else(|| serde::de::Error::custom(format_args!("no reason is called {word:?}")))
    }
}

/// What the monitor did in one poll, in the order it did it. Each is
/// worded in one place (its `Display`), and the poll line and `--json` carry
/// those words unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Done {
    /// The progress probe advanced: the nudge budget starts over.
    BudgetReset {
        /// The high-water mark before.
        from: u64,
        /// The reading that passed it.
        to: u64,
    },
    /// A person's key in the session: the nudge budget starts over.
    BudgetRenewed,
    /// The pane could not be captured this poll.
    CaptureFailed,
    /// Captures failed for [`CAPTURE_FAILURE_PATIENCE`](super::CAPTURE_FAILURE_PATIENCE) polls in a row: the operator was told.
    EscalatedUnreadablePane,
    /// The pane and the agent's own account disagree (said once per pair):
    /// what each says, and the state that was taken if it is not the pane's.
    WitnessesDisagree {
        /// What the pane reads.
        pane: State,
        /// What the agent's own account says.
        witness: &'static str,
        /// The state taken, when it is not the pane's.
        so: Option<State>,
    },
    /// The agent still says it is busy, but the pane has not moved for
    /// [`STILL_PANE_PATIENCE`] polls: the pane decides from now on.
    PaneDecides {
        /// What the agent's own account still says.
        witness: &'static str,
    },
    /// The agent waits for a human, its dialog not drawn yet: not nudged.
    QuestionPending,
    /// A question was relayed to the operator, not answered.
    EscalatedQuestion,
    /// A nudge was typed: the `used`-th of `budget`.
    Nudged {
        /// Nudges used, this one among them.
        used: u32,
        /// The budget.
        budget: u32,
    },
    /// The budget ran out without progress: escalated to a human, not nudged.
    EscalatedBudgetSpent,
    /// Nothing is left to do: escalated, never nudged.
    EscalatedBlocked,
    /// A stop that must not be typed into, with why; escalated the first time.
    Refused {
        /// Why it must not be typed into.
        refusal: Refusal,
        /// The words for it, on the poll line.
        why: String,
        /// Whether this poll escalated it (the first time).
        escalated: bool,
    },
    /// The profile read this pane's input box before and cannot now, with
    /// the same program in front: likely a UI change of the CLI (said once).
    LikelyUiChange {
        /// The profile that read the box before.
        profile: String,
        /// The CLI's version, where its own files give it.
        version: Option<String>,
    },
    /// New failure text for one signal.
    NewFailure {
        /// The failure signal.
        kind: FailureKind,
        /// Its text on screen.
        text: String,
    },
    /// A stop that would be nudged, not typed into this poll, and why.
    NotYet(Wait),
    /// A draft waits in the box (a person's, or `own`: this monitor's unsent
    /// nudge): not typed into; escalated the first poll it held still.
    DraftWaiting {
        /// The draft is this monitor's own unsent nudge.
        own: bool,
        /// Whether this poll escalated it.
        escalated: bool,
    },
    /// A usage limit holds the stop until its reset (`HH:MM`): neither
    /// nudged nor escalated; said when it starts or changes.
    Held {
        /// The reset, `HH:MM` local.
        until: String,
    },
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
/// An escalation for the operator, with the latch it set.
pub struct Alert {
    /// The verdict that caused it (`BMB_STATE`).
    pub state: State,
    /// Why the operator is told ([`Reason::word`] is `BMB_REASON`).
    pub reason: Reason,
    /// The message, unsanitised: the sink strips or escapes it for its medium.
    pub message: String,
    /// What the monitor latched when it decided to send this; a delivery
    /// that fails is handed back to [`TargetMonitor::alert_failed`](super::TargetMonitor::alert_failed).
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
    /// An escalation of this kind.
    Escalation(EscalationKind),
    /// A failure signal's name.
    Failure(String),
}

/// One poll's line: every field, every time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollReport {
    /// The target as given.
    pub target: String,
    /// `None` when the pane could not be captured.
    pub state: Option<State>,
    /// The work probe's reading.
    pub work: Work,
    /// The progress probe's reading, if usable.
    pub progress: Option<u64>,
    /// Nudges used of the budget after this poll.
    pub nudges_used: u32,
    /// The nudge budget.
    pub budget: u32,
    /// What was done this poll, in order (each renders to the seed's words).
    pub done: Vec<Done>,
    /// The rule and evidence line of the verdict, for `--json`.
    pub rule: Option<&'static str>,
    /// The verdict's evidence line.
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
    /// The report of a poll of `target` that read nothing and did nothing:
    /// no state, the work unknown, no nudge used of `budget`, every other
    /// field empty. What a caller fills in the rest of (a test's report, an
    /// embedder's).
    pub fn unread(target: String, budget: u32) -> PollReport {
        PollReport {
            target,
            state: None,
            work: Work::Unknown,
            progress: None,
            nudges_used: 0,
            budget,
            done: Vec::new(),
            rule: None,
            evidence: None,
            error: None,
            pane_state: None,
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

/// A poll of `target` that read `state` from a permission dialog, for the
/// tests of what reads a poll's report (the board, the alerts).
#[cfg(test)]
pub(crate) fn sample_report(target: &str, state: Option<State>) -> PollReport {
    PollReport {
        state,
        rule: state.map(|_| "question-dialog"),
        evidence: state.map(|_| "Do you want to proceed?".to_string()),
        pane_state: state,
        ..PollReport::unread(target.into(), 5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reason with the word `BMB_REASON` and the metrics have always
    /// carried (README lists them) and an alert name of its own.
    #[test]
    fn every_reason_has_its_word_and_its_own_alert_name() {
        let cases = [
            (Reason::Question, "question", "BmbQuestion"),
            (Reason::Blocked, "blocked", "BmbBlocked"),
            (Reason::BudgetSpent, "escalate_to_human", "BmbBudgetSpent"),
            (
                Reason::Refused(Refusal::NoInputBox),
                "unreadable",
                "BmbUnreadableScreen",
            ),
            (
                Reason::Refused(Refusal::AgentExited),
                "agent_exited",
                "BmbAgentGone",
            ),
            (Reason::Refused(Refusal::Relay), "relay", "BmbRelayInFront"),
            (
                Reason::Refused(Refusal::PaneInMode),
                "pane_in_mode",
                "BmbPaneInMode",
            ),
            (
                Reason::Refused(Refusal::Synchronized),
                "synchronized",
                "BmbPanesSynchronized",
            ),
            (Reason::CaptureFailed, "capture_failed", "BmbCaptureFailing"),
            (Reason::Failure, "failure", "BmbNewFailure"),
            (Reason::Draft, "draft", "BmbDraftWaiting"),
            (Reason::UsageLimit, "usage_limit", "BmbUsageLimit"),
        ];
        assert_eq!(
            cases.map(|(reason, _, _)| reason),
            Reason::ALL,
            "ALL lists every reason once"
        );
        for (reason, word, name) in cases {
            assert_eq!(
                (reason.word(), reason.alert_name()),
                (word, name),
                "{reason:?}"
            );
            assert_eq!(reason.to_string(), word);
        }
        let mut names = Reason::ALL.map(Reason::alert_name).to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len(), "one alert name per reason");
        for reason in Reason::ALL {
            assert_eq!(Reason::from_word(reason.word()), Some(reason));
            let json = serde_json::to_string(&reason).unwrap();
            assert_eq!(json, format!("\"{}\"", reason.word()));
            assert_eq!(serde_json::from_str::<Reason>(&json).unwrap(), reason);
        }
        assert_eq!(Reason::from_word("audit"), None);
        let unknown = serde_json::from_str::<Reason>("\"later\"").unwrap_err();
        assert!(
            unknown
                .to_string()
                .contains(r#"no reason is called "later""#),
            "{unknown}"
        );
        // Ordered as their words are (one word per reason, so Ord agrees with Eq).
        let mut sorted = Reason::ALL.to_vec();
        sorted.sort();
        let mut words = Reason::ALL.map(Reason::word).to_vec();
        words.sort_unstable();
        words.dedup();
        assert_eq!(
            sorted.into_iter().map(Reason::word).collect::<Vec<_>>(),
            words
        );
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
