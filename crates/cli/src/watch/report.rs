//! The poll line: the seed's MONITOR line, or one JSON object with `--json`.

use watchdog::session::PollReport;

use super::*;
use crate::output::print;
use watchdog::Clock;

use crate::clock::SystemClock;

/// Which poll lines are printed (`log` in a config file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogMode {
    /// The seed's line per target per poll.
    #[default]
    Polls,
    /// A target's line only when its state changed since its last poll, or
    /// the poll did something other than the last one did (a nudge, an
    /// escalation, a failed capture, a held nudge): a quiet journal at
    /// fleet size.
    Changes,
}

/// What each target's last poll said (its state, and what was done), for
/// [`LogMode::Changes`].
#[derive(Debug, Default)]
pub(super) struct Logged {
    last: std::collections::HashMap<String, (Option<classify::State>, String)>,
}

impl Logged {
    /// Prints `report`'s line unless `mode` is [`LogMode::Changes`] and the
    /// target's state is the last poll's and it did nothing new (nothing, or
    /// the very things the last poll did).
    pub(super) fn print(&mut self, report: &PollReport, mode: LogMode, json: bool) {
        if mode == LogMode::Changes {
            let done: Vec<String> = report.done.iter().map(ToString::to_string).collect();
            let done = done.join("\u{1f}");
            let now = (report.state, done);
            let quiet = self.last.get(&report.target).is_some_and(|(state, done)| {
                *state == now.0 && (now.1.is_empty() || *done == now.1)
            });
            self.last.insert(report.target.clone(), now);
            if quiet {
                return;
            }
        }
        print_report(report, json);
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
