//! The poll line: the seed's MONITOR line, or one JSON object with `--json`.

use watchdog::session::PollReport;

use crate::output::print;
use watchdog::Clock;

use super::alert::sanitize_text;
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

pub(super) fn print_report(report: &PollReport, json: bool) {
    let clock = SystemClock.hhmmss(SystemClock.now());
    let line = if json {
        let value = serde_json::json!({
            "target": report.target,
            "state": report.state.map(|s| s.as_str()),
            "work": report.work.count(),
            "progress": report.progress,
            "nudges": report.nudges_used,
            "budget": report.budget,
            "done": report.done.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "rule": report.rule,
            "evidence": report.evidence,
            "error": report.error,
            "pane_state": report.pane_state.map(|s| s.as_str()),
            "witness": report.witness,
            "disagreements": report.disagreements,
            "typing_safe": report.typing_safe,
            "not_typed_because": report.refusal.map(|r| r.word()).or(report.deferred),
            "held_until": report.held_until,
            "unrecognised": report.unrecognised,
            "time": clock,
        });
        value.to_string()
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

    use super::{LogMode, Logged};

    fn report(state: Option<State>, done: Vec<Done>) -> PollReport {
        PollReport {
            target: "agent".into(),
            state,
            work: Work::Unknown,
            progress: None,
            nudges_used: 0,
            budget: 5,
            done,
            rule: None,
            evidence: None,
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
}
