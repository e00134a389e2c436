//! `bmb-monitor demo` end to end: the real binary, a real private tmux server,
//! the real monitor as its subprocess. The demo must show all four states,
//! exit 0, and leave nothing behind: no socket, no tmux server, no temporary
//! folder, nothing in the user's state folder. Interrupted with SIGINT it
//! must still clean up, and must not claim success.
//!
//! Nothing here asserts a duration; the hang guard only ends a stuck test.

// These tests must start the real binary (which starts tmux through probes::run).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use probes::os::procfs::Stat;
use rustix::process::{Pid, Signal, kill_process};

const BIN: &str = env!("CARGO_BIN_EXE_bmb-monitor");
/// Only a guard against a hung test; never an assertion about speed.
const HANG_GUARD: Duration = Duration::from_secs(120);
const FOUR: [&str; 4] = ["WORKING", "QUESTION", "STALLED", "BLOCKED"];

/// A running demo with its own TMPDIR (where it makes its folder) and its own
/// XDG_STATE_HOME (which it must never write to).
struct Demo {
    child: Child,
    lines: Receiver<String>,
    stdout: Vec<String>,
    tmpdir: tempfile::TempDir,
    user_state: tempfile::TempDir,
}

impl Demo {
    fn start() -> Demo {
        let tmpdir = tempfile::tempdir().unwrap();
        let user_state = tempfile::tempdir().unwrap();
        let mut child = bmb_testkit::bin::command(BIN)
            .arg("demo")
            .env("TMPDIR", tmpdir.path())
            .env("XDG_STATE_HOME", user_state.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start bmb-monitor demo");
        let (tx, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Demo {
            child,
            lines,
            stdout: Vec::new(),
            tmpdir,
            user_state,
        }
    }

    /// Reads lines until one satisfies `wanted` or the output ends.
    fn read_until(&mut self, wanted: impl Fn(&str) -> bool) -> bool {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let hit = wanted(&line);
                    self.stdout.push(line);
                    if hit {
                        return true;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return false,
                Err(RecvTimeoutError::Timeout) => {
                    self.interrupt_then_kill();
                    panic!("demo hung; output so far:\n{}", self.stdout.join("\n"));
                }
            }
        }
    }

    /// Reads the rest of the output and waits for the exit.
    fn finish(mut self) -> Finished {
        self.read_until(|_| false);
        let deadline = Instant::now() + HANG_GUARD;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                self.interrupt_then_kill();
                panic!("demo did not exit:\n{}", self.stdout.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Finished {
            status,
            output: self.stdout.join("\n"),
            tmpdir: self.tmpdir,
            user_state: self.user_state,
        }
    }

    fn interrupt(&self) {
        // Our own unreaped child: its pid cannot have been recycled.
        let _ = kill_process(Pid::from_child(&self.child), Signal::INT);
    }

    /// Hang path only: SIGINT lets the demo clean up its server; then SIGKILL.
    fn interrupt_then_kill(&mut self) {
        self.interrupt();
        std::thread::sleep(Duration::from_secs(5));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Finished {
    status: ExitStatus,
    output: String,
    tmpdir: tempfile::TempDir,
    user_state: tempfile::TempDir,
}

impl Finished {
    /// The socket and pid the demo says its private server has.
    fn server(&self) -> (PathBuf, u32) {
        let line = self
            .output
            .lines()
            .find_map(|l| l.trim().strip_prefix("private tmux server: -S "))
            .unwrap_or_else(|| panic!("no server line in:\n{}", self.output));
        let (socket, pid) = line.rsplit_once(", pid ").expect("socket, pid N");
        (PathBuf::from(socket), pid.parse().expect("a pid"))
    }

    /// Nothing left behind: no socket, no tmux server, no folder, no user state.
    fn assert_clean(&self) {
        let (socket, pid) = self.server();
        assert!(
            socket.starts_with(self.tmpdir.path()),
            "{socket:?} is not in the demo's TMPDIR"
        );
        assert!(!socket.exists(), "{socket:?} still exists");
        assert!(!tmux_alive(pid), "the demo's tmux server {pid} survived");
        assert_eq!(entries(self.tmpdir.path()), Vec::<String>::new());
        assert_eq!(
            entries(self.user_state.path()),
            Vec::<String>::new(),
            "the demo wrote into the user's XDG_STATE_HOME"
        );
    }
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// The server is not our child (tmux daemonises): alive means a live,
/// non-zombie process that is still tmux. Its exit is waited for by the demo.
fn tmux_alive(pid: u32) -> bool {
    Stat::of(pid).is_some_and(|stat| stat.comm().starts_with("tmux") && !stat.has_exited())
}

#[test]
fn demo_shows_all_four_states_with_the_real_monitor_and_leaves_nothing_behind() {
    let finished = Demo::start().finish();
    let output = &finished.output;
    assert!(finished.status.success(), "{:?}\n{output}", finished.status);
    for state in FOUR {
        let prefix = format!("MONITOR · agent · {state} · ");
        assert!(
            output.lines().any(|l| l.starts_with(&prefix)),
            "no monitor line for {state}:\n{output}"
        );
        assert!(
            output.contains(&format!("✓ {state}: ")),
            "{state} not shown:\n{output}"
        );
    }
    // What the monitor did, not only what it said.
    assert!(output.contains("nudged (1/5)"), "{output}");
    assert!(
        output.contains(
            "typed into the pane: continue with the next step of the plan; if nothing is left, say DONE [Enter]"
        ),
        "{output}"
    );
    assert!(
        output.contains("alert sent (BMB_STATE=QUESTION, BMB_REASON=question):"),
        "{output}"
    );
    assert!(
        output.contains("│ Enter to select · ↑/↓ to navigate · Esc to cancel"),
        "the question was not relayed verbatim:\n{output}"
    );
    assert!(
        output.contains("alert sent (BMB_STATE=BLOCKED, BMB_REASON=blocked):"),
        "{output}"
    );
    assert!(!output.contains('✗'), "{output}");
    assert_eq!(
        output.lines().last(),
        Some("SUMMARY: states shown: WORKING, QUESTION, STALLED, BLOCKED (all four)")
    );
    finished.assert_clean();
}

#[test]
fn an_interrupted_demo_cleans_up_and_does_not_claim_success() {
    let mut demo = Demo::start();
    // SIGINT once the monitor has reported the first step: the demo stops
    // between steps, so BLOCKED (the last) can never have been shown.
    assert!(
        demo.read_until(|l| l.starts_with("MONITOR · agent · ")),
        "no monitor line:\n{}",
        demo.stdout.join("\n")
    );
    demo.interrupt();
    let finished = demo.finish();
    let output = &finished.output;
    assert_eq!(finished.status.code(), Some(1), "{output}");
    assert!(
        output.contains("interrupted: stopping before step"),
        "{output}"
    );
    let summary = output.lines().last().unwrap_or("");
    assert!(
        summary.starts_with("SUMMARY: states shown: ")
            && summary.contains("missing: ")
            && summary.ends_with("BLOCKED"),
        "{summary}"
    );
    finished.assert_clean();
}
