//! The lead's loop: the monitor, its port and sinks built from the flags, then
//! control messages applied before each pass, passes at the interval, and a
//! final pass when the Lead (the parent) is gone.

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use probes::fs::inbox::Inbox;
use probes::os::input::Lines;
use probes::tmux::{Server, Tmux};
use watchdog::lead::{LeadConfig, LeadMonitor};

use super::args::{Args, check_args};
use super::control::{Source, apply, consume};
use super::lock::lock_bmb_dir;
use super::port::RealPort;
use super::sinks::Sinks;
use crate::clock::SystemClock;
use crate::output::{SaidOnce, usage_error};

/// `bmb-monitor lead`: runs until asked to stop, told to shut down, or its parent is gone.
pub(crate) fn run(args: Args) -> ExitCode {
    probes::os::signals::install_stop_handler();
    if let Err(message) = check_args(&args) {
        return usage_error("lead", message);
    }
    // One lead per bmb-dir: two would each send the Consultant every event.
    // The lock lives in the folder itself, so any spelling of it finds it.
    let _lock = match lock_bmb_dir(&args.bmb_dir) {
        Ok(lock) => lock,
        Err(message) => {
            return usage_error("lead", message);
        }
    };
    let inbox = args
        .inbox
        .clone()
        .unwrap_or_else(|| args.bmb_dir.join("monitor-inbox"));
    let consultant_out = args
        .consultant_out
        .clone()
        .unwrap_or_else(|| args.bmb_dir.join("consultant-events.jsonl"));
    let server = args.socket.server();
    let tmux = Tmux::new(server.clone());
    // Our own pane is the Lead's (we run as its child); the sweep skips it.
    let own_pane = std::env::var("TMUX_PANE").ok().filter(|p| !p.is_empty());
    let inside_tmux = std::env::var_os("TMUX").is_some() || server != Server::Default;
    let sweep = !args.no_sweep && inside_tmux;
    let mut known_panes: Vec<String> = own_pane.iter().cloned().collect();
    known_panes.extend(args.lead_pane.iter().cloned());
    known_panes.extend(args.consultant_pane.iter().cloned());

    let config = LeadConfig {
        idle_stall_sec: args.idle_stall,
        ack_timeout_sec: args.ack_timeout,
        sweep_interval_sec: sweep.then_some(args.sweep_interval),
        feed_path: path_text(&args.bmb_dir.join("consultant-feed.md")),
        known_panes,
    };
    let mut monitor = LeadMonitor::new(config);
    let mut port = RealPort::new(
        sweep.then(|| (tmux.clone(), own_pane.clone())),
        args.bmb_dir.join("consultant-pane-id"),
    );
    let mut sinks = Sinks {
        tmux,
        lead_pane: args.lead_pane.clone(),
        consultant_pane: args.consultant_pane.clone(),
        consultant_out,
        said: SaidOnce::default(),
    };
    let (mut inbox, problem) = Inbox::new(inbox);
    if let Some(problem) = problem {
        sinks.inbox_problem(&problem);
    }
    let mut stdin = Lines::stdin();
    let mut stdin_line = 0u64;
    let parent = std::os::unix::process::parent_id();
    let interval = Duration::from_secs(args.interval);
    // Messages and the parent are looked at this often; passes run at `interval`.
    let tick = interval.min(Duration::from_millis(250));

    if let Some(why) = crate::notify::check_watchdog(interval, Duration::ZERO, "") {
        return usage_error("lead", why);
    }
    let mut notifier = crate::notify::Notifier::default();
    let mut next_pass = Instant::now();
    loop {
        // Asked to stop (SIGTERM, SIGINT): a clean end, between passes.
        if probes::os::signals::stop_requested() {
            return crate::exit::code(crate::exit::OK);
        }
        // Control messages first: every line already in the pipe and every
        // inbox file is applied before a pass, so a pass (the first one
        // included) sees every item registered before it. EOF on stdin is
        // not a shutdown: the inbox and the parent still count.
        let mut shutdown = false;
        for line in stdin.available() {
            stdin_line += 1;
            if apply(&mut monitor, &line, Source::Stdin(stdin_line), &mut sinks) {
                shutdown = true;
                break;
            }
        }
        let overlong = stdin.overlong();
        if overlong > 0 {
            sinks.error(&format!(
                "lead: bad control message (stdin): {overlong} line(s) longer than {} bytes, skipped",
                probes::os::input::MAX_LINE_BYTES
            ));
        }
        if !shutdown {
            shutdown = consume(&mut inbox, &mut monitor, &mut sinks);
        }
        if shutdown {
            return crate::exit::code(crate::exit::OK);
        }
        let parent_gone = std::os::unix::process::parent_id() != parent;
        if parent_gone || Instant::now() >= next_pass {
            let outputs = monitor.pass(&mut port, &SystemClock);
            sinks.route(outputs);
            notifier.cycle_done();
            // Each pass reads at most `PASS_BYTES` of stdin.
            stdin.refill();
            next_pass += interval;
            if next_pass < Instant::now() {
                next_pass = Instant::now() + interval;
            }
        } else if monitor.has_unchecked() {
            // A new item is checked now, not a whole interval after it came
            // (a result already written is news at once); the others keep
            // their cadence.
            let outputs = monitor.check_new(&mut port, &SystemClock);
            sinks.route(outputs);
        }
        if parent_gone {
            // The Lead is gone: that was the final pass.
            return crate::exit::code(crate::exit::OK);
        }
        let wait = next_pass
            .saturating_duration_since(Instant::now())
            .min(tick);
        stdin.wait(wait);
    }
}

/// A path as the monitor's config spells it.
fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
