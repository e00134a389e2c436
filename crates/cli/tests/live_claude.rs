//! The session monitor against a REAL Claude Code: the CLI from npm (installed
//! into target/capture on first use), driven in a private tmux server against
//! the loopback mock of the Messages API (xtask/capture/live.py). The pane and
//! Claude Code's own session file must tell the same story.
// These tests start python3, the real agent CLI and the monitor binary.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use bmb_testkit::bin::wait_until;
use bmb_testkit::live::Live;
use bmb_testkit::watcher::{Watcher, first_nudge, nudged};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One poll of the real monitor on `live`, as JSON.
fn watch_once(live: &Live) -> serde_json::Value {
    let state = tempfile::tempdir().expect("tempdir");
    let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
        .args([
            "watch",
            "-L",
            &live.socket,
            &live.session,
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

/// A prompt's words as the person (or the monitor) typed them: its text
/// blocks without Claude Code's own `<system-reminder>` blocks, which it adds
/// next to them as blocks of their own.
fn typed(prompt: &[String]) -> Vec<&str> {
    prompt
        .iter()
        .map(String::as_str)
        .filter(|t| !t.starts_with("<system-reminder>"))
        .collect()
}

const NUDGE: &str = "Please continue with the next step of your plan.";

/// A person at a real terminal: an outer private tmux server whose pane runs
/// `tmux attach` to the live session, so every key sent to the outer pane
/// reaches the session through a real attached client (and moves its
/// `#{session_activity}`, which `send-keys` never does). Its server is ended
/// by its own socket on drop.
struct Person {
    socket: String,
}

impl Person {
    fn attach(live: &Live) -> Person {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .subsec_nanos();
        let person = Person {
            socket: format!("bmbtest-person-{}-{nanos:x}", std::process::id()),
        };
        let attach = format!(
            "env -u TMUX tmux -L '{}' attach -t '{}'",
            live.socket, live.session
        );
        // 41 rows with no status line of its own: the inner client is 41 rows,
        // its status line takes one, so the agent's window keeps its 120x40.
        person.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "person",
            "-x",
            "120",
            "-y",
            "41",
            &attach,
        ]);
        person.tmux(&["set-option", "-g", "status", "off"]);
        let attached = wait_until(30, || {
            !String::from_utf8_lossy(&live.tmux(&["list-clients", "-t", &live.session]).stdout)
                .trim()
                .is_empty()
        });
        assert!(
            attached,
            "the person's client never attached to the session"
        );
        // tmux counts whole seconds, and a key in the second of the attach
        // reads as the attach (which is no key): the person's keys come after.
        let attached_at: i64 = String::from_utf8_lossy(
            &live
                .tmux(&[
                    "display-message",
                    "-p",
                    "-t",
                    &live.session,
                    "#{session_last_attached}",
                ])
                .stdout,
        )
        .trim()
        .parse()
        .expect("an attach time");
        let after = wait_until(5, || {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs();
            i64::try_from(now).is_ok_and(|now| now > attached_at)
        });
        assert!(after, "the clock stands at the attach's second");
        person
    }

    fn tmux(&self, args: &[&str]) -> Output {
        bmb_testkit::live::tmux(&self.socket, args)
    }

    /// One key typed as it is (`send-keys -l`).
    fn key(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "person", "-l", key]);
    }

    fn press(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "person", key]);
    }
}

impl Drop for Person {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
        let uid = rustix::process::getuid().as_raw();
        let _ = std::fs::remove_file(format!("/tmp/tmux-{uid}/{}", self.socket));
    }
}

#[test]
fn a_real_permission_dialog_is_a_question_by_the_pane_and_by_the_session_file() {
    let live = Live::start(&workspace().join("xtask/capture/live.py"), &["permission"]);
    let report = watch_once(&live);
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
    let live = Live::start(&workspace().join("xtask/capture/live.py"), &["stream"]);
    let report = watch_once(&live);
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
    let live = Live::start(&workspace().join("xtask/capture/live.py"), &[situation]);
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

const DRAFT: &str = "please refactor the parser so that";

#[test]
fn a_draft_left_in_a_real_claude_code_box_gets_no_key_and_one_escalation_then_the_emptied_box_is_nudged()
 {
    let started = Instant::now();
    let live = Live::start(&workspace().join("xtask/capture/live.py"), &["idle"]);
    let before = live.prompts().len();
    assert_eq!(
        before,
        1,
        "the situation's own prompt: {:?}",
        live.prompts()
    );
    live.tmux(&["send-keys", "-t", &live.session, "-l", DRAFT]);
    live.wait_pane("the draft", 30, |pane| {
        pane.contains(&format!("\u{276f}\u{a0}{DRAFT}"))
    });

    let watcher = Watcher::start(
        env!("CARGO_BIN_EXE_bmb-monitor"),
        &live.socket,
        &live.session,
    );
    let lines = watcher.wait_lines(8, 90);
    for (poll, line) in lines[..8].iter().enumerate() {
        assert!(
            !nudged(line),
            "typed over the draft: {line}\n{}",
            live.pane()
        );
        if poll > 0 {
            // A draft, or the CLI's own timed hints coming and going around the box.
            let why = line["not_typed_because"].as_str().unwrap_or("");
            assert!(
                ["draft", "settling"].contains(&why),
                "poll {poll}: {lines:#?}\n{}",
                live.pane()
            );
        }
        assert_eq!(line["nudges"], 0, "{line}");
        assert_eq!(line["state"], "STALLED", "{line}");
        assert_eq!(line["typing_safe"], false, "{line}");
    }
    assert_eq!(
        watcher.reasons(),
        "draft\n",
        "exactly one escalation, for the draft; lines: {lines:#?}"
    );
    let escalated = lines[..8]
        .iter()
        .filter(|line| {
            line["done"][0] == "not typed into: a draft is waiting in the box, escalated"
        })
        .count();
    assert_eq!(escalated, 1, "{lines:#?}");
    let message = watcher.messages();
    assert!(
        message.contains(DRAFT),
        "the escalation quotes the draft: {message}"
    );
    assert_eq!(
        live.prompts().len(),
        before,
        "the model received a prompt: {:?}",
        live.prompts()
    );
    live.wait_pane("the draft, still untouched", 5, |pane| pane.contains(DRAFT));

    // The person clears the box (Escape twice: only ever with a draft there).
    live.tmux(&["send-keys", "-t", &live.session, "Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    live.tmux(&["send-keys", "-t", &live.session, "Escape"]);
    live.wait_pane("the emptied box", 30, |pane| !pane.contains(DRAFT));
    let cleared = watcher.lines().len();

    let at = watcher.wait_line("with `nudged (1/5)`", 60, first_nudge);
    assert!(
        at >= cleared,
        "nudged before the box was emptied: {:#?}",
        watcher.lines()
    );
    let prompt = live.wait_prompt(before, 60);
    assert_eq!(
        typed(&prompt),
        vec![NUDGE],
        "the model received the nudge alone: {prompt:?}"
    );
    assert_eq!(
        watcher.reasons(),
        "draft\n",
        "no other escalation; lines: {:#?}",
        watcher.lines()
    );
    eprintln!("runtime: {:?}", started.elapsed());
}

/// The person's keys arrive through a real attached client, one every 0.3 s,
/// while the monitor polls: it starts polling once `keys_first` keys are
/// typed (0: the person starts right after its first poll). The model must
/// receive exactly those keys, and no line may be a nudge.
fn a_person_types_a_prompt_while_the_monitor_polls(keys_first: usize) {
    const PROMPT: &str = "Summarise the parser module in one line";
    let started = Instant::now();
    let live = Live::start(&workspace().join("xtask/capture/live.py"), &["idle"]);
    let before = live.prompts().len();
    assert_eq!(
        before,
        1,
        "the situation's own prompt: {:?}",
        live.prompts()
    );
    let person = Person::attach(&live);

    let typed_keys = std::sync::atomic::AtomicUsize::new(0);
    let (watcher, while_typing) = std::thread::scope(|scope| {
        let (go, went) = std::sync::mpsc::channel::<()>();
        let (person, typed_keys) = (&person, &typed_keys);
        let typist = scope.spawn(move || {
            went.recv().expect("go");
            for key in PROMPT.chars() {
                person.key(&key.to_string());
                typed_keys.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        let watcher = if keys_first == 0 {
            let watcher = Watcher::start(
                env!("CARGO_BIN_EXE_bmb-monitor"),
                &live.socket,
                &live.session,
            );
            watcher.wait_lines(1, 60);
            go.send(()).expect("the typist waits");
            watcher
        } else {
            go.send(()).expect("the typist waits");
            assert!(wait_until(60, || typed_keys
                .load(std::sync::atomic::Ordering::SeqCst)
                >= keys_first));
            Watcher::start(
                env!("CARGO_BIN_EXE_bmb-monitor"),
                &live.socket,
                &live.session,
            )
        };
        let first = &watcher.wait_lines(1, 60)[0];
        assert!(!nudged(first), "its first poll typed: {first}");
        assert_eq!(first["typing_safe"], false, "{first}");
        typist.join().expect("the typist");
        live.wait_pane("the typed prompt", 30, |pane| pane.contains(PROMPT));
        let while_typing = watcher.lines();
        (watcher, while_typing)
    });
    person.press("Enter");

    let prompt = live.wait_prompt(before, 60);
    let after = watcher.lines();
    assert_eq!(
        typed(&prompt),
        vec![PROMPT],
        "the model received exactly the person's keys: {prompt:?}; lines: {after:#?}"
    );
    assert!(!while_typing.is_empty());
    for line in &while_typing {
        assert!(!nudged(line), "typed while the person typed: {line}");
        assert_eq!(line["nudges"], 0, "{line}");
        if line["state"] == "STALLED" {
            let why = line["not_typed_because"].as_str().unwrap_or("");
            assert!(
                ["typing", "settling", "draft"].contains(&why),
                "held for an unexpected reason: {line}"
            );
        }
    }
    assert!(
        while_typing
            .iter()
            .any(|line| line["not_typed_because"] == "typing"),
        "the person's keys (through an attached client) were never seen as typing: \
         {while_typing:#?}"
    );
    assert!(
        after.iter().all(|line| !nudged(line)),
        "a nudge before the person's prompt reached the model: {after:#?}"
    );
    eprintln!(
        "runtime: {:?}; not_typed_because while typing: {:?}",
        started.elapsed(),
        while_typing
            .iter()
            .map(|l| l["not_typed_because"].clone())
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_person_typing_into_a_real_claude_code_pane_gets_exactly_their_keys_to_the_model() {
    a_person_types_a_prompt_while_the_monitor_polls(0);
}

#[test]
fn a_watcher_started_while_someone_types_types_nothing_on_its_first_poll() {
    a_person_types_a_prompt_while_the_monitor_polls(12);
}
