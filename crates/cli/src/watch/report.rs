//! The poll line: the seed's MONITOR line, or one JSON object with `--json`.

use watchdog::session::PollReport;

use super::*;
use crate::output::print;
use watchdog::Clock;

use crate::clock::SystemClock;

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
