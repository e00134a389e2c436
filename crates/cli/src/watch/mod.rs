//! `bmb-monitor watch`: the session monitor (seed
//! `omega-session-monitor.txt`) on real tmux, local and over ssh.
//!
//! Glue around [`watchdog::session::TargetMonitor`]: each cycle captures every
//! watched pane (two tmux invocations per server), runs the probes, lets the
//! monitor decide, then persists, sends and alerts in the order it said.
//! The loop never exits on a runtime error: each is rendered and survived.

use std::process::ExitCode;
use std::time::Duration;

use watchdog::session::DEFAULT_NUDGE_TEXT;
use watchdog::session::target::Target;

use crate::alert::{AlertFormat, sanitize_text};
use crate::output::{say, usage_error};
use crate::server_args::ServerArgs;

mod alert;
mod alertmanager;
mod audit;
mod check;
mod config;
mod cycle;
mod detach;
mod discover;
mod hosts;
mod metrics;
mod outage;
mod probe_kind;
mod processes;
mod report;
mod serve;
mod settings;
mod socket_lock;
mod target_settings;

use crate::state_dir;
use cycle::Watch;
use detach::detach;
use settings::Settings;
use target_settings::TargetSettings;

/// Where a remote target's probes run (a local target's run here either way).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum ProbesOn {
    /// On this machine, a process per run (a remote target's `BMB_TARGET` is `host:session`).
    #[default]
    Monitor,
    /// On the target's ssh host, inside the cycle's one request to it: no process here.
    Host,
}

// Every setting a config file gives conflicts with `--config`: the file says it.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Args {
    /// Sessions to watch: `session` on this machine, or `host:session` on an ssh alias.
    #[arg(
        value_name = "TARGET",
        required_unless_present = "config",
        conflicts_with = "config"
    )]
    targets: Vec<String>,
    /// Seconds between polls.
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = crate::secs(1), conflicts_with = "config")]
    interval: u64,
    /// Shell command printing the amount of work left (any form, sign-offs included); 0 means none.
    #[arg(long, value_name = "CMD", conflicts_with = "config")]
    work_probe: Option<String>,
    /// Shell command printing a monotonic progress count; each advance resets the nudge budget.
    #[arg(long, value_name = "CMD", conflicts_with = "config")]
    progress_probe: Option<String>,
    /// Where a remote target's probes run: on this machine, or on its host inside the cycle's one request.
    #[arg(
        long,
        value_enum,
        value_name = "WHERE",
        default_value = "monitor",
        conflicts_with = "config"
    )]
    probes_on: ProbesOn,
    /// Nudges without progress before the monitor stops nudging and escalates.
    #[arg(long, value_name = "N", default_value_t = 5, conflicts_with = "config")]
    nudge_budget: u32,
    /// The nudge typed into a STALLED pane (then Enter, as a separate key).
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_NUDGE_TEXT, conflicts_with = "config")]
    nudge_text: String,
    /// Shell command that receives each escalation on stdin, with BMB_TARGET, BMB_STATE, BMB_REASON, BMB_SERVER set.
    #[arg(long, value_name = "CMD", conflicts_with = "config")]
    alert_cmd: Option<String>,
    /// Seconds a capture (local or over ssh) may take before its process group is killed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1), conflicts_with = "config")]
    capture_timeout: u64,
    /// Seconds a probe or the alert command may take before its process group is killed.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1), conflicts_with = "config")]
    probe_timeout: u64,
    /// How the alert command receives the message.
    #[arg(long, value_enum, default_value = "text", conflicts_with = "config")]
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
    #[arg(long, conflicts_with = "config")]
    detach: bool,
    /// Read the pane alone: do not consult Claude Code's own session file
    /// (`<claude-dir>/sessions/<pid>.json`) as a second witness.
    #[arg(long)]
    no_witness: bool,
    /// Read the targets and their settings from a TOML file (README, "Config file"),
    /// checked up front and re-read on SIGHUP; no target or setting flag with it.
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// With --config: only check the file (exit 0 with `ok: N targets`, or its mistakes and exit 2).
    #[arg(long)]
    check: bool,
    /// A project to audit on its own cadence beside the poll loop, as `bmb-monitor audit` does (repeatable).
    #[arg(long, value_name = "PROJECT_DIR", requires = "audit_every")]
    audit: Vec<std::path::PathBuf>,
    /// How often each --audit project is audited (6h, 90m, 1d). The first audit starts at once,
    /// unless the last one started within this period, even before a restart.
    #[arg(long, value_name = "PERIOD", value_parser = ::audit::cadence::parse_every, requires = "audit")]
    audit_every: Option<Duration>,
    /// The auditor command of each --audit run (`bmb-monitor audit --agent-cmd`; its default if not given).
    #[arg(long, value_name = "CMD", requires = "audit")]
    audit_agent_cmd: Option<String>,
    /// Alertmanager to post each escalation to, as an alert that fires until the verdict
    /// moves on (`http://127.0.0.1:9093`; its v2 API). Plain http only: this build has no TLS.
    /// `--alert-cmd` still runs; both may be given.
    /// Checked in `run`, not by clap, whose error would quote the value (a
    /// password in its userinfo) verbatim.
    #[arg(long, value_name = "URL")]
    alertmanager: Option<String>,
    /// Serve `/metrics` (Prometheus text format) and `/board.json` on this
    /// address (`127.0.0.1:9184`; port 0 picks a free one, said on stderr).
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<String>,
    /// Which poll lines are printed: a config file's `log` (no flag: the
    /// command line prints the seed's line per poll).
    #[arg(skip)]
    log: report::LogMode,
}

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
        return detach(&args, &targets);
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

/// systemd's watchdog against the longest time between two pings: the
/// interval, then a cycle that waits through every timeout it can in a row
/// ([`longest_cycle`]).
fn check_watchdog(args: &Args, targets: &[TargetSettings]) -> Option<String> {
    let (cycle, parts) = longest_cycle(args, targets);
    crate::notify::check_watchdog(Duration::from_secs(args.interval), cycle, &parts)
}

/// The longest a cycle over `targets` can wait, and what that is made of,
/// for the message: this machine's probe runs ([`cycle::PROBES_AT_ONCE`] side by
/// side, so `ceil(runs / AT_ONCE)` rounds, each ending at `probe_timeout`;
/// a per-target command runs once per target, a shared one once per cycle,
/// work and progress in the same rounds); then the panes: this machine's
/// two tmux calls and, beside them, each remote host's one request, which
/// the cycle waits for up to `capture_timeout` (plus a `probe_timeout` per
/// round of 8 probes riding in it) plus [`hosts::HOST_SLACK`] (the host's grace and its
/// session's opening), then each host's follow-up read of processes (one
/// after another), each ending at `capture_timeout`; the cycle's alert
/// commands, which share one `probe_timeout` ([`alert::AlertBudget`]); and
/// the Alertmanager post.
fn longest_cycle(args: &Args, targets: &[TargetSettings]) -> (Duration, String) {
    let (runs, host_rounds) = cycle::probe_runs(targets);
    let rounds = runs.div_ceil(cycle::PROBES_AT_ONCE) as u64;
    let hosts: std::collections::BTreeSet<&str> = targets
        .iter()
        .filter_map(|t| t.target.host.as_deref())
        .collect();
    let local = targets.iter().any(|t| t.target.host.is_none());
    let capture = Duration::from_secs(args.capture_timeout);
    let probe = Duration::from_secs(args.probe_timeout);
    let here = if local { 2 * capture } else { Duration::ZERO };
    let host_wait = if hosts.is_empty() {
        Duration::ZERO
    } else {
        capture + probe * host_rounds + hosts::HOST_SLACK
    };
    let follow_ups = hosts.len() as u32 * capture;
    let post = if args.alertmanager.is_some() {
        alertmanager::POST_TIMEOUT
    } else {
        Duration::ZERO
    };
    // However many targets alert: they share one `probe_timeout` (AlertBudget).
    let alerts = if args.alert_cmd.is_some() {
        probe
    } else {
        Duration::ZERO
    };
    let cycle = rounds as u32 * probe + here.max(host_wait) + follow_ups + alerts + post;
    let mut parts = Vec::new();
    if runs > 0 {
        parts.push(format!(
            "{runs} probe run(s) here, {} at a time: {rounds} x {}s",
            cycle::PROBES_AT_ONCE,
            args.probe_timeout
        ));
    }
    let panes = match (local, hosts.is_empty()) {
        (true, true) => Some(format!("2 capture call(s) x {}s", args.capture_timeout)),
        (false, false) => Some(format!("the hosts' requests {}s", host_wait.as_secs())),
        (true, false) => Some(format!(
            "the longer of 2 capture call(s) x {}s and the hosts' requests {}s",
            args.capture_timeout,
            host_wait.as_secs()
        )),
        (false, true) => None,
    };
    parts.extend(panes);
    if !hosts.is_empty() {
        parts.push(format!(
            "{} follow-up read(s) x {}s",
            hosts.len(),
            args.capture_timeout
        ));
    }
    if !alerts.is_zero() {
        parts.push(format!("the alert commands {}s", args.probe_timeout));
    }
    if !post.is_zero() {
        parts.push(format!("the Alertmanager post {}s", post.as_secs()));
    }
    (cycle, parts.join(" + "))
}

/// Descriptors a monitor needs beside one per target (its lock file): the
/// standard streams, the listener and its connections, a capture's pipes
/// on each host thread, the ssh masters' sockets, and room to spare.
const FD_RESERVE: u64 = 64 + serve::CONNECTIONS as u64;

/// Descriptors `targets` targets need ([`FD_RESERVE`] plus one lock per
/// target, a second for each of the `local` ones, locked under their tmux
/// socket's inode too, and two per remote host for its master and session).
fn fd_need(targets: usize, local: usize, hosts: usize) -> u64 {
    FD_RESERVE + targets as u64 + local as u64 + 2 * hosts as u64
}

/// The soft open-file limit raised to the hard one, once at the start: at
/// the usual soft limit of 1,024 a fleet of a thousand targets ran out and
/// every capture failed. The usage error when even the hard limit is too
/// few for `targets`.
fn raise_fd_limit<'t>(targets: impl Iterator<Item = &'t Target>) -> Option<String> {
    if let Err(err) = probes::os::own::raise_fd_limit() {
        say(format_args!(
            "bmb-monitor: watch: cannot raise the open-file limit to its hard limit: {err}"
        ));
    }
    fd_shortage(targets)
}

/// Why the open-file limit cannot hold `targets` (one lock file each, and
/// [`FD_RESERVE`]), if it cannot: running short would fail captures, probes
/// and locks at random, target by target, so it is refused up front.
fn fd_shortage<'t>(targets: impl Iterator<Item = &'t Target>) -> Option<String> {
    let (mut count, mut local) = (0, 0);
    let mut hosts = std::collections::BTreeSet::new();
    for target in targets {
        count += 1;
        local += usize::from(target.host.is_none());
        hosts.extend(target.host.as_deref());
    }
    let need = fd_need(count, local, hosts.len());
    let limit = probes::os::own::usage().and_then(|u| u.max_fds)?;
    (limit < need).then(|| {
        format!(
            "{count} targets need about {need} open files, but the limit is {limit} even raised to its hard limit \
             (LimitNOFILE= in the unit, `ulimit -Hn`)"
        )
    })
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

/// Where the monitor a config file describes serves its board
/// (`metrics_listen`), for `status --config`; `Err` is the lines that say
/// what is wrong with the file.
pub(crate) fn config_endpoint(path: &std::path::Path) -> Result<Option<String>, Vec<String>> {
    let config = load_config(path, &crate::profiles::in_force_quietly())?;
    Ok(config.metrics_listen.map(|addr| addr.to_string()))
}

/// The config file read and checked, or the lines that say what is wrong
/// with it (`FILE:LINE: KEY: what`), without the command's prefix.
fn load_config(
    path: &std::path::Path,
    profiles: &classify::Profiles,
) -> Result<config::Config, Vec<String>> {
    let shown = path.display();
    config::read(path, profiles).map_err(|error| match error {
        config::LoadError::Unreadable(why) => {
            vec![format!("cannot read the config file {shown}: it {why}")]
        }
        config::LoadError::Mistakes(mistakes) => mistakes
            .iter()
            .map(|mistake| format!("{shown}:{mistake}"))
            .collect(),
    })
}

/// The config file's settings, or the lines that say what is wrong with it
/// (`bmb-monitor: watch: FILE:LINE: KEY: what`).
fn read_config(
    args: &Args,
    path: &std::path::Path,
    profiles: &classify::Profiles,
) -> Result<Settings, Vec<String>> {
    let said = |lines: Vec<String>| -> Vec<String> {
        lines
            .into_iter()
            .map(|line| format!("bmb-monitor: watch: {line}"))
            .collect()
    };
    let config = load_config(path, profiles).map_err(said)?;
    Settings::from_config(args, config).map_err(|message| said(vec![message]))
}

/// SIGHUP: the file re-read and applied, or, when it no longer reads, said
/// and the settings in force kept.
/// `args` is the command line (what the file leaves out is its default).
fn reload(watch: &mut Watch<'_>, args: &Args, path: &std::path::Path) {
    // A profile added since may be what the new file names.
    watch.reload_profiles();
    let settings = match read_config(args, path, &watch.current_profiles) {
        Ok(settings) => settings,
        Err(lines) => {
            for line in lines {
                say(line);
            }
            say(format_args!(
                "bmb-monitor: watch: {} not reloaded: the settings in force are kept",
                path.display()
            ));
            watch.fleet.reloaded(false);
            return;
        }
    };
    // As at the start: an interval systemd's watchdog would kill between
    // two pings is refused, and the settings in force are kept.
    if let Some(why) = check_watchdog(&settings.args, &settings.targets) {
        say(format_args!(
            "bmb-monitor: watch: {}: {why}; not reloaded: the settings in force are kept",
            path.display()
        ));
        watch.fleet.reloaded(false);
        return;
    }
    // As at the start: targets the open-file limit cannot hold are refused.
    if let Some(why) = fd_shortage(settings.targets.iter().map(|t| &t.target)) {
        say(format_args!(
            "bmb-monitor: watch: {}: {why}; not reloaded: the settings in force are kept",
            path.display()
        ));
        watch.fleet.reloaded(false);
        return;
    }
    let done = watch.reload(settings);
    watch.fleet.reloaded(true);
    let list = |names: &[String]| {
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    say(format_args!(
        "bmb-monitor: watch: reloaded {}: {} targets (added: {}; removed: {}; changed: {})",
        path.display(),
        watch.watched.len(),
        list(&done.added),
        list(&done.removed),
        list(&done.changed)
    ));
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        args: Args,
    }

    fn longest(argv: &[&str]) -> (u64, String) {
        let args = TestCli::parse_from(std::iter::once("test").chain(argv.iter().copied())).args;
        let targets = Settings::from_args(&args).unwrap().targets;
        let (cycle, parts) = longest_cycle(&args, &targets);
        (cycle.as_secs(), parts)
    }

    #[test]
    fn the_longest_cycle_counts_rounds_of_eight_here_and_each_hosts_wait_beside_the_local_calls() {
        let probe = [
            "--work-probe",
            "echo $BMB_TARGET",
            "--progress-probe",
            "echo 1",
        ];
        let timing = ["--capture-timeout", "10", "--probe-timeout", "4"];
        let mut argv: Vec<&str> = probe.iter().chain(&timing).copied().collect();
        let names: Vec<String> = (0..9).map(|i| format!("t{i}")).collect();
        argv.extend(names.iter().map(String::as_str));
        // 9 per-target runs and one shared: two rounds of 8, then two tmux calls.
        assert_eq!(
            longest(&argv),
            (
                2 * 4 + 2 * 10,
                "10 probe run(s) here, 8 at a time: 2 x 4s + 2 capture call(s) x 10s".to_string()
            )
        );
        // On a host: nothing here, the host's wait (capture, probes, 5 s) and its follow-up read.
        let mut remote: Vec<&str> = probe.iter().chain(&timing).copied().collect();
        remote.extend(["--probes-on", "host", "box:a", "box:b"]);
        assert_eq!(
            longest(&remote),
            (
                10 + 4 + 5 + 10,
                "the hosts' requests 19s + 1 follow-up read(s) x 10s".to_string()
            )
        );
        // An alert command: one probe timeout for all of a cycle's alerts.
        let mut alerting: Vec<&str> = timing.to_vec();
        alerting.extend(["--alert-cmd", "cat", "a", "b", "c"]);
        assert_eq!(
            longest(&alerting),
            (
                2 * 10 + 4,
                "2 capture call(s) x 10s + the alert commands 4s".to_string()
            )
        );
        // Both: the longer of this machine's calls and the hosts' wait.
        remote.push("local");
        assert_eq!(
            longest(&remote),
            (
                4 + 2 * 10 + 10,
                "2 probe run(s) here, 8 at a time: 1 x 4s + the longer of 2 capture call(s) x 10s \
                 and the hosts' requests 19s + 1 follow-up read(s) x 10s"
                    .to_string()
            )
        );
    }
}
