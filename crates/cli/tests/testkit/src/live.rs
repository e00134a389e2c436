//! A live agent session for an end-to-end test: a driver script
//! (`xtask/capture/live.py`, `live_agents.py`) starts the real CLI in a
//! private tmux server against a loopback mock of its model API, drives it
//! into a situation, prints one JSON line (its tmux socket, session, and the
//! file where the mock logs the prompts the model received) and holds it
//! until its stdin closes; then it ends everything it started.
#![expect(
    clippy::disallowed_methods,
    reason = "the test harness starts the real daemons and processes a test needs (sshd, tmux, Prometheus, the binary) itself, not through the product's probes"
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};

use crate::bin::wait_until;

/// A live session held in a situation until dropped.
pub struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    pub socket: String,
    pub session: String,
    /// The prompts the model received (the driver's `prompts`, JSON lines),
    /// for the situations that keep them.
    prompts: Option<PathBuf>,
}

impl Live {
    /// `python3 DRIVER ARGS`, once it says it is ready.
    pub fn start(driver: &Path, args: &[&str]) -> Live {
        let mut child = Command::new("python3")
            .arg(driver)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the live driver (needs python3, tmux and npm)");
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let mut ready = None;
        while lines.read_line(&mut line).expect("read") > 0 {
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(line.trim()) {
                ready = Some(value);
                break;
            }
            line.clear();
        }
        let Some(ready) = ready else {
            let status = child.wait().expect("wait");
            panic!(
                "{} {args:?} never got ready ({status}); see its stderr above",
                driver.display()
            );
        };
        Live {
            child,
            stdin,
            socket: ready["socket"].as_str().expect("socket").to_string(),
            session: ready["session"].as_str().expect("session").to_string(),
            prompts: ready["prompts"].as_str().map(PathBuf::from),
        }
    }

    /// `tmux -L <its socket> ARGS` on the session's own server, which must succeed.
    pub fn tmux(&self, args: &[&str]) -> Output {
        tmux(&self.socket, args)
    }

    /// The pane as `capture-pane -p -e` draws it (ink included).
    pub fn pane(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-e", "-t", &self.session]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The pane as plain text.
    pub fn plain(&self) -> String {
        let output = self.tmux(&["capture-pane", "-p", "-t", &self.session]);
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits (a hang guard of `secs`) until the plain pane satisfies `ready`.
    pub fn wait_pane(&self, what: &str, secs: u64, ready: impl Fn(&str) -> bool) {
        assert!(
            wait_until(secs, || ready(&self.plain())),
            "{what} never showed; the pane:\n{}",
            self.pane()
        );
    }

    /// Every user prompt the model received so far, each as the text blocks
    /// of that message, in order.
    pub fn prompts(&self) -> Vec<Vec<String>> {
        let path = self
            .prompts
            .as_ref()
            .expect("this situation logs its prompts");
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
                value["texts"]
                    .as_array()
                    .expect("texts")
                    .iter()
                    .map(|t| t.as_str().expect("a text block").to_string())
                    .collect()
            })
            .collect()
    }

    /// Waits (a hang guard of `secs`) for the model to receive prompt number
    /// `index` (0-based); returns it.
    pub fn wait_prompt(&self, index: usize, secs: u64) -> Vec<String> {
        assert!(
            wait_until(secs, || self.prompts().len() > index),
            "the model never received prompt {index}; it got {:?}; the pane:\n{}",
            self.prompts(),
            self.pane()
        );
        self.prompts().swap_remove(index)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // Closing stdin tells the driver to end its tmux server, the agent and the mock.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// `tmux -L SOCKET ARGS` (outside any tmux a test may run in), which must succeed.
pub fn tmux(socket: &str, args: &[&str]) -> Output {
    let output = Command::new("tmux")
        .args(["-L", socket])
        .args(args)
        .env_remove("TMUX")
        .output()
        .expect("tmux runs");
    assert!(
        output.status.success(),
        "tmux -L {socket} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
