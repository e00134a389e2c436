//! `bmb-monitor lead`: the Lead's metadata watcher (seed `bmb-monitor.txt`).
//!
//! Glue around [`watchdog::lead::LeadMonitor`]: control messages from stdin
//! (polled, never blocking the loop) and from the inbox folder, the pass loop, and the sinks
//! (stdout and the Lead's pane; the Consultant's file and pane; stderr).
//! Nothing here exits on a runtime error: each is said once and survived.

pub(crate) mod port;
mod sinks;

use sinks::Sinks;

use std::fs::{self};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use probes::fs::inbox::Inbox;
use probes::os::input::Lines;

use crate::output::{SaidOnce, say, usage_error};
use probes::tmux::{Server, Tmux};
use watchdog::lead::{Applied, LeadConfig, LeadMonitor, parse_control};

use crate::clock::SystemClock;
use port::RealPort;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Seconds between passes.
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = crate::secs(0))]
    interval: u64,
    /// Seconds without metadata progress before a live agent counts as stalled.
    #[arg(long, value_name = "SECS", default_value_t = 180, value_parser = crate::secs(0))]
    idle_stall: u64,
    /// The pipeline's state folder.
    #[arg(long, value_name = "DIR", default_value = ".bmb")]
    bmb_dir: PathBuf,
    /// Folder of `*.json` control messages [default: <bmb-dir>/monitor-inbox].
    #[arg(long, value_name = "DIR")]
    inbox: Option<PathBuf>,
    /// File the Consultant's events are appended to [default: <bmb-dir>/consultant-events.jsonl].
    #[arg(long, value_name = "FILE")]
    consultant_out: Option<PathBuf>,
    /// Seconds a `stalled` or `process_died` report waits for an ack before it is repeated.
    #[arg(long, value_name = "SECS", default_value_t = 120, value_parser = crate::secs(0))]
    ack_timeout: u64,
    /// Seconds between sweeps of the current tmux window.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = crate::secs(0))]
    sweep_interval: u64,
    /// Never sweep tmux panes.
    #[arg(long)]
    no_sweep: bool,
    /// Also type each Lead report into this tmux pane.
    #[arg(long, value_name = "PANE")]
    lead_pane: Option<String>,
    /// Also type each Consultant event into this tmux pane.
    #[arg(long, value_name = "PANE")]
    consultant_pane: Option<String>,
    #[command(flatten)]
    socket: crate::server_args::SocketArgs,
}

/// Where a control message came from, for its error line.
enum Source {
    Stdin(u64),
    Inbox(String),
}

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

/// Usage errors in the flags: one line naming the flag, exit 2 (SPEC §7).
/// A zero interval makes no sense: it used to become 1 s silently.
fn check_args(args: &Args) -> Result<(), String> {
    for (flag, value) in [
        ("--interval", args.interval),
        ("--idle-stall", args.idle_stall),
        ("--ack-timeout", args.ack_timeout),
        ("--sweep-interval", args.sweep_interval),
    ] {
        if value == 0 {
            return Err(format!("{flag} must be at least 1 second, got 0"));
        }
    }
    Ok(())
}

/// Applies one message; a bad one is one error line naming the field. True on shutdown.
fn apply(monitor: &mut LeadMonitor, text: &str, source: Source, sinks: &mut Sinks) -> bool {
    if text.trim().is_empty() {
        return false;
    }
    let result = match parse_control(text) {
        Ok(control) => monitor
            .apply(control, probes::os::clock::now_epoch())
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match result {
        Ok(Applied::Shutdown) => true,
        Ok(Applied::Continue) => false,
        Err(why) => {
            let from = match source {
                Source::Stdin(n) => format!("stdin line {n}"),
                Source::Inbox(name) => format!("inbox file {name}"),
            };
            sinks.error(&format!("lead: bad control message ({from}): {why}"));
            false
        }
    }
}

/// Applies every message waiting in the inbox (`probes::fs::inbox`); true on
/// shutdown (the files not reached stay for a later start).
fn consume(inbox: &mut Inbox, monitor: &mut LeadMonitor, sinks: &mut Sinks) -> bool {
    let mut pass = inbox.pass();
    for item in pass.by_ref() {
        match item {
            Ok(message) => {
                let mut shutdown = false;
                for line in message.text.lines() {
                    let source = Source::Inbox(message.name.clone());
                    shutdown |= apply(monitor, line, source, sinks);
                }
                if shutdown {
                    return true;
                }
            }
            Err(problem) => sinks.inbox_problem(&problem),
        }
    }
    if pass.listed() {
        sinks.clear("inbox");
    }
    false
}

/// The lock of `<bmb-dir>/monitor.lock`; another lead holding it is an
/// error, a lock that cannot be taken at all (a read-only folder) a warning.
fn lock_bmb_dir(bmb_dir: &Path) -> Result<Option<probes::fs::lock::Lock>, String> {
    if let Err(err) = fs::create_dir_all(bmb_dir) {
        return Err(format!("cannot create {}: {err}", bmb_dir.display()));
    }
    match probes::fs::lock::try_lock(&bmb_dir.join("monitor.lock")) {
        Ok(lock) => {
            crate::output::end_orphans(&lock, "lead");
            Ok(Some(lock))
        }
        Err(probes::fs::lock::LockError::Held(pid)) => {
            let by = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
            Err(format!(
                "{} is already watched by another bmb-monitor lead{by}",
                bmb_dir.display()
            ))
        }
        Err(probes::fs::lock::LockError::Failed(why)) => {
            say(format_args!(
                "bmb-monitor: lead: {why}; not guarded against a second lead"
            ));
            Ok(None)
        }
    }
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
