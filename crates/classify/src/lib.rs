//! Pure classification of an agent CLI's pane: is the agent WORKING, asking a
//! QUESTION, or stopped (STALLED with work left, BLOCKED with none)?
//!
//! An embedder captures a pane, asks its work probe how much is left, and
//! acts on the state. The echo ledger is what it typed into that pane
//! itself: its own words coming back as pane text are never a signal (a
//! nudge that quotes a dialog's hint must not read as that dialog).
//!
//! ```
//! use bmb_classify::{Context, Echo, Profiles, State, Work, classify_with};
//!
//! /// What the embedder does about one pane.
//! fn act(pane: &str, work: Work, echo: &Echo) -> String {
//!     let context = Context::new(Profiles::builtin()).with_echo(echo);
//!     let verdict = classify_with(pane, work, &context);
//!     match verdict.state {
//!         State::Working => "stay silent".to_string(),
//!         // Relayed verbatim, never answered.
//!         State::Question => format!("relay to a human: {}", verdict.dialog.join(" | ")),
//!         // A nudge is typed only into the live input box.
//!         State::Stalled if verdict.typing_safe() => "nudge".to_string(),
//!         State::Stalled => {
//!             let why = verdict.typing_refusal().unwrap_or_default();
//!             format!("escalate, never type: {why}")
//!         }
//!         State::Blocked => format!("escalate ({}), never nudge", verdict.rule.name()),
//!     }
//! }
//!
//! let input_box = "────────\n❯\u{a0}\n────────\n  ? for shortcuts\n";
//! let working = "✢ Incubating… (5s)\n────────\n❯\u{a0}\n────────\n  esc to interrupt\n";
//! let dialog = "Should the monitor page at once?\n❯ 1. Yes\n  2. No\n\
//!               Enter to select · ↑/↓ to navigate · Esc to cancel\n";
//! let nothing_sent = Echo::default();
//!
//! assert_eq!(act(working, Work::Available(3), &nothing_sent), "stay silent");
//! let relayed = act(dialog, Work::Available(3), &nothing_sent);
//! assert!(relayed.starts_with("relay to a human: Should the monitor page at once? | ❯ 1. Yes"));
//! assert_eq!(act(input_box, Work::parse("3"), &nothing_sent), "nudge");
//! assert_eq!(act(input_box, Work::parse("0"), &nothing_sent), "escalate (no-work), never nudge");
//!
//! // The pane now shows a nudge the embedder typed, which quotes a dialog's hint.
//! let nudge = "if a dialog says Enter to select · ↑/↓ to navigate, wait for the operator";
//! let echoed = format!("● Step one is done.\n\n  {nudge}\n");
//! assert!(act(&echoed, Work::Available(3), &nothing_sent).starts_with("relay to a human"));
//! let sent = Echo::new([nudge]);
//! assert_eq!(
//!     act(&echoed, Work::Available(3), &sent),
//!     "escalate, never type: no input box recognised"
//! );
//! ```
//!
//! **Architecture Invariant:** this crate is a pure function of its inputs. It
//! does no I/O, reads no clock, and never panics: every input, however
//! malformed, produces a verdict with the rule that decided it and the line
//! that was the evidence. Callers holding bytes decode them lossily first
//! (`String::from_utf8_lossy`).
//!
//! Only the tail of the pane is read, walking up from the bottom as far as the
//! structure needs, so a 10,000-line scrollback costs about what one screen
//! does.

mod echo;
mod explain;
mod ink;
mod profile;
mod reader;
mod rule;
mod signals;
mod tail;
mod work;

pub use echo::Echo;
pub use explain::explain;
pub use profile::{Profile, ProfileError, Profiles};
pub use reader::detect_profile;
pub use rule::{Region, RegionKind, Rule};
pub use signals::{Failure, FailureKind, Signals, signals};
pub use work::{Work, parse_count};

use std::fmt;

/// The session monitor's four states (seed `omega-session-monitor.txt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// A turn is rendering: stay silent.
    Working,
    /// A dialog waits for a human: relay it verbatim, never answer it.
    Question,
    /// Stopped with work left (or unknown work): nudge, within a budget.
    Stalled,
    /// Stopped with nothing left to do: escalate, never nudge.
    Blocked,
}

impl State {
    /// Every state, in precedence order (the order tables and summaries list them in).
    pub const ALL: [State; 4] = [
        State::Working,
        State::Question,
        State::Stalled,
        State::Blocked,
    ];

    /// The state's word, exactly as the seed prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Working => "WORKING",
            State::Question => "QUESTION",
            State::Stalled => "STALLED",
            State::Blocked => "BLOCKED",
        }
    }

    /// Parses the seed's word (`WORKING`, …); anything else is `None`.
    pub fn from_word(word: &str) -> Option<State> {
        State::ALL.into_iter().find(|state| state.as_str() == word)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The line a verdict rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// Byte offset of the line's start in the pane that was classified.
    pub offset: usize,
    /// The line after normalisation (escapes stripped, trailing blanks trimmed).
    pub text: String,
}

impl Evidence {
    /// The 1-based line number of the evidence in `pane` (the same pane that
    /// was classified). Counting lines costs a pass over the pane, so the
    /// classifier leaves it to callers that want to print it.
    pub fn line_number(&self, pane: &str) -> usize {
        let end = self.offset.min(pane.len());
        pane.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }
}

/// What the classifier decided, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What the pane is doing: what the embedder acts on.
    pub state: State,
    /// The name of the profile that read the pane (`claude`, …).
    pub profile: String,
    /// The rule that decided the state.
    pub rule: Rule,
    /// The region of the pane the rule looked at.
    pub region: Region,
    /// The line the rule matched; `None` only for an empty pane.
    pub evidence: Option<Evidence>,
    /// For a QUESTION, the dialog's lines, top to bottom, as shown (the text
    /// to relay verbatim). Empty otherwise.
    pub dialog: Vec<String>,
    /// The live input box (or input line) of the profile is on screen. Only
    /// then can a keystroke land where the agent reads a prompt; anywhere
    /// else (a dialog no profile knows, a pager, a shell, another CLI) it can
    /// answer a dialog or run as a command.
    pub input_box: bool,
    /// For a stop, what the profile says the nudge should add (its
    /// `stop_note` for a line of the live chrome, e.g. "a background
    /// terminal is still running: check it with /ps"). `None` otherwise.
    pub note: Option<String>,
    /// What the live input box holds; [`BoxText::Empty`] when no box is on screen.
    pub box_text: BoxText,
    /// For a stop, the CLI's own words that a usage limit stopped it (its
    /// profile's `usage_limit`), newest first on screen. `None` otherwise.
    pub usage_limit: Option<UsageLimit>,
}

/// What the live input box holds, as far as the pane tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum BoxText {
    /// Nothing (or no box on screen).
    #[default]
    Empty,
    /// Only the CLI's own placeholder: faint ink where the capture carries
    /// it (`capture-pane -e`), else the profile's `placeholder` text.
    Placeholder,
    /// Only text the monitor itself typed and that was not sent (the echo
    /// ledger knows it): it never gets a second copy.
    OwnText,
    /// A person's draft, its lines joined with newlines: never typed over.
    Draft(String),
}

impl BoxText {
    /// The box takes a keystroke without joining anyone's text.
    pub fn is_empty(&self) -> bool {
        matches!(self, BoxText::Empty | BoxText::Placeholder)
    }
}

/// A CLI's own words that its usage limit stopped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageLimit {
    /// The line, normalised (`⎿  You've hit your 5-hour limit · resets 1am (Asia/Tbilisi)`).
    pub line: String,
    /// When it resets, as printed (`1am (Asia/Tbilisi)`, `in 2 days 17 hours`);
    /// `None` when the line gives no time the profile can cut out.
    pub reset: Option<String>,
}

impl Verdict {
    /// Whether a nudge may be typed, as far as the pane tells: a stop, with
    /// the live input box recognised. A monitor must also know that the agent
    /// still runs in the pane (its last frame can outlive it, with a shell
    /// under it): the pane alone cannot say that.
    pub fn typing_safe(&self) -> bool {
        matches!(self.state, State::Stalled | State::Blocked)
            && self.input_box
            && self.box_text.is_empty()
    }

    /// Why typing is not safe, as far as the pane tells; `None` when it is.
    pub fn typing_refusal(&self) -> Option<&'static str> {
        match self.state {
            State::Working => Some("a turn is running"),
            State::Question => Some("a dialog waits for a human"),
            State::Stalled | State::Blocked if !self.input_box => Some("no input box recognised"),
            State::Stalled | State::Blocked => match self.box_text {
                BoxText::Empty | BoxText::Placeholder => None,
                BoxText::Draft(_) => Some("a draft is waiting in the box"),
                BoxText::OwnText => Some("the box holds this monitor's own text, not sent"),
            },
        }
    }

    /// [`Verdict::typing_refusal`] as a machine word (`--json`'s
    /// `not_typed_because`): `working`, `question`, `unreadable` or `draft`.
    pub fn typing_refusal_word(&self) -> Option<&'static str> {
        match self.state {
            State::Working => Some("working"),
            State::Question => Some("question"),
            State::Stalled | State::Blocked if !self.input_box => Some("unreadable"),
            State::Stalled | State::Blocked if !self.box_text.is_empty() => Some("draft"),
            State::Stalled | State::Blocked => None,
        }
    }
}

/// What the richer entry point needs beside the pane: the profiles `auto`
/// chooses among, the profile to read with (or `auto`), and what the monitor
/// itself typed. Built from [`Context::new`] (or `Context::default()`, the
/// built-ins) and the `with_` methods, so a new setting is never a breaking change.
///
/// ```
/// use bmb_classify::{Context, Echo, Profiles, State, Work};
///
/// let profiles = Profiles::builtin();
/// // What the monitor typed comes back in the pane: it is never a signal.
/// let echo = Echo::new(["Please continue with the next step of your plan."]);
/// let context = Context::new(profiles)
///     .with_profile(profiles.get("claude"))
///     .with_echo(&echo);
/// let pane = "────────\n❯\u{a0}\n────────\n  ? for shortcuts\n";
/// let verdict = bmb_classify::classify_with(pane, Work::parse("3"), &context);
/// assert_eq!(verdict.state, State::Stalled);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The profile to read the pane with; `None` picks one from the pane (`auto`).
    pub(crate) profile: Option<&'a Profile>,
    /// The profiles `auto` chooses among.
    pub(crate) profiles: &'a Profiles,
    /// What the monitor itself typed into this pane, excluded before matching.
    pub(crate) echo: &'a Echo,
}

impl<'a> Context<'a> {
    /// Reads with the profile `auto` picks among `profiles`, excluding nothing.
    pub fn new(profiles: &'a Profiles) -> Context<'a> {
        Context {
            profile: None,
            profiles,
            echo: &echo::NO_ECHO,
        }
    }

    /// Reads the pane with `profile`; `None` lets `auto` pick one from the pane.
    pub fn with_profile(self, profile: impl Into<Option<&'a Profile>>) -> Context<'a> {
        Context {
            profile: profile.into(),
            ..self
        }
    }

    /// Excludes what the monitor typed into this pane before matching.
    pub fn with_echo(self, echo: &'a Echo) -> Context<'a> {
        Context { echo, ..self }
    }
}

/// The built-in profiles, `auto`, no echo: what [`classify`] reads with.
impl Default for Context<'static> {
    fn default() -> Self {
        Context::new(Profiles::builtin())
    }
}

/// The text as a terminal would show it, line by line: escape sequences,
/// carriage returns and control characters removed (what the rules read),
/// and the bidirectional overrides and isolates too, which would let pane text
/// reorder what a human reads in a relay. For relaying pane text to a human
/// or a chat without any of them.
pub fn plain_text(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            tail::normalize(line)
                .chars()
                .filter(|c| !is_bidi_control(*c))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// U+202A-U+202E (embeddings, overrides), U+2066-U+2069 (isolates), the
/// marks U+200E, U+200F and U+061C.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// Classifies a pane with the auto profile and no echo slices (the seed's entry point).
pub fn classify(pane: &str, work: Work) -> Verdict {
    classify_with(pane, work, &Context::default())
}

/// Classifies a pane with an explicit context: the profile (or auto) and the echo slices.
pub fn classify_with(pane: &str, work: Work, context: &Context<'_>) -> Verdict {
    reader::classify(pane, work, context)
}
