//! `bmb-monitor worker` end to end: the real binary, a real git repository
//! with a local bare "origin" (so `origin/main` exists), a real agent process,
//! a real transcript whose mtime the test sets, real pid files.
//!
//! Nothing here asserts a duration. The monitor's `--verbose` pass lines on
//! stderr say how many passes ran, so "no `idle` across N passes" is counted
//! in passes, and every wait for a line has a generous hang guard only.
//!
//! Each test cleans up exactly the processes it started, by pid.

// These tests must start real processes (git, the agent, the monitor binary);
// the product's own subprocesses all go through `probes::run`.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_bmb-monitor");
/// Only a guard against a hung test; never an assertion about speed.
const HANG_GUARD: Duration = Duration::from_secs(90);
const IDLE_EVIDENCE_TAIL: &str = "is alive but its transcript has been silent for over 900s with no child process burning CPU behind it, across two consecutive passes ~1s apart, the tree is unchanged between them, and the branch already carries commits";

// ---- fixtures --------------------------------------------------------------

use bmb_testkit::git;

#[derive(Clone, Copy, PartialEq)]
enum History {
    /// A commit that touched a file after `origin/main`.
    Work,
    /// Only the dispatcher's `--allow-empty` claim after `origin/main`.
    EmptyClaimOnly,
    /// No remote at all: commits are unanswerable.
    NoOrigin,
}

/// A desk: worktree, origin, Claude config dir with a transcript.
struct Desk {
    _root: tempfile::TempDir,
    worktree: PathBuf,
    claude: PathBuf,
    transcript: PathBuf,
}

impl Desk {
    fn new(history: History) -> Desk {
        let root = tempfile::tempdir().unwrap();
        let worktree = root.path().join("desk_b").join("proj");
        std::fs::create_dir_all(&worktree).unwrap();
        git(&worktree, &["init", "-q", "-b", "feature/x"]);
        std::fs::write(worktree.join("README"), "base\n").unwrap();
        git(&worktree, &["add", "README"]);
        git(&worktree, &["commit", "-qm", "base"]);
        if history != History::NoOrigin {
            git(root.path(), &["init", "-q", "--bare", "origin.git"]);
            git(&worktree, &["remote", "add", "origin", "../../origin.git"]);
            git(&worktree, &["push", "-q", "origin", "feature/x:main"]);
            git(&worktree, &["fetch", "-q", "origin"]);
        }
        git(
            &worktree,
            &[
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "plot: claim feature/x",
            ],
        );
        if history != History::EmptyClaimOnly {
            std::fs::write(worktree.join("work.txt"), "done\n").unwrap();
            git(&worktree, &["add", "work.txt"]);
            git(&worktree, &["commit", "-qm", "work"]);
        }
        let claude = root.path().join("claude");
        // The slug by hand, as Claude Code names the directory.
        let slug: String = worktree
            .to_str()
            .unwrap()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        assert!(slug.ends_with("-desk-b-proj"), "{slug}");
        let project = claude.join("projects").join(slug);
        std::fs::create_dir_all(&project).unwrap();
        let transcript = project.join("0b7c-session.jsonl");
        std::fs::write(&transcript, "{\"type\":\"user\"}\n").unwrap();
        let desk = Desk {
            _root: root,
            worktree,
            claude,
            transcript,
        };
        desk.age_transcript(2000);
        desk
    }

    fn age_transcript(&self, seconds: u64) {
        let file = std::fs::File::options()
            .write(true)
            .open(&self.transcript)
            .unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(seconds))
            .unwrap();
    }

    /// The agent writes a transcript line: append, mtime becomes now.
    fn transcript_line(&self) {
        let mut file = std::fs::File::options()
            .append(true)
            .open(&self.transcript)
            .unwrap();
        writeln!(file, "{{\"type\":\"assistant\"}}").unwrap();
    }

    fn pid_file(&self) -> PathBuf {
        self.worktree.join(".plot-worker.pid")
    }

    fn findings_file(&self) -> PathBuf {
        self.worktree.join(".plot-worker.monitor.worker.jsonl")
    }

    /// The environment the wrapper gives its monitor; nothing on the command line.
    fn wrapper_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("PLOT_BRANCH", "feature/x".to_owned()),
            ("PLOT_WORKTREE", self.worktree.display().to_string()),
            ("PLOT_MONITOR_INTERVAL", "1".to_owned()),
            ("CLAUDE_CONFIG_DIR", self.claude.display().to_string()),
            ("RUST_LOG", "debug".to_owned()),
        ]
    }
}

/// A real agent process: `sleep`, optionally with `yes > /dev/null` under it.
/// Dropping it kills exactly its own pids.
struct Agent {
    child: Child,
    busy_child: Option<i32>,
    _scratch: tempfile::TempDir,
}

impl Agent {
    fn idle() -> Agent {
        Agent {
            child: Command::new("sleep").arg("600").spawn().unwrap(),
            busy_child: None,
            _scratch: tempfile::tempdir().unwrap(),
        }
    }

    fn with_busy_child() -> Agent {
        let scratch = tempfile::tempdir().unwrap();
        let yes_pid = scratch.path().join("yes.pid");
        // `yes` is forked by sh, which then becomes `sleep`: yes is the agent's child.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("yes > /dev/null & echo $! > \"$1\"; exec sleep 600")
            .arg("sh")
            .arg(&yes_pid)
            .spawn()
            .unwrap();
        let started = Instant::now();
        let busy = loop {
            if let Some(pid) = std::fs::read_to_string(&yes_pid)
                .ok()
                .and_then(|t| t.trim().parse().ok())
            {
                break pid;
            }
            if started.elapsed() > HANG_GUARD {
                let _ = child.kill();
                panic!("the busy child never started");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        Agent {
            child,
            busy_child: Some(busy),
            _scratch: scratch,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL the agent (and its busy child) without reaping it yet: the
    /// monitor must read the zombie as dead.
    fn kill(&mut self) {
        if let Some(pid) = self.busy_child.take() {
            kill(pid);
        }
        self.child.kill().unwrap();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(pid) = self.busy_child.take() {
            kill(pid);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kill(pid: i32) {
    // `kill` the utility, by pid: this test's own process and nothing else.
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

#[derive(Debug, Clone, PartialEq)]
enum Line {
    Out(String),
    Err(String),
}

/// The monitor binary, its output read line by line as it comes.
struct Monitor {
    child: Child,
    lines: Receiver<Line>,
    stdout: Vec<String>,
    stderr: Vec<String>,
}

impl Monitor {
    fn start(env: &[(&str, String)], args: &[&str]) -> Monitor {
        let mut command = bmb_testkit::bin::command(BIN);
        command
            .arg("worker")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in [
            "PLOT_BRANCH",
            "PLOT_WORKTREE",
            "PLOT_PID_FILE",
            "PLOT_MONITOR_FILE",
            "PLOT_MONITOR_INTERVAL",
            "PLOT_MONITOR_QUIET_SECONDS",
            "CLAUDE_CONFIG_DIR",
            "RUST_LOG",
        ] {
            command.env_remove(name);
        }
        command.envs(env.iter().map(|(k, v)| (*k, v)));
        let mut child = command.spawn().unwrap();
        let (tx, rx) = channel();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let tx2 = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(Line::Out(line));
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx2.send(Line::Err(line));
            }
        });
        Monitor {
            child,
            lines: rx,
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }

    fn next(&mut self) -> Option<Line> {
        match self.lines.recv_timeout(HANG_GUARD) {
            Ok(line) => {
                match &line {
                    Line::Out(l) => self.stdout.push(l.clone()),
                    Line::Err(l) => self.stderr.push(l.clone()),
                }
                Some(line)
            }
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => panic!(
                "hang guard: no output from the monitor\nstdout: {:?}\nstderr: {:?}",
                self.stdout, self.stderr
            ),
        }
    }

    /// Read until a stdout line arrives; return it. Panics (with what was
    /// seen) if the monitor ends first.
    fn next_finding(&mut self) -> Value {
        loop {
            match self.next() {
                Some(Line::Out(line)) => return finding(&line),
                Some(Line::Err(_)) => {}
                None => panic!(
                    "monitor ended before a finding\nstdout: {:?}\nstderr: {:?}",
                    self.stdout, self.stderr
                ),
            }
        }
    }

    /// Read `n` more pass lines from stderr; return them. Any finding seen
    /// meanwhile is a failure.
    fn passes(&mut self, n: usize) -> Vec<String> {
        let mut seen = Vec::new();
        while seen.len() < n {
            match self.next() {
                Some(Line::Err(line)) if line.contains(": pass ") => seen.push(line),
                Some(Line::Err(_)) => {}
                Some(Line::Out(line)) => {
                    panic!("unexpected finding {line}\nafter passes {seen:#?}")
                }
                None => panic!("monitor ended\nstderr: {:?}", self.stderr),
            }
        }
        seen
    }

    /// Drain to the end and return the exit status.
    fn wait_exit(&mut self) -> ExitStatus {
        while self.next().is_some() {}
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < HANG_GUARD,
                "hang guard: monitor did not exit"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `plot-monitor {json}` → the JSON, with the exact field order checked.
fn finding(line: &str) -> Value {
    let json = line
        .strip_prefix("plot-monitor ")
        .unwrap_or_else(|| panic!("not a plot-monitor line: {line}"));
    let keys: Vec<&str> = [
        "monitor",
        "branch",
        "worktree",
        "finding",
        "since",
        "evidence",
        "measuredAt",
    ]
    .to_vec();
    let mut at = 0;
    for key in &keys {
        let needle = format!("\"{key}\":");
        let found = json[at..]
            .find(&needle)
            .unwrap_or_else(|| panic!("{key} missing or out of order in {json}"));
        at += found + needle.len();
    }
    let value: Value = serde_json::from_str(json).unwrap();
    assert_eq!(value.as_object().unwrap().len(), keys.len(), "{json}");
    assert_eq!(value["monitor"], "WorkerMonitor");
    for stamp in ["since", "measuredAt"] {
        let text = value[stamp].as_str().unwrap();
        assert!(is_utc_stamp(text), "{stamp} = {text}");
    }
    value
}

/// `%Y-%m-%dT%H:%M:%SZ`
fn is_utc_stamp(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 20
        && text.char_indices().all(|(i, c)| match i {
            4 | 7 => c == '-',
            10 => c == 'T',
            13 | 16 => c == ':',
            19 => c == 'Z',
            _ => c.is_ascii_digit(),
        })
}

fn now_stamp() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    watchdog::worker::utc_timestamp(secs as i64)
}

fn findings_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

// ---- the tests ----------------------------------------------------------------

#[test]
fn env_only_idle_fires_once_clear_follows_a_transcript_line_and_killing_the_agent_is_gone() {
    let desk = Desk::new(History::Work);
    let mut agent = Agent::idle();
    std::fs::write(desk.pid_file(), format!("{}\n", agent.pid())).unwrap();
    let mut monitor = Monitor::start(&desk.wrapper_env(), &[]);

    let idle = monitor.next_finding();
    assert_eq!(idle["finding"], "idle");
    assert_eq!(idle["branch"], "feature/x");
    assert_eq!(idle["worktree"], desk.worktree.display().to_string());
    assert_eq!(
        idle["evidence"],
        format!("the agent pid {} {IDLE_EVIDENCE_TAIL}", agent.pid())
    );
    assert_eq!(idle["since"], idle["measuredAt"]);

    // Published once: more quiet passes, and the monitor's own findings file
    // now sits in the tree it watches, yet no repeat and no `clear`.
    let quiet = monitor.passes(4);
    assert!(quiet.iter().all(|l| l.contains(": quiet (")), "{quiet:#?}");

    desk.transcript_line();
    let clear = monitor.next_finding();
    assert_eq!(clear["finding"], "clear");
    assert_eq!(
        clear["evidence"],
        "the idle finding no longer holds; the worker is measuring healthy again"
    );
    assert!(monitor.passes(1)[0].contains(": busy (transcript written"));

    let before_death = now_stamp();
    agent.kill();
    let gone = monitor.next_finding();
    assert_eq!(gone["finding"], "gone");
    assert_eq!(
        gone["evidence"],
        format!(
            "the agent pid {} names no live process; the worker's desk is unattended",
            agent.pid()
        )
    );
    let measured = gone["measuredAt"].as_str().unwrap();
    assert!(
        measured >= before_death.as_str(),
        "{measured} < {before_death}"
    );
    assert!(monitor.wait_exit().success());

    // The file holds exactly what stdout said, in order.
    let stdout_json: Vec<String> = monitor
        .stdout
        .iter()
        .map(|l| l.strip_prefix("plot-monitor ").unwrap().to_owned())
        .collect();
    assert_eq!(stdout_json.len(), 3, "{:?}", monitor.stdout);
    assert_eq!(findings_lines(&desk.findings_file()), stdout_json);
}

#[test]
fn a_busy_child_under_the_agent_keeps_it_from_idle() {
    let desk = Desk::new(History::Work);
    let mut agent = Agent::with_busy_child();
    std::fs::write(desk.pid_file(), agent.pid().to_string()).unwrap();
    let mut monitor = Monitor::start(&desk.wrapper_env(), &[]);
    let passes = monitor.passes(6);
    assert!(
        passes[1..]
            .iter()
            .all(|l| l.contains(": busy (descendant ") && l.contains("CPU clock advanced")),
        "{passes:#?}"
    );
    agent.kill();
    assert_eq!(monitor.next_finding()["finding"], "gone");
    assert!(monitor.wait_exit().success());
    assert_eq!(findings_lines(&desk.findings_file()).len(), 1);
}

#[test]
fn an_empty_claim_commit_alone_is_not_commits_present() {
    let desk = Desk::new(History::EmptyClaimOnly);
    let mut agent = Agent::idle();
    std::fs::write(desk.pid_file(), agent.pid().to_string()).unwrap();
    let mut monitor = Monitor::start(&desk.wrapper_env(), &[]);
    let passes = monitor.passes(6);
    assert!(
        passes[3..]
            .iter()
            .all(|l| l.contains(": quiet (") && l.contains("no commits that touched a file yet")),
        "{passes:#?}"
    );
    agent.kill();
    assert_eq!(monitor.next_finding()["finding"], "gone");
    assert!(monitor.wait_exit().success());
}

#[test]
fn without_an_origin_ref_commits_are_unanswerable_and_nothing_is_published() {
    let desk = Desk::new(History::NoOrigin);
    let mut agent = Agent::idle();
    std::fs::write(desk.pid_file(), agent.pid().to_string()).unwrap();
    let mut monitor = Monitor::start(&desk.wrapper_env(), &[]);
    let passes = monitor.passes(6);
    assert!(
        passes[3..]
            .iter()
            .all(|l| l.contains("commits unanswerable: no local origin")),
        "{passes:#?}"
    );
    agent.kill();
    assert_eq!(monitor.next_finding()["finding"], "gone");
    assert!(monitor.wait_exit().success());
}

#[test]
fn without_a_transcript_the_reading_is_unknown_and_never_a_finding() {
    let desk = Desk::new(History::Work);
    std::fs::remove_file(&desk.transcript).unwrap();
    let mut agent = Agent::idle();
    std::fs::write(desk.pid_file(), agent.pid().to_string()).unwrap();
    let mut monitor = Monitor::start(&desk.wrapper_env(), &[]);
    let passes = monitor.passes(5);
    assert!(
        passes
            .iter()
            .all(|l| l.contains(": unknown (no transcript")),
        "{passes:#?}"
    );
    agent.kill();
    assert_eq!(monitor.next_finding()["finding"], "gone");
    assert!(monitor.wait_exit().success());
}

#[test]
fn once_with_flags_takes_one_sample_and_never_says_idle() {
    let desk = Desk::new(History::Work);
    let agent = Agent::idle();
    let pid_file = desk.worktree.join("elsewhere.pid");
    std::fs::write(&pid_file, agent.pid().to_string()).unwrap();
    let findings = desk.worktree.join(".plot-worker.custom.jsonl");
    let args = [
        "--once",
        "--branch",
        "feature/y",
        "--worktree",
        desk.worktree.to_str().unwrap(),
        "--pid-file",
        pid_file.to_str().unwrap(),
        "--findings",
        findings.to_str().unwrap(),
        "--interval",
        "1",
        "--quiet-seconds",
        "60",
        "--claude-dir",
        desk.claude.to_str().unwrap(),
    ];
    let mut monitor = Monitor::start(&[], &args);
    assert!(monitor.wait_exit().success());
    assert_eq!(monitor.stdout, Vec::<String>::new());
    assert!(!findings.exists());
    drop(agent);
}

#[test]
fn once_on_a_dead_pid_publishes_gone_and_flags_override_the_environment() {
    let desk = Desk::new(History::Work);
    let mut dead = Command::new("sleep").arg("600").spawn().unwrap();
    let pid = dead.id();
    dead.kill().unwrap();
    dead.wait().unwrap();
    std::fs::write(desk.pid_file(), pid.to_string()).unwrap();
    let mut env = desk.wrapper_env();
    env.push(("PLOT_BRANCH", "from-env".to_owned()));
    let mut monitor = Monitor::start(&env, &["--once", "--branch", "from-flag"]);
    assert!(monitor.wait_exit().success());
    assert_eq!(monitor.stdout.len(), 1, "{:?}", monitor.stdout);
    let gone = finding(&monitor.stdout[0]);
    assert_eq!(gone["finding"], "gone");
    assert_eq!(gone["branch"], "from-flag");
    assert_eq!(findings_lines(&desk.findings_file()).len(), 1);
}

#[test]
fn bad_pid_files_are_not_recorded_yet_with_a_clear_message_and_never_gone() {
    let desk = Desk::new(History::Work);
    for (content, says) in [
        (None, "does not exist yet"),
        (Some(""), "the pid file is empty"),
        (Some("-1\n"), "a negative number"),
        (Some("0"), "pid 0"),
        (Some("garbage"), "not a process id"),
    ] {
        match content {
            Some(text) => std::fs::write(desk.pid_file(), text).unwrap(),
            None => {
                let _ = std::fs::remove_file(desk.pid_file());
            }
        }
        let mut monitor = Monitor::start(&desk.wrapper_env(), &["--once"]);
        assert!(monitor.wait_exit().success(), "{content:?}");
        assert_eq!(monitor.stdout, Vec::<String>::new(), "{content:?}");
        assert!(
            monitor
                .stderr
                .iter()
                .any(|l| l.contains("cannot judge yet") && l.contains(says)),
            "{content:?}: {:?}",
            monitor.stderr
        );
    }
    assert!(!desk.findings_file().exists());
}

#[test]
fn the_startup_window_is_waited_through_then_the_agent_is_watched_to_its_end() {
    let desk = Desk::new(History::Work);
    std::fs::write(desk.pid_file(), "-1").unwrap();
    let mut monitor = Monitor::start(&desk.wrapper_env(), &[]);
    let waiting = monitor.passes(3);
    assert!(
        waiting.iter().all(|l| l.contains(": unknown (")),
        "{waiting:#?}"
    );
    // Said once on stderr, not every pass.
    let said = monitor
        .stderr
        .iter()
        .filter(|l| l.contains("cannot judge yet"))
        .count();
    assert_eq!(said, 1, "{:?}", monitor.stderr);

    let mut agent = Agent::idle();
    std::fs::write(desk.pid_file(), agent.pid().to_string()).unwrap();
    let watching = monitor.passes(2);
    assert!(
        watching.iter().any(|l| !l.contains(": unknown (")),
        "{watching:#?}"
    );
    agent.kill();
    // An `idle` may come first (the agent is quiet); `gone` must follow.
    let mut last = monitor.next_finding();
    while last["finding"] != "gone" {
        assert_eq!(last["finding"], "idle", "{last}");
        last = monitor.next_finding();
    }
    assert!(monitor.wait_exit().success());
}

#[test]
fn sigterm_and_sigint_end_the_worker_cleanly_with_exit_0() {
    for signal in [rustix::process::Signal::TERM, rustix::process::Signal::INT] {
        let desk = Desk::new(History::Work);
        let agent = Agent::idle();
        std::fs::write(desk.pid_file(), agent.pid().to_string()).unwrap();
        let mut monitor = Monitor::start(&desk.wrapper_env(), &[]);
        // Running its loop: a pass has been logged.
        monitor.passes(1);
        let pid = rustix::process::Pid::from_child(&monitor.child);
        rustix::process::kill_process(pid, signal).unwrap();
        let status = monitor.wait_exit();
        assert_eq!(status.code(), Some(0), "{signal:?}: {status:?}");
        drop(agent);
    }
}

#[test]
fn an_unwritable_findings_file_is_reported_and_the_finding_still_reaches_stdout() {
    let desk = Desk::new(History::Work);
    // Above Linux's largest possible pid_max (2^22): a well-formed pid that
    // names no live process, so `gone`, exactly as `kill -0` reads it in the seed.
    std::fs::write(desk.pid_file(), "999999999").unwrap();
    let dir_in_the_way = desk.worktree.join(".plot-worker.findings-dir");
    std::fs::create_dir(&dir_in_the_way).unwrap();
    let mut monitor = Monitor::start(
        &desk.wrapper_env(),
        &["--once", "--findings", dir_in_the_way.to_str().unwrap()],
    );
    assert!(monitor.wait_exit().success());
    assert_eq!(monitor.stdout.len(), 1);
    assert_eq!(finding(&monitor.stdout[0])["finding"], "gone");
    assert!(
        monitor.stderr.iter().any(|l| l.contains("cannot open")
            && l.contains("for appending")
            && l.contains("findings-dir")),
        "{:?}",
        monitor.stderr
    );
}

#[test]
fn with_only_a_pid_file_and_a_findings_file_it_runs_as_the_seed_and_still_says_gone() {
    // A wrapper that sets PLOT_PID_FILE and PLOT_MONITOR_FILE, and no worktree:
    // the seed runs with worktree="" (no transcript, no tree, no commits).
    let scratch = tempfile::tempdir().unwrap();
    let pid_file = scratch.path().join("agent.pid");
    let findings = scratch.path().join(".plot-worker.monitor.worker.jsonl");
    let mut agent = Agent::idle();
    std::fs::write(&pid_file, format!("{}\n", agent.pid())).unwrap();
    let env = [
        ("PLOT_PID_FILE", pid_file.display().to_string()),
        ("PLOT_MONITOR_FILE", findings.display().to_string()),
        ("PLOT_MONITOR_INTERVAL", "1".to_owned()),
        ("RUST_LOG", "debug".to_owned()),
    ];
    let mut monitor = Monitor::start(&env, &[]);
    // It keeps running: its readings that need a worktree are unknown.
    let passes = monitor.passes(3);
    assert!(
        passes.iter().all(|l| l.contains(": unknown (")),
        "{passes:#?}"
    );
    agent.kill();
    let gone = monitor.next_finding();
    assert_eq!(gone["finding"], "gone");
    assert_eq!(gone["worktree"], "");
    assert_eq!(gone["branch"], "");
    assert!(monitor.wait_exit().success());
    assert_eq!(monitor.stdout.len(), 1, "{:?}", monitor.stdout);
    let lines = findings_lines(&findings);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        format!("plot-monitor {}", lines[0]),
        monitor.stdout[0],
        "the same line in the file and on stdout"
    );
}

#[test]
fn a_bad_configuration_is_one_line_and_exit_2() {
    for (env, args, says) in [
        (vec![], vec!["--once"], "no worktree to watch"),
        (
            vec![("PLOT_WORKTREE", "/tmp".to_owned())],
            vec!["--once", "--interval", "soon"],
            "must be a number of seconds from 1 to",
        ),
        (
            vec![
                ("PLOT_WORKTREE", "/tmp".to_owned()),
                ("PLOT_MONITOR_QUIET_SECONDS", "-5".to_owned()),
            ],
            vec!["--once"],
            "PLOT_MONITOR_QUIET_SECONDS",
        ),
    ] {
        let mut monitor = Monitor::start(&env, &args);
        let status = monitor.wait_exit();
        assert_eq!(status.code(), Some(2), "{args:?}");
        assert_eq!(monitor.stderr.len(), 1, "{:?}", monitor.stderr);
        assert!(monitor.stderr[0].contains(says), "{:?}", monitor.stderr);
    }
}

#[test]
fn a_closed_stdout_does_not_stop_the_monitor_or_its_findings_file() {
    let desk = Desk::new(History::Work);
    let mut agent = Agent::idle();
    std::fs::write(desk.pid_file(), agent.pid().to_string()).unwrap();
    let mut command = bmb_testkit::bin::command(BIN);
    command
        .arg("worker")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in desk.wrapper_env() {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    // Nobody reads stdout: the first finding meets a closed pipe (EPIPE).
    drop(child.stdout.take());
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    // Wait (in passes, not seconds) until `idle` has been written to the file.
    // (If the test fails here, dropping the agent ends the monitor too.)
    let mut passes = 0;
    while findings_lines(&desk.findings_file()).is_empty() {
        let line = stderr.next().expect("monitor ended early").unwrap();
        assert!(!line.contains("panicked"), "{line}");
        passes += usize::from(line.contains(": pass "));
        assert!(passes < 100, "no idle after {passes} passes");
    }
    agent.kill();
    // Drain stderr to its end: the monitor exits after its final pass.
    for line in stderr.map_while(Result::ok) {
        assert!(!line.contains("panicked"), "{line}");
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let words: Vec<String> = findings_lines(&desk.findings_file())
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["finding"].to_string())
        .collect();
    assert_eq!(words, vec!["\"idle\"", "\"gone\""]);
}

#[test]
fn a_worktree_that_is_no_git_repository_is_said_once_never_idle() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("agent.pid");
    std::fs::write(&pid_file, format!("{}\n", std::process::id())).unwrap();
    let env = [
        ("PLOT_WORKTREE", dir.path().display().to_string()),
        ("PLOT_PID_FILE", pid_file.display().to_string()),
        (
            "PLOT_MONITOR_FILE",
            dir.path().join("findings.jsonl").display().to_string(),
        ),
    ];
    let mut monitor = Monitor::start(&env, &["--once"]);
    let status = monitor.wait_exit();
    assert_eq!(status.code(), Some(0), "{:?}", monitor.stderr);
    let said: Vec<&String> = monitor
        .stderr
        .iter()
        .filter(|l| l.contains("is not inside a git repository: it can never be judged idle"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", monitor.stderr);
}

#[test]
fn a_two_gigabyte_pid_file_is_named_and_never_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("agent.pid");
    std::fs::File::create(&pid_file)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let env = [
        ("PLOT_PID_FILE", pid_file.display().to_string()),
        (
            "PLOT_MONITOR_FILE",
            dir.path().join("findings.jsonl").display().to_string(),
        ),
    ];
    let mut monitor = Monitor::start(&env, &["--once"]);
    let status = monitor.wait_exit();
    assert_eq!(status.code(), Some(0), "{:?}", monitor.stderr);
    assert!(
        monitor
            .stderr
            .iter()
            .any(|l| l.contains("cannot be read: it is larger than 64 bytes")),
        "{:?}",
        monitor.stderr
    );
    // Never a finding from it: an unreadable pid file is "not yet", not `gone`.
    assert!(
        !std::fs::read_to_string(dir.path().join("findings.jsonl"))
            .unwrap_or_default()
            .contains("gone")
    );
}
