//! The worker monitor's life: its settings resolved, a first pass, then a pass
//! per interval until the agent is gone (a final pass says so) or a stop is asked.

use std::process::ExitCode;

use ledger::findings::FindingsLog;
use watchdog::worker::WorkerMonitor;

use super::args::Args;
use super::log::say;
use super::pass::Session;
use super::ports::RealPorts;
use super::settings::settings;
use super::wait::{Next, wait_for_next_pass};

/// `bmb-monitor worker`: usage errors exit 2; after that it runs until its agent or a stop ends it.
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
