//! A private tmux server per test: its socket lives in the test's own
//! temporary folder, and dropping it kills exactly that server.
// Setting up a test's own tmux server is the harness's job, not the product's.
#![expect(
    clippy::disallowed_methods,
    reason = "the test harness starts the real daemons and processes a test needs (sshd, tmux, Prometheus, the binary) itself, not through the product's probes"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub struct PrivateTmux {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
}

impl Default for PrivateTmux {
    fn default() -> Self {
        PrivateTmux::new()
    }
}

impl PrivateTmux {
    pub fn new() -> PrivateTmux {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("tmux.sock");
        PrivateTmux { dir, socket }
    }

    /// `tmux -S SOCKET -f /dev/null ARGS`, which must succeed.
    pub fn tmux(&self, args: &[&str]) -> Output {
        let output = self.try_tmux(args);
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    pub fn try_tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// A 120x40 session running `script` under `sh -c`.
    pub fn session(&self, name: &str, script: &str) {
        self.tmux(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "120",
            "-y",
            "40",
            "sh",
            "-c",
            script,
        ]);
    }

    /// A session that shows `capture` and then records every line typed into it in `received`.
    pub fn replay(&self, name: &str, capture: &Path, received: &Path) {
        self.show_then(name, capture, &format!("cat > '{}'", received.display()));
    }

    /// A session that shows `capture`, then `exec`s `then` (a shell command);
    /// returns once the capture is on screen.
    fn show_then(&self, name: &str, capture: &Path, then: &str) {
        self.session(name, &format!("cat '{}'; exec {then}", capture.display()));
        let text = std::fs::read_to_string(capture).expect("capture");
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string();
        self.wait_for(name, |pane| pane.contains(&last));
    }

    pub fn capture(&self, name: &str) -> String {
        let target = format!("={name}:");
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", &target]).stdout)
            .into_owned()
    }

    /// Polls the pane until `ready` holds; a guard against a hang, not a timing assertion.
    pub fn wait_for(&self, name: &str, ready: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let pane = self.capture(name);
            if ready(&pane) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "pane {name} never got ready:\n{pane}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for PrivateTmux {
    fn drop(&mut self) {
        let _ = self.try_tmux(&["kill-server"]);
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// A real capture from the golden corpus.
pub fn capture_path(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../../testdata/panes/claude")
        .join(case)
        .join("plain.txt")
}

impl PrivateTmux {
    /// A pane replaying `case` whose process plays the agent: its `HOME` is
    /// `home` (where a session file can be put for it) and it records every
    /// line typed into it. Returns the pane's pid and the record's path.
    pub fn fake_agent(&self, name: &str, case: &str, home: &Path) -> (u32, PathBuf) {
        let received = self.dir.path().join(format!("{name}.received"));
        let then = format!(
            "env HOME='{}' cat > '{}'",
            home.display(),
            received.display()
        );
        self.show_then(name, &capture_path(case), &then);
        let target = format!("={name}:");
        let pid = String::from_utf8_lossy(
            &self
                .tmux(&["display-message", "-p", "-t", &target, "#{pane_pid}"])
                .stdout,
        )
        .trim()
        .parse()
        .expect("pane pid");
        (pid, received)
    }
}

/// Writes Claude Code's session file for `pid` under `home`, in the shape
/// 2.1.197 writes it, with `procStart` = the process's real start time
/// (`procStart_offset` shifts it, to play a reused pid).
pub fn write_session_file(
    home: &Path,
    pid: u32,
    status: &str,
    extra: &str,
    proc_start_offset: u64,
) {
    let start = probes::os::procfs::Stat::of(pid)
        .and_then(|stat| stat.start_ticks())
        .expect("the process's start time");
    let sessions = home.join(".claude/sessions");
    std::fs::create_dir_all(&sessions).expect("sessions folder");
    let text = format!(
        r#"{{"pid":{pid},"sessionId":"0f0e","cwd":"/tmp","startedAt":1,"procStart":"{}","version":"2.1.197","kind":"interactive","status":"{status}"{extra},"updatedAt":1}}"#,
        start + proc_start_offset
    );
    std::fs::write(sessions.join(format!("{pid}.json")), text).expect("session file");
}
