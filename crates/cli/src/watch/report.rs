//! The poll line: the seed's MONITOR line, or one JSON object with `--json`.

use watchdog::session::PollReport;

use crate::output::print;
use watchdog::Clock;

use crate::alert::sanitize_text;
use crate::clock::SystemClock;

/// Which poll lines are printed (`log` in a config file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum LogMode {
    /// The seed's line per target per poll.
    #[default]
    Polls,
    /// A target's line only when its state changed since its last poll, or
    /// the poll did something the last one did not (a nudge, an
    /// escalation, a failed capture, a held nudge): a quiet journal at
    /// fleet size.
    Changes,
}

/// What each target's last poll said (its state, and what was done), for
/// [`LogMode::Changes`].
#[derive(Debug, Default)]
pub(super) struct Logged {
    last: std::collections::HashMap<String, (Option<classify::State>, Vec<String>)>,
}

impl Logged {
    /// Prints `report`'s line unless `mode` is [`LogMode::Changes`] and the
    /// target's state is the last poll's and it did nothing new (nothing, or
    /// only things the last poll did too).
    pub(super) fn print(&mut self, report: &PollReport, mode: LogMode, json: bool) {
        if self.is_news(report, mode) {
            print_report(report, json);
        }
    }

    /// Whether `report`'s line is printed under `mode` (and, for `changes`,
    /// remembered as the target's last).
    fn is_news(&mut self, report: &PollReport, mode: LogMode) -> bool {
        if mode == LogMode::Changes {
            let done: Vec<String> = report.done.iter().map(ToString::to_string).collect();
            let now = (report.state, done);
            // Quiet when nothing was done that the last poll did not do too
            // (an escalation's poll, then the same refusal without it, is one line).
            let quiet = self.last.get(&report.target).is_some_and(|(state, done)| {
                *state == now.0 && now.1.iter().all(|item| done.contains(item))
            });
            self.last.insert(report.target.clone(), now);
            return !quiet;
        }
        true
    }
}

/// The version of the `--json` poll line: it goes past this machine (a log shipper, another
/// host's tools), so a reader can tell a format it knows. Raised when a field changes meaning
/// or goes; a new field does not raise it.
const POLL_LINE_VERSION: u32 = 1;

/// One `watch --json` poll line: the poll's report as fields. After `version`, the fields are
/// in alphabetical order, the order the line has had since before it was a type of its own.
#[derive(serde::Serialize)]
struct PollLine<'a> {
    /// [`POLL_LINE_VERSION`].
    version: u32,
    /// The nudge budget: how many nudges without progress before escalating.
    budget: u32,
    /// Polls so far where the pane and the second witness disagreed.
    disagreements: u64,
    /// What the poll did (`nudged`, `escalated`, …), each as the seed's line says it.
    done: Vec<String>,
    /// Why the poll could not read the target, when it could not.
    error: Option<&'a str>,
    /// The rule's evidence line.
    evidence: Option<&'a str>,
    /// While a usage limit holds the stop: until when (`HH:MM`, local).
    held_until: Option<&'a str>,
    /// Why a stop was not typed into this poll: what refused its screen, or why it was deferred.
    not_typed_because: Option<&'static str>,
    /// Nudges spent since progress last advanced.
    nudges: u32,
    /// The pane's own verdict, before the second witness (equal to `state` without one).
    pane_state: Option<&'static str>,
    /// The progress probe's reading.
    progress: Option<u64>,
    /// The rule that decided the state.
    rule: Option<&'static str>,
    /// The seed's state word, none when the pane could not be read.
    state: Option<&'static str>,
    /// The target, as the command line or config file names it.
    target: &'a str,
    /// The poll's local time (`HH:MM:SS`).
    time: &'a str,
    /// Whether a nudge could be typed this poll: a stop, the live input box recognised, the
    /// agent still running.
    typing_safe: bool,
    /// Polls so far whose stop showed no input box the profile knows.
    unrecognised: u64,
    /// The second witness's word (`busy`, `idle`, `waiting`, `none`), if one was asked.
    witness: Option<&'static str>,
    /// The work probe's count.
    work: Option<u64>,
}

impl<'a> PollLine<'a> {
    fn of(report: &'a PollReport, time: &'a str) -> PollLine<'a> {
        PollLine {
            version: POLL_LINE_VERSION,
            budget: report.budget,
            disagreements: report.disagreements,
            done: report.done.iter().map(ToString::to_string).collect(),
            error: report.error.as_deref(),
            evidence: report.evidence.as_deref(),
            held_until: report.held_until.as_deref(),
            not_typed_because: report.refusal.map(|r| r.word()).or(report.deferred),
            nudges: report.nudges_used,
            pane_state: report.pane_state.map(|s| s.as_str()),
            progress: report.progress,
            rule: report.rule,
            state: report.state.map(|s| s.as_str()),
            target: &report.target,
            time,
            typing_safe: report.typing_safe,
            unrecognised: report.unrecognised,
            witness: report.witness,
            work: report.work.count(),
        }
    }
}

pub(super) fn print_report(report: &PollReport, json: bool) {
    let clock = SystemClock.hhmmss(SystemClock.now());
    let line = if json {
        // Strings, numbers and options only: serialising cannot fail.
        serde_json::to_string(&PollLine::of(report, &clock)).unwrap_or_default()
    } else {
        sanitize_text(&report.line(&clock))
    };
    // A closed stdout must not end the monitor (seed: the loop never exits on error).
    print(line);
}

#[cfg(test)]
mod tests {
    use classify::{State, Work};
    use watchdog::session::{Done, PollReport};

    use super::{LogMode, Logged, PollLine};

    fn report(state: Option<State>, done: Vec<Done>) -> PollReport {
        PollReport {
            state,
            done,
            pane_state: state,
            ..PollReport::unread("agent".into(), 5)
        }
    }

    /// `changes`: a line when the state moves or the poll does something the
    /// last did not; the poll after an escalation, doing only the rest of
    /// what the escalating poll did, is quiet (it printed a second line).
    #[test]
    fn changes_prints_what_is_new_and_not_the_poll_after_an_escalation() {
        let mut logged = Logged::default();
        let failed = || report(None, vec![Done::CaptureFailed]);
        let polls = [
            (report(Some(State::Working), vec![]), true),
            (report(Some(State::Working), vec![]), false),
            (failed(), true),
            (
                report(
                    None,
                    vec![Done::CaptureFailed, Done::EscalatedUnreadablePane],
                ),
                true,
            ),
            (failed(), false),
            (failed(), false),
            (report(Some(State::Working), vec![]), true),
        ];
        for (at, (poll, printed)) in polls.iter().enumerate() {
            assert_eq!(
                logged.is_news(poll, LogMode::Changes),
                *printed,
                "poll {at}"
            );
        }
        let mut every = Logged::default();
        assert!(
            every.is_news(&failed(), LogMode::Polls) && every.is_news(&failed(), LogMode::Polls)
        );
    }

    /// The `--json` line's bytes: its version first, then every field in the order it has always
    /// had (a consumer that compares lines, or greps them, sees no change but the version).
    #[test]
    fn the_json_line_is_versioned_and_keeps_its_fields_and_their_order() {
        let mut poll = report(Some(State::Stalled), vec![Done::CaptureFailed]);
        poll.work = Work::Available(3);
        poll.evidence = Some("❯ \"quoted\"".into());
        let line = serde_json::to_string(&PollLine::of(&poll, "12:00:00")).unwrap();
        assert_eq!(
            line,
            r#"{"version":1,"budget":5,"disagreements":0,"done":["capture failed"],"error":null,"evidence":"❯ \"quoted\"","held_until":null,"not_typed_because":null,"nudges":0,"pane_state":"STALLED","progress":null,"rule":null,"state":"STALLED","target":"agent","time":"12:00:00","typing_safe":false,"unrecognised":0,"witness":null,"work":3}"#
        );
    }
}
