//! The fleet's read side end to end: `watch --metrics-listen` scraped by a
//! REAL Prometheus (Debian's `prometheus`, run here on 127.0.0.1 with a
//! temporary config and storage), a listener that a silent client cannot
//! hold up, and `bmb-monitor status` read back from a real tmux pane as a
//! person sees it, with an unreachable host and an unreachable endpoint.
// These tests start the binary, tmux, ssh and Prometheus; that is their point.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bmb_testkit::bin::{Running, wait_until};
use bmb_testkit::tmux::{PrivateTmux, capture_path};

/// A tmux server with panes replaying captures, and a state folder.
struct World {
    tmux: PrivateTmux,
    state: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        World {
            tmux: PrivateTmux::new(),
            state: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn replay(&self, session: &str, case: &str) {
        let received = self.tmux.dir.path().join(format!("{session}.received"));
        self.tmux.replay(session, &capture_path(case), &received);
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
        command.args(args).env("XDG_STATE_HOME", self.state.path());
        command
    }

    /// `watch -S <socket> ARGS --interval 1`, running.
    fn watch(&self, args: &[&str]) -> Running {
        let socket = self.tmux.socket.to_string_lossy().into_owned();
        let mut argv = vec!["watch", "-S", &socket, "--interval", "1"];
        argv.extend_from_slice(args);
        Running::start(self.command(&argv))
    }

    fn board_dir(&self) -> PathBuf {
        self.state.path().join("bmb-monitor/board")
    }
}

/// A port nothing listens on: bound by us, then released.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn http_get(url: &str) -> Result<String, String> {
    bmb_testkit::http::get(url, Duration::from_secs(5))
}

fn cycles(metrics: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("bmb_watch_cycle_duration_seconds_count "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no cycle count in\n{metrics}"))
}

/// A real Prometheus on 127.0.0.1 scraping one target every second; killed
/// by its pid on drop, its storage in its own temporary folder.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(scrape: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: bmb\n    scrape_interval: 1s\n    static_configs:\n      - targets: ['{scrape}']\n"
            ),
        )
        .expect("config");
        let port = closed_port();
        let child = Command::new("/usr/bin/prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("log")).expect("log"))
            .spawn()
            .expect("/usr/bin/prometheus starts (scripts/test installs Debian's prometheus)");
        Prometheus {
            child,
            port,
            _dir: dir,
        }
    }

    fn query(&self, query: &str) -> Option<serde_json::Value> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .proxy(None)
            .build()
            .into();
        let url = format!("http://127.0.0.1:{}/api/v1/query", self.port);
        let mut response = agent.get(&url).query("query", query).call().ok()?;
        let text = response.body_mut().read_to_string().ok()?;
        serde_json::from_str(&text).ok()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_prometheus_scrapes_the_state_gauge_of_a_question_pane() {
    let world = World::new();
    world.replay("asks", "question-permission-bash");
    let monitor = world.watch(&["asks", "--metrics-listen", "127.0.0.1:0"]);
    let addr = monitor.metrics_address(30);
    let prometheus = Prometheus::start(&addr);
    let query = r#"bmb_watch_target_state{job="bmb",target="asks",state="QUESTION"}"#;
    let mut last = None;
    let found = wait_until(90, || {
        last = prometheus.query(query);
        last.as_ref()
            .and_then(|v| v["data"]["result"].as_array().cloned())
            .is_some_and(|r| r.len() == 1 && r[0]["value"][1] == "1")
    });
    assert!(
        found,
        "Prometheus never held the QUESTION gauge at 1: {last:?}\n{}",
        prometheus.log()
    );
    let series = &last.expect("answered")["data"]["result"][0]["metric"];
    assert_eq!(
        (&series["host"], &series["session"], &series["state"]),
        (&"local".into(), &"asks".into(), &"QUESTION".into()),
        "{series}"
    );
    // The other states of the same target are 0, not absent.
    let others = prometheus
        .query(r#"sum(bmb_watch_target_state{job="bmb",target="asks",state!="QUESTION"})"#)
        .expect("answered");
    assert_eq!(others["data"]["result"][0]["value"][1], "0", "{others}");
    let escalated = prometheus
        .query(r#"bmb_watch_escalations_total{job="bmb",target="asks",reason="question"}"#)
        .expect("answered");
    assert_eq!(
        escalated["data"]["result"][0]["value"][1], "1",
        "{escalated}"
    );
}

#[test]
fn a_client_that_connects_and_sends_nothing_holds_up_no_cycle_and_no_scrape() {
    let world = World::new();
    world.replay("asks", "question-permission-bash");
    let monitor = world.watch(&["asks", "--metrics-listen", "127.0.0.1:0"]);
    let addr = monitor.metrics_address(30);
    let mut silent = TcpStream::connect(&addr).expect("connects");
    let mut half = TcpStream::connect(&addr).expect("connects");
    half.write_all(b"GET /metrics HTTP/1.1\r\nHo")
        .expect("half a request");
    let polls = |m: &Running| {
        m.out()
            .iter()
            .filter(|l| l.starts_with("MONITOR · "))
            .count()
    };
    let before = polls(&monitor);
    assert!(
        wait_until(60, || polls(&monitor) >= before + 3),
        "the cycles stopped while two clients held the listener: {} then {}",
        before,
        polls(&monitor)
    );
    // A cycle prints its poll lines before it publishes its count: wait for
    // the count, each scrape made beside the two held connections.
    let scrape = || http_get(&format!("http://{addr}/metrics")).expect("a scrape beside them");
    assert!(
        wait_until(60, || cycles(&scrape()) >= (before + 3) as u64),
        "{before} polls before, the exposition counts {}",
        cycles(&scrape())
    );
    let board = http_get(&format!("http://{addr}/board.json")).expect("the board beside them");
    let board: serde_json::Value = serde_json::from_str(&board).expect("JSON");
    assert_eq!(board["targets"][0]["state"], "QUESTION", "{board}");
    // The held connections are still open: nothing ended them to get here.
    silent.write_all(b"G").expect("still connected");
    half.flush().expect("still connected");
}

/// A count from `/proc/<pid>/status` (`Threads:`, `VmRSS:` in kB).
fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in\n{status}"))
}

fn open_fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("/proc fd")
        .count() as u64
}

/// The flood of the adversarial review, scaled down: many connections that
/// send nothing and one endless request line cost the monitor a fixed number
/// of threads and descriptors, no cycle, and the request line is cut off.
#[test]
fn many_silent_clients_and_an_endless_request_line_cost_a_bounded_listener_no_cycle() {
    const SILENT: usize = 200;
    let world = World::new();
    world.replay("asks", "question-permission-bash");
    let monitor = world.watch(&["asks", "--metrics-listen", "127.0.0.1:0"]);
    let addr = monitor.metrics_address(30);
    let pid = monitor.child.id();
    let first = http_get(&format!("http://{addr}/metrics")).expect("a first scrape");
    let (threads, fds, rss) = (
        proc_status(pid, "Threads:"),
        open_fds(pid),
        proc_status(pid, "VmRSS:"),
    );
    let polls = |m: &Running| {
        m.out()
            .iter()
            .filter(|l| l.starts_with("MONITOR · "))
            .count()
    };
    // Writes "GET /" and then `A`s until the monitor closes the connection;
    // how much it took before its end, and whether it did end it.
    let endless = TcpStream::connect(&addr).expect("connects");
    let flooder = std::thread::spawn(move || {
        const AT_MOST: usize = 64 << 20;
        let mut endless = endless;
        let chunk = vec![b'A'; 64 << 10];
        let mut sent = endless.write(b"GET /").unwrap_or(0);
        while sent < AT_MOST {
            match endless.write(&chunk) {
                Ok(n) => sent += n,
                Err(_) => return (sent, true),
            }
        }
        (sent, false)
    });
    let silent: Vec<TcpStream> = (0..SILENT)
        .map(|_| TcpStream::connect(&addr).expect("connects"))
        .collect();
    let before = polls(&monitor);
    let (mut most_threads, mut most_fds, mut most_rss) = (0, 0, 0);
    assert!(
        wait_until(60, || {
            most_threads = most_threads.max(proc_status(pid, "Threads:"));
            most_fds = most_fds.max(open_fds(pid));
            most_rss = most_rss.max(proc_status(pid, "VmRSS:"));
            polls(&monitor) >= before + 3
        }),
        "the cycles stopped while {SILENT} clients held the listener: {before} then {}",
        polls(&monitor)
    );
    let (sent, cut_off) = flooder.join().expect("the flooder");
    assert!(
        cut_off,
        "the monitor read all {sent} bytes of the endless request line"
    );
    assert!(
        most_threads <= threads + 2,
        "threads {threads} before the flood, {most_threads} during it"
    );
    // Bounded: the listener holds at most 16 connections (a fresh one takes
    // the oldest one's slot), and a cycle's tmux child adds its pipes and
    // pidfd (4 to 5) while it runs, so a sample taken then reads up to 21
    // above the baseline; 200 unbounded connections would read 200.
    assert!(
        most_fds <= fds + 24,
        "descriptors {fds} before the flood, {most_fds} during it ({SILENT} connections)"
    );
    assert!(
        most_rss <= rss + 32 * 1024,
        "RSS {rss} kB before the flood, {most_rss} kB during it"
    );
    drop(silent);
    let metrics = http_get(&format!("http://{addr}/metrics")).expect("a scrape after the flood");
    assert!(
        cycles(&metrics) >= cycles(&first) + 3,
        "{} cycles before the flood, the exposition counts {} after it",
        cycles(&first),
        cycles(&metrics)
    );
    assert!(
        monitor.err().iter().all(|l| !l.contains("cannot accept")),
        "{:?}",
        monitor.err()
    );
}

/// Issue 21, item 7: the board of 100 targets in an 80x24 pane, read back
/// as a person sees it: a summary line, every row within 80 columns (no
/// line wraps), the urgent rows first, and what does not fit said.
#[test]
fn the_board_of_100_targets_fits_an_80x24_pane_urgent_rows_first() {
    let world = World::new();
    let working = capture_path("working-bash-sleep");
    let asking = capture_path("question-permission-bash");
    let mut sessions = Vec::new();
    for i in 0..99 {
        let name = format!("agent-{i:02}");
        let case = if i % 33 == 5 { &asking } else { &working };
        world.tmux.tmux(&[
            "new-session",
            "-d",
            "-s",
            &name,
            "-x",
            "120",
            "-y",
            "40",
            "sh",
            "-c",
            &format!("cat '{}'; exec sleep 3600", case.display()),
        ]);
        sessions.push(name);
    }
    let dead_port = closed_port();
    let ssh_config = world.tmux.dir.path().join("ssh_config");
    std::fs::write(
        &ssh_config,
        format!("Host deadbox\n  HostName 127.0.0.1\n  Port {dead_port}\n"),
    )
    .expect("ssh config");
    let ssh_config = ssh_config.to_string_lossy().into_owned();
    let mut argv: Vec<&str> = sessions.iter().map(String::as_str).collect();
    argv.extend([
        "deadbox:agent",
        "--ssh-config",
        &ssh_config,
        "--metrics-listen",
        "127.0.0.1:0",
    ]);
    let monitor = world.watch(&argv);
    let addr = monitor.metrics_address(30);
    let nobody = format!("127.0.0.1:{}", closed_port());
    let script = format!(
        "exec '{}' status --watch --interval 1 --endpoint {addr} --endpoint {nobody}",
        env!("CARGO_BIN_EXE_bmb-monitor")
    );
    world.tmux.tmux(&[
        "new-session",
        "-d",
        "-s",
        "board",
        "-x",
        "80",
        "-y",
        "24",
        "sh",
        "-c",
        &script,
    ]);
    let summary = "100 targets · 3 QUESTION · 96 WORKING; unreachable: deadbox (1), ";
    world.tmux.wait_for("board", |screen| {
        screen.contains(summary) && screen.contains("… and ")
    });
    // Joined: a line the terminal wrapped comes back as one, wider than 80
    // columns (counted in terminal cells: a wide character takes two).
    let screen = String::from_utf8_lossy(
        &world
            .tmux
            .tmux(&["capture-pane", "-p", "-J", "-t", "=board:"])
            .stdout,
    )
    .into_owned();
    let lines: Vec<&str> = screen.trim_end().lines().collect();
    assert!(
        lines
            .iter()
            .all(|l| unicode_width::UnicodeWidthStr::width(l.trim_end()) <= 80),
        "a line wrapped:\n{screen}"
    );
    assert!(lines.len() <= 24, "{screen}");
    assert!(
        lines[0].starts_with("Every 1s: bmb-monitor status"),
        "{screen}"
    );
    assert_eq!(lines[2], format!("{summary}{nobody}"), "{screen}");
    assert!(lines[3].starts_with("TARGET "), "{screen}");
    let header = lines[3];
    let column = |name: &str| {
        header
            .find(name)
            .unwrap_or_else(|| panic!("no {name} column:\n{screen}"))
    };
    let field = |line: &str, name: &str| {
        line.get(column(name)..)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or("")
            .to_string()
    };
    // The questions first, each with its reason; the unreachable next.
    for (line, session) in lines[4..7].iter().zip(["agent-05", "agent-38", "agent-71"]) {
        assert_eq!(field(line, "TARGET"), session, "{screen}");
        assert_eq!(field(line, "STATE"), "QUESTION", "{screen}");
        assert!(line.contains("permission-dialog: Do you"), "{screen}");
    }
    assert!(lines[7].starts_with("deadbox:* (1) "), "{screen}");
    assert_eq!(field(lines[7], "STATE"), "unreachable", "{screen}");
    assert!(lines[7].ends_with("Connection refused"), "{screen}");
    assert!(lines[8].starts_with(&format!("{nobody} *")), "{screen}");
    assert_eq!(field(lines[9], "STATE"), "WORKING", "{screen}");
    let more = lines.last().expect("a last line");
    assert!(
        more.starts_with("… and ") && more.ends_with(" more rows (less urgent)"),
        "{screen}"
    );
    let hidden: usize = more
        .trim_start_matches("… and ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    // Every row is on screen or counted: 100 targets less deadbox's, its host row, the endpoint's.
    let shown = lines[4..lines.len() - 1].len();
    assert_eq!(shown + hidden, 99 + 1 + 1, "{screen}");
}

/// Issue 21: two tmux servers, each with a session `agent`, each watched by
/// its own monitor: `status` shows two rows a person tells apart (the
/// server beside the name, as the alerts' `server` label says it), and the
/// JSON says each row's server.
#[test]
fn status_tells_two_servers_sessions_of_one_name_apart() {
    let world = World::new();
    let other = PrivateTmux::new();
    world.replay("agent", "question-permission-bash");
    other.replay(
        "agent",
        &capture_path("working-bash-sleep"),
        &other.dir.path().join("agent.received"),
    );
    let _first = world.watch(&["agent"]);
    let other_socket = other.socket.to_string_lossy().into_owned();
    let _second =
        Running::start(world.command(&["watch", "-S", &other_socket, "--interval", "1", "agent"]));
    let ours = world.board_dir().to_string_lossy().into_owned();
    let ours_only = |status: &serde_json::Value| -> Vec<serde_json::Value> {
        status["sources"]
            .as_array()
            .expect("sources")
            .iter()
            .filter(|s| s["source"].as_str().unwrap_or("").starts_with(&ours))
            .flat_map(|s| {
                s["board"]["targets"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect()
    };
    let mut rows = Vec::new();
    assert!(
        wait_until(30, || {
            let output = world
                .command(&["status", "--json"])
                .output()
                .expect("status");
            rows = serde_json::from_str(String::from_utf8_lossy(&output.stdout).trim())
                .map(|s| ours_only(&s))
                .unwrap_or_default();
            rows.len() == 2 && rows.iter().all(|r| r["state"].is_string())
        }),
        "{rows:?}"
    );
    let mut servers: Vec<&str> = rows
        .iter()
        .map(|r| r["server"].as_str().unwrap_or(""))
        .collect();
    servers.sort_unstable();
    let mut expected = vec![
        world.tmux.socket.to_str().expect("utf-8"),
        other_socket.as_str(),
    ];
    expected.sort_unstable();
    assert_eq!(servers, expected, "{rows:?}");
    let output = world.command(&["status"]).output().expect("status");
    let table = String::from_utf8_lossy(&output.stdout);
    for (socket, state) in [
        (world.tmux.socket.to_str().expect("utf-8"), "QUESTION"),
        (other_socket.as_str(), "WORKING"),
    ] {
        let label = format!("agent [{socket}]");
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&label) && l.contains(state)),
            "no row {label} {state}:\n{table}"
        );
    }
}

#[test]
fn status_reads_this_machines_boards_marks_a_dead_monitors_stale_and_a_monitor_takes_its_board_away()
 {
    let world = World::new();
    let run = |args: &[&str]| {
        let output = world.command(args).output().expect("status runs");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    // Nothing runs yet under this test's state folder (the passwd home's
    // default folder, also read, is another matter).
    let none: serde_json::Value =
        serde_json::from_str(run(&["status", "--json"]).trim()).expect("one JSON object");
    let ours = world.board_dir().to_string_lossy().into_owned();
    assert!(
        none["sources"]
            .as_array()
            .expect("sources")
            .iter()
            .all(|s| !s["source"].as_str().unwrap_or("").starts_with(&ours)),
        "nothing runs yet: {none}"
    );
    world.replay("asks", "question-permission-bash");
    let mut monitor = world.watch(&["asks"]);
    let own = world
        .board_dir()
        .join(format!("{}.json", monitor.child.id()));
    assert!(
        wait_until(30, || std::fs::read_to_string(&own)
            .is_ok_and(|t| t.contains("QUESTION"))),
        "no board at {}",
        own.display()
    );
    // A monitor killed outright leaves its board behind: a pid that is gone.
    let mut gone = Command::new("true").spawn().expect("true runs");
    let gone_pid = gone.id();
    gone.wait().expect("true ends");
    let text = std::fs::read_to_string(&own).expect("board");
    let mut left: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    left["pid"] = gone_pid.into();
    std::fs::write(
        world.board_dir().join(format!("{gone_pid}.json")),
        left.to_string(),
    )
    .expect("a left-behind board");
    let status: serde_json::Value =
        serde_json::from_str(run(&["status", "--json"]).trim()).expect("one JSON object");
    let sources = status["sources"].as_array().expect("sources");
    assert_eq!(sources.len(), 2, "{status}");
    let by_pid = |pid: u32| {
        sources
            .iter()
            .find(|s| s["board"]["pid"] == pid)
            .unwrap_or_else(|| panic!("no board of {pid}: {status}"))
    };
    let live = by_pid(monitor.child.id());
    assert_eq!(live["stale"], serde_json::Value::Null, "{live}");
    assert_eq!(live["board"]["targets"][0]["state"], "QUESTION");
    let stale = by_pid(gone_pid);
    assert!(
        stale["stale"]
            .as_str()
            .is_some_and(|w| w.contains(&format!("monitor pid {gone_pid} is gone"))),
        "{stale}"
    );
    // A gone watcher's rows are not shown: said once, in the summary.
    let table = run(&["status"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0]
            .starts_with("1 target · 1 QUESTION; not shown: 1 target of a watcher that is gone")
            && lines[0].contains(&format!("monitor pid {gone_pid} is gone")),
        "{table}"
    );
    assert_eq!(lines.len(), 3, "{table}");
    assert!(board_exists(&world.board_dir(), gone_pid));
    // Aged out: a gone watcher's board whose last cycle is old is removed,
    // said that once, and never again.
    left["updated"] = (left["updated"].as_i64().expect("updated") - 3600).into();
    std::fs::write(
        world.board_dir().join(format!("{gone_pid}.json")),
        left.to_string(),
    )
    .expect("an old left-behind board");
    let table = run(&["status"]);
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|l| l.contains("its board removed")),
        "{table}"
    );
    assert!(!board_exists(&world.board_dir(), gone_pid));
    let table = run(&["status"]);
    assert!(table.starts_with("1 target · 1 QUESTION\n"), "{table}");
    // SIGTERM: the monitor ends and removes its own board.
    monitor.signal(rustix::process::Signal::TERM);
    assert!(
        monitor.wait_exit(10).is_some(),
        "the monitor ends on SIGTERM"
    );
    assert!(!own.exists(), "its board went with it");
}

fn board_exists(dir: &Path, pid: u32) -> bool {
    dir.join(format!("{pid}.json")).exists()
}

#[test]
fn a_listener_that_cannot_be_bound_or_a_bad_endpoint_is_a_usage_error() {
    let world = World::new();
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken = taken.local_addr().expect("addr").to_string();
    let socket = world.tmux.socket.to_string_lossy().into_owned();
    for (args, says) in [
        (
            vec![
                "watch",
                "-S",
                &socket,
                "x",
                "--once",
                "--metrics-listen",
                &taken,
            ],
            "--metrics-listen",
        ),
        (
            vec![
                "watch",
                "-S",
                &socket,
                "x",
                "--detach",
                "--metrics-listen",
                "127.0.0.1:0",
            ],
            "cannot go with --detach",
        ),
        (
            vec!["status", "--endpoint", "nohost"],
            "--endpoint `nohost`",
        ),
    ] {
        let output = world.command(&args).output().expect("runs");
        let err = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `status --config FILE`: the board of the monitor a config file describes,
/// read from the file's `metrics_listen`; a file without one is refused.
#[test]
fn status_reads_the_board_of_the_monitor_a_config_file_describes() {
    let world = World::new();
    world.replay("asks", "question-permission-bash");
    let port = closed_port();
    let config = world.state.path().join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "metrics_listen = \"127.0.0.1:{port}\"\n[defaults]\ninterval = 1\n[server]\nsocket_path = \"{}\"\n[[targets]]\ntarget = \"asks\"\n",
            world.tmux.socket.display()
        ),
    )
    .expect("config");
    let config_arg = config.to_string_lossy().into_owned();
    let monitor = Running::start(world.command(&["watch", "--config", &config_arg]));
    assert_eq!(monitor.metrics_address(30), format!("127.0.0.1:{port}"));
    let mut board = serde_json::Value::Null;
    assert!(
        wait_until(30, || {
            let output = bmb_testkit::bin::run(
                world.command(&["status", "--config", &config_arg, "--json"]),
                b"",
                Duration::from_secs(30),
            );
            board = serde_json::from_slice(&output.stdout).unwrap_or_default();
            board["sources"][0]["board"]["targets"][0]["state"] == "QUESTION"
        }),
        "{board}"
    );
    assert_eq!(board["sources"][0]["source"], format!("127.0.0.1:{port}"));

    let bare = world.state.path().join("bare.toml");
    std::fs::write(&bare, "[[targets]]\ntarget = \"asks\"\n").expect("config");
    let output = bmb_testkit::bin::run(
        world.command(&["status", "--config", &bare.to_string_lossy()]),
        b"",
        Duration::from_secs(30),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("has no metrics_listen"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Found by a review: after a reload to a longer interval the board kept
/// the old one until the next cycle, so `status` showed a healthy monitor
/// as stale. The reload publishes the board at once.
#[test]
fn a_reload_publishes_the_board_with_its_new_interval_at_once() {
    let world = World::new();
    world.replay("asks", "question-permission-bash");
    let config = world.state.path().join("fleet.toml");
    let body = |interval: u64| {
        format!(
            "[defaults]\ninterval = {interval}\n[server]\nsocket_path = \"{}\"\n[[targets]]\ntarget = \"asks\"\n",
            world.tmux.socket.display()
        )
    };
    std::fs::write(&config, body(1)).expect("config");
    let monitor = Running::start(world.command(&["watch", "--config", &config.to_string_lossy()]));
    let file = world
        .board_dir()
        .join(format!("{}.json", monitor.child.id()));
    let interval = || {
        std::fs::read_to_string(&file)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|b| b["interval_secs"].as_u64())
    };
    assert!(
        wait_until(30, || interval() == Some(1)),
        "{:?}",
        monitor.err()
    );
    std::fs::write(&config, body(300)).expect("config");
    monitor.signal(rustix::process::Signal::HUP);
    assert!(
        wait_until(30, || interval() == Some(300)),
        "{:?} {:?}",
        interval(),
        monitor.err()
    );
}

/// Found by a review (issue 19): a hostile endpoint's board put C1 controls
/// (U+009B, a one-character CSI; U+0085) and DEL into `status --json`
/// verbatim. They are escaped, and the JSON means the same.
#[test]
fn status_json_escapes_the_c1_controls_and_del_a_hostile_endpoint_sends() {
    let board = r#"{"pid":1,"started":0,"updated":0,"interval_secs":1,
        "cycles":{"count":0,"sum_seconds":0.0,"last_seconds":0.0,"buckets":[]},"targets":[],
        "hosts":[{"host":"evil\u009b2J","reachable":false,"error":"x\u0085y\u007fz","since":0,
        "capture_failures":0,"probe_failures":0}]}"#;
    let addr = format!(
        "127.0.0.1:{}",
        bmb_testkit::http::serve_json(board.to_string())
    );
    let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
        .args(["status", "--json", "--endpoint", &addr])
        .output()
        .expect("bmb-monitor runs");
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert!(
        !text.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)),
        "a raw control in {text:?}"
    );
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let host = &value["sources"][0]["board"]["hosts"][0];
    assert_eq!(host["host"], "evil\u{9b}2J", "{value}");
    assert_eq!(host["error"], "x\u{85}y\u{7f}z", "{value}");
}

/// Issue 21, item 7: a fleet of watchers, one per host, scraped by one real
/// Prometheus, is one board: `status --prometheus URL` reads it from the
/// query API, and a watcher whose scrape fails is an unreachable row.
#[test]
fn status_reads_the_board_of_every_watcher_a_real_prometheus_scrapes() {
    let world = World::new();
    world.replay("asks", "question-permission-bash");
    world.replay("busy", "working-bash-sleep");
    let other = World::new();
    other.replay("second", "working-bash-sleep");
    let first = world.watch(&["asks", "busy", "--metrics-listen", "127.0.0.1:0"]);
    let socket = other.tmux.socket.to_string_lossy().into_owned();
    let mut second = Running::start(other.command(&[
        "watch",
        "-S",
        &socket,
        "--interval",
        "1",
        "second",
        "--metrics-listen",
        "127.0.0.1:0",
    ]));
    let (one, two) = (first.metrics_address(30), second.metrics_address(30));
    let prometheus = Prometheus::start(&format!("{one}', '{two}"));
    let url = format!("http://127.0.0.1:{}", prometheus.port);
    let status = || {
        let output = bmb_testkit::bin::run(
            world.command(&["status", "--prometheus", &url]),
            b"",
            Duration::from_secs(30),
        );
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let mut table = String::new();
    assert!(
        wait_until(60, || {
            table = status();
            table.starts_with("3 targets · 1 QUESTION · 2 WORKING\n")
        }),
        "{table}\n{}",
        prometheus.log()
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[1].starts_with("TARGET "), "{table}");
    assert!(
        lines[2].starts_with("asks ") && lines[2].contains(" QUESTION "),
        "the question first: {table}"
    );
    assert_eq!(lines.len(), 5, "{table}");

    // The second watcher ends: its scrape fails, and its row says so.
    second.signal(rustix::process::Signal::TERM);
    assert!(second.wait_exit(10).is_some());
    assert!(
        wait_until(60, || {
            table = status();
            table.contains(&format!("unreachable: {two}"))
        }),
        "{table}\n{}",
        prometheus.log()
    );
    let row = table
        .lines()
        .find(|l| l.starts_with(&format!("{two} *")))
        .unwrap_or_else(|| panic!("no row for {two}: {table}"));
    assert!(
        row.contains("unreachable") && row.contains("up == 0"),
        "{table}"
    );

    // A Prometheus that does not answer is one row, not an error exit.
    let nobody = format!("http://127.0.0.1:{}", closed_port());
    let output = bmb_testkit::bin::run(
        world.command(&["status", "--prometheus", &nobody]),
        b"",
        Duration::from_secs(30),
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("Prometheus {nobody} *")) && said.contains("unreachable"),
        "{said}"
    );
}

/// Issue 21, item 12: `status` finds the watchers of the user it runs as
/// whatever `XDG_STATE_HOME` its shell says (a user service runs without
/// one), or says every folder it looked in.
#[test]
fn status_finds_a_services_board_whatever_xdg_state_home_says_or_says_where_it_looked() {
    let world = World::new();
    world.replay("asks", "question-permission-bash");
    let home = tempfile::tempdir().expect("tempdir");
    let socket = world.tmux.socket.to_string_lossy().into_owned();
    // As under systemd: no XDG_STATE_HOME, the default under $HOME.
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .args(["watch", "-S", &socket, "--interval", "1", "asks"])
        .env_remove("XDG_STATE_HOME")
        .env("HOME", home.path());
    let monitor = Running::start(command);
    let board = home
        .path()
        .join(".local/state/bmb-monitor/board")
        .join(format!("{}.json", monitor.child.id()));
    assert!(
        wait_until(30, || board.exists()),
        "no board at {}: {:?}",
        board.display(),
        monitor.err()
    );
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let status = |home: &Path| {
        let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
            .arg("status")
            .env("XDG_STATE_HOME", elsewhere.path())
            .env("HOME", home)
            .output()
            .expect("status runs");
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let mut table = String::new();
    assert!(
        wait_until(30, || {
            table = status(home.path());
            table
                .lines()
                .any(|l| l.starts_with("asks ") && l.contains(" QUESTION "))
        }),
        "{table}"
    );
    // Nowhere to find one: every folder looked in is said.
    let empty = tempfile::tempdir().expect("tempdir");
    let said = status(empty.path());
    let looked = [
        elsewhere.path().join("bmb-monitor/board"),
        empty.path().join(".local/state/bmb-monitor/board"),
    ];
    if said.starts_with("no running monitor on this machine") {
        for dir in looked {
            assert!(said.contains(&dir.display().to_string()), "{said}");
        }
    } else {
        // The passwd home's folder holds another monitor's board: it is read too.
        assert!(!said.contains("asks "), "{said}");
    }
}
