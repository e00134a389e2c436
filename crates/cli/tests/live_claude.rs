//! The session monitor against a REAL Claude Code: the CLI from npm (installed
//! into target/capture on first use), driven in a private tmux server against
//! the loopback mock of the Messages API (xtask/capture/live.py). The pane and
//! Claude Code's own session file must tell the same story.
// These tests start python3, the real agent CLI and the monitor binary.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A live session held in a situation until dropped.
struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    socket: String,
    session: String,
}

impl Live {
    fn start(situation: &str) -> Live {
        let mut child = Command::new("python3")
            .arg(workspace().join("xtask/capture/live.py"))
            .arg(situation)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs xtask/capture/live.py (needs python3, tmux and npm)");
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
            panic!("live.py {situation} never got ready ({status}); see its stderr above");
        };
        Live {
            child,
            stdin,
            socket: ready["socket"].as_str().expect("socket").to_string(),
            session: ready["session"].as_str().expect("session").to_string(),
        }
    }

    /// One poll of the real monitor, as JSON.
    fn watch_once(&self) -> serde_json::Value {
        let state = tempfile::tempdir().expect("tempdir");
        let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
            .args([
                "watch",
                "-L",
                &self.socket,
                &self.session,
                "--once",
                "--json",
                "--work-probe",
                "echo 3",
            ])
            .env("XDG_STATE_HOME", state.path())
            .output()
            .expect("bmb-monitor runs");
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("one JSON line")
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // Closing stdin tells live.py to end its tmux server, the agent and the mock.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

#[test]
fn a_real_permission_dialog_is_a_question_by_the_pane_and_by_the_session_file() {
    let live = Live::start("permission");
    let report = live.watch_once();
    assert_eq!(report["state"], "QUESTION", "{report}");
    assert_eq!(report["pane_state"], "QUESTION", "{report}");
    assert_eq!(
        report["witness"], "waiting",
        "Claude Code's session file: {report}"
    );
    assert_eq!(report["disagreements"], 0, "{report}");
    assert_eq!(
        report["done"][0], "escalated to the operator, NOT answered",
        "{report}"
    );
}

#[test]
fn a_real_reply_streaming_with_the_spinner_row_gone_is_working_by_both_witnesses() {
    let live = Live::start("stream");
    let report = live.watch_once();
    assert_eq!(report["state"], "WORKING", "{report}");
    assert_eq!(report["pane_state"], "WORKING", "{report}");
    assert_eq!(
        report["rule"], "busy-footer",
        "the spinner row is gone, the status bar tells: {report}"
    );
    assert_eq!(
        report["witness"], "busy",
        "Claude Code's session file: {report}"
    );
    assert_eq!(
        report["done"],
        serde_json::json!([]),
        "nothing is done to a working pane: {report}"
    );
}

/// Watches a live session whose agent has gone (`exited` or `killed`) for
/// four polls of the real loop, under a nudge that would create a file if it
/// ever ran as a shell command: no key, one escalation, saying why.
fn an_agent_gone_to_its_shell_gets_no_key_and_one_escalation(situation: &str) {
    let live = Live::start(situation);
    let dir = tempfile::tempdir().expect("tempdir");
    let typed = dir.path().join("typed");
    let alerts = dir.path().join("alerts");
    let alert_cmd = format!(
        "printf '%s %s\\n' \"$BMB_STATE\" \"$BMB_REASON\" >> '{}'; cat >> '{}.messages'",
        alerts.display(),
        alerts.display()
    );
    let nudge = format!("touch {}", typed.display());
    let mut child = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
        .args(["watch", "-L", &live.socket, &live.session, "--json"])
        .args(["--interval", "1", "--work-probe", "echo 3"])
        .args(["--nudge-text", &nudge, "--alert-cmd", &alert_cmd])
        .env("XDG_STATE_HOME", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("bmb-monitor runs");
    let lines = BufReader::new(child.stdout.take().expect("stdout"));
    let reports: Vec<serde_json::Value> = lines
        .lines()
        .take(4)
        .map(|line| serde_json::from_str(&line.expect("read")).expect("JSON"))
        .collect();
    child.kill().expect("kill the monitor");
    child.wait().expect("wait");
    assert_eq!(reports.len(), 4);
    for report in &reports {
        assert_eq!(report["state"], "STALLED", "{report}");
        assert_eq!(report["typing_safe"], false, "{report}");
        assert_eq!(report["not_typed_because"], "agent_exited", "{report}");
        assert_eq!(report["nudges"], 0, "{report}");
    }
    let said = std::fs::read_to_string(&alerts).unwrap_or_default();
    assert_eq!(said, "STALLED agent_exited\n", "exactly one escalation");
    let message =
        std::fs::read_to_string(format!("{}.messages", alerts.display())).unwrap_or_default();
    assert!(
        message.contains("a shell (bash) is in the foreground"),
        "{message}"
    );
    assert!(!typed.exists(), "the nudge ran as a shell command");
}

#[test]
fn a_real_claude_code_left_with_exit_gets_no_key_and_one_escalation() {
    an_agent_gone_to_its_shell_gets_no_key_and_one_escalation("exited");
}

#[test]
fn a_real_claude_code_killed_at_its_prompt_gets_no_key_and_one_escalation() {
    an_agent_gone_to_its_shell_gets_no_key_and_one_escalation("killed");
}
