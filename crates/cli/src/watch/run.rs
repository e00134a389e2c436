//! `watch` run: the flags checked, `--config FILE` read, or `--detach`
//! handed over, then the process-wide checks and the loop (audits, one
//! cycle, the notify ping, the rest that a SIGHUP ends with a reload).

use std::process::ExitCode;
use std::time::Duration;

use watchdog::session::target::Target;

use super::config_file::{read_config, reload};
use super::cycle::{self, Watch};
use super::fd_budget::raise_fd_limit;
use super::settings::Settings;
use super::target_settings::{self, TargetSettings};
use super::watchdog_budget::check_watchdog;
use super::{Args, alertmanager, audit, check, detach, hosts, serve};
use crate::output::{say, usage_error};
use crate::state_dir;

pub(crate) fn run(mut args: Args) -> ExitCode {
    if let Some(url) = &args.alertmanager {
        match alertmanager::parse_url(url) {
            Ok(url) => args.alertmanager = Some(url),
            Err(why) => return usage_error("watch", format_args!("--alertmanager: {why}")),
        }
    }
    if let Some(path) = args.config.clone() {
        return run_config(&args, &path);
    }
    if args.check {
        return usage_error(
            "watch",
            "--check checks a config file: give it with --config FILE",
        );
    }
    let settings = match Settings::from_args(&args) {
        Ok(settings) => settings,
        Err(message) => return usage_error("watch", &message),
    };
    if args.nudge_text.trim().is_empty() || args.nudge_text.chars().any(char::is_control) {
        return usage_error(
            "watch",
            "--nudge-text must be one non-empty line without control characters",
        );
    }
    if args.detach {
        if let Some(why) = detach::refused(&args) {
            return usage_error("watch", why);
        }
        let targets: Vec<Target> = settings.targets.into_iter().map(|t| t.target).collect();
        return detach::detach(&args, &targets);
    }
    start(
        std::borrow::Cow::Borrowed(&args),
        (settings.targets, Vec::new()),
        None,
    )
}

/// The process-wide checks that need the settings in force, then the loop:
/// audits asked, one cycle, the notify ping, the sleep (which a SIGHUP ends
/// with a reload of `config`, when there is one).
fn start(
    args: std::borrow::Cow<'_, Args>,
    (targets, patterns): (Vec<TargetSettings>, Vec<target_settings::SessionPattern>),
    config: Option<(&Args, &std::path::Path)>,
) -> ExitCode {
    if !args.audit.is_empty() && (args.once || args.detach) {
        return usage_error(
            "watch",
            "--audit runs beside a watcher that goes on: not with --once or --detach (run `bmb-monitor audit` for one audit)",
        );
    }
    if let Some(why) = check_watchdog(&args, &targets) {
        return usage_error("watch", why);
    }
    let mut audits = match audit::Audits::new(&args) {
        Ok(audits) => audits,
        Err(message) => return usage_error("watch", &message),
    };
    if let Some(why) = raise_fd_limit(targets.iter().map(|t| &t.target)) {
        return usage_error("watch", why);
    }
    probes::os::signals::install_stop_handler();
    let mut args = args;
    // A config can add a remote host on reload: its masters' folder is ready.
    let any_remote = config.is_some() || targets.iter().any(|t| t.target.host.is_some());
    let multiplex = hosts::multiplex(&args, any_remote);
    // Dropped after `watch` (whose masters are closed first): the last
    // clone removes this run's control folder.
    let _control_folder = multiplex.clone();
    args.to_mut().server.multiplex = multiplex;
    let explicit = targets.clone();
    let mut watch = match Watch::new(args, targets, &state_dir()) {
        Ok(watch) => watch,
        Err(message) => return usage_error("watch", &message),
    };
    watch.discovery.set(explicit, patterns);
    watch.discover_first();
    if let Some(addr) = &watch.args.metrics_listen {
        match serve::listen(addr, watch.fleet.slot()) {
            Ok(bound) => say(format_args!(
                "bmb-monitor: watch: metrics on http://{bound}/metrics, the board on http://{bound}/board.json"
            )),
            Err(message) => return usage_error("watch", &message),
        }
    }
    let mut notifier = crate::notify::Notifier::default();
    let mut pinged = watch.completed;
    // A cycle a signal cut short is not a completed one: no ping.
    let mut ping = |watch: &Watch<'_>| {
        if watch.completed != pinged {
            pinged = watch.completed;
            notifier.cycle_done();
        }
    };
    loop {
        // Never waits: an audit runs in a process and a thread of its own.
        audits.tick();
        if watch.args.once {
            // One whole cycle, every host waited for until its deadline.
            watch.cycle();
            ping(&watch);
            return crate::exit::code(crate::exit::OK);
        }
        // A cycle whose hosts are still out ends while the loop rests, as
        // their answers come: each host's targets are polled then, and no
        // host waits for another (nor the next cycle for a hung one).
        watch.start_cycle();
        ping(&watch);
        // A reload is not a poll: the next cycle comes one interval (the
        // reloaded one) after this one's last read that came in time (this
        // machine's panes, or a host's answer), however many SIGHUPs arrive
        // meanwhile; each nudge is still one interval apart. A hung host's
        // deadline moves nothing.
        let slept_from = std::time::Instant::now();
        loop {
            let from = watch.read_at.map_or(slept_from, |at| at.max(slept_from));
            let due = from + Duration::from_secs(watch.args.interval);
            let left = due.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                break;
            }
            let rest = watch.rest(left, config.is_some());
            ping(&watch);
            match rest {
                cycle::Rest::Reload => {
                    if let Some((cli, path)) = config {
                        reload(&mut watch, cli, path);
                    }
                }
                // Due again: a host's answer meanwhile may have moved it on.
                cycle::Rest::Elapsed => {}
                cycle::Rest::Stop => return crate::exit::code(crate::exit::OK),
            }
        }
    }
}

/// `--config FILE`: checked up front with every mistake named, then
/// watched, and re-read on SIGHUP without losing any target's memory.
fn run_config(args: &Args, path: &std::path::Path) -> ExitCode {
    // Before anything can take a while: a SIGHUP from here on is a reload.
    probes::os::signals::install_reload_handler();
    let settings = match read_config(args, path, &crate::profiles::in_force_quietly()) {
        Ok(settings) => settings,
        Err(lines) => {
            for line in lines {
                say(line);
            }
            return crate::exit::code(crate::exit::USAGE);
        }
    };
    if args.check {
        return check::run(path, &settings);
    }
    start(
        std::borrow::Cow::Owned(settings.args),
        (settings.targets, settings.patterns),
        Some((args, path)),
    )
}
