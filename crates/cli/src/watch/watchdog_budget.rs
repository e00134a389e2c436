//! systemd's watchdog budget: the longest a cycle can wait, checked
//! against the interval so that no ping comes too late.

use std::time::Duration;

use super::target_settings::TargetSettings;
use super::{Args, alertmanager, cycle, hosts};

/// systemd's watchdog against the longest time between two pings: the
/// interval, then a cycle that waits through every timeout it can in a row
/// ([`longest_cycle`]).
pub(super) fn check_watchdog(args: &Args, targets: &[TargetSettings]) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::settings::Settings;
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
