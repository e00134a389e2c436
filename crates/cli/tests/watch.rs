//! `bmb-monitor watch` end to end: the real binary, a private tmux server per
//! test, panes replaying real Claude Code captures and recording every key
//! they receive, real probe and alert commands.
// These tests start the binary, tmux and shell probes; that is their point.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use bmb_testkit::tmux as private_tmux;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use private_tmux::{PrivateTmux, capture_path};

/// One test's world: a tmux server, a state folder, files for what panes and alerts received.
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

    fn path(&self, name: &str) -> PathBuf {
        self.tmux.dir.path().join(name)
    }

    /// A pane replaying `case`; returns the file that records what was typed into it.
    fn replay(&self, session: &str, case: &str) -> PathBuf {
        let received = self.path(&format!("{session}.received"));
        self.tmux.replay(session, &capture_path(case), &received);
        received
    }

    /// An alert command that logs `TARGET STATE REASON` lines and the messages.
    fn alert_cmd(&self) -> String {
        format!(
            "printf '%s %s %s\\n' \"$BMB_TARGET\" \"$BMB_STATE\" \"$BMB_REASON\" >> '{}'; cat >> '{}'",
            self.path("alerts").display(),
            self.path("messages").display()
        )
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
        command
            .arg("watch")
            .arg("-S")
            .arg(&self.tmux.socket)
            .args(args)
            .env("XDG_STATE_HOME", self.state.path());
        command
    }

    /// `bmb-monitor stop TARGET` on this world's server.
    fn stop(&self, target: &str) -> Output {
        bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
            .args(["stop", target, "-S"])
            .arg(&self.tmux.socket)
            .output()
            .expect("stop runs")
    }

    fn watch_once(&self, args: &[&str]) -> Output {
        let output = self
            .command(args)
            .arg("--once")
            .output()
            .expect("bmb-monitor runs");
        assert_eq!(
            output.status.code(),
            Some(0),
            "stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// As `watch_once`, one poll later: a stop is typed into only once it
    /// held still for a whole interval, which a target's first poll (its
    /// journal empty) cannot know, so that poll must say it waits.
    fn watch_settled(&self, args: &[&str]) -> Output {
        let first = stdout(&self.watch_once(args));
        assert!(
            first.contains("not nudged yet"),
            "the first poll did not wait for the screen to hold still: {first}"
        );
        self.watch_once(args)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What the pane received, line by line, once the pane's `cat` has written it.
fn received_lines(path: &Path, expected: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= expected || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_stalled_pane_is_nudged_exactly_budget_times_then_escalated_once() {
    let world = World::new();
    let received = world.replay("agent", "idle-after-tool-turn");
    let alert = world.alert_cmd();
    let poll = || {
        stdout(&world.watch_once(&[
            "agent",
            "--nudge-budget",
            "3",
            "--work-probe",
            "echo 4",
            "--alert-cmd",
            &alert,
        ]))
    };
    // The pane echoes what it is sent, so each nudge changes the screen and
    // the next stop waits one interval to hold still: polls until the escalation.
    let mut lines: Vec<String> = Vec::new();
    while lines.len() < 12 && !lines.last().is_some_and(|l| l.contains("escalated")) {
        lines.push(poll());
    }
    let done = |line: &str| line.split(" · ").nth(6).unwrap_or("").to_string();
    assert!(
        lines[0].starts_with(
            "MONITOR · agent · STALLED · work=4 · progress=? · nudges 0/3 · not nudged yet (a new watcher waits"
        ),
        "{}",
        lines[0]
    );
    let acted: Vec<String> = lines
        .iter()
        .map(|l| done(l))
        .filter(|d| !d.starts_with("not nudged yet"))
        .collect();
    assert_eq!(
        acted,
        [
            "nudged (1/3)",
            "nudged (2/3)",
            "nudged (3/3)",
            "not nudged, escalated"
        ]
    );
    let after = poll();
    assert!(
        !after.contains("nudged") && !after.contains("escalated"),
        "{after}"
    );
    let nudge = "Please continue with the next step of your plan.";
    assert_eq!(received_lines(&received, 3), [nudge, nudge, nudge]);
    assert_eq!(world.read("alerts"), "agent STALLED escalate_to_human\n");
    assert!(
        world
            .read("messages")
            .contains("3 nudges produced no progress")
    );
}

#[test]
fn a_question_pane_is_escalated_once_with_its_question_and_receives_no_key() {
    let world = World::new();
    let received = world.replay("agent", "question-permission-bash");
    let alert = world.alert_cmd();
    for poll in 0..3 {
        let output = world.watch_once(&["agent", "--work-probe", "echo 4", "--alert-cmd", &alert]);
        let line = stdout(&output);
        assert!(line.contains(" · QUESTION · "), "{line}");
        assert_eq!(
            line.contains("escalated to the operator, NOT answered"),
            poll == 0,
            "{line}"
        );
    }
    assert_eq!(world.read("alerts"), "agent QUESTION question\n");
    let message = world.read("messages");
    assert!(
        message.contains("Do you want to proceed?")
            && message.contains("python3 -m pytest -q tests/"),
        "{message}"
    );
    assert!(message.contains("NOT answered"), "{message}");
    assert_eq!(
        std::fs::read_to_string(&received).unwrap_or_default(),
        "",
        "no key reached the question"
    );
    // Nothing was typed into the dialog either: it still shows the same options.
    assert!(world.tmux.capture("agent").contains("❯ 1. Yes"));
}

/// Without `--alert-cmd`, stderr is the funnel: an alert it cannot take
/// (a full disk) is not counted as sent, and the next poll sends it.
#[test]
fn an_alert_stderr_could_not_take_is_sent_again_next_poll() {
    let world = World::new();
    world.replay("agent", "question-permission-bash");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = world
        .command(&["agent", "--once"])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "a full stderr is no crash");
    let output = world.watch_once(&["agent"]);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("bmb-monitor: alert (question): QUESTION on agent"),
        "the undelivered alert is sent again: {said}"
    );
    let output = world.watch_once(&["agent"]);
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("bmb-monitor: alert"),
        "once delivered, once"
    );
}

#[test]
fn a_working_pane_gets_nothing() {
    let world = World::new();
    let received = world.replay("agent", "working-bash-sleep");
    let alert = world.alert_cmd();
    for _ in 0..3 {
        let line =
            stdout(&world.watch_once(&["agent", "--work-probe", "echo 0", "--alert-cmd", &alert]));
        assert!(
            line.starts_with("MONITOR · agent · WORKING · work=0 · progress=? · nudges 0/5 · "),
            "{line}"
        );
        assert_eq!(
            line.split(" · ").count(),
            7,
            "no action on a working pane: {line}"
        );
    }
    assert_eq!(world.read("alerts"), "");
    assert_eq!(std::fs::read_to_string(&received).unwrap_or_default(), "");
}

#[test]
fn a_blocked_pane_is_escalated_once_and_never_nudged() {
    let world = World::new();
    let received = world.replay("agent", "idle-after-text-answer");
    let alert = world.alert_cmd();
    for poll in 0..3 {
        let line =
            stdout(&world.watch_once(&["agent", "--work-probe", "echo 0", "--alert-cmd", &alert]));
        assert!(line.contains(" · BLOCKED · work=0 · "), "{line}");
        assert_eq!(line.contains("not nudged, escalated"), poll == 0, "{line}");
    }
    assert_eq!(world.read("alerts"), "agent BLOCKED blocked\n");
    assert!(world.read("messages").contains("work=0"));
    assert_eq!(std::fs::read_to_string(&received).unwrap_or_default(), "");
}

#[test]
fn a_nudge_that_carries_the_question_hint_is_still_stalled_not_a_question() {
    let world = World::new();
    // An idle Claude Code screen whose pane echoes what it is sent below the
    // footer, where a Gemini-style dialog would be read: only the echo
    // ledger keeps the typed hint from reading as a question.
    let received = world.replay("agent", "idle-after-tool-turn");
    let nudge = "Enter to select · ↑/↓ to navigate, then run the next step";
    for poll in 1..=3 {
        // The first poll waits for the stop to hold still; the echo of each
        // nudge lands under the box, which is not what must hold still.
        let args = ["agent", "--nudge-text", nudge, "--work-probe", "echo 2"];
        let line = match poll {
            1 => stdout(&world.watch_settled(&args)),
            _ => stdout(&world.watch_once(&args)),
        };
        assert!(
            line.contains(&format!(
                " · STALLED · work=2 · progress=? · nudges {poll}/5 · nudged ({poll}/5)"
            )),
            "{line}"
        );
    }
    assert_eq!(received_lines(&received, 3).len(), 3);
}

/// Polls `session` `polls` times with `--once` (the journal carries the
/// memory between runs) under a nudge that would create `typed` if it ever
/// ran as a shell command; returns the JSON reports.
fn poll_unsafe_pane(world: &World, session: &str, polls: usize) -> Vec<serde_json::Value> {
    let alert = world.alert_cmd();
    let nudge = format!("touch {}", world.path("typed").display());
    (0..polls)
        .map(|_| {
            report(&world.watch_once(&[
                session,
                "--json",
                "--work-probe",
                "echo 3",
                "--nudge-text",
                &nudge,
                "--alert-cmd",
                &alert,
            ]))
        })
        .collect()
}

/// No key reached the pane, and exactly one escalation with `reason` did.
fn assert_escalated_once_never_typed(
    world: &World,
    reports: &[serde_json::Value],
    reason: &str,
    why: &str,
) {
    for report in reports {
        assert_eq!(report["state"], "STALLED", "{report}");
        assert_eq!(report["typing_safe"], false, "{report}");
        assert_eq!(report["not_typed_because"], reason, "{report}");
        assert_eq!(report["nudges"], 0, "{report}");
        let done: Vec<&str> = report["done"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d.as_str())
            .collect();
        assert!(done.iter().any(|d| d.contains(why)), "{done:?}");
        assert!(!done.iter().any(|d| d.starts_with("nudged")), "{done:?}");
    }
    let alerts = world.read("alerts");
    assert_eq!(alerts.lines().count(), 1, "one escalation: {alerts}");
    assert!(alerts.contains(&format!(" STALLED {reason}")), "{alerts}");
    assert!(world.read("messages").contains("NOT typed into"));
    assert!(!world.path("typed").exists(), "the nudge ran in the pane");
}

#[test]
fn an_agent_that_exited_to_a_real_shell_gets_no_key_and_one_escalation() {
    let world = World::new();
    // The agent's last frame is still drawn; an interactive bash is in front of it.
    world.tmux.session(
        "agent",
        &format!(
            "cat '{}'; exec bash --norc --noprofile -i",
            capture_path("idle-after-tool-turn").display()
        ),
    );
    world.tmux.wait_for("agent", |pane| pane.contains("bash-"));
    let reports = poll_unsafe_pane(&world, "agent", 4);
    assert_escalated_once_never_typed(&world, &reports, "agent_exited", "the agent exited");
    assert!(
        world
            .read("messages")
            .contains("a shell (bash) is in the foreground")
    );
}

#[test]
fn a_wrapper_shell_with_the_agent_under_it_is_still_nudged() {
    // `sh -c '…; cat; true'` and its zsh twin, without exec: the shell waits
    // in front (sh and bash in do_wait, zsh in sigsuspend), the program is its child.
    for (name, shell) in [("sh", "sh -c"), ("zsh", "exec zsh -f -c")] {
        let world = World::new();
        let received = world.path("agent.received");
        let inner = format!(
            "cat '{}'; cat > '{}'; true",
            capture_path("idle-after-tool-turn").display(),
            received.display()
        );
        world.tmux.session(name, &format!("{shell} \"{inner}\""));
        world
            .tmux
            .wait_for(name, |pane| pane.contains("? for shortcuts"));
        let line = report(&world.watch_settled(&[name, "--json", "--work-probe", "echo 3"]));
        assert_eq!(line["typing_safe"], true, "{name}: {line}");
        assert_eq!(received_lines(&received, 1).len(), 1, "{name}");
    }
}

#[test]
fn less_an_unknown_dialog_and_a_cli_with_no_profile_get_no_key_and_one_escalation() {
    let manual =
        "NAME\n    tool - does things\n\nDESCRIPTION\n    Press s to save this text to a file.\n";
    let dialog = "\n  ╭──────────────────────────────────────────╮\n  │ Something changed since your last visit  │\n  │                                          │\n  │   Continue        Review                 │\n  ╰──────────────────────────────────────────╯\n   ←/→ to choose · Enter to confirm · Esc to cancel\n";
    let other_cli = "Acme Agent 3.1 · ready\n\n  » summarise the repo\n  Done. 3 files summarised.\n\n  [acme] waiting · type a task »";
    for (name, screen, program) in [
        ("pager", manual, "less"),
        ("dialog", dialog, "cat"),
        ("othercli", other_cli, "cat"),
        // A REPL's `> ` prompt is no agent's input line (it was read as Aider's).
        ("repl", "> ", "node"),
    ] {
        let world = World::new();
        let file = world.path("screen.txt");
        std::fs::write(&file, screen).unwrap();
        let script = match program {
            "less" => format!("exec less '{}'", file.display()),
            "node" => "exec node".to_string(),
            _ => format!(
                "cat '{}'; exec cat > '{}'",
                file.display(),
                world.path("received").display()
            ),
        };
        world.tmux.session(name, &script);
        let last = screen.trim_end().lines().last().unwrap().trim().to_string();
        world
            .tmux
            .wait_for(name, |pane| pane.contains(&last[..last.len().min(12)]));
        let reports = poll_unsafe_pane(&world, name, 4);
        assert_escalated_once_never_typed(
            &world,
            &reports,
            "unreadable",
            "no input box recognised",
        );
        assert!(
            world.read("received").is_empty(),
            "{name}: a key reached the pane"
        );
        // Counted per running monitor: each --once run saw one such screen.
        assert!(reports.iter().all(|r| r["unrecognised"] == 1), "{name}");
        // Nothing typed reached less's `s` (save to a file): no file appeared beside ours.
        let socket = Path::new(&world.tmux.socket)
            .file_name()
            .unwrap()
            .to_owned();
        for entry in std::fs::read_dir(world.tmux.dir.path()).unwrap() {
            let file = entry.unwrap().file_name();
            let ours =
                ["screen.txt", "alerts", "messages", "received"].map(std::ffi::OsString::from);
            assert!(
                ours.contains(&file) || file == socket,
                "{name}: {file:?} appeared"
            );
        }
    }
}

#[test]
fn a_user_profile_reaches_watch_without_a_restart_and_its_question_is_relayed() {
    let world = World::new();
    let config = tempfile::tempdir().unwrap();
    let profiles = config.path().join("bmb-monitor/profiles");
    std::fs::create_dir_all(&profiles).unwrap();
    let screen = "acme-agent v3.1\n\nacme> add a test\nI will write tests/test_app.py.\nWrite tests/test_app.py? (y/N) ";
    let file = world.path("screen.txt");
    std::fs::write(&file, screen).unwrap();
    let received = world.path("received");
    world.tmux.session(
        "acme",
        &format!(
            "cat '{}'; exec cat > '{}'",
            file.display(),
            received.display()
        ),
    );
    world.tmux.wait_for("acme", |pane| pane.contains("(y/N)"));
    let alert = world.alert_cmd();
    let mut child = world
        .command(&[
            "acme",
            "--json",
            "--interval",
            "1",
            "--work-probe",
            "echo 2",
            "--alert-cmd",
            &alert,
        ])
        .env("XDG_CONFIG_HOME", config.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bmb-monitor runs");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let mut next = || -> serde_json::Value {
        serde_json::from_str(&lines.next().expect("a poll line").expect("read")).expect("JSON")
    };
    // Without a profile for it, the screen is unreadable (once Aider's
    // profile, the nearest, stops inferring a turn from it): escalated, not typed into.
    let unreadable = (0..10)
        .map(|_| next())
        .find(|report| report["not_typed_because"] == "unreadable");
    assert!(unreadable.is_some(), "never read as unreadable");
    // A malformed profile is named with its line and key; a good one is read on the next cycle.
    std::fs::write(
        profiles.join("broken.profile"),
        "name = broken\nspinner = (\n",
    )
    .unwrap();
    std::fs::write(
        profiles.join("acme.profile"),
        "name = acme\nagent = Acme Agent\nversions = 3.x\ndetect = ^acme-agent v\\d\ndetect = ^acme> \ninput_line = ^\\[acme\\] waiting\ninline_question = \\(y/N\\)$\n",
    )
    .unwrap();
    let question = (0..20)
        .map(|_| next())
        .find(|report| report["state"] == "QUESTION")
        .expect("the user's profile was never applied");
    assert_eq!(question["rule"], "inline-question", "{question}");
    // Relayed verbatim, once, never answered.
    let relayed = (0..3).map(|_| next()).collect::<Vec<_>>();
    assert!(relayed.iter().all(|r| r["state"] == "QUESTION"));
    child.kill().unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let alerts = world.read("alerts");
    assert_eq!(
        alerts.lines().collect::<Vec<_>>(),
        ["acme STALLED unreadable", "acme QUESTION question"],
        "{alerts}"
    );
    assert!(
        world
            .read("messages")
            .contains("Write tests/test_app.py? (y/N)")
    );
    assert!(
        received_lines(&received, 0).is_empty(),
        "a key reached the pane"
    );
    assert_eq!(stderr.matches("broken.profile:2").count(), 1, "{stderr}");
    assert!(stderr.contains("`spinner`"), "{stderr}");
}

#[test]
fn progress_advancing_resets_the_budget() {
    let world = World::new();
    world.replay("agent", "idle-after-tool-turn");
    let progress = world.path("progress");
    std::fs::write(&progress, "41\n").expect("write");
    let probe = format!("cat '{}'", progress.display());
    let args = [
        "agent",
        "--nudge-budget",
        "1",
        "--work-probe",
        "echo 3",
        "--progress-probe",
        probe.as_str(),
    ];
    assert!(
        stdout(&world.watch_settled(&args)).contains("progress=41 · nudges 1/1 · nudged (1/1)")
    );
    assert!(stdout(&world.watch_once(&args)).contains("nudges 1/1 · not nudged, escalated"));
    std::fs::write(&progress, "42\n").expect("write");
    // The screen held still since the escalation: nudged at once.
    let line = stdout(&world.watch_once(&args));
    assert!(
        line.contains(
            "progress=42 · nudges 1/1 · nudge budget reset (progress 41 → 42) · nudged (1/1)"
        ),
        "{line}"
    );
}

#[test]
fn a_hung_probe_is_killed_with_its_whole_group_and_reads_as_unknown() {
    let world = World::new();
    world.replay("agent", "idle-after-tool-turn");
    let pids = world.path("pids");
    let probe = format!(
        "sleep 300 & echo $! > '{0}'; echo $$ >> '{0}'; wait",
        pids.display()
    );
    let output = world.watch_once(&["agent", "--work-probe", &probe, "--probe-timeout", "1"]);
    let line = stdout(&output);
    assert!(
        line.contains(" · STALLED · work=? · "),
        "unknown work fails open to STALLED: {line}"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("work probe timed out"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_all_gone(&world, "pids", "probe");
}

/// The two pids a timed-out command and its grandchild wrote to `file` are both gone.
fn assert_all_gone(world: &World, file: &str, what: &str) {
    let pids: Vec<i32> = world
        .read(file)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(
        pids.len(),
        2,
        "the {what} and its grandchild wrote their pids"
    );
    for pid in pids {
        assert!(is_gone(pid), "{what} process {pid} survived its timeout");
    }
}

/// Gone, or a zombie waiting for its new parent to reap it.
fn is_gone(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = u32::try_from(pid)
            .ok()
            .and_then(probes::os::procfs::Stat::of);
        if state.is_none_or(|stat| stat.has_exited()) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn refused_coordinates_and_a_bad_nudge_text_exit_2_with_one_line() {
    let world = World::new();
    for args in [
        &["a.b"][..],
        &["h:s:t"],
        &["-x:s"],
        &["h:$(id)"],
        &["ok", "ok"],
        &["ok", "--nudge-text", "two\nlines"],
        &["ok", "--interval", "0"],
        // Absurd numbers are refused, not a panic (exit 101) or an instant alarm.
        &["ok", "--interval", "9223372036854775807"],
        &["ok", "--capture-timeout", "18446744073709551615"],
        &["ok", "--probe-timeout", "31536001"],
    ] {
        let output = world.command(args).arg("--once").output().expect("runs");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.trim().is_empty(), "{args:?}: says why");
        assert!(stdout(&output).is_empty(), "{args:?}");
    }
}

#[test]
fn absurd_durations_for_lead_and_worker_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    for (args, flag) in [
        (
            &["lead", "--idle-stall", "9223372036854775808"][..],
            "--idle-stall",
        ),
        (&["lead", "--ack-timeout", "99999999999"], "--ack-timeout"),
        (&["worker", "--once", "--interval=-1"], "interval"),
        (&["worker", "--once", "--interval", "0.5"], "interval"),
        (&["worker", "--once", "--interval", "1e300"], "interval"),
        (
            &[
                "worker",
                "--once",
                "--quiet-seconds",
                "18446744073709551615",
            ],
            "quiet",
        ),
    ] {
        let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
            .args(args)
            .env("PLOT_WORKTREE", dir.path())
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
}

#[test]
fn a_closed_stdout_does_not_stop_the_monitor_from_acting() {
    let world = World::new();
    let received = world.replay("agent", "idle-after-tool-turn");
    let script = format!(
        "exec '{}' watch -S '{}' agent --once --work-probe 'echo 1' >&-",
        env!("CARGO_BIN_EXE_bmb-monitor"),
        world.tmux.socket.display()
    );
    // Twice: the first poll of a target waits for its screen to hold still.
    for _ in 0..2 {
        let status = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .env("XDG_STATE_HOME", world.state.path())
            .status()
            .expect("runs");
        assert_eq!(status.code(), Some(0));
    }
    assert_eq!(
        received_lines(&received, 1).len(),
        1,
        "the nudge was still sent"
    );
}

/// A monitor polling every second in the background, its stdout in a file.
struct Background {
    child: Child,
    out: PathBuf,
}

impl Background {
    fn start(world: &World, args: &[&str], name: &str) -> Background {
        let out = world.path(name);
        let file = std::fs::File::create(&out).expect("output file");
        let child = world
            .command(args)
            .arg("--interval")
            .arg("1")
            .stdout(file)
            .stderr(Stdio::null())
            .spawn()
            .expect("starts");
        Background { child, out }
    }

    /// Waits until the output holds a line matching `wanted` after `skip` lines; a hang guard only.
    fn wait_line(&self, skip: usize, wanted: impl Fn(&str) -> bool) -> usize {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(&self.out).unwrap_or_default();
            if let Some(at) = text
                .lines()
                .enumerate()
                .skip(skip)
                .find(|(_, l)| wanted(l))
                .map(|(i, _)| i)
            {
                return at;
            }
            assert!(
                Instant::now() < deadline,
                "never saw the line; output so far:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill");
        assert!(status.success());
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_tmux_server_killed_mid_run_is_rendered_and_polling_resumes_when_it_returns() {
    let world = World::new();
    world.replay("agent", "working-bash-sleep");
    let monitor = Background::start(&world, &["agent"], "out");
    let first = monitor.wait_line(0, |l| l.contains(" · WORKING · "));
    world.tmux.tmux(&["kill-server"]);
    let failed = monitor.wait_line(first, |l| {
        l.contains(" · ? · ") && l.contains("capture failed")
    });
    world.replay("agent", "working-bash-sleep");
    monitor.wait_line(failed, |l| l.contains(" · WORKING · "));
    // SIGTERM ends it cleanly.
    monitor.signal("TERM");
    let mut child = monitor;
    let status = child.child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_monitor_killed_with_sigkill_and_restarted_neither_repages_nor_refills_its_budget() {
    let world = World::new();
    let received_idle = world.replay("idle", "idle-after-tool-turn");
    world.replay("asks", "question-ask-single");
    let alert = world.alert_cmd();
    let args = [
        "idle",
        "asks",
        "--work-probe",
        "echo 5",
        "--alert-cmd",
        alert.as_str(),
        "--nudge-budget",
        "4",
    ];
    let monitor = Background::start(&world, &args, "out");
    monitor.wait_line(0, |l| {
        l.contains("idle · STALLED") && l.contains("nudged (2/4)")
    });
    monitor.wait_line(0, |l| {
        l.contains("asks · QUESTION") && l.contains("escalated to the operator")
    });
    monitor.signal("KILL");
    drop(monitor);
    assert!(received_lines(&received_idle, 2).len() >= 2);
    let output = world.watch_once(&args);
    let text = stdout(&output);
    // Two or more nudges were spent before the kill: the restart goes on from there.
    let idle = text
        .lines()
        .find(|l| l.contains("idle · STALLED"))
        .expect("the idle pane's line");
    let used: u32 = idle
        .split("nudges ")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|n| n.parse().ok())
        .expect("nudges k/B");
    // (The echo of the last nudge may have changed the screen since: then it
    // waits to hold still, spending nothing.)
    assert!(
        (2..=4).contains(&used),
        "a fresh budget after the restart: {idle}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("asks · QUESTION") && !l.contains("escalated")),
        "{text}"
    );
    assert_eq!(
        world
            .read("alerts")
            .lines()
            .filter(|l| l.contains("QUESTION"))
            .count(),
        1,
        "{}",
        world.read("alerts")
    );
}

#[test]
fn a_capture_that_hangs_with_a_grandchild_holding_the_pipe_is_abandoned_and_leaves_nothing() {
    let world = World::new();
    let pids = world.path("pids");
    let fake = world.path("hanging-tmux");
    // A tmux that never answers, and whose grandchild keeps stdout open.
    let script = format!(
        "#!/bin/sh\nsleep 300 &\necho $! > '{0}'\necho $$ >> '{0}'\nwait\n",
        pids.display()
    );
    std::fs::write(&fake, script).expect("write");
    Command::new("chmod")
        .arg("+x")
        .arg(&fake)
        .status()
        .expect("chmod");
    let output = world.watch_once(&[
        "agent",
        "--tmux-bin",
        fake.to_str().expect("UTF-8"),
        "--capture-timeout",
        "1",
    ]);
    let line = stdout(&output);
    assert!(
        line.starts_with("MONITOR · agent · ? · ") && line.contains("capture failed"),
        "{line}"
    );
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("timed out"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_all_gone(&world, "pids", "fake tmux");
}

#[test]
fn detach_starts_a_named_monitor_session_that_list_shows_and_stop_ends() {
    let world = World::new();
    world.replay("agent", "working-bash-sleep");
    world.replay("my-agent", "working-bash-sleep");
    let output = world
        .command(&["agent", "my-agent", "--detach", "--interval", "1"])
        .output()
        .expect("runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sessions = String::from_utf8_lossy(
        &world
            .tmux
            .tmux(&["list-sessions", "-F", "#{session_name}"])
            .stdout,
    )
    .into_owned();
    let monitors: Vec<&str> = sessions
        .lines()
        .filter(|s| s.starts_with("monitor"))
        .collect();
    // `my-agent` holds a `-`, so its plain name could be read as host `my`: the injective name is used.
    assert_eq!(monitors.len(), 2, "{sessions}");
    assert!(monitors.contains(&"monitor-agent"), "{sessions}");
    // The detached monitors keep their state where this one would: in the test's folder.
    let state = world.state.path().join("bmb-monitor/session");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !state.is_dir() {
        assert!(
            Instant::now() < deadline,
            "the detached monitor never used XDG_STATE_HOME"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let list = |world: &World| {
        let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
            .args(["list", "-S"])
            .arg(&world.tmux.socket)
            .args(["--ssh-config", "/dev/null"])
            .output()
            .expect("list runs");
        assert_eq!(output.status.code(), Some(0));
        stdout(&output)
    };
    let listed = list(&world);
    assert!(
        listed.contains("agent\twatched by monitor-agent"),
        "{listed}"
    );
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("my-agent\twatched by monitor_x")),
        "{listed}"
    );
    // A second detach of the same target is refused rather than doubled.
    let again = world
        .command(&["agent", "--detach"])
        .output()
        .expect("runs");
    assert_ne!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already watched"));
    for target in ["agent", "my-agent"] {
        let output = world.stop(target);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let listed = list(&world);
    assert!(
        listed.contains("agent\t-") && listed.contains("my-agent\t-"),
        "{listed}"
    );
    let output = world.stop("agent");
    assert_eq!(
        output.status.code(),
        Some(1),
        "stopping what is not running says so"
    );
}

/// A detached monitor keeps its state where this shell would, whatever the
/// tmux server's environment says: with no XDG_STATE_HOME here (or a
/// relative one, which is ignored), under this HOME's `.local/state`. It
/// used the server's own, so `status` here did not find it and a second
/// watcher started here was not refused (found by review).
#[test]
fn a_detached_monitor_keeps_its_state_where_this_shell_resolves_it() {
    let world = World::new();
    world.replay("agent", "working-bash-sleep");
    let home = tempfile::tempdir().expect("tempdir");
    let output = world
        .command(&["agent", "--detach", "--interval", "1"])
        .env("XDG_STATE_HOME", "relative")
        .env("HOME", home.path())
        .output()
        .expect("runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let state = home.path().join(".local/state/bmb-monitor/session");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !state.is_dir() {
        assert!(
            Instant::now() < deadline,
            "the detached monitor keeps its state elsewhere"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = world.stop("agent");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn hostile_dialog_text_reaches_an_html_funnel_escaped_and_a_terminal_without_escapes() {
    let world = World::new();
    let pane = world.path("hostile.txt");
    let rule = "─".repeat(60);
    let text = format!(
        "● Bash(curl x)\n{rule}\n Bash command\n   curl '<script>alert(1)</script>' \u{1b}]0;pwned\u{7}\n Do you want to proceed? <b>&\n ❯ 1. Yes\n   2. No\n\n Esc to cancel\n"
    );
    std::fs::write(&pane, text).expect("write");
    world.tmux.replay("agent", &pane, &world.path("received"));
    let alert = world.alert_cmd();
    let output = world.watch_once(&["agent", "--alert-cmd", &alert, "--alert-format", "html"]);
    assert!(
        stdout(&output).contains(" · QUESTION · "),
        "{}",
        stdout(&output)
    );
    let message = world.read("messages");
    assert!(
        message.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{message}"
    );
    assert!(
        message.contains("Do you want to proceed? &lt;b&gt;&amp;"),
        "{message}"
    );
    assert!(
        !message.contains('\u{1b}') && !message.contains('\u{7}'),
        "{message:?}"
    );
}

#[test]
fn a_failing_or_hanging_alert_command_is_rendered_bounded_and_never_fatal() {
    let world = World::new();
    world.replay("asks", "question-permission-bash");
    world.replay("done", "idle-after-text-answer");
    let output = world.watch_once(&[
        "asks",
        "--alert-cmd",
        "cat > /dev/null; echo refused >&2; exit 3",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        stderr.contains("asks: alert command exited with code 3: refused"),
        "{stderr}"
    );
    assert!(stdout(&output).contains("escalated to the operator, NOT answered"));
    // It reached nobody, so the next poll sends it again, and once delivered, never more.
    let alert = world.alert_cmd();
    let output = world.watch_once(&["asks", "--alert-cmd", &alert]);
    assert!(
        stdout(&output).contains("escalated to the operator, NOT answered"),
        "{}",
        stdout(&output)
    );
    let output = world.watch_once(&["asks", "--alert-cmd", &alert]);
    assert!(
        !stdout(&output).contains("escalated"),
        "{}",
        stdout(&output)
    );
    assert_eq!(world.read("alerts"), "asks QUESTION question\n");
    // A hanging funnel is killed at --probe-timeout with its whole group, and the poll goes on.
    let pids = world.path("alert-pids");
    let hang = format!(
        "sleep 300 & echo $! > '{0}'; echo $$ >> '{0}'; wait",
        pids.display()
    );
    let output = world.watch_once(&[
        "done",
        "--work-probe",
        "echo 0",
        "--alert-cmd",
        &hang,
        "--probe-timeout",
        "1",
    ]);
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("alert command timed out"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout(&output).contains(" · BLOCKED · work=0 · "),
        "{}",
        stdout(&output)
    );
    assert_all_gone(&world, "alert-pids", "alert command");
}

fn report(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).expect("one JSON line")
}

#[test]
fn claude_codes_session_file_is_a_second_witness_beside_the_pane() {
    let world = World::new();
    let home = world.path("agent-home");
    let (pid, received) = world
        .tmux
        .fake_agent("agent", "idle-after-text-answer", &home);
    let alert = world.alert_cmd();
    let args = [
        "agent",
        "--json",
        "--work-probe",
        "echo 3",
        "--alert-cmd",
        alert.as_str(),
    ];

    private_tmux::write_session_file(&home, pid, "busy", "", 0);
    let busy = report(&world.watch_once(&args));
    assert_eq!(
        (
            busy["state"].as_str(),
            busy["pane_state"].as_str(),
            busy["witness"].as_str()
        ),
        (Some("WORKING"), Some("STALLED"), Some("busy")),
        "{busy}"
    );
    assert_eq!(busy["disagreements"], 1);

    private_tmux::write_session_file(
        &home,
        pid,
        "waiting",
        r#","waitingFor":"permission prompt""#,
        0,
    );
    let waiting = report(&world.watch_once(&args));
    assert_eq!(waiting["state"], "QUESTION", "{waiting}");
    assert!(
        waiting["done"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().starts_with("question pending")),
        "{waiting}"
    );

    // A file whose procStart is not this process's is a reused pid: no witness, the pane decides.
    private_tmux::write_session_file(&home, pid, "busy", "", 7);
    let reused = report(&world.watch_once(&args));
    assert_eq!(
        (reused["state"].as_str(), reused["witness"].as_str()),
        (Some("STALLED"), Some("none")),
        "{reused}"
    );
    assert_eq!(
        received_lines(&received, 1).len(),
        1,
        "only the last poll nudged"
    );
    assert_eq!(
        world.read("alerts"),
        "",
        "a pending question is not paged before its dialog is drawn"
    );

    let off = report(&world.watch_once(&["agent", "--json", "--no-witness"]));
    assert_eq!(off["witness"], serde_json::Value::Null);
}

#[test]
fn a_second_monitor_of_the_same_target_is_refused() {
    let world = World::new();
    world.replay("agent", "working-bash-sleep");
    let first = Background::start(&world, &["agent"], "first");
    first.wait_line(0, |l| l.contains(" · WORKING · "));
    let output = world.command(&["agent", "--once"]).output().expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("agent is already watched by another bmb-monitor (pid "),
        "{stderr}"
    );
    drop(first);
    // The lock dies with its holder, however it ended.
    world.watch_once(&["agent"]);
}

#[test]
fn a_probe_that_prints_no_count_is_named_once_and_read_as_unknown() {
    let world = World::new();
    world.replay("agent", "working-bash-sleep");
    let output = world.watch_once(&[
        "agent",
        "--work-probe",
        "echo seven",
        "--progress-probe",
        "echo +3",
    ]);
    let line = stdout(&output);
    assert!(line.contains(" · work=? · progress=? · "), "{line}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(r#"work probe printed "seven", not a count"#),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"progress probe printed "+3", not a count"#),
        "{stderr}"
    );
}

#[test]
fn a_probe_answer_cut_at_the_byte_limit_is_unknown_not_the_number_it_starts_with() {
    let world = World::new();
    world.replay("agent", "idle-after-tool-turn");
    // Two MiB of zeros and then a 1: cut at the limit, it would read as 0 (BLOCKED).
    let output = world.watch_once(&[
        "agent",
        "--work-probe",
        "head -c 2097152 /dev/zero | tr '\\000' 0; echo 1",
    ]);
    let line = stdout(&output);
    assert!(line.contains(" · STALLED · work=? · "), "{line}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("its answer was cut"), "{stderr}");
}

/// A session running `shell` (an interactive bash, by whatever name), at
/// whose prompt an idle Claude Code frame was printed: `{before}clear; cat
/// FRAME{after}` is typed, then Enter. Returns once the frame is on screen.
fn frame_at_a_shell(
    world: &World,
    session: &str,
    shell: &str,
    prompt: &str,
    before: &str,
    after: &str,
) {
    world.tmux.session(session, shell);
    world.tmux.wait_for(session, |pane| pane.contains(prompt));
    let target = format!("={session}:");
    let frame = capture_path("idle-after-tool-turn");
    let line = format!("{before}clear; cat '{}'{after}", frame.display());
    world.tmux.tmux(&["send-keys", "-t", &target, "-l", &line]);
    world.tmux.tmux(&["send-keys", "-t", &target, "Enter"]);
    world
        .tmux
        .wait_for(session, |pane| pane.contains("? for shortcuts"));
}

const BASH: &str = "exec bash --norc --noprofile -i";

#[test]
fn a_shell_with_a_background_job_or_a_suspended_agent_is_still_an_exited_agent() {
    // A job left in the background; an "agent" in front, then suspended with Ctrl-Z.
    for (name, before, after) in [
        ("bgjob", "sleep 600 & ", ""),
        ("suspended", "", "; sleep 600"),
    ] {
        let world = World::new();
        frame_at_a_shell(&world, name, BASH, "bash-", before, after);
        if name == "suspended" {
            world
                .tmux
                .tmux(&["send-keys", "-t", &format!("={name}:"), "C-z"]);
            world.tmux.wait_for(name, |pane| pane.contains("Stopped"));
        }
        let reports = poll_unsafe_pane(&world, name, 3);
        assert_escalated_once_never_typed(&world, &reports, "agent_exited", "the agent exited");
        // The jobs end with the private server when `world` is dropped.
    }
}

#[test]
fn a_shell_renamed_with_exec_a_is_still_a_shell() {
    let world = World::new();
    let renamed = "exec bash -c 'exec -a agentsh bash --norc --noprofile -i'";
    frame_at_a_shell(&world, "renamed", renamed, "agentsh-", "", "");
    let reports = poll_unsafe_pane(&world, "renamed", 2);
    assert_escalated_once_never_typed(&world, &reports, "agent_exited", "a shell (bash)");
}

#[test]
fn a_nudge_goes_to_the_pane_that_was_read_even_if_another_became_active() {
    let world = World::new();
    let received = world.path("read.received");
    // Window 0: the agent's idle screen, recording what it is sent.
    world.tmux.session(
        "race",
        &format!(
            "stty -echo; cat '{}'; exec cat > '{}'",
            capture_path("idle-after-tool-turn").display(),
            received.display()
        ),
    );
    world
        .tmux
        .wait_for("race", |pane| pane.contains("? for shortcuts"));
    // Window 1: a shell that would run the nudge; made active once the pane was read.
    world.tmux.tmux(&["new-window", "-d", "-t", "=race:", BASH]);
    let typed = world.path("typed");
    let switch = format!(
        "tmux -S '{}' select-window -t '=race:1'",
        world.tmux.socket.display()
    );
    // The work probe runs before the capture, so the switch it makes is seen:
    // the active pane is window 1's shell; the agent is found in window 0 and
    // the nudge goes to that pane, read just before, never to the active one.
    let line = report(&world.watch_settled(&[
        "race",
        "--json",
        "--work-probe",
        &format!("{switch}; echo 3"),
        "--nudge-text",
        &format!("touch {}", typed.display()),
    ]));
    assert_eq!(line["typing_safe"], true, "{line}");
    assert_eq!(received_lines(&received, 1).len(), 1);
    assert!(!typed.exists(), "the nudge reached the active shell");
    // And next time the remembered pane is read, whichever is active (its
    // screen held still: no echo).
    let line = report(&world.watch_once(&["race", "--json", "--work-probe", "echo 3"]));
    assert_eq!(line["typing_safe"], true, "{line}");
    assert_eq!(received_lines(&received, 2).len(), 2);
    assert!(!typed.exists());
}

#[test]
fn a_shell_on_a_terminal_of_its_own_or_with_a_job_from_its_startup_file_is_an_exited_agent() {
    let world = World::new();
    // `script` gives the shell a terminal of its own (as sudo's use_pty and
    // `poetry shell` do): the pane's foreground is `script`, the shell is behind it.
    let script = format!("exec script -q /dev/null -c '{}'", &BASH["exec ".len()..]);
    frame_at_a_shell(&world, "scripted", &script, "bash-", "", "");
    let reports = poll_unsafe_pane(&world, "scripted", 2);
    assert_escalated_once_never_typed(&world, &reports, "agent_exited", "a shell (bash)");

    // A job started by the startup file, before job control: in the shell's own group.
    let world = World::new();
    let rc = world.path("rc.sh");
    std::fs::write(&rc, "PS1='rcsh# '\nsleep 600 &\n").unwrap();
    let shell = format!("exec bash --noprofile --rcfile '{}' -i", rc.display());
    frame_at_a_shell(&world, "rcjob", &shell, "rcsh#", "", "");
    let reports = poll_unsafe_pane(&world, "rcjob", 2);
    assert_escalated_once_never_typed(&world, &reports, "agent_exited", "a shell (bash)");
}

#[test]
fn a_pane_in_copy_mode_or_a_dead_pane_gets_no_key_and_one_escalation() {
    let world = World::new();
    let received = world.replay("copying", "idle-after-tool-turn");
    world.tmux.tmux(&["copy-mode", "-t", "=copying:"]);
    let reports = poll_unsafe_pane(&world, "copying", 3);
    assert_escalated_once_never_typed(&world, &reports, "pane_in_mode", "copy mode");
    world
        .tmux
        .tmux(&["send-keys", "-t", "=copying:", "-X", "cancel"]);
    let line = report(&world.watch_once(&["copying", "--json", "--work-probe", "echo 3"]));
    assert_eq!(line["typing_safe"], true, "out of copy mode: {line}");
    assert_eq!(received_lines(&received, 1).len(), 1);

    // The agent was the pane's own program, and the pane stayed after it ended.
    let world = World::new();
    world.tmux.session("keeper", "exec sleep 600");
    world
        .tmux
        .tmux(&["set-option", "-g", "remain-on-exit", "on"]);
    world.tmux.session(
        "dead",
        &format!(
            "cat '{}'; exit 0",
            capture_path("idle-after-tool-turn").display()
        ),
    );
    world.tmux.wait_for("dead", |_| {
        let out = world
            .tmux
            .tmux(&["display-message", "-p", "-t", "=dead:", "#{pane_dead}"]);
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    });
    let reports = poll_unsafe_pane(&world, "dead", 2);
    assert_escalated_once_never_typed(&world, &reports, "agent_exited", "its pane is dead");
}

#[test]
fn the_pane_the_agent_was_seen_in_is_read_whichever_pane_the_user_makes_active() {
    let world = World::new();
    let received = world.replay("split", "idle-after-tool-turn");
    let alert = world.alert_cmd();
    let poll = || {
        report(&world.watch_once(&[
            "split",
            "--json",
            "--work-probe",
            "echo 3",
            "--alert-cmd",
            &alert,
        ]))
    };
    // The first poll waits for the screen to hold still one interval.
    assert!(
        poll()["done"][0]
            .as_str()
            .is_some_and(|d| d.starts_with("not nudged yet"))
    );
    assert_eq!(poll()["done"][0], "nudged (1/5)");
    // The user opens a second window and works in a shell there (a split
    // would too, but it resizes the replayed frame, which a real agent redraws).
    world.tmux.tmux(&["new-window", "-t", "=split:", BASH]);
    world.tmux.wait_for("split", |pane| pane.contains("bash-"));
    // The first nudge's echo changed the agent's screen: it waits one poll, then is nudged.
    let mut line = poll();
    if line["done"][0]
        .as_str()
        .is_some_and(|d| d.starts_with("not nudged yet"))
    {
        line = poll();
    }
    assert_eq!(line["done"][0], "nudged (2/5)", "{line}");
    assert_eq!(received_lines(&received, 2).len(), 2);
    assert!(
        world.read("alerts").is_empty(),
        "a false page: {}",
        world.read("alerts")
    );
}

#[test]
fn a_monitor_killed_while_its_alert_runs_relays_the_question_after_a_restart() {
    let world = World::new();
    world.replay("asks", "question-ask-single");
    // An alert command that hangs: its pid is noted, then it sleeps.
    let hung_pid = world.path("hung.pid");
    let hung = format!("echo $$ > '{}'; exec sleep 600", hung_pid.display());
    let monitor = Background::start(&world, &["asks", "--alert-cmd", &hung], "out");
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&hung_pid)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the alert command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    monitor.signal("KILL");
    drop(monitor);
    // The alert never got through (end the one this test started, by its pid).
    let _ = Command::new("kill")
        .arg("-KILL")
        .arg(pid.to_string())
        .status();
    let alert = world.alert_cmd();
    let text = stdout(&world.watch_once(&["asks", "--alert-cmd", &alert]));
    assert!(
        text.contains("escalated to the operator, NOT answered"),
        "{text}"
    );
    let alerts = world.read("alerts");
    assert_eq!(
        alerts.lines().collect::<Vec<_>>(),
        ["asks QUESTION question"],
        "{alerts}"
    );
    // And once delivered, a further restart does not page again.
    let text = stdout(&world.watch_once(&["asks", "--alert-cmd", &alert]));
    assert!(!text.contains("escalated"), "{text}");
    assert_eq!(world.read("alerts").lines().count(), 1);
}

/// A world whose `asks` pane asked its question and was escalated once,
/// by the alert command returned; its journal kept that.
fn escalated_once() -> (World, String) {
    let world = World::new();
    world.replay("asks", "question-ask-single");
    let alert = world.alert_cmd();
    let text = stdout(&world.watch_once(&["asks", "--alert-cmd", &alert]));
    assert!(text.contains("escalated to the operator"), "{text}");
    (world, alert)
}

/// The one target's journal in `world`'s state folder.
fn journal_of(world: &World) -> PathBuf {
    walk(world.state.path())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("the target's journal")
}

#[test]
fn a_journal_ending_in_a_torn_multibyte_write_keeps_every_whole_record() {
    let (world, alert) = escalated_once();
    // The journal's last write was cut inside a multibyte character.
    let journal = journal_of(&world);
    let mut torn = std::fs::read(&journal).unwrap();
    torn.extend_from_slice(b"{\"record\":\"sent\",\"text\":\"caf\xc3");
    std::fs::write(&journal, torn).unwrap();
    let output = world.watch_once(&["asks", "--alert-cmd", &alert]);
    assert!(
        !stdout(&output).contains("escalated"),
        "re-paged after a torn write"
    );
    assert_eq!(world.read("alerts").lines().count(), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("that record is skipped"), "{stderr}");
}

/// Issue 21: a journal that is there but cannot be read (out of
/// descriptors, a FIFO in its place) is never taken for none: starting
/// fresh would page the question again and spend the budget again.
#[test]
fn a_journal_that_cannot_be_read_is_named_and_the_target_not_watched_fresh() {
    let (world, alert) = escalated_once();
    let journal = journal_of(&world);
    let kept = journal.with_extension("kept");
    std::fs::rename(&journal, &kept).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&journal)
        .status()
        .unwrap();
    assert!(made.success());
    let output = world
        .command(&["asks", "--alert-cmd", &alert])
        .arg("--once")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&journal.display().to_string())
            && stderr.contains("cannot read saved state"),
        "{stderr}"
    );
    assert!(
        !stdout(&output).contains("escalated"),
        "re-paged over an unreadable journal"
    );
    assert_eq!(world.read("alerts").lines().count(), 1);
    // Readable again, it is the memory it was: still no second page.
    std::fs::remove_file(&journal).unwrap();
    std::fs::rename(&kept, &journal).unwrap();
    let text = stdout(&world.watch_once(&["asks", "--alert-cmd", &alert]));
    assert!(!text.contains("escalated"), "{text}");
    assert_eq!(world.read("alerts").lines().count(), 1);
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn sigterm_while_a_probe_hangs_ends_the_monitor_at_once_acting_on_nothing() {
    let world = World::new();
    let received = world.replay("agent", "idle-after-tool-turn");
    let pids = world.path("pids");
    // The work probe hangs for far longer than the test; its pids are noted.
    let probe = format!(
        "sleep 300 & echo $! > '{0}'; echo $$ >> '{0}'; wait",
        pids.display()
    );
    let mut child = world
        .command(&["agent", "--work-probe", &probe, "--probe-timeout", "600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while world.read("pids").lines().count() < 2 {
        assert!(Instant::now() < deadline, "the probe never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .expect("kill");
    assert!(status.success());
    // Ends on its own: a hang guard of 60 s, far above the probe timeout's
    // grace, and far below the 600 s the probe was allowed.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "SIGTERM did not end the monitor");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
    assert_all_gone(&world, "pids", "probe");
    // The cut cycle did nothing: no nudge, no line.
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    assert!(out.is_empty(), "{out}");
    assert!(received_lines(&received, 0).is_empty());
}

#[test]
fn one_server_spelled_two_ways_is_one_server_for_the_lock_and_the_memory() {
    let world = World::new();
    world.replay("asks", "question-ask-single");
    // `-L alias` with TMUX_TMPDIR pointing where `alias` is this test's socket.
    let tmpdir = tempfile::tempdir().unwrap();
    let uid = String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout).unwrap();
    let socket_dir = tmpdir.path().join(format!("tmux-{}", uid.trim()));
    std::fs::create_dir(&socket_dir).unwrap();
    // tmux refuses a socket folder others can enter.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&socket_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&world.tmux.socket, socket_dir.join("alias")).unwrap();
    let by_name = |args: &[&str]| {
        let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
        command
            .args(["watch", "-L", "alias"])
            .args(args)
            .env("TMUX_TMPDIR", tmpdir.path())
            .env("XDG_STATE_HOME", world.state.path());
        command.output().expect("runs")
    };
    let alert = world.alert_cmd();
    let text = stdout(&world.watch_once(&["asks", "--alert-cmd", &alert]));
    assert!(text.contains("escalated to the operator"), "{text}");
    // Restarted under the other spelling: the same memory, so no second page.
    let output = by_name(&["asks", "--once", "--alert-cmd", &alert]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout(&output).contains("asks · QUESTION"),
        "{}",
        stdout(&output)
    );
    assert_eq!(world.read("alerts").lines().count(), 1, "re-paged under -L");
    // And while one spelling watches, the other is refused.
    let first = Background::start(&world, &["asks"], "first");
    first.wait_line(0, |l| l.contains(" · QUESTION · "));
    let output = by_name(&["asks", "--once"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("already watched"));
}

#[test]
fn a_relay_a_wrapper_runs_and_synchronised_panes_are_never_typed_through() {
    // `sh -c 'frame; ssh …; bash'`: the shell waits in front, ssh is its child.
    let world = World::new();
    let bin = world.path("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::copy("/bin/cat", bin.join("ssh")).unwrap();
    world.tmux.session(
        "wrapped",
        &format!(
            "cat '{}'; '{}' > '{}'; echo bye",
            capture_path("idle-after-tool-turn").display(),
            bin.join("ssh").display(),
            world.path("received").display()
        ),
    );
    world
        .tmux
        .wait_for("wrapped", |pane| pane.contains("? for shortcuts"));
    let reports = poll_unsafe_pane(&world, "wrapped", 2);
    assert_escalated_once_never_typed(&world, &reports, "relay", "the pane runs ssh");
    assert!(world.read("received").is_empty());

    // synchronize-panes copies a key into every pane of the window.
    let world = World::new();
    world.replay("synced", "idle-after-tool-turn");
    world
        .tmux
        .tmux(&["split-window", "-d", "-t", "=synced:", BASH]);
    world.tmux.tmux(&[
        "set-window-option",
        "-t",
        "=synced:",
        "synchronize-panes",
        "on",
    ]);
    let reports = poll_unsafe_pane(&world, "synced", 2);
    assert_escalated_once_never_typed(&world, &reports, "synchronized", "synchronize-panes");
}

#[test]
fn a_remembered_pane_after_a_server_restart_is_a_new_pane() {
    let world = World::new();
    world.replay("agent", "idle-after-tool-turn");
    assert_eq!(
        report(&world.watch_settled(&["agent", "--json", "--work-probe", "echo 3"]))["typing_safe"],
        true
    );
    // The server restarts: %0 is now a shell, the agent runs in a second window.
    world.tmux.tmux(&["kill-server"]);
    // The old server is gone before the new one starts on its socket.
    let deadline = Instant::now() + Duration::from_secs(10);
    while world.tmux.try_tmux(&["list-sessions"]).status.success() {
        assert!(Instant::now() < deadline, "the tmux server never ended");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&world.tmux.socket);
    world.tmux.session("agent", BASH);
    world.tmux.wait_for("agent", |pane| pane.contains("bash-"));
    let received = world.path("again.received");
    world.tmux.tmux(&[
        "new-window",
        "-t",
        "=agent:",
        &format!(
            "cat '{}'; exec cat > '{}'",
            capture_path("idle-after-tool-turn").display(),
            received.display()
        ),
    ]);
    world
        .tmux
        .wait_for("agent", |pane| pane.contains("? for shortcuts"));
    let line = report(&world.watch_settled(&["agent", "--json", "--work-probe", "echo 3"]));
    assert_eq!(
        line["typing_safe"], true,
        "the new agent was not read: {line}"
    );
    assert_eq!(received_lines(&received, 1).len(), 1);
}

#[test]
fn a_session_name_too_long_for_a_file_name_still_keeps_its_memory() {
    let world = World::new();
    // Too long with `.jsonl` for one file name (255 bytes).
    let name = "s".repeat(300);
    let received = world.path("received");
    world
        .tmux
        .replay(&name, &capture_path("idle-after-tool-turn"), &received);
    for poll in 1..=2 {
        // The first poll waits for the stop to hold still one interval.
        let args = [name.as_str(), "--work-probe", "echo 3"];
        let output = match poll {
            1 => world.watch_settled(&args),
            _ => world.watch_once(&args),
        };
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("state not saved"), "{stderr}");
        assert!(
            stdout(&output).contains(&format!("nudged ({poll}/5)")),
            "{}",
            stdout(&output)
        );
    }
}

#[test]
fn a_long_journal_is_compacted_at_start_and_keeps_its_memory() {
    let world = World::new();
    world.replay("asks", "question-ask-single");
    let alert = world.alert_cmd();
    stdout(&world.watch_once(&["asks", "--alert-cmd", &alert]));
    let journal = journal_of(&world);
    // Years of polls: progress readings that never advanced.
    let mut long = std::fs::read_to_string(&journal).unwrap();
    for _ in 0..5000 {
        long.push_str("{\"record\":\"progress\",\"value\":7}\n");
    }
    std::fs::write(&journal, &long).unwrap();
    let text = stdout(&world.watch_once(&["asks", "--alert-cmd", &alert]));
    assert!(
        !text.contains("escalated"),
        "re-paged after compaction: {text}"
    );
    let compacted = std::fs::read_to_string(&journal).unwrap();
    assert!(
        compacted.lines().count() < 10,
        "{} lines",
        compacted.lines().count()
    );
    // And the compacted journal still knows the question was relayed.
    let text = stdout(&world.watch_once(&["asks", "--alert-cmd", &alert]));
    assert!(!text.contains("escalated"), "{text}");
    assert_eq!(world.read("alerts").lines().count(), 1);
}

#[test]
fn an_agents_own_terminal_or_ssh_child_is_its_business_not_the_panes() {
    // An agent (here python) that runs a shell on a terminal of its own, as
    // Codex's background terminals and pexpect harnesses do: the pane shows
    // the agent, not that shell.
    let world = World::new();
    let received = world.path("received");
    let agent = world.path("agent.py");
    std::fs::write(
        &agent,
        format!(
            "import os, pty, sys, time\n\
             pid, fd = pty.fork()\n\
             if pid == 0:\n    os.execvp('bash', ['bash', '--norc', '--noprofile', '-i'])\n\
             os.system('stty -echo')\n\
             sys.stdout.write(open({frame:?}).read()); sys.stdout.flush()\n\
             with open({received:?}, 'w') as out:\n    for line in sys.stdin:\n        out.write(line); out.flush()\n",
            frame = capture_path("idle-after-tool-turn").display().to_string(),
            received = received.display().to_string(),
        ),
    )
    .unwrap();
    world
        .tmux
        .session("own", &format!("exec python3 '{}'", agent.display()));
    world
        .tmux
        .wait_for("own", |pane| pane.contains("? for shortcuts"));
    let line = report(&world.watch_settled(&["own", "--json", "--work-probe", "echo 3"]));
    assert_eq!(line["typing_safe"], true, "{line}");
    assert_eq!(received_lines(&received, 1).len(), 1);

    // A child named ssh (an MCP server, a tool call) in the agent's group.
    let world = World::new();
    let bin = world.path("bin");
    std::fs::create_dir(&bin).unwrap();
    std::fs::copy("/bin/sleep", bin.join("ssh")).unwrap();
    let received = world.path("received");
    world.tmux.session(
        "mcp",
        &format!(
            "stty -echo; cat '{}'; '{}' 600 & exec cat > '{}'",
            capture_path("idle-after-tool-turn").display(),
            bin.join("ssh").display(),
            received.display()
        ),
    );
    world
        .tmux
        .wait_for("mcp", |pane| pane.contains("? for shortcuts"));
    let line = report(&world.watch_settled(&["mcp", "--json", "--work-probe", "echo 3"]));
    assert_eq!(line["typing_safe"], true, "{line}");
    assert_eq!(received_lines(&received, 1).len(), 1);
}

#[test]
fn at_first_sight_the_agent_is_found_beside_the_shell_the_user_is_in() {
    let world = World::new();
    let received = world.replay("work", "idle-after-tool-turn");
    // The user's shell has the focus, in a window beside the agent's (a
    // split works the same, but it re-wraps a replayed frame, which a real
    // agent would redraw), at the agent's size so the frame is not re-wrapped.
    world
        .tmux
        .tmux(&["set-option", "-g", "default-size", "120x40"]);
    world.tmux.tmux(&["new-window", "-t", "=work:", BASH]);
    world.tmux.wait_for("work", |pane| pane.contains("bash-"));
    let alert = world.alert_cmd();
    let line = report(&world.watch_settled(&[
        "work",
        "--json",
        "--work-probe",
        "echo 3",
        "--alert-cmd",
        &alert,
    ]));
    assert_eq!(line["typing_safe"], true, "{line}");
    assert_eq!(received_lines(&received, 1).len(), 1);
    assert!(
        world.read("alerts").is_empty(),
        "a false page: {}",
        world.read("alerts")
    );
}

#[test]
fn a_probe_whose_child_left_its_group_keeps_its_answer_and_leaves_nothing() {
    let world = World::new();
    world.replay("agent", "idle-after-tool-turn");
    let pid_file = world.path("escaped.pid");
    let probe = format!(
        "setsid sh -c 'echo $$ > {}; exec sleep 300' & echo 3",
        pid_file.display()
    );
    let line = stdout(&world.watch_once(&["agent", "--work-probe", &probe]));
    assert!(line.contains(" · STALLED · work=3 · "), "{line}");
    let escaped: i32 = world.read("escaped.pid").trim().parse().expect("the pid");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_gone(escaped) {
        assert!(
            Instant::now() < deadline,
            "the escaped sleep {escaped} outlived the run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_monitor_killed_with_sigkill_takes_its_running_alert_command_with_it() {
    let world = World::new();
    world.replay("asks", "question-ask-single");
    let pid_file = world.path("alert.pid");
    // The alert command becomes a long sleep (exec: the same process).
    let alert = format!("echo $$ > '{}'; exec sleep 600", pid_file.display());
    let monitor = Background::start(&world, &["asks", "--alert-cmd", &alert], "out");
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid: i32 = loop {
        if let Ok(pid) = world.read("alert.pid").trim().parse() {
            break pid;
        }
        assert!(Instant::now() < deadline, "the alert command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    monitor.signal("KILL");
    drop(monitor);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_gone(pid) {
        assert!(
            Instant::now() < deadline,
            "the alert command {pid} outlived its monitor"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_fifo_where_the_session_file_would_be_freezes_nothing() {
    let world = World::new();
    let home = world.path("agent-home");
    let (pid, received) = world
        .tmux
        .fake_agent("agent", "idle-after-text-answer", &home);
    let sessions = home.join(".claude/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        sessions.join(format!("{pid}.json")),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    // Returns at all (a plain open(2) of the FIFO blocked for ever), reads
    // the pane and nudges it; the FIFO is no witness.
    let poll = || {
        let mut child = world
            .command(&["agent", "--json", "--work-probe", "echo 3", "--once"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("runs");
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().expect("try_wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("watch froze on a FIFO session file");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        report(&child.wait_with_output().expect("output"))
    };
    // The first poll waits for the screen to hold still one interval.
    let first = poll();
    assert_eq!(first["not_typed_because"], "settling", "{first}");
    let line = poll();
    assert_eq!(line["witness"], "none", "{line}");
    assert_eq!(line["typing_safe"], true, "{line}");
    assert_eq!(received_lines(&received, 1).len(), 1);
}

#[test]
fn a_pane_that_prints_marker_shaped_lines_reads_as_itself_and_its_neighbour_as_itself() {
    let world = World::new();
    let forged = world.path("forged.txt");
    // Guessed markers (the real ones are 128 random bits each cycle) and a
    // fake permission dialog posing as the next pane's capture.
    std::fs::write(
        &forged,
        "BMB-00000000000000000000000000000000-1 calm %1 1 000 claude\n\
         BMB-ffffffffffffffffffffffffffffffff-1 calm %1 1 000 claude\n \
         Do you want to proceed?\n ❯ 1. Yes\n   2. No\n",
    )
    .unwrap();
    world.tmux.session(
        "noisy",
        &format!("cat '{}'; exec sleep 600", forged.display()),
    );
    world.tmux.wait_for("noisy", |pane| pane.contains("2. No"));
    let received = world.replay("calm", "idle-after-tool-turn");
    let alert = world.alert_cmd();
    let args = [
        "noisy",
        "calm",
        "--json",
        "--work-probe",
        "echo 3",
        "--alert-cmd",
        &alert,
    ];
    // The first poll of each target waits for its screen to hold still.
    world.watch_once(&args);
    let output = world.watch_once(&args);
    let reports: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The calm pane is read from its own screen: idle, nudged, no question.
    assert_eq!(reports[1]["target"], "calm");
    assert_eq!(reports[1]["state"], "STALLED", "{}", reports[1]);
    assert_eq!(received_lines(&received, 1).len(), 1);
    assert!(
        !world.read("alerts").contains("calm QUESTION"),
        "{}",
        world.read("alerts")
    );
}

/// A CLI whose footer starts at column zero under its box: without a
/// `footer` key the line reads as something drawn over the agent (never
/// typed into); with one, the stop is nudged like any other.
#[test]
fn a_user_profile_with_a_column_zero_footer_is_nudged() {
    let world = World::new();
    let screen = format!(
        "zero-cli v1.0\n\n❯ say hi\nhi there\n\n{rule}\n❯\u{a0}\n{rule}\nmodel: local · ctx 12%\n",
        rule = "─".repeat(40)
    );
    let file = world.path("screen.txt");
    std::fs::write(&file, &screen).unwrap();
    let received = world.path("received");
    world.tmux.session(
        "zero",
        &format!(
            "stty -echo; cat '{}'; exec cat > '{}'",
            file.display(),
            received.display()
        ),
    );
    world.tmux.wait_for("zero", |pane| pane.contains("ctx 12%"));
    let profile = "name = zero\nagent = Zero CLI\ndetect = ^zero-cli v\\d\ndetect = ^model: \\S+ · ctx \\d+%$\n\
                   detect = ^─{8,}$\ndetect = ^❯(?:\\s|$)\nbox_top = ^─{8,}$\nbox_bottom = ^─{8,}$\nprompt = ^❯(?:\\s|$)\n";
    let poll = |profile: &str| {
        let config = tempfile::tempdir().unwrap();
        let profiles = config.path().join("bmb-monitor/profiles");
        std::fs::create_dir_all(&profiles).unwrap();
        std::fs::write(profiles.join("zero.profile"), profile).unwrap();
        let state = tempfile::tempdir().unwrap();
        (0..2)
            .map(|_| {
                let output = world
                    .command(&["zero", "--once", "--json", "--work-probe", "echo 2"])
                    .env("XDG_CONFIG_HOME", config.path())
                    .env("XDG_STATE_HOME", state.path())
                    .output()
                    .expect("bmb-monitor runs");
                report(&output)
            })
            .collect::<Vec<_>>()
    };
    let without = poll(profile);
    assert_eq!(
        without[1]["not_typed_because"], "unreadable",
        "{}",
        without[1]
    );
    let with = poll(&format!("{profile}footer = ^model: \\S+ · ctx \\d+%$\n"));
    assert_eq!(with[0]["not_typed_because"], "settling", "{}", with[0]);
    assert_eq!(with[1]["done"][0], "nudged (1/5)", "{}", with[1]);
    assert_eq!(
        received_lines(&received, 1),
        ["Please continue with the next step of your plan."]
    );
}

/// Claude Code 2.1.332's real 5-hour-limit screen (its reset moved to the
/// next minute, in UTC): held, with no key and no page, until the reset and
/// its margin; then nudged once; then, the limit still on screen, escalated once.
#[test]
fn a_real_usage_limit_screen_is_held_until_its_reset_then_nudged_once_then_escalated() {
    let world = World::new();
    let now = jiff::Timestamp::now();
    // The next whole minute at least 20 s away, as Claude Code prints it: `8:58pm`.
    let next = (now.as_second() + 20) / 60 * 60 + 60;
    let reset = jiff::Timestamp::from_second(next)
        .unwrap()
        .to_zoned_datetime(jiff::tz::TimeZone::UTC);
    let hour = match reset.hour() % 12 {
        0 => 12,
        h => h,
    };
    let printed = format!(
        "{hour}:{:02}{}",
        reset.minute(),
        if reset.hour() < 12 { "am" } else { "pm" }
    );
    let real = std::fs::read_to_string(capture_path("usage-limit-5-hour-v2.1.332-auto")).unwrap();
    assert!(
        real.contains("resets 3:33am (Asia/Tbilisi)"),
        "the capture moved"
    );
    let screen = real
        .replace("3:33am", &printed)
        .replace("(Asia/Tbilisi)", "(UTC)");
    let file = world.path("limit.txt");
    std::fs::write(&file, screen).unwrap();
    let received = world.path("received");
    world.tmux.replay("limited", &file, &received);
    let alert = world.alert_cmd();
    let monitor = Background::start(
        &world,
        &[
            "limited",
            "--json",
            "--work-probe",
            "echo 3",
            "--alert-cmd",
            &alert,
        ],
        "out",
    );
    let lines = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(&monitor.out)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let done = |line: &serde_json::Value| -> Vec<String> {
        line["done"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap().to_string())
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(240);
    let wait = |what: &str, wanted: &dyn Fn(&serde_json::Value) -> bool| loop {
        let got = lines();
        if let Some(i) = got.iter().position(wanted) {
            return (i, got);
        }
        assert!(Instant::now() < deadline, "never {what}: {got:#?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let (held_at, _) = wait("held", &|l| l["held_until"].is_string());
    let (nudged_at, got) = wait("nudged", &|l| done(l).iter().any(|d| d == "nudged (1/5)"));
    // While held: no key, no page, the hold said once, every line saying it holds.
    let holding = &got[held_at..nudged_at];
    assert!(holding.len() >= 2, "{holding:#?}");
    for line in holding {
        assert_eq!(line["not_typed_because"], "usage_limit", "{line}");
        assert_eq!(line["nudges"], 0, "{line}");
    }
    let said: Vec<String> = holding.iter().flat_map(done).collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("held until ") && said[0].ends_with(" (usage limit)"),
        "{said:?}"
    );
    // Not before the reset and its margin.
    let nudged_time = lines()[nudged_at]["time"].as_str().unwrap().to_string();
    assert!(
        jiff::Timestamp::now().as_second() >= next + 55,
        "nudged at {nudged_time}, the reset is {printed}"
    );
    // The limit is still on screen after that nudge: escalated once, never nudged again.
    let (escalated_at, got) = wait("escalated", &|l| {
        done(l)
            .iter()
            .any(|d| d == "usage limit: not nudged, escalated")
    });
    assert!(
        got[nudged_at + 1..=escalated_at]
            .iter()
            .all(|l| l["nudges"] == 1)
    );
    assert_eq!(world.read("alerts"), "limited STALLED usage_limit\n");
    assert!(
        world
            .read("messages")
            .contains("You've hit your 5-hour limit"),
        "{}",
        world.read("messages")
    );
    assert_eq!(
        received_lines(&received, 1),
        ["Please continue with the next step of your plan."]
    );
}

/// Found by a review: a person's key pressed in the half second between a
/// nudge's text and its Enter was sent with the nudge. A fake Claude-like
/// CLI that draws what it is typed into its box, and adds a key of "the
/// person's" right after the nudge's text: the Enter is not pressed, nothing
/// reaches the agent, and the next poll escalates the mixed box as a draft.
#[test]
fn a_key_pressed_between_a_nudges_text_and_its_enter_keeps_the_enter_back() {
    let world = World::new();
    let received = world.path("received");
    let cli = world.path("fake_cli.py");
    std::fs::write(
        &cli,
        r#"import os, sys, tty
out = open(sys.argv[1], "a")
def draw(text):
    rule = "\u2500" * 40
    screen = ["\u25cf Done.", "", "\u273b Worked for 1s", "", rule, "\u276f\u00a0" + text, rule, "  ? for shortcuts"]
    os.write(1, ("\x1b[H\x1b[2J" + "\r\n".join(screen)).encode())
tty.setraw(0)
typed = ""
draw(typed)
while True:
    key = os.read(0, 64).decode(errors="replace")
    for c in key:
        if c == "\r":
            out.write(typed + "\n"); out.flush(); typed = ""
        else:
            typed += c
            # The person's key, landing right after the nudge's text.
            if typed.endswith("plan."):
                typed += "x"
    draw(typed)
"#,
    )
    .unwrap();
    world.tmux.session(
        "mixed",
        &format!("exec python3 '{}' '{}'", cli.display(), received.display()),
    );
    world
        .tmux
        .wait_for("mixed", |pane| pane.contains("? for shortcuts"));
    let alert = world.alert_cmd();
    let args = ["mixed", "--work-probe", "echo 3", "--alert-cmd", &alert];
    let typed = world.watch_settled(&args);
    let stderr = String::from_utf8_lossy(&typed.stderr);
    assert!(stderr.contains("its Enter was not pressed"), "{stderr}");
    world
        .tmux
        .wait_for("mixed", |pane| pane.contains("of your plan.x"));
    assert_eq!(std::fs::read_to_string(&received).unwrap_or_default(), "");
    // The box now holds our words and the person's: a draft, escalated once
    // it held still, never sent.
    let next = stdout(&world.watch_settled(&args));
    assert!(
        next.contains("a draft is waiting in the box, escalated"),
        "{next}"
    );
    assert_eq!(world.read("alerts"), "mixed STALLED draft\n");
    assert_eq!(std::fs::read_to_string(&received).unwrap_or_default(), "");
}
