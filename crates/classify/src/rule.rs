//! The vocabulary of a verdict's evidence: the rule that decided it and the
//! region of the screen that rule read. The reader (`reader.rs`) picks them;
//! callers name them in `--explain`, `--json` and snapshots.

use std::fmt;

/// The rule that decided a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// The spinner row just above the input box is live.
    Spinner,
    /// The status bar under the input box says a turn is rendering.
    BusyFooter,
    /// Background shells or agents are still running.
    BackgroundWork,
    /// A typed draft blanked the status bar while a reply streams: the
    /// transcript ends in a reply with no turn-end line under it.
    StreamingUnderDraft,
    /// The transcript ends in a reply with no turn-end line under it, for a
    /// CLI that hides its status row while a reply streams (Codex).
    StreamingReply,
    /// One line carries both `Enter to select` and `to navigate` (seed rule).
    SelectHint,
    /// A permission dialog: `Do you want to …?` over numbered options with a cursor.
    PermissionDialog,
    /// A choice dialog: numbered options with a selection cursor, where the input box should be.
    ChoiceDialog,
    /// A CLI without an input box asks a yes/no question inline on its last line (Aider).
    InlineQuestion,
    /// A CLI without an input box is printing: its input line is not the last line.
    NoInputLine,
    /// A stop, and the work probe printed a positive count.
    WorkAvailable,
    /// A stop, and the work probe printed 0.
    NoWork,
    /// A stop, and the work probe's answer is missing or unreadable: fail open.
    WorkUnknown,
}

impl Rule {
    /// WORKING read from the transcript's shape (a reply with nothing under
    /// it, output where the input line should be) rather than from live
    /// chrome: a turn that runs changes the screen, so a monitor that sees
    /// the same screen poll after poll should stop believing it.
    pub fn infers_activity(self) -> bool {
        matches!(
            self,
            Rule::StreamingUnderDraft | Rule::StreamingReply | Rule::NoInputLine
        )
    }

    /// A short stable name, for `--explain`, `--json` and snapshots.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Spinner => "live-spinner",
            Rule::BusyFooter => "busy-footer",
            Rule::BackgroundWork => "background-work",
            Rule::StreamingUnderDraft => "streaming-under-draft",
            Rule::StreamingReply => "streaming-reply",
            Rule::SelectHint => "select-hint",
            Rule::PermissionDialog => "permission-dialog",
            Rule::ChoiceDialog => "choice-dialog",
            Rule::InlineQuestion => "inline-question",
            Rule::NoInputLine => "no-input-line",
            Rule::WorkAvailable => "work-available",
            Rule::NoWork => "no-work",
            Rule::WorkUnknown => "work-unknown",
        }
    }

    /// One sentence on what the rule means.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Spinner => {
                "the spinner row just above the input box is live, so a turn is rendering"
            }
            Rule::BusyFooter => "the status bar under the input box says a turn is rendering",
            Rule::BackgroundWork => "background work is still running, which is not a stop",
            Rule::StreamingUnderDraft => {
                "a draft in the input box hides the status bar, and the transcript ends in a reply with no turn-end line, so it is still streaming"
            }
            Rule::StreamingReply => {
                "the transcript ends in a reply with no turn-end line under it, so it is still streaming"
            }
            Rule::SelectHint => {
                "one line carries a selection hint (`Enter to select` with `to navigate`, or the CLI's own), as only a live question does"
            }
            Rule::PermissionDialog => {
                "a permission dialog asks a question over numbered options with a cursor"
            }
            Rule::ChoiceDialog => {
                "a menu of numbered options with a selection cursor replaced the input box"
            }
            Rule::InlineQuestion => {
                "the last line is a question asked inline, where the input line would be"
            }
            Rule::NoInputLine => {
                "the CLI prints its input line last whenever it waits, and the last line is output, so a turn is still printing"
            }
            Rule::WorkAvailable => {
                "no live chrome and no question; the work probe says work is left"
            }
            Rule::NoWork => "no live chrome and no question; the work probe says nothing is left",
            Rule::WorkUnknown => {
                "no live chrome and no question; the work probe gave no number, so assume work (fail open)"
            }
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a rule looked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Which part of the screen it is.
    pub kind: RegionKind,
    /// Byte offset of the region's first (top) line in the pane.
    pub first: usize,
    /// Byte offset of the region's last (bottom) line in the pane.
    pub last: usize,
}

/// The parts of an agent CLI's screen a rule can read, each where one kind of signal is live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RegionKind {
    /// The rows just above the input box, where the spinner lives.
    LiveRows,
    /// The status bar under the input box.
    Footer,
    /// The live input box: what a person typed, never a signal.
    InputBox,
    /// A dialog that replaced the input box.
    Dialog,
    /// The last lines of a pane that has no input box.
    Bottom,
    /// Nothing but blank lines.
    Empty,
}

impl RegionKind {
    /// How `--explain` names the region to a person.
    pub fn name(self) -> &'static str {
        match self {
            RegionKind::LiveRows => "live rows above the input box",
            RegionKind::Footer => "status bar under the input box",
            RegionKind::InputBox => "input box",
            RegionKind::Dialog => "dialog (from its top rule line down)",
            RegionKind::Bottom => "bottom lines (no input box found)",
            RegionKind::Empty => "empty pane",
        }
    }
}
