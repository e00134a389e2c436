//! `bmb-monitor watch`, `list` and `stop`: the session monitor (seed
//! `omega-session-monitor.txt`) on real tmux, local and over ssh.
//!
//! Glue around [`watchdog::session::TargetMonitor`]: each cycle captures every
//! watched pane (two tmux invocations per server), runs the probes, lets the
//! monitor decide, then persists, sends and alerts in the order it said.
//! The loop never exits on a runtime error: each is rendered and survived.

use std::process::ExitCode;
use std::time::Duration;

use ledger::journal::Journal;
use probes::lock::LockError;
use watchdog::session::DEFAULT_NUDGE_TEXT;
use watchdog::target::Target;

use crate::output::usage_error;
use crate::server_args::ServerArgs;

mod alert;
mod capture;
mod cycle;
mod detach;
mod metrics;
mod probe;
mod processes;
mod report;
mod serve;

use crate::state_dir;
pub(crate) use alert::run_alert_cmd;
use alert::send_alert;
pub use alert::{escape_html, sanitize_text};
use cycle::Watch;
use detach::detach;
use report::print_report;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlertFormat {
    /// Plain text, control characters removed.
    Text,
    /// HTML-escaped, for HTML funnels such as a chat bot.
    Html,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Sessions to watch: `session` on this machine, or `host:session` on an ssh alias.
    #[arg(value_name = "TARGET", required = true)]
    targets: Vec<String>,
    /// Seconds between polls.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = crate::secs(1))]
    interval: u64,
    /// Shell command printing the amount of work left (any form, sign-offs included); 0 means none.
    #[arg(long, value_name = "CMD")]
    work_probe: Option<String>,
    /// Shell command printing a monotonic progress count; each advance resets the nudge budget.
    #[arg(long, value_name = "CMD")]
    progress_probe: Option<String>,
    /// Nudges without progress before the monitor stops nudging and escalates.
    #[arg(long, value_name = "N", default_value_t = 5)]
    nudge_budget: u32,
    /// The nudge typed into a STALLED pane (then Enter, as a separate key).
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_NUDGE_TEXT)]
    nudge_text: String,
    /// Shell command that receives each escalation on stdin, with BMB_TARGET, BMB_STATE, BMB_REASON set.
    #[arg(long, value_name = "CMD")]
    alert_cmd: Option<String>,
    /// Seconds a capture (local or over ssh) may take before its process group is killed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1))]
    capture_timeout: u64,
    /// Seconds a probe or the alert command may take before its process group is killed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1))]
    probe_timeout: u64,
    /// How the alert command receives the message.
    #[arg(long, value_enum, default_value = "text")]
    alert_format: AlertFormat,
    #[command(flatten)]
    server: ServerArgs,
    /// Poll once, print the lines, exit 0.
    #[arg(long)]
    once: bool,
    /// Print JSON Lines instead of the MONITOR lines.
    #[arg(long)]
    json: bool,
    /// Run each target's monitor in its own detached tmux session (`monitor-<session>`).
    #[arg(long)]
    detach: bool,
    /// Read the pane alone: do not consult Claude Code's own session file
    /// (`<claude-dir>/sessions/<pid>.json`) as a second witness.
    #[arg(long)]
    no_witness: bool,
    /// Serve `/metrics` (Prometheus text format) and `/board.json` on this
    /// address (`127.0.0.1:9464`; port 0 picks a free one, said on stderr).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
}

pub fn run(args: Args) -> ExitCode {
    let targets = match parse_targets(&args.targets) {
        Ok(targets) => targets,
        Err(message) => return usage_error("watch", &message),
    };
    if args.nudge_text.trim().is_empty() || args.nudge_text.chars().any(char::is_control) {
        return usage_error(
            "watch",
            "--nudge-text must be one non-empty line without control characters",
        );
    }
    if args.detach {
        if args.metrics_listen.is_some() {
            return usage_error(
                "watch",
                "--metrics-listen cannot go with --detach: each detached monitor would need an address of its own",
            );
        }
        return detach(&args, &targets);
    }
    probes::signals::install_stop_handler();
    let mut watch = match Watch::new(&args, targets, &state_dir()) {
        Ok(watch) => watch,
        Err(message) => return usage_error("watch", &message),
    };
    if let Some(addr) = &args.metrics_listen {
        match serve::listen(addr, watch.fleet.slot()) {
            Ok(bound) => crate::output::say(format_args!(
                "bmb-monitor: watch: metrics on http://{bound}/metrics, the board on http://{bound}/board.json"
            )),
            Err(message) => return usage_error("watch", &message),
        }
    }
    loop {
        watch.cycle();
        if args.once || !probes::signals::sleep_unless_stopped(Duration::from_secs(args.interval)) {
            return crate::exit::code(crate::exit::OK);
        }
    }
}

fn parse_targets(texts: &[String]) -> Result<Vec<Target>, String> {
    let mut targets: Vec<Target> = Vec::new();
    for text in texts {
        let target = Target::parse(text).map_err(|e| e.to_string())?;
        if targets.contains(&target) {
            return Err(format!("target `{target}` is given twice"));
        }
        targets.push(target);
    }
    Ok(targets)
}
