//! `--detach`: one detached tmux session per target, running this command without it.

use std::time::Duration;

use watchdog::target::Target;

use super::*;
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
        // carry the state folder so the monitor remembers what this one would.
        let mut command = Vec::new();
        if let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
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
