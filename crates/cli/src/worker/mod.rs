//! `bmb-monitor worker`: the worker monitor, a drop-in for `plot-worker-monitor.sh`.
//!
//! Every flag falls back to the seed's environment variable, then to the
//! seed's default, so a wrapper that started the bash script can start this
//! instead, unchanged. The real adapters for [`WorkerPort`] are here; the
//! rules are in `watchdog::worker`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ledger::findings::FindingsLog;

mod ports;
mod settings;

use ports::{PidWatch, RealPorts};
use settings::{Settings, settings};
use watchdog::worker::{PidReading, Verdict, WorkerMonitor};

/// How often, between passes, the pid is checked so the monitor ends the
/// moment its agent does (a liveness check is a file read and a kill(0)).
const PID_POLL: Duration = Duration::from_millis(200);

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Take one sample and exit (a test affordance: one pass can never say `idle`).
    #[arg(long)]
    once: bool,
    /// The branch this worker is on [env: PLOT_BRANCH]
    #[arg(long, value_name = "B")]
    branch: Option<String>,
    /// The desk it sits at [env: PLOT_WORKTREE]
    #[arg(long, value_name = "DIR")]
    worktree: Option<PathBuf>,
    /// Where the wrapper records the agent's pid [env: PLOT_PID_FILE; default: $PLOT_WORKTREE/.plot-worker.pid]
    #[arg(long, value_name = "FILE")]
    pid_file: Option<PathBuf>,
    /// Where findings are appended [env: PLOT_MONITOR_FILE; default: $PLOT_WORKTREE/.plot-worker.monitor.worker.jsonl]
    #[arg(long, value_name = "FILE")]
    findings: Option<PathBuf>,
    /// Seconds between passes [env: PLOT_MONITOR_INTERVAL; default: 30]
    #[arg(long, value_name = "SECS")]
    interval: Option<String>,
    /// Transcript silence before the CPU is asked [env: PLOT_MONITOR_QUIET_SECONDS; default: 900]
    #[arg(long, value_name = "SECS")]
    quiet_seconds: Option<String>,
    /// Claude Code's config directory [env: CLAUDE_CONFIG_DIR; default: ~/.claude]
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// One line per pass on stderr: the verdict, and the /proc scans and git calls it cost
    /// (also on with RUST_LOG=debug).
    #[arg(long, short)]
    verbose: bool,
}

pub(crate) fn run(args: Args) -> ExitCode {
    probes::os::signals::install_stop_handler();
    let settings = match settings(args) {
        Ok(settings) => settings,
        Err(message) => {
            say(format_args!("{message}"));
            return crate::exit::code(crate::exit::USAGE);
        }
    };
    if let Some(worktree) = &settings.worktree
        && let Err(why) = probes::project::git::check_repository(worktree)
    {
        // Said once: with no tree to fingerprint and no commits to count,
        // `idle` can never hold; `gone` still does.
        say(format_args!(
            "{why}: it can never be judged idle (no tree or commits to read); gone is still reported"
        ));
    }
    let log = settings.findings.as_ref().map(FindingsLog::new);
    let mut ports = RealPorts::new(&settings);
    let mut monitor = WorkerMonitor::new(settings.config.clone());
    let mut session = Session {
        log,
        verbose: settings.verbose,
        passes: 0,
        last_unknown: None,
    };

    if let Some(why) =
        crate::notify::check_watchdog(settings.config.interval, std::time::Duration::ZERO, "")
    {
        say(format_args!("{why}"));
        return crate::exit::code(crate::exit::USAGE);
    }
    let mut notifier = crate::notify::Notifier::default();
    session.pass(&mut monitor, &mut ports);
    notifier.cycle_done();
    // `--once` is a test affordance, not a mode: `idle` needs two readings.
    if settings.once {
        return crate::exit::code(crate::exit::OK);
    }
    // It ends with its agent: the wait returns the moment the pid names no
    // live process, and the FINAL PASS is what publishes `gone` on the way
    // out (exiting without it would lose the loudest finding).
    loop {
        match wait_for_next_pass(settings.config.interval, &mut ports.pid_watch) {
            Next::Pass => {
                session.pass(&mut monitor, &mut ports);
                notifier.cycle_done();
            }
            Next::AgentGone => {
                session.pass(&mut monitor, &mut ports);
                return crate::exit::code(crate::exit::OK);
            }
            // Asked to stop (SIGTERM, SIGINT): nothing new to publish.
            Next::Stop => return crate::exit::code(crate::exit::OK),
        }
    }
}

/// Publishing and logging around the state machine.
struct Session {
    /// `None`: no findings file, as the seed's `[ -n "$findings" ]`; stdout only.
    log: Option<FindingsLog>,
    verbose: bool,
    passes: u64,
    /// The last "cannot see" reason said on stderr, so it is said once, not every pass.
    last_unknown: Option<String>,
}

impl Session {
    fn pass(&mut self, monitor: &mut WorkerMonitor, ports: &mut RealPorts) {
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

/// One line on stderr, in the worker's own prefix.
fn say(message: std::fmt::Arguments<'_>) {
    crate::output::say(format_args!("bmb-monitor worker: {message}"));
}

/// Sleep until the next pass, checking the pid as it goes. False when the
/// agent is dead (then one final pass runs).
fn wait_for_next_pass(interval: Duration, pid_watch: &mut PidWatch) -> Next {
    let deadline = Instant::now() + interval;
    loop {
        if probes::os::signals::stop_requested() {
            return Next::Stop;
        }
        if matches!(pid_watch.read(), PidReading::Dead(_)) {
            return Next::AgentGone;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Next::Pass;
        }
        std::thread::sleep(left.min(PID_POLL));
    }
}

/// What ends a wait between passes.
enum Next {
    Pass,
    /// The agent died: one final pass publishes `gone`.
    AgentGone,
    Stop,
}
