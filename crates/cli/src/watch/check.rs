//! `watch --config FILE --check`: the file read as a watch would read it, then every file it
//! names checked readable and every remote host asked for its sessions; nothing is watched.

use std::process::ExitCode;
use std::time::Duration;

use super::settings::Settings;
use crate::output::{print, say};

/// `--check` of a config that read: `ok: N targets` and each host reached on stdout, each file
/// it names that cannot be read and each host not reached on stderr; exit 2 for a file, 1 for a
/// host, else 0.
pub(super) fn run(path: &std::path::Path, settings: &Settings) -> ExitCode {
    let n = settings.targets.len();
    let patterns = match settings.patterns.len() {
        0 => String::new(),
        1 => ", 1 pattern of sessions".to_string(),
        p => format!(", {p} patterns of sessions"),
    };
    let missing = files_named(path, settings);
    for line in &missing {
        say(line);
    }
    if !missing.is_empty() {
        return crate::exit::code(crate::exit::USAGE);
    }
    // The limit a start would refuse (even raised to the hard one), refused here too.
    let targets = settings.targets.iter().map(|t| &t.target);
    if let Some(why) = super::fd_budget::raise_fd_limit(targets) {
        say(format_args!("{}: {why}", path.display()));
        return crate::exit::code(crate::exit::USAGE);
    }
    print(format_args!(
        "ok: {n} target{}{patterns}",
        if n == 1 { "" } else { "s" }
    ));
    if hosts_reached(path, settings) > 0 {
        crate::exit::code(crate::exit::FAILURE)
    } else {
        crate::exit::code(crate::exit::OK)
    }
}

/// The most an ssh config `--check` reads may hold (a few KiB is usual), as `ssh.rs` reads one.
const SSH_CONFIG_CAP: u64 = 1 << 20;

/// `--check`: every file the config names, readable (the ssh config, a
/// tmux binary given as a path, the folder of a local tmux socket); one line
/// per file that is not, naming the key.
fn files_named(path: &std::path::Path, settings: &Settings) -> Vec<String> {
    let shown = path.display();
    let server = &settings.args.server;
    let mut missing = Vec::new();
    // Stat first (never blocks), then read through probes: a FIFO there is named, not opened,
    // or `--check` would wait for a writer for ever.
    if let Some(config) = &server.ssh_config
        && let Err(error) = std::fs::metadata(config).and_then(|meta| {
            if !meta.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            probes::fs::file::read_regular(std::path::Path::new(config), SSH_CONFIG_CAP)
                .map(drop)
                .map_err(std::io::Error::other)
        })
    {
        missing.push(format!(
            "bmb-monitor: watch: {shown}: server.ssh_config: cannot read {config}: {error}"
        ));
    }
    let local = settings.targets.iter().any(|t| t.target.host.is_none())
        || settings.patterns.iter().any(|p| p.host.is_none());
    if local {
        let bin = server.tmux_bin();
        if bin.contains('/') {
            let runnable = std::fs::metadata(bin).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            });
            if !runnable {
                missing.push(format!(
                    "bmb-monitor: watch: {shown}: server.tmux_bin: {bin} is not a program this machine can run"
                ));
            }
        }
        if let probes::tmux::Server::Path(socket) = server.server()
            && let Some(folder) = std::path::Path::new(&socket).parent()
            && !folder.as_os_str().is_empty()
            && !folder.is_dir()
        {
            missing.push(format!(
                "bmb-monitor: watch: {shown}: server.socket_path: its folder {} does not exist",
                folder.display()
            ));
        }
    }
    // A target's own server, as [server]'s.
    for target in &settings.targets {
        if let Some(probes::tmux::Server::Path(socket)) = &target.server
            && let Some(folder) = std::path::Path::new(socket).parent()
            && !folder.as_os_str().is_empty()
            && !folder.is_dir()
        {
            missing.push(format!(
                "bmb-monitor: watch: {shown}: target {}: socket_path: its folder {} does not exist",
                target.target,
                folder.display()
            ));
        }
    }
    missing
}

/// `--check`: each remote host asked for its sessions (over ssh, as a cycle
/// would), said reached or not; the number it could not reach.
fn hosts_reached(path: &std::path::Path, settings: &Settings) -> usize {
    let mut hosts: Vec<&str> = settings
        .targets
        .iter()
        .filter_map(|t| t.target.host.as_deref())
        .chain(settings.patterns.iter().filter_map(|p| p.host.as_deref()))
        .collect();
    hosts.sort_unstable();
    hosts.dedup();
    let timeout = Duration::from_secs(settings.args.capture_timeout);
    let mut unreached = 0;
    for host in hosts {
        let tmux = settings.args.server.tmux(Some(host), timeout);
        match tmux.list_sessions() {
            Ok(sessions) => print(format_args!(
                "reached {host}: {} session{} on its tmux server",
                sessions.len(),
                if sessions.len() == 1 { "" } else { "s" }
            )),
            Err(error) => {
                unreached += 1;
                say(format_args!(
                    "bmb-monitor: watch: {}: cannot reach host {host}: {error}",
                    path.display()
                ));
            }
        }
    }
    unreached
}
