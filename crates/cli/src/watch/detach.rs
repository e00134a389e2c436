//! `--detach`: one detached tmux session per target, running this command without it.

use std::process::ExitCode;
use std::time::Duration;

use watchdog::session::target::Target;

use super::{Args, ProbesOn};
use crate::alert::AlertFormat;
use crate::output::usage_error;
use crate::output::{print, say};

/// `--detach`: one detached session per target, running this same command without `--detach`.
pub(super) fn detach(args: &Args, targets: &[Target]) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe.to_string_lossy().into_owned(),
        Err(err) => {
            return usage_error(
                "watch",
                format!("cannot find this program's path to detach: {err}"),
            );
        }
    };
    let tmux = args
        .server
        .tmux(None, Duration::from_secs(args.capture_timeout));
    let existing = match tmux.list_sessions() {
        Ok(sessions) => sessions,
        Err(err) => return usage_error("watch", &err),
    };
    let mut failed = false;
    for target in targets {
        let name = target.monitor_session();
        if existing.contains(&name) {
            say(format_args!(
                "bmb-monitor: watch: {target} is already watched by session `{name}` (end it with `bmb-monitor stop {target}`)"
            ));
            failed = true;
            continue;
        }
        // The detached session gets the tmux server's environment, not ours:
        // carry the state folder this shell resolves (whatever the server's
        // XDG_STATE_HOME, or its lack of one), so the monitor remembers what
        // this one would, its locks refuse a second watcher started from this
        // shell, and `status` here finds its board.
        let mut command = Vec::new();
        if let Some(state) = crate::state_dir().parent() {
            command.extend([
                "env".to_string(),
                format!("XDG_STATE_HOME={}", state.to_string_lossy()),
            ]);
        }
        command.extend([exe.clone(), "watch".to_string(), target.to_string()]);
        command.extend(forwarded(args));
        match tmux.new_detached_session(&name, &command) {
            Ok(()) => print(format_args!("started {name} watching {target}")),
            Err(err) => {
                say(format_args!(
                    "bmb-monitor: watch: {target}: cannot start `{name}`: {err}"
                ));
                failed = true;
            }
        }
    }
    if failed {
        crate::exit::code(crate::exit::FAILURE)
    } else {
        crate::exit::code(crate::exit::OK)
    }
}

/// Why `--detach` cannot go with a flag given, if it cannot: every flag of
/// `watch` is either forwarded to the detached monitors or refused here (a
/// test holds each new flag to one or the other).
pub(super) fn refused(args: &Args) -> Option<&'static str> {
    if !args.audit.is_empty() {
        return Some(
            "--audit runs beside a watcher that goes on: not with --once or --detach (run `bmb-monitor audit` for one audit)",
        );
    }
    if args.metrics_listen.is_some() {
        return Some(
            "--metrics-listen cannot go with --detach: each detached monitor would need an address of its own",
        );
    }
    if args.check {
        return Some("--check checks a config file: not with --detach");
    }
    if args.once {
        return Some(
            "--once cannot go with --detach: a detached monitor goes on (run `watch --once` without --detach for one poll)",
        );
    }
    None
}

pub(super) fn forwarded(args: &Args) -> Vec<String> {
    let mut out = vec![
        "--interval".to_string(),
        args.interval.to_string(),
        "--nudge-budget".to_string(),
        args.nudge_budget.to_string(),
        "--nudge-text".to_string(),
        args.nudge_text.clone(),
        "--capture-timeout".to_string(),
        args.capture_timeout.to_string(),
        "--probe-timeout".to_string(),
        args.probe_timeout.to_string(),
        "--probes-on".to_string(),
        match args.probes_on {
            ProbesOn::Monitor => "monitor".to_string(),
            ProbesOn::Host => "host".to_string(),
        },
        "--alert-format".to_string(),
        match args.alert_format {
            AlertFormat::Text => "text".to_string(),
            AlertFormat::Html => "html".to_string(),
        },
    ];
    for (flag, value) in [
        ("--work-probe", &args.work_probe),
        ("--progress-probe", &args.progress_probe),
        ("--alert-cmd", &args.alert_cmd),
        ("--alertmanager", &args.alertmanager),
    ] {
        if let Some(value) = value {
            out.extend([flag.to_string(), value.clone()]);
        }
    }
    out.extend(args.server.forward());
    if args.json {
        out.push("--json".to_string());
    }
    if args.no_witness {
        out.push("--no-witness".to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Args, forwarded, refused};

    #[derive(Parser)]
    struct Watch {
        #[command(flatten)]
        args: Args,
    }

    /// A value each forwarded flag accepts, by its clap id.
    const SAMPLES: &[(&str, &str)] = &[
        ("interval", "7"),
        ("work_probe", "echo 3"),
        ("progress_probe", "echo 1"),
        ("nudge_budget", "9"),
        ("nudge_text", "go on"),
        ("alert_cmd", "cat"),
        ("capture_timeout", "4"),
        ("probe_timeout", "6"),
        ("alert_format", "html"),
        ("probes_on", "host"),
        ("alertmanager", "http://127.0.0.1:9093"),
        ("socket_name", "srv"),
        ("socket_path", "/tmp/srv.sock"),
        ("tmux_bin", "/opt/tmux"),
        ("ssh_config", "/etc/ssh-alt"),
        ("json", ""),
        ("no_witness", ""),
    ];

    /// Refused with `--detach`, by clap (a conflict) or by [`refused`]: each
    /// with a command line that holds it and parses without `--detach`, so
    /// the refusal is `--detach`'s and not a bad value's or a missing flag's.
    const REFUSED: &[(&str, &[&str])] = &[
        ("once", &["s", "--once"]),
        ("config", &["--config", "/etc/bmb.toml"]),
        ("check", &["--config", "/etc/bmb.toml", "--check"]),
        ("audit", &["s", "--audit", "/srv/p", "--audit-every", "6h"]),
        (
            "audit_every",
            &["s", "--audit", "/srv/p", "--audit-every", "6h"],
        ),
        (
            "audit_agent_cmd",
            &[
                "s",
                "--audit",
                "/srv/p",
                "--audit-every",
                "6h",
                "--audit-agent-cmd",
                "claude",
            ],
        ),
        ("metrics_listen", &["s", "--metrics-listen", "127.0.0.1:0"]),
    ];

    fn flag(arg: &clap::Arg) -> String {
        match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => unreachable!("a positional has no flag"),
        }
    }

    fn parse(extra: &[String]) -> Result<Args, clap::Error> {
        let argv = ["watch", "s", "--detach"].map(String::from).into_iter();
        Watch::try_parse_from(argv.chain(extra.iter().cloned())).map(|w| w.args)
    }

    #[test]
    fn every_watch_flag_is_forwarded_by_detach_or_refused_with_it() {
        for arg in Watch::command().get_arguments() {
            let id = arg.get_id().as_str();
            if arg.is_positional() || id == "detach" {
                continue;
            }
            let flag = flag(arg);
            let takes_value = arg.get_action().takes_values();
            let with = |value: &str| {
                let mut argv = vec![flag.clone()];
                if takes_value {
                    argv.push(value.to_string());
                }
                argv
            };
            if let Some((_, value)) = SAMPLES.iter().find(|(name, _)| *name == id) {
                let args = parse(&with(value)).unwrap_or_else(|err| panic!("{flag}: {err}"));
                let out = forwarded(&args);
                let at = out.iter().position(|word| *word == flag);
                let at = at.unwrap_or_else(|| panic!("{flag} is not forwarded: {out:?}"));
                if takes_value {
                    assert_eq!(out[at + 1], *value, "{flag}'s value is not forwarded");
                }
                // The detached monitor reads what it is handed as this one would.
                let argv = ["watch", "s"]
                    .map(String::from)
                    .into_iter()
                    .chain(out.clone());
                let child = Watch::try_parse_from(argv)
                    .unwrap_or_else(|err| panic!("the detached `watch s {out:?}`: {err}"));
                assert_eq!(forwarded(&child.args), out, "{flag} reads back otherwise");
            } else if let Some((_, argv)) = REFUSED.iter().find(|(name, _)| *name == id) {
                assert!(
                    argv.contains(&flag.as_str()),
                    "{id}'s command line holds {flag}"
                );
                let line = |detach: bool| {
                    let words = argv.iter().copied().chain(detach.then_some("--detach"));
                    Watch::try_parse_from(std::iter::once("watch").chain(words)).map(|w| w.args)
                };
                if let Err(err) = line(false) {
                    panic!("{argv:?} must parse without --detach: {err}");
                }
                let refused_by_us = line(true).ok().and_then(|args| refused(&args));
                assert!(
                    line(true).is_err() || refused_by_us.is_some(),
                    "{flag} is neither forwarded nor refused with --detach"
                );
            } else {
                panic!(
                    "`watch {flag}` is new: forward it to the detached monitors (detach::forwarded) \
                     or refuse it with --detach (detach::refused), and name it in this test"
                );
            }
        }
    }
}
