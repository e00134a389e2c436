//! systemd's notify protocol from the loops, end to end: the real binary
//! with `NOTIFY_SOCKET` naming a datagram socket the test listens on, as
//! systemd's would. `READY=1` once, after the first cycle; `WATCHDOG=1` once
//! per completed cycle, so none while a capture hangs; `STOPPING=1` on the
//! way out.
// These tests start the binary and tmux, and signal the tmux server; that is their point.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;

use bmb_testkit::bin::{Running, wait_until};
use bmb_testkit::tmux::{PrivateTmux, capture_path};
use rustix::process::{Pid, Signal, kill_process};

/// The socket systemd would listen on, and what arrived on it.
struct NotifySocket {
    socket: UnixDatagram,
    messages: Vec<String>,
}

impl NotifySocket {
    fn bind(path: &Path) -> NotifySocket {
        let socket = UnixDatagram::bind(path).expect("bind the notify socket");
        socket.set_nonblocking(true).expect("non-blocking");
        NotifySocket {
            socket,
            messages: Vec::new(),
        }
    }

    /// An abstract socket (`NOTIFY_SOCKET=@name`), as systemd may give.
    fn bind_abstract(name: &str) -> NotifySocket {
        use std::os::linux::net::SocketAddrExt;
        let address =
            std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).expect("a name");
        let socket = UnixDatagram::bind_addr(&address).expect("bind the abstract socket");
        socket.set_nonblocking(true).expect("non-blocking");
        NotifySocket {
            socket,
            messages: Vec::new(),
        }
    }

    /// Takes every datagram already queued.
    fn drain(&mut self) {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = self.socket.recv(&mut buffer) {
            self.messages
                .push(String::from_utf8_lossy(&buffer[..n]).into_owned());
        }
    }

    /// The last message so far is `STOPPING=1`: the loop said it was ending.
    fn assert_stopping_last(&mut self) {
        self.drain();
        assert!(
            self.messages.last().is_some_and(|m| m == "STOPPING=1\n"),
            "{:?}",
            self.messages
        );
    }

    /// How many times `assignment` (`WATCHDOG=1`) arrived so far.
    fn count(&mut self, assignment: &str) -> usize {
        self.drain();
        self.messages
            .iter()
            .flat_map(|m| m.lines())
            .filter(|line| *line == assignment)
            .count()
    }
}

fn poll_lines(monitor: &Running) -> usize {
    monitor
        .out()
        .iter()
        .filter(|l| l.starts_with("MONITOR · agent · "))
        .count()
}

/// The monitor's children whose name starts with `comm` (its captures are
/// tmux clients, which name themselves `tmux: client`).
fn children_named(parent: u32, comm: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            probes::os::procfs::Stat::of(*pid).is_some_and(|s| {
                s.ppid() == Some(parent) && s.comm().starts_with(comm) && !s.has_exited()
            })
        })
        .collect()
}

/// Resumes the stopped tmux server even when an assertion fails (a stopped
/// server would hang the private server's own clean-up).
struct Resume(u32);

impl Drop for Resume {
    fn drop(&mut self) {
        if let Some(pid) = Pid::from_raw(self.0 as i32) {
            let _ = kill_process(pid, Signal::CONT);
        }
    }
}

#[test]
fn ready_once_a_watchdog_ping_per_completed_cycle_none_while_a_capture_hangs_and_stopping() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let received = tmux.dir.path().join("agent.received");
    tmux.replay("agent", &capture_path("working-bash-sleep"), &received);
    let socket_path = tmux.dir.path().join("notify.sock");
    let mut notify = NotifySocket::bind(&socket_path);
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        // A hung capture is ended by the monitor's own timeout, three intervals on.
        .args(["agent", "--interval", "1", "--capture-timeout", "3"])
        .env("XDG_STATE_HOME", state.path())
        .env("NOTIFY_SOCKET", &socket_path);
    let mut monitor = Running::start(command);
    assert!(
        wait_until(30, || poll_lines(&monitor) >= 3),
        "{:?} {:?}",
        monitor.out(),
        monitor.err()
    );
    assert!(
        wait_until(10, || notify.count("WATCHDOG=1") >= 3),
        "{:?}",
        notify.messages
    );
    assert_eq!(
        notify.messages[0], "READY=1\nWATCHDOG=1\n",
        "ready after the first cycle"
    );

    // Freeze the tmux server: the next capture hangs.
    let server: u32 =
        String::from_utf8_lossy(&tmux.tmux(&["display-message", "-p", "#{pid}"]).stdout)
            .trim()
            .parse()
            .expect("the server's pid");
    let _resume = Resume(server);
    kill_process(Pid::from_raw(server as i32).expect("pid"), Signal::STOP).expect("SIGSTOP");
    let monitor_pid = monitor.child.id();
    let mut hung = Vec::new();
    assert!(
        wait_until(30, || {
            hung = children_named(monitor_pid, "tmux");
            !hung.is_empty()
        }),
        "no capture started against the stopped server"
    );
    let hung_capture = hung[0];
    // Every cycle completed before the capture began was pinged, once.
    let pinged = notify.count("WATCHDOG=1");
    assert!(
        wait_until(10, || poll_lines(&monitor) == pinged),
        "{pinged} pings for {} poll lines",
        poll_lines(&monitor)
    );
    // The monitor's own capture timeout (three intervals) ends the hang: the
    // cycle completes as a failed capture. No test clock decides how long.
    assert!(
        wait_until(60, || !children_named(monitor_pid, "tmux")
            .contains(&hung_capture)),
        "the capture timeout never ended the hung capture"
    );
    kill_process(Pid::from_raw(server as i32).expect("pid"), Signal::CONT).expect("SIGCONT");
    assert!(
        wait_until(30, || poll_lines(&monitor) > pinged + 1),
        "no cycle after the server resumed: {:?}",
        monitor.err()
    );
    assert_eq!(notify.count("READY=1"), 1, "ready once");

    monitor.signal(Signal::TERM);
    let status = monitor.wait_exit(10).expect("ends on SIGTERM");
    assert_eq!(status.code(), Some(0));
    // Ended, so every ping is in: one per completed cycle, the hung one
    // included and nothing while it hung (a timer would have pinged three
    // times more), whatever the machine's speed.
    assert!(
        wait_until(10, || notify.count("WATCHDOG=1") == poll_lines(&monitor)),
        "one ping per completed cycle: {} pings, {} cycles",
        notify.count("WATCHDOG=1"),
        poll_lines(&monitor)
    );
    assert_eq!(notify.count("STOPPING=1"), 1, "{:?}", notify.messages);
    notify.assert_stopping_last();
}

#[test]
fn a_systemd_watchdog_no_longer_than_the_interval_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket_path = dir.path().join("notify.sock");
    let mut notify = NotifySocket::bind(&socket_path);
    // WATCHDOG_PID must name the monitor itself: a shell that execs it keeps its pid.
    let script = format!(
        "WATCHDOG_PID=$$ WATCHDOG_USEC=30000000 exec '{}' watch agent --interval 30",
        env!("CARGO_BIN_EXE_bmb-monitor")
    );
    let output = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("NOTIFY_SOCKET", &socket_path)
        .env("XDG_STATE_HOME", dir.path())
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("WatchdogSec (30s)") && stderr.contains("interval (30s)"),
        "{stderr}"
    );
    assert_eq!(notify.count("READY=1"), 0, "never ready");
}

#[test]
fn the_worker_is_ready_after_its_first_pass_pings_per_pass_and_says_stopping_when_its_agent_ends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket_path = dir.path().join("notify.sock");
    let mut notify = NotifySocket::bind(&socket_path);
    let mut agent = Command::new("sleep").arg("600").spawn().expect("an agent");
    let pid_file = dir.path().join("agent.pid");
    std::fs::write(&pid_file, agent.id().to_string()).expect("pid file");
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("worker")
        .arg("--pid-file")
        .arg(&pid_file)
        .arg("--findings")
        .arg(dir.path().join("findings.jsonl"))
        .args(["--interval", "1", "--verbose"])
        .env("NOTIFY_SOCKET", &socket_path);
    let mut monitor = Running::start(command);
    // `--verbose`: one stderr line per pass.
    let passes = |m: &Running| m.err().iter().filter(|l| l.contains(": pass ")).count();
    assert!(
        wait_until(30, || passes(&monitor) >= 3),
        "{:?}",
        monitor.err()
    );
    assert!(
        wait_until(10, || notify.count("WATCHDOG=1") >= 3),
        "{:?}",
        notify.messages
    );
    assert_eq!(notify.messages[0], "READY=1\nWATCHDOG=1\n");
    agent.kill().expect("the agent ends");
    agent.wait().expect("reaped");
    let status = monitor.wait_exit(30).expect("ends with its agent");
    assert_eq!(status.code(), Some(0));
    // The final pass, which publishes `gone`, ends the loop: STOPPING follows it, not a ping.
    assert_eq!(
        notify.count("WATCHDOG=1"),
        passes(&monitor) - 1,
        "one ping per pass that the loop goes on from: {:?}",
        monitor.err()
    );
    assert_eq!(notify.count("READY=1"), 1);
    notify.assert_stopping_last();
}

#[test]
fn the_lead_is_ready_after_its_first_pass_pings_while_it_passes_and_says_stopping_on_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket_path = dir.path().join("notify.sock");
    let mut notify = NotifySocket::bind(&socket_path);
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("lead")
        .arg("--bmb-dir")
        .arg(dir.path().join(".bmb"))
        .args(["--interval", "1", "--no-sweep"])
        .env("NOTIFY_SOCKET", &socket_path);
    let mut monitor = Running::start(command);
    assert!(
        wait_until(30, || notify.count("WATCHDOG=1") >= 3),
        "{:?} {:?}",
        notify.messages,
        monitor.err()
    );
    assert_eq!(notify.messages[0], "READY=1\nWATCHDOG=1\n");
    monitor.send(r#"{"type":"shutdown_request"}"#);
    let status = monitor.wait_exit(10).expect("ends on shutdown_request");
    assert_eq!(status.code(), Some(0));
    assert_eq!(notify.count("READY=1"), 1);
    notify.assert_stopping_last();
}

/// The unit in contrib/systemd is the one the README describes, and its
/// watchdog leaves room for the example's interval (a shorter one is refused).
#[test]
fn the_systemd_unit_is_a_notify_service_with_a_watchdog_restarted_on_failure_but_not_after_exit_2()
{
    let contrib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contrib/systemd");
    let unit = std::fs::read_to_string(contrib.join("bmb-monitor-watch@.service")).expect("unit");
    let value = |key: &str| -> String {
        let values: Vec<&str> = unit
            .lines()
            .filter_map(|line| line.strip_prefix(key)?.strip_prefix('='))
            .collect();
        assert_eq!(values.len(), 1, "{key}= once in the unit");
        values[0].to_string()
    };
    assert_eq!(value("Type"), "notify");
    assert_eq!(value("NotifyAccess"), "main");
    assert_eq!(value("Restart"), "on-failure");
    assert_eq!(value("RestartPreventExitStatus"), "2");
    assert!(
        value("ExecStart").ends_with("/bmb-monitor watch --config %E/bmb-monitor/%i.toml"),
        "{}",
        value("ExecStart")
    );
    assert_eq!(value("ExecReload"), "/bin/kill -HUP $MAINPID");
    // A thousand targets hold a thousand lock files: past the usual 1,024.
    let files: u64 = value("LimitNOFILE")
        .parse()
        .expect("LimitNOFILE as a number");
    assert!(files >= 4096, "LimitNOFILE={files}");
    let watchdog: u64 = value("WatchdogSec")
        .parse()
        .expect("WatchdogSec in seconds");
    // The example config the unit's comment copies is one `watch --config --check` takes.
    let example = contrib.join("watch.toml.example");
    let check = bmb_testkit::bin::run(
        {
            let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
            command
                .arg("watch")
                .arg("--config")
                .arg(&example)
                .arg("--check");
            command
        },
        b"",
        std::time::Duration::from_secs(30),
    );
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).trim(),
        "ok: 2 targets",
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let text = std::fs::read_to_string(&example).expect("example");
    let interval: u64 = text
        .lines()
        .find_map(|line| line.strip_prefix("interval = \"")?.strip_suffix("s\""))
        .and_then(|n| n.parse().ok())
        .expect("the example's interval");
    assert!(
        watchdog > 2 * interval,
        "WatchdogSec={watchdog}, --interval {interval}"
    );
}

/// Found by a review: sd_notify(3) allows an abstract socket (`@name`); the
/// monitor said "No such file or directory" and never became ready.
#[test]
fn an_abstract_notify_socket_gets_ready_and_stopping() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let received = tmux.dir.path().join("agent.received");
    tmux.replay("agent", &capture_path("working-bash-sleep"), &received);
    let name = format!("bmb-notify-test-{}", std::process::id());
    let mut notify = NotifySocket::bind_abstract(&name);
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args(["agent", "--once"])
        .env("XDG_STATE_HOME", state.path())
        .env("NOTIFY_SOCKET", format!("@{name}"));
    let output = bmb_testkit::bin::run(command, b"", std::time::Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(0));
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("cannot notify"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    notify.drain();
    assert_eq!(notify.messages, ["READY=1\nWATCHDOG=1\n", "STOPPING=1\n"]);
}

/// Issue 19: the check counted one probe timeout, but a cycle runs a
/// per-target probe once per target. Issue 21: they run 8 at a time, so 17
/// targets whose probes each end at 1 s are 3 rounds: pings 1 + 3 x 1 + 2 x 1 s
/// apart (two tmux calls), and a 5 s watchdog would kill a healthy monitor.
#[test]
fn a_watchdog_too_short_for_seventeen_targets_with_per_target_probes_is_refused() {
    let mut watchdog = FiveSecondWatchdog::new();
    let targets: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
    let run = |probe: &str| {
        format!(
            "{} --interval 1 --capture-timeout 1 --probe-timeout 1 --work-probe '{probe}'",
            targets.join(" ")
        )
    };
    watchdog.refuses(
        &run("echo 1 $BMB_TARGET >/dev/null; echo 1"),
        "longest cycle (5s: 17 probe run(s) here, 8 at a time: 3 x 1s + 2 capture call(s) x 1s)",
    );
    // One shared probe for the seventeen: one run per cycle, which 5 s holds.
    watchdog.starts(&run("echo 1"));
}

/// `watch … --once` under a watchdog of 5 s (`WATCHDOG_USEC`, its pid the
/// monitor's own) and a notify socket of the test's, its state and tmux
/// folder in a temporary one.
struct FiveSecondWatchdog {
    dir: tempfile::TempDir,
    notify: NotifySocket,
}

impl FiveSecondWatchdog {
    fn new() -> FiveSecondWatchdog {
        let dir = tempfile::tempdir().expect("tempdir");
        let notify = NotifySocket::bind(&dir.path().join("notify.sock"));
        FiveSecondWatchdog { dir, notify }
    }

    /// `watch ARGS --once` run to its end.
    fn watch_once(&self, args: &str) -> std::process::Output {
        let script = format!(
            "WATCHDOG_PID=$$ WATCHDOG_USEC=5000000 exec '{}' watch {args} --once",
            env!("CARGO_BIN_EXE_bmb-monitor"),
        );
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .env("NOTIFY_SOCKET", self.dir.path().join("notify.sock"))
            .env("XDG_STATE_HOME", self.dir.path())
            .env("TMUX_TMPDIR", self.dir.path())
            .output()
            .expect("runs")
    }

    /// `watch ARGS` exits 2 saying the watchdog is shorter than its
    /// `longest` cycle, and is never ready.
    fn refuses(&mut self, args: &str, longest: &str) {
        let output = self.watch_once(args);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("WatchdogSec (5s)") && stderr.contains(longest),
            "{stderr}"
        );
        assert_eq!(self.notify.count("READY=1"), 0, "never ready");
    }

    /// `watch ARGS` says nothing of the watchdog and is ready once (the
    /// first ready the socket hears).
    fn starts(&mut self, args: &str) {
        let output = self.watch_once(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("WatchdogSec"), "{stderr}");
        assert_eq!(self.notify.count("READY=1"), 1, "{stderr}");
    }
}

/// Issue 19, item 4: the check left out the alert command, which a cycle
/// waits for too. A watchdog the capture calls alone fit in is refused once
/// an alert command is given, and the line says it is the alert commands'.
#[test]
fn a_watchdog_too_short_once_the_alert_command_is_counted_is_refused() {
    let mut watchdog = FiveSecondWatchdog::new();
    // 1 s apart, then two tmux calls of 1 s: 3 s; an alert command's 2 s more is 5.
    let run =
        |alert: &str| format!("agent --interval 1 --capture-timeout 1 --probe-timeout 2 {alert}");
    watchdog.refuses(
        &run("--alert-cmd cat"),
        "longest cycle (4s: 2 capture call(s) x 1s + the alert commands 2s)",
    );
    watchdog.starts(&run(""));
}

/// What the check counts holds: a cycle's alert commands share one
/// `probe_timeout`. The first target's command hangs (once) past it; the
/// second target's alert is not run that cycle but said to wait, and the
/// next poll delivers both.
#[test]
fn a_cycles_alert_commands_share_one_timeout_and_what_is_left_goes_next_poll() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    for name in ["a", "b"] {
        let received = tmux.dir.path().join(format!("{name}.received"));
        tmux.replay(name, &capture_path("question-permission-bash"), &received);
    }
    let runs = tmux.dir.path().join("runs");
    let hung = tmux.dir.path().join("hung");
    let alert = format!(
        "cat > /dev/null; echo \"$BMB_TARGET\" >> '{runs}'; \
         if [ \"$BMB_TARGET\" = a ] && [ ! -e '{hung}' ]; then : > '{hung}'; exec sleep 600; fi",
        runs = runs.display(),
        hung = hung.display()
    );
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args(["a", "b", "--interval", "1", "--probe-timeout", "1"])
        .args(["--alert-cmd", &alert])
        .env("XDG_STATE_HOME", state.path());
    let mut monitor = Running::start(command);
    let ran = || std::fs::read_to_string(&runs).unwrap_or_default();
    assert!(
        wait_until(60, || ran().lines().filter(|l| *l == "b").count() == 1
            && ran().lines().filter(|l| *l == "a").count() == 2),
        "runs {:?}; stderr {:?}",
        ran(),
        monitor.err()
    );
    // a's first run (hung), then a again and b: b never ran in the cycle
    // whose time a used up.
    assert_eq!(ran(), "a\na\nb\n", "{:?}", monitor.err());
    let err = monitor.err();
    let said = |needle: &str| err.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(
        said("this cycle's alert commands used their 1 s; the alerts left wait for the next poll"),
        1,
        "{err:?}"
    );
    assert_eq!(said("bmb-monitor: watch: a: alert command"), 1, "{err:?}");
    assert_eq!(said("bmb-monitor: watch: b: alert command"), 0, "{err:?}");
    monitor.signal(Signal::TERM);
    assert!(monitor.wait_exit(30).is_some_and(|s| s.success()));
}

/// Issue 19: a notify socket whose reader stops reading fills up, and a
/// blocking send then held the loop for good, SIGTERM included. Its queue is
/// filled before the monitor starts: the monitor goes on polling, says the
/// trouble once, and ends on SIGTERM.
#[test]
fn a_notify_socket_nobody_reads_never_holds_the_loop() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let received = tmux.dir.path().join("agent.received");
    tmux.replay("agent", &capture_path("working-bash-sleep"), &received);
    let socket_path = tmux.dir.path().join("notify.sock");
    let _reader = UnixDatagram::bind(&socket_path).expect("bind the notify socket");
    let filler = UnixDatagram::unbound().expect("a socket");
    filler.set_nonblocking(true).expect("non-blocking");
    let mut queued = 0;
    loop {
        match filler.send_to(b"X=1\n", &socket_path) {
            Ok(_) => queued += 1,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(err) => panic!("filling the queue: {err}"),
        }
    }
    assert!(queued > 0);
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args(["agent", "--interval", "1"])
        .env("XDG_STATE_HOME", state.path())
        .env("NOTIFY_SOCKET", &socket_path);
    let mut monitor = Running::start(command);
    assert!(
        wait_until(60, || poll_lines(&monitor) >= 4),
        "the loop stopped at the full socket: {:?} {:?}",
        monitor.out(),
        monitor.err()
    );
    let said: Vec<String> = monitor
        .err()
        .into_iter()
        .filter(|l| l.contains("cannot notify systemd"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {:?}", monitor.err());
    assert!(said[0].contains("queue is full"), "{said:?}");
    monitor.signal(Signal::TERM);
    let status = monitor.wait_exit(10).expect("ends on SIGTERM");
    assert_eq!(status.code(), Some(0));
}

/// Issue 19: `lead < /dev/zero` skipped its endless line without bound: no
/// pass, 100% of a core, SIGTERM ignored. Each pass now reads at most
/// `PASS_BYTES` of stdin: the lead makes its passes (a ping each), reads no
/// more than that per pass (counted in the kernel's `rchar`, not timed), and
/// ends on SIGTERM.
#[test]
fn the_lead_on_an_endless_stdin_makes_its_passes_reads_a_bounded_amount_and_ends_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket_path = dir.path().join("notify.sock");
    let mut notify = NotifySocket::bind(&socket_path);
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(r#"exec "$0" lead --bmb-dir "$1" --interval 1 --no-sweep < /dev/zero"#)
        .arg(env!("CARGO_BIN_EXE_bmb-monitor"))
        .arg(dir.path().join(".bmb"))
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .env("NOTIFY_SOCKET", &socket_path);
    let mut monitor = Running::start(command);
    assert!(
        wait_until(60, || notify.count("WATCHDOG=1") >= 4),
        "no passes: {:?} {:?}",
        notify.messages,
        monitor.err()
    );
    let read_bytes = || -> u64 {
        let io = std::fs::read_to_string(format!("/proc/{}/io", monitor.child.id()))
            .expect("the lead's /proc/PID/io");
        io.lines()
            .find_map(|l| l.strip_prefix("rchar: "))
            .and_then(|n| n.trim().parse().ok())
            .expect("rchar")
    };
    // Read before the count: every byte read so far belongs to a pass
    // counted now or to the one under way.
    let read = read_bytes();
    let passes = notify.count("WATCHDOG=1") as u64;
    let budget = probes::os::input::PASS_BYTES as u64;
    assert!(
        read <= (passes + 1) * budget + (1 << 20),
        "{read} bytes read in {passes} passes"
    );
    assert!(read >= budget, "it read its budget: {read}");
    monitor.signal(Signal::TERM);
    let status = monitor.wait_exit(10).expect("ends on SIGTERM");
    assert_eq!(status.code(), Some(0));
    let overlong: Vec<String> = monitor
        .err()
        .into_iter()
        .filter(|l| l.contains("longer than"))
        .collect();
    assert_eq!(
        overlong.len(),
        1,
        "one endless line, said once: {overlong:?}"
    );
}
