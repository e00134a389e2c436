//! Failure and transition signals read from the transcript above the input box.
//!
//! Failures are the exact strings runners print, with their punctuation
//! (seed defect 4: a bare `MISSING` fired on the prose "missing redirect",
//! `is RED` on "is REDundant"). Each kind is reported on its own, so a monitor
//! can keep one latch per signal (seed defect 2). Completed task lines are
//! dropped before the transition is read, so the in-progress line is the one
//! reported (seed defect 6).

use std::sync::OnceLock;

use regex::Regex;

use crate::reader::{Reader, matches_opt};
use crate::{Context, Evidence};

/// The current screen's transcript: at most this many lines above the bottom.
const TRANSCRIPT_MAX_LINES: usize = 120;

/// A runner's failure string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum FailureKind {
    /// `MISSING ROW:`
    MissingRow,
    /// `is RED.`
    IsRed,
    /// `exit code N` with N ≥ 1 ending a line, or `Error: Exit code N` as Claude Code's Bash tool prints it.
    ExitCode,
    /// `Traceback (most recent call last):`
    Traceback,
}

impl FailureKind {
    /// Every kind, in the order a screen's failures are reported.
    pub const ALL: [FailureKind; 4] = [
        FailureKind::MissingRow,
        FailureKind::IsRed,
        FailureKind::ExitCode,
        FailureKind::Traceback,
    ];

    /// A short stable name, for `--json` and snapshots.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::MissingRow => "missing-row",
            FailureKind::IsRed => "is-red",
            FailureKind::ExitCode => "exit-code",
            FailureKind::Traceback => "traceback",
        }
    }

    fn regex(self) -> &'static Regex {
        static REGEXES: OnceLock<[Regex; 4]> = OnceLock::new();
        let regexes = REGEXES.get_or_init(|| {
            FailureKind::ALL.map(|kind| {
                let pattern = match kind {
                    FailureKind::MissingRow => r"MISSING ROW:",
                    FailureKind::IsRed => r"\bis RED\.",
                    // As runners end a line with it (`Error: Exit code 1` from Claude
                    // Code's Bash tool, `... failed with exit code 2`), never prose
                    // that goes on (`returns exit code 1 when nothing matches`).
                    FailureKind::ExitCode => {
                        r"(?:Error: Exit code [1-9][0-9]*|(?-u:\b)[Ee]xit code [1-9][0-9]*\s*$)"
                    }
                    FailureKind::Traceback => r"Traceback \(most recent call last\):",
                };
                Regex::new(pattern).expect("the failure patterns are literals checked by tests")
            })
        });
        &regexes[self as usize]
    }
}

/// One failure kind's newest line on the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// Which runner failure string it is.
    pub kind: FailureKind,
    /// The line that carries it, and where it sits in the pane.
    pub evidence: Evidence,
}

/// What the screen's transcript says beside its state: the failures a runner printed and the
/// task in progress, for a monitor's report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Signals {
    /// At most one entry per kind: the bottom-most line of that kind.
    pub failures: Vec<Failure>,
    /// What is happening now: the newest task in progress, else the newest
    /// one still open, else the agent's newest reply line; completed tasks never.
    pub transition: Option<Evidence>,
}

/// Reads the failure and transition signals of the current screen's
/// transcript (above the input box when there is one), echo excluded.
pub fn signals(pane: &str, context: &Context<'_>) -> Signals {
    let mut reader = Reader::new(pane, context);
    let profile = reader.profile;
    // The box holds what a person typed: start above it.
    let start = reader.find_input_box().map_or(0, |input| input.top + 1);
    let mut signals = Signals::default();
    let (mut active, mut open, mut said) = (None, None, None);
    for i in start..start + TRANSCRIPT_MAX_LINES {
        let Some(line) = reader.tail.get(i) else {
            break;
        };
        let text = &*line.text;
        if text.is_empty() || reader.echo.matches(text) {
            continue;
        }
        let evidence = || Evidence {
            offset: line.offset,
            text: text.to_string(),
        };
        for kind in FailureKind::ALL {
            let fresh = !signals.failures.iter().any(|f| f.kind == kind);
            if fresh && kind.regex().is_match(text) {
                signals.failures.push(Failure {
                    kind,
                    evidence: evidence(),
                });
            }
        }
        if matches_opt(&profile.task_done, text) {
            continue;
        }
        if active.is_none() && matches_opt(&profile.task_active, text) {
            active = Some(evidence());
        } else if open.is_none() && matches_opt(&profile.task_open, text) {
            open = Some(evidence());
        } else if said.is_none() && matches_opt(&profile.reply, text) {
            said = Some(evidence());
        }
    }
    // What is happening now: the task in progress, else the next one open,
    // else, with no task list on screen, what the agent said last.
    signals.transition = active.or(open).or(said);
    signals.failures.sort_by_key(|f| f.kind);
    signals
}

#[cfg(test)]
mod tests {
    use super::{FailureKind, signals};
    use crate::Context;

    fn failures(pane: &str) -> Vec<(FailureKind, String)> {
        signals(pane, &Context::default())
            .failures
            .into_iter()
            .map(|f| (f.kind, f.evidence.text))
            .collect()
    }

    #[test]
    fn runner_strings_with_their_punctuation_are_failures() {
        let pane = "MISSING ROW: step 4\nthe build is RED.\n  ⎿  Error: Exit code 2\nTraceback (most recent call last):\n";
        let kinds: Vec<FailureKind> = failures(pane).into_iter().map(|(k, _)| k).collect();
        assert_eq!(kinds, FailureKind::ALL);
    }

    #[test]
    fn prose_that_shares_a_word_is_not_a_failure() {
        let pane = "fixed the missing redirect\nthis check is REDundant\nthe exit code 0 is fine\nno Traceback here\nMISSING rows\n● grep -c returns exit code 1 when nothing matches\n";
        assert_eq!(failures(pane), []);
    }

    #[test]
    fn each_kind_reports_its_newest_line_only() {
        let pane = "exit code 1\nexit code 3\n";
        assert_eq!(
            failures(pane),
            [(FailureKind::ExitCode, "exit code 3".to_string())]
        );
    }

    #[test]
    fn completed_tasks_are_dropped_before_the_transition_is_read() {
        let context = Context::default();
        let pane = "  ⎿  ☐ Write the parser\n     ☐ Run the tests\n     ☒ Read the seed\n     ☒ Sketch the crates\n";
        let transition = signals(pane, &context).transition.unwrap();
        assert_eq!(transition.text, "     ☐ Run the tests");
        // Claude Code 2.1.197, from testdata/panes/claude/idle-with-task-list.
        let pane = "  3 tasks (1 done, 1 in progress, 1 open)\n  ✔ Write the pane normaliser\n  ◼ Cut the input box\n  ◻ Add golden captures\n";
        let transition = signals(pane, &context).transition.unwrap();
        assert_eq!(transition.text, "  ◼ Cut the input box");
        // No task list: what the agent said last.
        let pane = "● Ran the suite: 3 failed.\n  ⎿  Exit code 1\n● All three fail on the fixture path.\n\n✻ Worked for 9s\n";
        let transition = signals(pane, &context).transition.unwrap();
        assert_eq!(transition.text, "● All three fail on the fixture path.");
    }

    #[test]
    fn text_inside_the_input_box_is_never_a_signal() {
        let pane = "⏺ done\n\n────────────\n❯\u{a0}Traceback (most recent call last):\n────────────\n  ? for shortcuts\n";
        assert_eq!(failures(pane), []);
    }
}
