//! What an operator running `watch` at fleet size relies on, end to end on
//! the real binary: `/metrics` answers with 20 slow clients connected
//! (issue 19, item 7); a monitor of 300 targets started under a soft
//! open-file limit of 256 raises it and runs (issue 21, item 2), and one
//! whose hard limit is too low says so and names the trouble as what it
//! is; the process, build, delivery and reload metrics are there, sane, and
//! `promtool check metrics` finds nothing to say about them.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bmb_testkit::bin::{Running, wait_until};
use bmb_testkit::metrics::{promtool_clean, value};
use bmb_testkit::tmux::{PrivateTmux, capture_path};

/// A GET with Prometheus's default scrape timeout (10 s) as its only
/// patience: what a scrape that "still answers" must answer within.
fn scrape(url: &str) -> Result<String, String> {
    bmb_testkit::http::get(url, Duration::from_secs(10))
}

fn cycles(metrics: &str) -> f64 {
    value(metrics, "bmb_watch_cycle_duration_seconds_count")
}

fn polls(monitor: &Running, prefix: &str) -> usize {
    monitor
        .out()
        .iter()
        .filter(|l| l.starts_with(prefix))
        .count()
}

/// Issue 19: 12 to 20 slow clients denied `/metrics` (four workers and a
/// queue of four, each slow client holding a worker for its deadline). Ten
/// clients that connect and send nothing and ten that send a byte a second,
/// each connecting again as soon as it is closed, for the whole test: every
/// scrape beside them answers, and the cycles go on.
#[test]
fn twenty_slow_clients_leave_the_scrape_answerable() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    tmux.replay(
        "agent",
        &capture_path("working-bash-sleep"),
        &tmux.dir.path().join("agent.received"),
    );
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args([
            "agent",
            "--interval",
            "1",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .env("XDG_STATE_HOME", state.path());
    let monitor = Running::start(command);
    let addr = monitor.metrics_address(60);
    let stop = Arc::new(AtomicBool::new(false));
    let connected = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..20)
        .map(|i| {
            let (stop, connected, addr) = (Arc::clone(&stop), Arc::clone(&connected), addr.clone());
            std::thread::spawn(move || {
                let mut reconnects = 0usize;
                while !stop.load(Ordering::SeqCst) {
                    let Ok(mut stream) = TcpStream::connect(&addr) else {
                        continue;
                    };
                    connected.fetch_add(1, Ordering::SeqCst);
                    reconnects += 1;
                    if i % 2 == 0 {
                        // Sends nothing: waits until the monitor closes it.
                        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
                        let mut buf = [0u8; 512];
                        while !stop.load(Ordering::SeqCst) {
                            match stream.read(&mut buf) {
                                Ok(0) => break,
                                Ok(_) => {}
                                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                                Err(_) => break,
                            }
                        }
                    } else {
                        // A byte a second of a request that never ends.
                        for byte in b"GET /metrics HTTP/1.1\r\nX-Slow: ".iter().cycle() {
                            if stop.load(Ordering::SeqCst) || stream.write_all(&[*byte]).is_err() {
                                break;
                            }
                            std::thread::sleep(Duration::from_secs(1));
                        }
                    }
                }
                reconnects
            })
        })
        .collect();
    assert!(
        wait_until(30, || connected.load(Ordering::SeqCst) >= 20),
        "the slow clients never all connected"
    );
    let url = format!("http://{addr}/metrics");
    let first = scrape(&url).expect("a scrape beside 20 slow clients");
    let mut last = cycles(&first);
    for n in 0..5 {
        // Wait for a new cycle, so each scrape meets the clients anew.
        assert!(
            wait_until(30, || scrape(&url).is_ok_and(|m| cycles(&m) > last)),
            "scrape {n}: no answer with a new cycle beside the slow clients"
        );
        last = cycles(&scrape(&url).expect("a scrape beside 20 slow clients"));
    }
    stop.store(true, Ordering::SeqCst);
    let reconnects: usize = clients
        .into_iter()
        .map(|c| c.join().expect("a client"))
        .sum();
    assert!(reconnects >= 20, "{reconnects}");
    assert!(
        monitor.err().iter().all(|l| !l.contains("cannot accept")),
        "{:?}",
        monitor.err()
    );
}

/// Runs `watch` over `targets` local targets (the first one a real pane,
/// the others sessions that do not exist, each still a target with its
/// lock) with the open-file limit at `soft`/`hard`, set before exec.
fn watch_many(
    tmux: &PrivateTmux,
    state: &Path,
    targets: usize,
    soft: u64,
    hard: u64,
    extra: &[&str],
) -> Running {
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .arg("agent")
        .args((1..targets).map(|i| format!("t{i}")))
        .args(["--interval", "1", "--metrics-listen", "127.0.0.1:0"])
        .args(extra)
        .env("XDG_STATE_HOME", state);
    with_fd_limit(&mut command, soft, hard);
    Running::start(command)
}

/// `command` runs with the open-file limit at `soft`/`hard`, set before exec.
fn with_fd_limit(command: &mut std::process::Command, soft: u64, hard: u64) {
    // SAFETY: setrlimit(2) is async-signal-safe and nothing here allocates.
    #[expect(
        unsafe_code,
        reason = "std's `pre_exec` is the only hook between fork and exec, where the child's limit is set"
    )]
    unsafe {
        command.pre_exec(move || {
            rustix::process::setrlimit(
                rustix::process::Resource::Nofile,
                rustix::process::Rlimit {
                    current: Some(soft),
                    maximum: Some(hard),
                },
            )
            .map_err(std::io::Error::from)
        });
    }
}

/// A port nothing listens on: bound by us, then released.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// Issue 21: the monitor holds a lock file per target, and at the usual soft
/// limit of 1,024 a thousand targets failed every cycle (`ssh: Too many
/// open files`). Scaled down: 300 targets under a soft limit of 256 and a
/// hard one of 4,096. The monitor raises its soft limit to the hard one,
/// runs every target, exports what it holds and may hold, and its failed
/// deliveries; the exposition passes `promtool check metrics`.
#[test]
fn three_hundred_targets_under_a_soft_limit_of_256_run_and_the_operator_metrics_are_sane() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    tmux.replay(
        "agent",
        &capture_path("question-permission-bash"),
        &tmux.dir.path().join("agent.received"),
    );
    let alertmanager = format!("http://127.0.0.1:{}", closed_port());
    let monitor = watch_many(
        &tmux,
        state.path(),
        300,
        256,
        4096,
        &["--alert-cmd", "exit 3", "--alertmanager", &alertmanager],
    );
    let addr = monitor.metrics_address(60);
    let url = format!("http://{addr}/metrics");
    // Three cycles, each a line per target, and both sinks failed.
    let mut metrics = String::new();
    assert!(
        wait_until(120, || {
            metrics = scrape(&url).unwrap_or_default();
            !metrics.is_empty()
                && cycles(&metrics) >= 3.0
                && value(
                    &metrics,
                    r#"bmb_alert_delivery_failures_total{sink="alertmanager"}"#,
                ) >= 1.0
                && value(
                    &metrics,
                    r#"bmb_alert_delivery_failures_total{sink="alert_cmd"}"#,
                ) >= 1.0
        }),
        "{metrics}\n{:?}",
        monitor.err()
    );
    assert!(polls(&monitor, "MONITOR · t299 · ") >= 3);
    let err = monitor.err();
    assert!(
        err.iter()
            .all(|l| !l.contains("Too many open files") && !l.contains("open files")),
        "{err:?}"
    );
    assert_eq!(
        value(&metrics, "process_max_fds"),
        4096.0,
        "raised to the hard limit"
    );
    let fds = value(&metrics, "process_open_fds");
    // Two locks per local target (its journal's, and its tmux socket's
    // inode's) and the monitor's own (streams, listener, a capture's pipes):
    // more than 600, and not much more.
    assert!((600.0..=600.0 + 100.0).contains(&fds), "{fds} open");
    let pid = monitor.child.id();
    let held = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc fd")
        .count() as f64;
    assert!(
        (held - fds).abs() <= 20.0,
        "{held} in /proc, {fds} exported"
    );
    assert!(value(&metrics, "process_resident_memory_bytes") > 1e6);
    assert!(value(&metrics, "process_virtual_memory_bytes") > 1e6);
    assert!(value(&metrics, "process_cpu_seconds_total") > 0.0);
    let started = value(&metrics, "process_start_time_seconds");
    let boot_relative = probes::os::procfs::Stat::of(pid)
        .and_then(|s| s.start_ticks())
        .expect("the monitor's start") as f64
        / probes::os::clock::ticks_per_second() as f64;
    let btime: f64 = std::fs::read_to_string("/proc/stat")
        .expect("/proc/stat")
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|n| n.trim().parse().ok())
        .expect("btime");
    assert!(
        (started - (btime + boot_relative)).abs() < 1.0,
        "{started} vs {}",
        btime + boot_relative
    );
    assert_eq!(
        value(
            &metrics,
            &format!(
                r#"bmb_build_info{{version="{}"}}"#,
                env!("CARGO_PKG_VERSION")
            )
        ),
        1.0
    );
    assert_eq!(value(&metrics, "bmb_config_last_reload_successful"), 1.0);
    assert_eq!(
        value(
            &metrics,
            r#"bmb_alert_delivery_failures_total{sink="stderr"}"#
        ),
        0.0
    );
    promtool_clean(&metrics);
}

/// A hard limit too low for the targets: a usage error at the start that
/// says how many descriptors they need (running short would fail locks,
/// captures and the listener target by target, each blamed on something else).
#[test]
fn a_hard_limit_too_low_for_the_targets_is_a_usage_error_that_says_what_they_need() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let mut monitor = watch_many(&tmux, state.path(), 300, 100, 200, &[]);
    let status = monitor.wait_exit(60).expect("refused at the start");
    assert_eq!(status.code(), Some(2), "{:?}", monitor.err());
    let err = monitor.err();
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(
        err[0].contains("300 targets need about") && err[0].contains("but the limit is 200"),
        "{err:?}"
    );
    assert!(
        std::fs::read_dir(state.path().join("bmb-monitor/session"))
            .map_or(true, |mut d| d.next().is_none()),
        "no target was opened"
    );
}

/// `--check` refuses what a start would: a config of more targets than even
/// the hard open-file limit holds (it said `ok` while the start exited 2:
/// found by review).
#[test]
fn check_refuses_a_config_the_open_file_limit_cannot_hold() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("fleet.toml");
    let targets: String = (0..300)
        .map(|i| format!("[[targets]]\ntarget = \"t{i}\"\n"))
        .collect();
    std::fs::write(&config, targets).expect("config");
    let check = |soft: u64, hard: u64| {
        let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
        command
            .args(["watch", "--check", "--config"])
            .arg(&config)
            .env("XDG_STATE_HOME", dir.path());
        with_fd_limit(&mut command, soft, hard);
        command.output().expect("bmb-monitor runs")
    };
    let refused = check(100, 200);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("fleet.toml: 300 targets need about") && err.contains("but the limit is 200"),
        "{err}"
    );
    // The hard limit holds them: the soft one is raised, as a start does.
    let held = check(100, 4096);
    assert_eq!(
        held.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&held.stderr)
    );
    assert!(String::from_utf8_lossy(&held.stdout).starts_with("ok: 300 targets"));
}

/// Reload success, as Prometheus exports its own: 0 after a SIGHUP whose
/// file no longer reads, 1 again with a later timestamp after one that does.
#[test]
fn a_failed_reload_and_a_good_one_show_in_the_metrics() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    tmux.replay(
        "agent",
        &capture_path("working-bash-sleep"),
        &tmux.dir.path().join("agent.received"),
    );
    let config = tmux.dir.path().join("fleet.toml");
    let good = format!(
        "metrics_listen = \"127.0.0.1:0\"\n[server]\nsocket_path = '{}'\n[defaults]\ninterval = 1\n\n[[targets]]\ntarget = \"agent\"\n",
        tmux.socket.display()
    );
    std::fs::write(&config, &good).expect("config");
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("--config")
        .arg(&config)
        .env("XDG_STATE_HOME", state.path());
    let monitor = Running::start(command);
    let addr = monitor.metrics_address(60);
    let url = format!("http://{addr}/metrics");
    let metrics = scrape(&url).expect("a scrape");
    assert_eq!(value(&metrics, "bmb_config_last_reload_successful"), 1.0);
    let at_start = value(&metrics, "bmb_config_last_reload_success_timestamp_seconds");
    std::fs::write(&config, "this is = = not toml\n").expect("broken");
    monitor.signal(rustix::process::Signal::HUP);
    assert!(
        wait_until(30, || scrape(&url)
            .is_ok_and(
                |m| value(&m, "bmb_config_last_reload_successful") == 0.0
            )),
        "{:?}",
        monitor.err()
    );
    let failed = scrape(&url).expect("a scrape");
    assert_eq!(
        value(&failed, "bmb_config_last_reload_success_timestamp_seconds"),
        at_start,
        "a failed reload keeps the time of the last one that applied"
    );
    // A second passes, so the next success is seen to be later.
    let start_second = at_start as i64;
    assert!(wait_until(10, || probes::os::clock::now_epoch() > start_second));
    std::fs::write(&config, &good).expect("fixed");
    monitor.signal(rustix::process::Signal::HUP);
    assert!(
        wait_until(30, || scrape(&url)
            .is_ok_and(
                |m| value(&m, "bmb_config_last_reload_successful") == 1.0
            )),
        "{:?}",
        monitor.err()
    );
    let fixed = scrape(&url).expect("a scrape");
    assert!(
        value(&fixed, "bmb_config_last_reload_success_timestamp_seconds") > at_start,
        "{fixed}"
    );
    promtool_clean(&fixed);
}

/// A relative `XDG_STATE_HOME` is invalid (the XDG base directory spec) and
/// ignored: taken as given it named another folder from each working
/// directory, so a `status` run elsewhere, or a monitor detached into tmux,
/// did not find this one's board or memory (found by review).
#[test]
fn a_relative_xdg_state_home_is_ignored_for_the_default_folder() {
    let tmux = PrivateTmux::new();
    tmux.replay(
        "agent",
        &capture_path("working-bash-sleep"),
        &tmux.dir.path().join("agent.received"),
    );
    let (home, cwd) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args(["agent", "--interval", "1"])
        .current_dir(cwd.path())
        .env("XDG_STATE_HOME", "state")
        .env("HOME", home.path());
    let monitor = Running::start(command);
    let board = home.path().join(".local/state/bmb-monitor/board");
    assert!(
        wait_until(30, || polls(&monitor, "MONITOR · agent · ") > 0
            && std::fs::read_dir(&board).is_ok_and(|mut d| d.next().is_some())),
        "no board under {}: {:?}",
        board.display(),
        monitor.err()
    );
    assert!(
        !cwd.path().join("state").exists(),
        "the relative folder was used"
    );
}
