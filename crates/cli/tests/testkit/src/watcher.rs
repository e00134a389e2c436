//! The real monitor watching a live agent session, as a person runs it
//! beside one: `watch --json --interval 1 --work-probe 'echo 3'` with an alert
//! command that records each escalation, its poll lines read as they come.

use std::path::PathBuf;

use crate::bin::{Running, wait_until};

/// The real monitor watching a live session at `--interval 1`, its JSON
/// lines collected as they come; every escalation's `BMB_REASON` is a line of
/// `reasons`, its message appended to `messages`. Killed on drop.
pub struct Watcher {
    running: Running,
    reasons: PathBuf,
    messages: PathBuf,
    _dir: tempfile::TempDir,
}

impl Watcher {
    /// The monitor `bin` watching `session` on the tmux server `-L socket`.
    pub fn start(bin: &str, socket: &str, session: &str) -> Watcher {
        let dir = tempfile::tempdir().expect("tempdir");
        let reasons = dir.path().join("reasons");
        let messages = dir.path().join("messages");
        let alert_cmd = format!(
            "printf '%s\\n' \"$BMB_REASON\" >> '{}'; cat >> '{}'",
            reasons.display(),
            messages.display()
        );
        let mut command = crate::bin::command(bin);
        command
            .args(["watch", "-L", socket, session, "--json"])
            .args(["--interval", "1", "--work-probe", "echo 3"])
            .args(["--alert-cmd", &alert_cmd])
            .env("XDG_STATE_HOME", dir.path().join("state"));
        Watcher {
            running: Running::start(command),
            reasons,
            messages,
            _dir: dir,
        }
    }

    /// Every poll line so far.
    pub fn lines(&self) -> Vec<serde_json::Value> {
        self.running
            .out()
            .iter()
            .map(|line| serde_json::from_str(line).expect("a JSON line"))
            .collect()
    }

    /// Waits (a hang guard of `secs`) for at least `n` poll lines; returns them all.
    pub fn wait_lines(&self, n: usize, secs: u64) -> Vec<serde_json::Value> {
        assert!(
            wait_until(secs, || self.running.out().len() >= n),
            "fewer than {n} poll lines: {:?}; stderr: {:?}",
            self.running.out(),
            self.running.err()
        );
        self.lines()
    }

    /// Waits (a hang guard of `secs`) for a poll line that `wanted` picks; its index.
    pub fn wait_line(
        &self,
        what: &str,
        secs: u64,
        wanted: impl Fn(&serde_json::Value) -> bool,
    ) -> usize {
        let mut found = None;
        let seen = wait_until(secs, || {
            found = self.lines().iter().position(&wanted);
            found.is_some()
        });
        assert!(seen, "no poll line {what}: {:#?}", self.lines());
        found.expect("found")
    }

    pub fn reasons(&self) -> String {
        std::fs::read_to_string(&self.reasons).unwrap_or_default()
    }

    pub fn messages(&self) -> String {
        std::fs::read_to_string(&self.messages).unwrap_or_default()
    }
}

/// Whether the poll typed a nudge (`done` says `nudged (k/n)`; `not nudged
/// yet (...)` is a nudge held, not typed).
pub fn nudged(line: &serde_json::Value) -> bool {
    line["done"]
        .as_array()
        .expect("done")
        .iter()
        .any(|d| d.as_str().is_some_and(|d| d.starts_with("nudged")))
}

/// Whether the poll typed its first nudge (`done` says `nudged (1/5)`).
pub fn first_nudge(line: &serde_json::Value) -> bool {
    line["done"]
        .as_array()
        .is_some_and(|done| done.iter().any(|d| d == "nudged (1/5)"))
}
