//! `bmb-monitor list` and `stop`: what can be watched, here and on every ssh
//! alias, which targets a detached monitor watches, and ending one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use watchdog::session::target::Target;

use crate::alert::sanitize_text;
use crate::output::usage_error;
use crate::output::{print, say};
use crate::server_args::ServerArgs;

#[derive(clap::Args, Debug)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Print JSON Lines.
    #[arg(long)]
    json: bool,
    /// Seconds each host may take to answer.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = crate::secs(1))]
    timeout: u64,
}

/// `list`: local sessions and every ssh alias's, probed in parallel, each bounded.
pub(crate) fn run_list(args: ListArgs) -> ExitCode {
    let timeout = Duration::from_secs(args.timeout);
    let local = args.server.tmux(None, timeout);
    let local_sessions = local.list_sessions().unwrap_or_else(|err| {
        say(format_args!("bmb-monitor: list: local: {err}"));
        Vec::new()
    });
    let monitored: BTreeMap<String, String> = local_sessions
        .iter()
        .filter_map(|name| {
            Target::from_monitor_session(name).map(|t| (t.to_string(), name.clone()))
        })
        .collect();
    // ssh reads the passwd home's config, not $HOME's: list what ssh will resolve.
    let config_path = args
        .server
        .ssh_config
        .clone()
        .map(PathBuf::from)
        .or_else(probes::ssh::user_config_path);
    let all_aliases = config_path
        .map(|path| probes::ssh::host_aliases_in(&path))
        .unwrap_or_default();
    // An alias `watch` would refuse as a host is not listed, and is named
    // without the characters that made it unsafe.
    let (aliases, refused): (Vec<String>, Vec<String>) =
        all_aliases.into_iter().partition(|alias| {
            Target::parse(&format!("{alias}:s"))
                .is_ok_and(|t| t.host.as_deref() == Some(alias.as_str()))
        });
    for alias in refused {
        say(format_args!(
            "bmb-monitor: list: skipping the ssh alias {:?}: not a host name watch accepts",
            sanitize_text(&alias)
        ));
    }
    let remote: Vec<(String, Result<Vec<String>, String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = aliases
            .iter()
            .map(|alias| {
                let tmux = args.server.tmux(Some(alias), timeout);
                let probe = move || tmux.list_sessions().map_err(|e| e.to_string());
                (alias.clone(), scope.spawn(probe))
            })
            .collect();
        handles
            .into_iter()
            .map(|(alias, handle)| {
                (
                    alias,
                    handle
                        .join()
                        .unwrap_or_else(|_| Err("the probe thread failed".to_string())),
                )
            })
            .collect()
    });
    let mut rows: Vec<(Option<String>, String)> = local_sessions
        .into_iter()
        .filter(|s| Target::from_monitor_session(s).is_none())
        .map(|s| (None, s))
        .collect();
    for (alias, sessions) in remote {
        match sessions {
            Ok(sessions) => rows.extend(sessions.into_iter().map(|s| (Some(alias.clone()), s))),
            Err(err) => say(format_args!("bmb-monitor: list: {alias}: {err}")),
        }
    }
    for (host, session) in rows {
        let target = match &host {
            Some(host) => format!("{host}:{session}"),
            None => session.clone(),
        };
        let monitor = monitored.get(&target);
        let line = if args.json {
            // Strings only: serialising cannot fail.
            serde_json::to_string(&SessionJson {
                host: host.as_deref(),
                monitor: monitor.map(String::as_str),
                session: &session,
                target: &target,
            })
            .unwrap_or_default()
        } else {
            format!(
                "{}\t{}",
                sanitize_text(&target),
                monitor.map_or("-".to_string(), |m| format!("watched by {m}"))
            )
        };
        print(line);
    }
    crate::exit::code(crate::exit::OK)
}

#[derive(clap::Args, Debug)]
pub(crate) struct StopArgs {
    /// The watched target whose detached monitor to end.
    #[arg(value_name = "TARGET")]
    target: String,
    #[command(flatten)]
    server: ServerArgs,
}

/// `stop`: ends the detached monitor of one target.
pub(crate) fn run_stop(args: StopArgs) -> ExitCode {
    let target = match Target::parse(&args.target) {
        Ok(target) => target,
        Err(message) => return usage_error("stop", message),
    };
    let name = target.monitor_session();
    let tmux = args.server.tmux(None, Duration::from_secs(10));
    match tmux.list_sessions() {
        Ok(sessions) if sessions.contains(&name) => {}
        Ok(_) => {
            say(format_args!(
                "bmb-monitor: stop: no monitor session `{name}` for {target}"
            ));
            return crate::exit::code(crate::exit::FAILURE);
        }
        Err(err) => {
            say(format_args!("bmb-monitor: stop: {err}"));
            return crate::exit::code(crate::exit::FAILURE);
        }
    }
    match tmux.kill_session(&name) {
        Ok(()) => {
            print(format_args!("stopped {name}"));
            crate::exit::code(crate::exit::OK)
        }
        Err(err) => {
            say(format_args!("bmb-monitor: stop: {err}"));
            crate::exit::code(crate::exit::FAILURE)
        }
    }
}

/// One line of `list --json`: a session that can be watched. The fields are in alphabetical
/// order, the order the line has had since before it was a type of its own. No version field:
/// it is this machine's listing, read where it is printed.
#[derive(serde::Serialize)]
struct SessionJson<'a> {
    /// The ssh alias it was listed on; none for this machine.
    host: Option<&'a str>,
    /// The tmux session of the detached monitor watching it, when one is.
    monitor: Option<&'a str>,
    /// The tmux session's name.
    session: &'a str,
    /// The target `watch` takes for it (`host:session`, or the session alone).
    target: &'a str,
}
