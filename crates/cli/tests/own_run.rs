//! What one monitor run owns, on the real binary (issue 19, items 1, 6
//! and 8): its ssh control folder is its own (a socket planted where an
//! earlier run's or a guessed name would be is never used as the master),
//! one target has one monitor however its tmux socket is spelled (a hard
//! link or a symlink to the socket file included), and a run killed with
//! `kill -9` has what it started, and tagged, ended by the next run.
//!
//! Nothing here measures time: wall clocks appear only as hang guards.

// The harnesses start tmux, sshd and the monitor as children of the test,
// which `probes::run` (run to completion) cannot do.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use bmb_testkit::bin::{Running, wait_until};
use bmb_testkit::sshd::Sshd;
use bmb_testkit::tmux::{PrivateTmux, capture_path};
use bmb_testkit::{entries, processes_mentioning};

const EXE: &str = env!("CARGO_BIN_EXE_bmb-monitor");

/// A listener at `path` that counts who connects: a planted control socket.
fn plant(path: &Path) -> UnixListener {
    let listener = UnixListener::bind(path).expect("plant a socket");
    listener.set_nonblocking(true).unwrap();
    listener
}

/// Whether anyone connected to a planted socket.
fn was_used(listener: &UnixListener) -> bool {
    listener.accept().is_ok()
}

/// The name the control socket of `alias` had before it was keyed per run:
/// `<pid>-<hash of (alias, config)>`, the hash the same in every run and
/// printed in ssh's error lines.
fn old_scheme_name(pid: u32, alias: &str, config: Option<&str>) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    (alias, config).hash(&mut hasher);
    format!("{pid}-{:016x}", hasher.finish())
}

/// `sh` that waits for one line on its stdin, then execs the monitor with
/// `args`: its pid, known before the monitor runs, is the monitor's.
fn held_monitor(args: &[&str], env: &[(&str, &Path)]) -> Running {
    let mut command = bmb_testkit::bin::command("sh");
    command
        .args(["-c", r#"read go && exec "$0" "$@""#, EXE])
        .args(args)
        .envs(env.iter().copied());
    Running::start(command)
}

fn count_lines(running: &Running, prefix: &str) -> usize {
    running
        .out()
        .iter()
        .filter(|l| l.starts_with(prefix))
        .count()
}

#[test]
fn a_control_socket_planted_where_the_monitor_would_look_is_never_its_master() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    let received = server.dir.path().join("ask.received");
    std::fs::write(&received, "").unwrap();
    server.replay("ask", &capture_path("GOLDEN-question-real"), &received);
    let runtime = dir.path().join("runtime");
    let base = runtime.join("bmb-monitor");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
    let config = sshd.config().to_str().unwrap().to_string();
    let state = dir.path().join("state");

    let mut running = held_monitor(
        &[
            "watch",
            "--interval",
            "1",
            "--ssh-config",
            &config,
            "-S",
            server.socket.to_str().unwrap(),
            "box:ask",
        ],
        &[("XDG_RUNTIME_DIR", &runtime), ("XDG_STATE_HOME", &state)],
    );
    let pid = running.child.id();
    // Planted before the monitor runs: where the old scheme put this run's
    // socket, and in a folder dressed as a live run's (its lock held).
    let guessed = plant(&base.join(old_scheme_name(pid, "box", Some(&config))));
    let decoy = base.join("run.decoy1");
    std::fs::create_dir(&decoy).unwrap();
    std::fs::set_permissions(&decoy, std::fs::Permissions::from_mode(0o700)).unwrap();
    let decoy_lock = std::fs::File::create(decoy.join("lock")).unwrap();
    decoy_lock.lock().unwrap();
    let in_decoy = plant(&decoy.join("0123456789abcdef"));
    running.send("go");

    assert!(
        wait_until(60, || count_lines(&running, "MONITOR · box:ask · ") >= 3),
        "out: {:?}\nerr: {:?}",
        running.out(),
        running.err()
    );
    assert!(
        !was_used(&guessed),
        "the guessed name was used as the master"
    );
    assert!(
        !was_used(&in_decoy),
        "a socket in another run's folder was used"
    );
    // The real pane was read: it asks, and the monitor says so.
    assert!(
        running
            .out()
            .iter()
            .any(|l| l.starts_with("MONITOR · box:ask · QUESTION · ")),
        "{:?}",
        running.out()
    );
    // Its own folder: fresh, 0700, ours, one socket and its lock in it.
    let mine: Vec<PathBuf> = entries(&base)
        .into_iter()
        .filter(|n| n.starts_with("run.") && n != "run.decoy1")
        .map(|n| base.join(n))
        .collect();
    assert_eq!(mine.len(), 1, "{:?}", entries(&base));
    let meta = std::fs::symlink_metadata(&mine[0]).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.mode() & 0o777, 0o700);
    assert_eq!(meta.uid(), rustix::process::getuid().as_raw());
    assert_eq!(entries(&mine[0]).len(), 2, "{:?}", entries(&mine[0]));
    // No name it uses can be read from what it printed before it used it.
    let printed = format!("{:?}{:?}", running.out(), running.err());
    assert!(
        !printed.contains(&old_scheme_name(pid, "box", Some(&config))),
        "{printed}"
    );
    assert_eq!(
        sshd.log().matches("Accepted publickey for root").count(),
        1,
        "one login of its own: {}",
        sshd.log()
    );

    running.signal(rustix::process::Signal::TERM);
    let status = running.wait_exit(30).expect("ends on SIGTERM");
    assert!(status.success(), "{status:?}: {:?}", running.err());
    assert!(!mine[0].exists(), "its folder is removed when it ends");
    assert!(decoy.is_dir(), "another run's folder is left alone");
}

#[test]
fn a_control_folder_or_state_folder_others_can_write_is_refused_not_tightened() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("runtime");
    let base = runtime.join("bmb-monitor");
    std::fs::create_dir_all(&base).unwrap();
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
    let state = dir.path().join("state");
    // A state folder open to others is refused as well: the journal there
    // decides what is typed.
    let open_state = state.join("bmb-monitor");
    std::fs::create_dir_all(&open_state).unwrap();
    std::fs::set_permissions(&open_state, std::fs::Permissions::from_mode(0o775)).unwrap();
    let server = PrivateTmux::new();
    server.session("s", "exec sleep 600");
    let mut command = bmb_testkit::bin::command(EXE);
    command
        .args(["watch", "--once", "-S", server.socket.to_str().unwrap()])
        .args(["--ssh-config", "/dev/null", "s", "nowhere:s"])
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("XDG_STATE_HOME", &state);
    let output = bmb_testkit::bin::run(command, b"", std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{} has mode 0777, open to other users",
            base.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "the state folder will not do: {} has mode 0775",
            open_state.display()
        )),
        "{stderr}"
    );
    assert_eq!(entries(&base), Vec::<String>::new(), "nothing made in it");
    let mode = std::fs::metadata(&base).unwrap().mode();
    assert_eq!(mode & 0o777, 0o777, "refused, not tightened");
    let mode = std::fs::metadata(&open_state).unwrap().mode();
    assert_eq!(mode & 0o777, 0o775, "refused, not tightened");

    // A state folder others could only read (0755, an earlier version's) is
    // ours untouched: it is closed to them and the watcher goes on.
    let readable = dir.path().join("readable");
    let readable_state = readable.join("bmb-monitor");
    std::fs::create_dir_all(&readable_state).unwrap();
    std::fs::set_permissions(&readable_state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, stderr) = watch_once(&server.socket, &readable);
    assert_eq!(code, Some(0), "{stderr}");
    let mode = std::fs::metadata(&readable_state).unwrap().mode();
    assert_eq!(mode & 0o777, 0o700, "closed to others: {stderr}");
}

/// `watch --once -S SOCKET s` with `state`: its exit code and stderr.
fn watch_once(socket: &Path, state: &Path) -> (Option<i32>, String) {
    let mut command = bmb_testkit::bin::command(EXE);
    command
        .args(["watch", "--once", "-S"])
        .arg(socket)
        .arg("s")
        .env("XDG_STATE_HOME", state);
    let output = bmb_testkit::bin::run(command, b"", std::time::Duration::from_secs(60));
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_hard_link_or_a_symlink_to_the_watched_socket_is_the_same_target_even_when_it_came_later() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let server = PrivateTmux::new();
    // The first monitor starts before its tmux server: no socket yet.
    let mut command = bmb_testkit::bin::command(EXE);
    command
        .args(["watch", "--interval", "1", "-S"])
        .arg(&server.socket)
        .arg("s")
        .env("XDG_STATE_HOME", &state);
    let mut first = Running::start(command);
    assert!(
        wait_until(60, || first
            .err()
            .iter()
            .any(|l| l.starts_with("bmb-monitor: watch: s: "))),
        "it says the server is not there: {:?}",
        first.err()
    );
    server.session("s", "exec sleep 600");
    let cycles = count_lines(&first, "MONITOR · s · ");
    // A cycle that began after the socket appeared took its lock.
    assert!(
        wait_until(60, || count_lines(&first, "MONITOR · s · ") >= cycles + 2),
        "{:?}",
        first.out()
    );
    let hard = dir.path().join("hard.sock");
    std::fs::hard_link(&server.socket, &hard).unwrap();
    let soft = dir.path().join("soft.sock");
    std::os::unix::fs::symlink(&server.socket, &soft).unwrap();
    let pid = first.child.id();
    for other in [&hard, &soft] {
        let (code, stderr) = watch_once(other, &state);
        assert_eq!(code, Some(2), "{}: {stderr}", other.display());
        assert!(
            stderr.contains(&format!(
                "s is already watched by another bmb-monitor (pid {pid}) on this server"
            )),
            "{}: {stderr}",
            other.display()
        );
    }
    first.signal(rustix::process::Signal::TERM);
    assert!(first.wait_exit(30).is_some_and(|s| s.success()));
    // Let go with its monitor: the hard link's monitor runs now.
    let (code, stderr) = watch_once(&hard, &state);
    assert_eq!(code, Some(0), "{stderr}");
}

/// Still running: neither gone nor a zombie.
fn running(pid: u32) -> bool {
    probes::os::pid::Pid::new(pid).is_some_and(probes::os::process::is_alive)
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Ends an orphan if the monitor did not (a failing run of a test), by its
/// pid and start time, so a pid reused since is never hit.
struct EndOrphan(u32, Option<u64>);

impl EndOrphan {
    fn of(pid: u32) -> EndOrphan {
        EndOrphan(
            pid,
            probes::os::procfs::Stat::of(pid).and_then(|s| s.start_ticks()),
        )
    }
}

impl Drop for EndOrphan {
    fn drop(&mut self) {
        let now = probes::os::procfs::Stat::of(self.0).and_then(|s| s.start_ticks());
        if running(self.0) && now == self.1 {
            let pid = rustix::process::Pid::from_raw(self.0 as i32).expect("a pid");
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// A `sleep` of the test's own, with `env`, to stand beside the monitor's.
fn bystander(env: &[(&str, &str)]) -> std::process::Child {
    let mut command = std::process::Command::new("sleep");
    command.arg("600").env_remove("BMB_RUN");
    command.envs(env.iter().copied());
    bmb_testkit::dies_with_this_thread(&mut command);
    command.spawn().expect("sleep starts")
}

#[test]
fn a_restarted_watcher_ends_what_its_killed_run_tagged_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let server = PrivateTmux::new();
    server.session("s", "exec sleep 600");
    // A probe that starts a grandchild and a tmux server of its own, then
    // waits: the monitor is killed while it runs.
    let orphan_pid = dir.path().join("orphan.pid");
    let other = PrivateTmux::new();
    let probe = format!(
        "sleep 600 & echo $! > '{orphan}'; tmux -S '{other}' -f /dev/null new-session -d -s x 'exec sleep 600'; wait",
        orphan = orphan_pid.display(),
        other = other.socket.display(),
    );
    let mut command = bmb_testkit::bin::command(EXE);
    command
        .args(["watch", "--interval", "1", "--probe-timeout", "600"])
        .args(["--work-probe", &probe, "-S"])
        .arg(&server.socket)
        .arg("s")
        .env("XDG_STATE_HOME", &state);
    let mut first = Running::start(command);
    assert!(
        wait_until(60, || read_pid(&orphan_pid).is_some()
            && other
                .try_tmux(&["has-session", "-t", "=x"])
                .status
                .success()),
        "the probe never started its children: {:?}",
        first.err()
    );
    let orphan = read_pid(&orphan_pid).unwrap();
    let _end_orphan = EndOrphan::of(orphan);
    // Not the monitor's: one with no tag, one with another run's tag.
    let mut untagged = bystander(&[]);
    let mut foreign = bystander(&[("BMB_RUN", "1-1.0")]);
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    // What kill -9 leaves: the probe's own child, past its parent.
    assert!(running(orphan), "the grandchild outlived the monitor");

    let mut command = bmb_testkit::bin::command(EXE);
    command
        .args(["watch", "--once", "-S"])
        .arg(&server.socket)
        .arg("s")
        .env("XDG_STATE_HOME", &state);
    let output = bmb_testkit::bin::run(command, b"", std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        wait_until(20, || !running(orphan)),
        "the next run left the orphan {orphan} running: {stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "bmb-monitor: watch: ended 1 process(es) its previous run (pid {}) left running: {orphan}",
            first.child.id()
        )),
        "{stderr}"
    );
    // Never a tmux server or what runs in it, never what it did not tag.
    assert!(
        other
            .try_tmux(&["has-session", "-t", "=x"])
            .status
            .success()
    );
    for child in [&mut untagged, &mut foreign] {
        assert!(
            running(child.id()),
            "a process the monitor never tagged was ended"
        );
        bmb_testkit::stop_child(child);
    }
}

/// Issue 19, item 6: the audit child gave its auditors a tag of its own
/// run, not of the watcher's, so a restarted watcher never found what a
/// `kill -9` of both left: the auditors' own children.
#[test]
fn a_restarted_watcher_ends_what_its_killed_runs_auditors_left() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("CLAUDE.md"),
        "# Rules\n\n## Testing\n\n- Wait for an event.\n\n## Storage\n\n- Write only in the data folder.\n",
    )
    .unwrap();
    bmb_testkit::git(&project, &["init", "-q"]);
    bmb_testkit::git(&project, &["add", "."]);
    bmb_testkit::git(&project, &["commit", "-q", "-m", "start"]);
    // A slow auditor: its tool (a child of its own) runs on, and the
    // auditor waits for it.
    let pids = dir.path().join("pids");
    let auditor = dir.path().join("auditor.sh");
    std::fs::write(
        &auditor,
        format!(
            "cat > /dev/null\nsleep 600 &\necho $! >> '{}'\nwait\n",
            pids.display()
        ),
    )
    .unwrap();
    let server = PrivateTmux::new();
    server.session("work", "exec sleep 600");
    let mut command = bmb_testkit::bin::command(EXE);
    command
        .args(["watch", "--interval", "1", "-S"])
        .arg(&server.socket)
        .arg("work")
        .arg("--audit")
        .arg(&project)
        .args(["--audit-every", "1h"])
        .args(["--audit-agent-cmd", &format!("sh {}", auditor.display())])
        .env("XDG_STATE_HOME", &state);
    let mut first = Running::start(command);
    let tools = || -> Vec<u32> {
        std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    };
    assert!(
        wait_until(60, || tools().len() == 2),
        "both auditors start their tools: {:?}",
        first.err()
    );
    let tools = tools();
    let _end = tools
        .iter()
        .map(|&pid| EndOrphan::of(pid))
        .collect::<Vec<_>>();
    let watcher = first.child.id();
    let audit: Vec<u32> = processes_mentioning(&project.to_string_lossy())
        .into_iter()
        .filter(|(pid, line)| {
            line.contains(" audit ")
                && probes::os::procfs::Stat::of(*pid).and_then(|s| s.ppid()) == Some(watcher)
        })
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(audit.len(), 1, "the watcher's audit child: {audit:?}");
    let _end_audit = EndOrphan::of(audit[0]);
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let pid = rustix::process::Pid::from_raw(audit[0] as i32).expect("a pid");
    // Gone already, with its parent, or ended now.
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    assert!(
        wait_until(20, || !running(audit[0])),
        "the audit child ends"
    );
    // What kill -9 leaves: the auditors' tools, past the audit.
    assert!(tools.iter().all(|&pid| running(pid)), "{tools:?}");

    let mut command = bmb_testkit::bin::command(EXE);
    command
        .args(["watch", "--once", "-S"])
        .arg(&server.socket)
        .arg("work")
        .env("XDG_STATE_HOME", &state);
    let output = bmb_testkit::bin::run(command, b"", std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    for &tool in &tools {
        assert!(
            wait_until(20, || !running(tool)),
            "the next run left the auditor's tool {tool} running: {stderr}"
        );
    }
    let said = stderr
        .lines()
        .find(|l| l.starts_with("bmb-monitor: watch: ended "))
        .unwrap_or_default();
    assert!(
        said.contains(&format!("its previous run (pid {watcher}) left running: "))
            && tools
                .iter()
                .all(|t| said.split(' ').any(|w| w == t.to_string())),
        "{stderr}"
    );
}

#[test]
fn a_killed_watchers_ssh_master_and_control_folder_are_ended_by_its_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    server.session("a", "exec sleep 600");
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let state = dir.path().join("state");
    let base = runtime.join("bmb-monitor");
    let watch = |extra: &[&str]| {
        let mut command = bmb_testkit::bin::command(EXE);
        command
            .arg("watch")
            .args(extra)
            .args(["--ssh-config", sshd.config().to_str().unwrap(), "-S"])
            .arg(&server.socket)
            .arg("box:a")
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("XDG_STATE_HOME", &state);
        command
    };
    let mut first = Running::start(watch(&["--interval", "1"]));
    assert!(
        wait_until(60, || count_lines(&first, "MONITOR · box:a · ") >= 2),
        "{:?}",
        first.err()
    );
    let folder = base.join(&entries(&base)[0]);
    let needle = folder.to_string_lossy().into_owned();
    // The master's title is `ssh: <socket> [mux]`; the host's long-lived
    // session rides on it with the socket in its argv.
    let master: Vec<u32> = processes_mentioning(&needle)
        .into_iter()
        .filter(|(_, line)| line.contains("[mux]"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(master.len(), 1, "one master: {master:?}");
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    // What kill -9 leaves: the master, past its monitor, and its folder.
    assert!(running(master[0]) && folder.is_dir());

    let output = bmb_testkit::bin::run(watch(&["--once"]), b"", std::time::Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        wait_until(20, || !running(master[0])),
        "the killed run's master still runs: {stderr}"
    );
    // Its own folder is gone with it (`--once`), the killed run's as well.
    assert_eq!(entries(&base), Vec::<String>::new(), "{stderr}");
}

/// The inode locks' folder open to others is refused like the state folder
/// (a lock there proves nothing): before, the monitor said "not guarded"
/// and went on, and a second monitor through a hard link alerted twice.
#[test]
fn an_inode_lock_folder_others_can_write_is_refused_like_the_state_folder() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let session = state.join("bmb-monitor/session");
    for folder in [state.join("bmb-monitor"), session.clone()] {
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let locks = session.join("by-socket");
    std::fs::create_dir(&locks).unwrap();
    std::fs::set_permissions(&locks, std::fs::Permissions::from_mode(0o777)).unwrap();
    let server = PrivateTmux::new();
    server.session("s", "exec sleep 600");
    let (code, stderr) = watch_once(&server.socket, &state);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("the lock folder will not do")
            && stderr.contains(&format!("{} has mode 0777", locks.display())),
        "{stderr}"
    );
    let mode = std::fs::metadata(&locks).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o777, "refused, not tightened");
}
