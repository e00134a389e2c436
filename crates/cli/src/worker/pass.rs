//! One pass of the worker monitor, published and logged.

use std::time::Instant;

use ledger::findings::FindingsLog;
use watchdog::worker::{Verdict, WorkerMonitor};

use super::log::say;
use super::ports::RealPorts;

/// Publishing and logging around the state machine.
pub(super) struct Session {
    /// `None`: no findings file, as the seed's `[ -n "$findings" ]`; stdout only.
    pub(super) log: Option<FindingsLog>,
    pub(super) verbose: bool,
    pub(super) passes: u64,
    /// The last "cannot see" reason said on stderr, so it is said once, not every pass.
    pub(super) last_unknown: Option<String>,
}

impl Session {
    /// One pass: the report published to the findings file and stdout, a reason it cannot
    /// judge said once, and with `--verbose` the pass's cost.
    pub(super) fn pass(&mut self, monitor: &mut WorkerMonitor, ports: &mut RealPorts) {
        self.passes += 1;
        ports.scans = 0;
        ports.git_calls = 0;
        let started = Instant::now();
        let pass = monitor.pass(ports, &crate::clock::SystemClock);
        let spent = started.elapsed();

        if let Some(report) = &pass.report {
            // Both destinations, deliberately: the file is what a subscriber
            // reads; stdout lands in the worker's log where an operator looks.
            if let Some(log) = &self.log
                && let Err(message) = log.append(&report.json)
            {
                say(format_args!("{message}; the finding still goes to stdout"));
            }
            // A closed stdout is not a reason to stop watching.
            crate::output::print(report.stdout_line());
        }

        match &pass.verdict {
            Verdict::Unknown { why } if self.last_unknown.as_deref() != Some(why) => {
                say(format_args!("cannot judge yet: {why}"));
                self.last_unknown = Some(why.clone());
            }
            Verdict::Unknown { .. } => {}
            _ => self.last_unknown = None,
        }
        if self.verbose {
            let note = pass
                .note
                .as_ref()
                .map(|n| format!("; {n}"))
                .unwrap_or_default();
            say(format_args!(
                "pass {}: {}{note} [{} /proc scan, {} git calls, {} µs]",
                self.passes,
                pass.verdict,
                ports.scans,
                ports.git_calls,
                spent.as_micros()
            ));
        }
    }
}
