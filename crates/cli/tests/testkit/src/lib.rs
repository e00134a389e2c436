//! What the end-to-end tests and benchmarks share, and nothing the product
//! uses: the one harness that starts the binary ([`bin`]), a private tmux
//! server per test ([`tmux`]), a real sshd on 127.0.0.1 ([`sshd`]), a real
//! Alertmanager on 127.0.0.1 ([`alertmanager`]), a real Prometheus
//! ([`prometheus`]), a webhook receiver ([`webhook`]), a fake HTTP server
//! answering as the test says ([`http`]), what tests read in `/metrics`
//! ([`metrics`]), and a
//! seccomp fence that forbids process creation on one thread ([`fence`]),
//! a live agent CLI held in a situation ([`live`]), the real monitor beside
//! it ([`watcher`]), and `git` in a test's
//! repository ([`git`]), and what tests look at in folders and `/proc`
//! ([`entries`], [`processes_mentioning`]).
//! Each cleans up exactly what it started, by socket or pid.

pub mod alertmanager;
pub mod bin;
mod daemon;
pub mod fence;
pub mod http;
pub mod live;
pub mod metrics;
pub mod prometheus;
pub mod sshd;
pub mod tmux;
pub mod watcher;
pub mod webhook;

/// Ends a daemon a test started (SIGTERM, then SIGKILL after 5 s) and
/// reaps it; nothing when it already ended.
pub fn stop_child(child: &mut std::process::Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    // Our own unreaped child: its pid cannot have been recycled, since we
    // have not waited for it yet.
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The names in `dir`, sorted; none when it cannot be read (a folder
/// that is gone).
pub fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The live processes (zombies left out) whose command line mentions
/// `needle`: each one's pid and command line, its arguments joined by spaces.
pub fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let live = probes::os::pid::Pid::new(pid).is_some_and(probes::os::process::is_alive);
        if cmdline.contains(needle) && live {
            found.push((pid, cmdline));
        }
    }
    found
}

/// The daemon `command` starts ends with the thread that starts it: if the
/// test dies without running Drop (SIGKILL), the kernel sends it SIGTERM.
/// The "parent" is the spawning THREAD: start and drop a daemon on the
/// test's thread.
#[expect(
    unsafe_code,
    reason = "std's `pre_exec` is the only hook between fork and exec; the SAFETY note says why it is sound"
)]
pub fn dies_with_this_thread(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec, where only
    // async-signal-safe calls are sound: prctl(2) is one, and it neither
    // allocates nor locks. `pre_exec` is std's only hook there; no crate sets
    // a `Command`'s parent-death signal without it.
    unsafe {
        command.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))
                .map_err(std::io::Error::from)
        });
    }
}

/// `git ARGS` in `dir` as a test's fixture runs it: the machine's and the
/// user's git config left out, a fixed author; its stdout. Panics, saying
/// why, when git fails.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let outcome = probes::run::run(
        &probes::run::Invocation::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.invalid"),
        &probes::run::Limits::default(),
    );
    match outcome.success_stdout() {
        Some(out) => out.text(),
        None => panic!("git {args:?} in {}: {}", dir.display(), outcome.describe()),
    }
}
