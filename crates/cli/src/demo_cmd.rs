//! `bmb-monitor demo`: the main job on a fresh machine with no agent CLI
//! installed (SPEC §4). A PRIVATE tmux server (`-S` socket in the demo's own
//! temporary folder, `-f /dev/null`) holds one session whose pane plays real
//! captured Claude Code screens in sequence; the REAL monitor (this binary's
//! `watch --once`, one poll per step) watches it with a work probe, a progress
//! probe and an alert command that only read or write files in that folder,
//! and with `XDG_STATE_HOME` there too, so the user's state is never touched.
//! The pane records every key it receives (raw mode, no echo), so the demo can
//! show that a nudge arrived and that a question got no key.
//!
//! Every path ends in [`Sandbox::cleanup`]: the server is killed by its own
//! socket (and its pid waited for), the socket and the folder removed; Ctrl-C
//! only sets the stop flag, so the demo stops between steps and cleans up too.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use probes::run::{Invocation, Limits, Outcome, run};
use probes::ssh::quote_literal;
use probes::tmux::{Server, Tmux};

use crate::watch_cmd::sanitize_text;

#[derive(clap::Args, Debug)]
pub struct Args {}

/// Prints a line; a closed stdout must not stop the demo before it cleans up.
macro_rules! say {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// The session the scripted agent runs in, and the monitor's target.
const SESSION: &str = "agent";
/// The nudge typed into the STALLED pane: the text the captured
/// `working-after-nudge` screen shows echoed, so the story is one session.
const NUDGE: &str = "continue with the next step of the plan; if nothing is left, say DONE";
/// Ends each alert in the alert file (the alert command appends one after the message).
const ALERT_END: &str = "\n--8<-- end of alert\n";
/// The four states the demo must show, in the order it shows them.
const FOUR: [&str; 4] = ["WORKING", "QUESTION", "STALLED", "BLOCKED"];

/// One step of the script: what the agent does, the real screen it shows,
/// what the probes say, and what the monitor must do about it.
struct Step {
    doing: &'static str,
    case: &'static str,
    screen: &'static str,
    work: u32,
    progress: u64,
    expect: &'static str,
}

const STEPS: [Step; 5] = [
    Step {
        doing: "delegates a survey of the repository to a sub-agent (3 items of work left)",
        case: "working-subagent",
        screen: include_str!("../../../testdata/panes/claude/working-subagent/plain.txt"),
        work: 3,
        progress: 41,
        expect: "WORKING",
    },
    Step {
        doing: "opens an AskUserQuestion dialog: it needs a human's decision",
        case: "GOLDEN-question-real",
        screen: include_str!("../../../testdata/panes/claude/GOLDEN-question-real/plain.txt"),
        work: 3,
        progress: 41,
        expect: "QUESTION",
    },
    Step {
        doing: "ends its turn (its background agents have finished) and waits at an empty prompt, though the work probe says 3 items are left",
        case: "GOLDEN-stalled-real",
        screen: include_str!("../../../testdata/panes/claude/GOLDEN-stalled-real/plain.txt"),
        work: 3,
        progress: 41,
        expect: "STALLED",
    },
    Step {
        doing: "took the nudge and is working again; the progress probe moved 41 -> 42",
        case: "working-after-nudge",
        screen: include_str!("../../../testdata/panes/claude/working-after-nudge/plain.txt"),
        work: 2,
        progress: 42,
        expect: "WORKING",
    },
    Step {
        doing: "finishes the last item and stops; the work probe now says 0 left",
        case: "idle-after-tool-turn",
        screen: include_str!("../../../testdata/panes/claude/idle-after-tool-turn/plain.txt"),
        work: 0,
        progress: 43,
        expect: "BLOCKED",
    },
];

pub fn run_demo(_args: Args) -> ExitCode {
    probes::signals::install_stop_handler();
    let mut sandbox = match Sandbox::create() {
        Ok(sandbox) => sandbox,
        Err(error) => {
            eprintln!("bmb-monitor: demo: {error}");
            return ExitCode::FAILURE;
        }
    };
    let result = play(&mut sandbox);
    let cleanup = sandbox.cleanup();
    match &cleanup {
        Ok(()) => {
            say!(
                "\ncleaned up: the private tmux server is gone, its socket and {} removed",
                sandbox.dir.display()
            );
        }
        Err(error) => {
            say!("\ncleanup: {error}");
        }
    }
    let shown = match result {
        Ok(shown) => shown,
        Err(error) => {
            eprintln!("bmb-monitor: demo: {error}");
            Vec::new()
        }
    };
    let missing: Vec<&str> = FOUR
        .iter()
        .copied()
        .filter(|s| !shown.contains(s))
        .collect();
    let seen: Vec<&str> = FOUR.iter().copied().filter(|s| shown.contains(s)).collect();
    let seen = if seen.is_empty() {
        "none".to_string()
    } else {
        seen.join(", ")
    };
    if missing.is_empty() && cleanup.is_ok() {
        say!("SUMMARY: states shown: {seen} (all four)");
        ExitCode::SUCCESS
    } else if missing.is_empty() {
        say!("SUMMARY: states shown: {seen} (all four), but the cleanup failed");
        ExitCode::FAILURE
    } else {
        say!(
            "SUMMARY: states shown: {seen}; missing: {}",
            missing.join(", ")
        );
        ExitCode::FAILURE
    }
}

/// Plays the script; returns the states the monitor was seen to handle right.
fn play(sandbox: &mut Sandbox) -> Result<Vec<&'static str>, String> {
    sandbox.start_server()?;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let watch = sandbox.watch_args();
    say!("bmb-monitor demo: a scripted Claude Code session, watched by the real monitor");
    say!(
        "  private tmux server: -S {}, pid {}",
        sandbox.socket.display(),
        sandbox
            .server_pid
            .map_or("?".to_string(), |p| p.to_string())
    );
    say!(
        "  session `{SESSION}` (120x40) plays real Claude Code 2.1.197 screens from testdata/panes/claude/"
    );
    let dir = sandbox.dir.to_string_lossy().into_owned();
    let command = watch
        .iter()
        .map(|w| quote_literal(w))
        .collect::<Vec<_>>()
        .join(" ")
        .replace(&dir, "$DEMO");
    say!("  each step polls once with the real monitor (DEMO={dir}):");
    say!("    XDG_STATE_HOME=$DEMO/state bmb-monitor {command}");
    say!("  (its state lives in $DEMO/state: your own monitor state is not touched)");

    let mut shown: Vec<&'static str> = Vec::new();
    for (number, step) in STEPS.iter().enumerate() {
        if probes::signals::stop_requested() {
            say!("\ninterrupted: stopping before step {}", number + 1);
            break;
        }
        say!(
            "\n== step {}/{} · the agent {}",
            number + 1,
            STEPS.len(),
            step.doing
        );
        say!(
            "   pane: testdata/panes/claude/{}/plain.txt · work probe prints {} · progress probe prints {}",
            step.case,
            step.work,
            step.progress
        );
        if let Err(error) = sandbox.show(number, step) {
            say!("   !! {error}");
        }
        let typed_before = sandbox.typed().len();
        let alerts_before = sandbox.alerts().len();

        let outcome = run(
            &Invocation::new(&exe)
                .args(&watch)
                .env("XDG_STATE_HOME", sandbox.state_dir()),
            &Limits::with_timeout(Duration::from_secs(30)),
        );
        let states = report_monitor(&outcome);

        let wanted_key = (step.expect == "STALLED").then(|| format!("{NUDGE}\r"));
        let typed = sandbox.typed_since(typed_before, wanted_key.as_deref());
        let alerts = parse_alerts(&sandbox.alerts()[alerts_before..]);
        for (state, reason, message) in &alerts {
            say!("   alert sent (BMB_STATE={state}, BMB_REASON={reason}):");
            for line in message.lines() {
                say!("   │ {line}");
            }
        }
        if alerts.is_empty() {
            say!("   alert sent: none");
        }
        if typed.is_empty() {
            say!("   typed into the pane: nothing");
        } else {
            say!(
                "   typed into the pane: {}",
                sanitize_text(&typed.replace('\r', " [Enter]\n"))
                    .trim_end()
                    .replace('\n', " / ")
            );
        }

        let verdict = check(step, &states, &alerts, &typed);
        match verdict {
            Ok(what) => {
                say!("   ✓ {}: {what}", step.expect);
                if !shown.contains(&step.expect) {
                    shown.push(step.expect);
                }
            }
            Err(why) => say!("   ✗ {}: {why}", step.expect),
        }
    }
    Ok(shown)
}

/// Prints the monitor's own lines verbatim; returns the states they name.
fn report_monitor(outcome: &Outcome) -> Vec<String> {
    let (stdout, stderr) = match outcome {
        Outcome::Exited { stdout, stderr, .. } | Outcome::TimedOut { stdout, stderr, .. } => {
            (stdout.text(), stderr.text())
        }
        Outcome::FailedToSpawn { .. } => (String::new(), String::new()),
    };
    let mut states = Vec::new();
    for line in stdout.lines() {
        say!("{line}");
        if let Some(rest) = line.strip_prefix("MONITOR · ") {
            // `MONITOR · <target> · <STATE> · …`
            states.extend(rest.split(" · ").nth(1).map(str::to_string));
        }
    }
    for line in stderr.lines() {
        say!("   (monitor stderr) {line}");
    }
    if !matches!(outcome, Outcome::Exited { code: Some(0), .. }) {
        say!("   !! the monitor {}", outcome.describe());
    }
    states
}

/// Did the monitor see the expected state and do the right thing about it?
fn check(
    step: &Step,
    states: &[String],
    alerts: &[(String, String, String)],
    typed: &str,
) -> Result<&'static str, String> {
    if !states.iter().any(|s| s == step.expect) {
        return Err(format!(
            "the monitor said {}, not {}",
            if states.is_empty() {
                "nothing".to_string()
            } else {
                states.join(", ")
            },
            step.expect
        ));
    }
    let alerted = |state: &str| alerts.iter().any(|(s, _, _)| s == state);
    match step.expect {
        "WORKING" if typed.is_empty() && alerts.is_empty() => Ok("left alone: no key, no alert"),
        "QUESTION" if typed.is_empty() && alerted("QUESTION") => {
            Ok("relayed to the operator verbatim; no key was sent to the dialog")
        }
        "STALLED" if typed.contains(NUDGE) && typed.ends_with('\r') => {
            Ok("nudged: the text, then Enter, arrived in the pane")
        }
        "BLOCKED" if typed.is_empty() && alerted("BLOCKED") => {
            Ok("escalated to the operator and NOT nudged")
        }
        expect => Err(format!(
            "the monitor did not act as {expect} requires (alerts: {}, typed: {typed:?})",
            alerts.len()
        )),
    }
}

/// `(BMB_STATE, BMB_REASON, message)` of each alert in `text`.
fn parse_alerts(text: &str) -> Vec<(String, String, String)> {
    text.split(ALERT_END)
        .filter(|chunk| !chunk.trim().is_empty())
        .map(|chunk| {
            let (head, message) = chunk.split_once('\n').unwrap_or((chunk, ""));
            let (state, reason) = head.split_once(' ').unwrap_or((head, ""));
            (
                state.to_string(),
                reason.to_string(),
                message.trim_end().to_string(),
            )
        })
        .collect()
}

/// The demo's temporary folder and private tmux server; removed on every path.
struct Sandbox {
    dir: PathBuf,
    socket: PathBuf,
    tmux: Tmux,
    server_pid: Option<u32>,
    cleaned: bool,
}

impl Sandbox {
    fn create() -> Result<Sandbox, String> {
        let mut base = std::env::temp_dir();
        // A unix socket path must fit in sun_path (108 bytes, 104 on BSDs).
        if base.as_os_str().len() > 60 {
            base = PathBuf::from("/tmp");
        }
        // Private to this user (a socket in it reaches the demo's server);
        // removed by `cleanup`, which reports what it could not remove.
        let dir = tempfile::Builder::new()
            .prefix("bmb-demo-")
            .permissions(fs::Permissions::from_mode(0o700))
            .tempdir_in(&base)
            .map_err(|e| {
                format!(
                    "cannot create a temporary folder in {}: {e}",
                    base.display()
                )
            })?
            .keep();
        let socket = dir.join("tmux.sock");
        let mut tmux = Tmux::new(Server::Path(socket.to_string_lossy().into_owned()));
        tmux.timeout = Duration::from_secs(5);
        let sandbox = Sandbox {
            dir,
            socket,
            tmux,
            server_pid: None,
            cleaned: false,
        };
        for file in ["typed", "alerts"] {
            fs::write(sandbox.dir.join(file), "")
                .map_err(|e| format!("cannot write in {}: {e}", sandbox.dir.display()))?;
        }
        fs::create_dir(sandbox.state_dir())
            .map_err(|e| format!("cannot write in {}: {e}", sandbox.dir.display()))?;
        Ok(sandbox)
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    fn state_dir(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// `tmux -S SOCKET ARGS…` under a wall clock (what [`Tmux`] has no method for).
    fn tmux_call(&self, global: &[&str], args: &[&str]) -> Result<String, String> {
        let invocation = Invocation::new(&self.tmux.program)
            .args(global)
            .arg("-S")
            .arg(&self.socket)
            .args(args);
        let outcome = run(&invocation, &Limits::with_timeout(self.tmux.timeout));
        match outcome.success_stdout() {
            Some(out) => Ok(out.text()),
            None => Err(format!("`{}` {}", invocation.display(), outcome.describe())),
        }
    }

    /// The pane's program: draw nothing, then record every key it is sent.
    fn keys_recorder(&self) -> String {
        format!(
            "stty raw -echo; exec cat >> {}",
            quote_literal(&self.path("typed"))
        )
    }

    fn start_server(&mut self) -> Result<(), String> {
        let script = self.keys_recorder();
        self.tmux_call(
            &["-f", "/dev/null"],
            &[
                "new-session",
                "-d",
                "-s",
                SESSION,
                "-x",
                "120",
                "-y",
                "40",
                "--",
                "sh",
                "-c",
                &script,
            ],
        )
        .map_err(|e| format!("cannot start a private tmux server (is tmux installed?): {e}"))?;
        let pid = self.tmux_call(&[], &["display-message", "-p", "#{pid}"])?;
        self.server_pid = pid.trim().parse().ok();
        Ok(())
    }

    /// Puts step `number`'s probe readings in place and the screen in the
    /// pane, then waits until a capture shows exactly that screen.
    fn show(&self, number: usize, step: &Step) -> Result<(), String> {
        let screen = trim_screen(step.screen);
        let screen_file = self.path(&format!("screen-{number}.txt"));
        let write = |name: &str, text: &str| {
            fs::write(self.path(name), text)
                .map_err(|e| format!("cannot write {}: {e}", self.path(name)))
        };
        write(&format!("screen-{number}.txt"), &screen)?;
        write("work", &format!("{}\n", step.work))?;
        write("progress", &format!("{}\n", step.progress))?;
        let script = format!(
            "printf '\\033[H\\033[2J'; cat {}; {}",
            quote_literal(&screen_file),
            self.keys_recorder()
        );
        let pane = format!("={SESSION}:");
        self.tmux_call(
            &[],
            &["respawn-pane", "-k", "-t", &pane, "--", "sh", "-c", &script],
        )?;
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = String::new();
        let mut nonce = 0u32;
        while Instant::now() < deadline && !probes::signals::stop_requested() {
            nonce += 1;
            let captured = self
                .tmux
                .capture_sessions(&[SESSION.to_string()], &format!("demo{nonce}"))?;
            if let Some(Ok(capture)) = captured.into_iter().next() {
                if trim_screen(&capture.text) == screen {
                    return Ok(());
                }
                last = capture.text;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "the pane did not show the screen in time; it shows {} lines",
            last.lines().count()
        ))
    }

    fn watch_args(&self) -> Vec<String> {
        let alert = format!(
            "{{ printf '%s %s\\n' \"$BMB_STATE\" \"$BMB_REASON\"; cat; printf '\\n%s\\n' {}; }} >> {}",
            quote_literal(ALERT_END.trim()),
            quote_literal(&self.path("alerts"))
        );
        [
            "watch",
            SESSION,
            "-S",
            &self.socket.to_string_lossy(),
            "--once",
            "--work-probe",
            &format!("cat {}", quote_literal(&self.path("work"))),
            "--progress-probe",
            &format!("cat {}", quote_literal(&self.path("progress"))),
            "--alert-cmd",
            &alert,
            "--nudge-text",
            NUDGE,
            "--capture-timeout",
            "5",
            "--probe-timeout",
            "5",
        ]
        .map(str::to_string)
        .to_vec()
    }

    fn typed(&self) -> String {
        fs::read_to_string(self.path("typed")).unwrap_or_default()
    }

    fn alerts(&self) -> String {
        fs::read_to_string(self.path("alerts")).unwrap_or_default()
    }

    /// The keys the pane received since `before` bytes. When `wanted` is
    /// given, waits (bounded) until it arrived; otherwise gives a stray key a
    /// moment to land, so "nothing" means nothing.
    fn typed_since(&self, before: usize, wanted: Option<&str>) -> String {
        let since = |all: String| all.get(before..).unwrap_or("").to_string();
        match wanted {
            Some(wanted) => {
                let deadline = Instant::now() + Duration::from_secs(5);
                loop {
                    let typed = since(self.typed());
                    if typed.contains(wanted) || Instant::now() >= deadline {
                        return typed;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            None => {
                std::thread::sleep(Duration::from_millis(200));
                since(self.typed())
            }
        }
    }

    /// Ends the server by its own socket, waits for its pid to go, removes the
    /// socket and the folder. Idempotent; also run on drop.
    fn cleanup(&mut self) -> Result<(), String> {
        if self.cleaned {
            return Ok(());
        }
        self.cleaned = true;
        let mut problems = Vec::new();
        if self.socket.exists() {
            let _ = self.tmux.kill_server();
        }
        if let Some(pid) = self.server_pid {
            let deadline = Instant::now() + Duration::from_secs(3);
            while is_tmux(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if is_tmux(pid) {
                // Only our own server's pid, and only while it is still tmux.
                let _ = run(
                    &Invocation::new("kill").args(["-KILL", &pid.to_string()]),
                    &Limits::with_timeout(Duration::from_secs(2)).for_cleanup(),
                );
                if is_tmux(pid) {
                    problems.push(format!("the tmux server (pid {pid}) is still running"));
                }
            }
        }
        let gone = |result: std::io::Result<()>, path: &std::path::Path| match result {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Some(format!("cannot remove {}: {e}", path.display()))
            }
            _ => None,
        };
        problems.extend(gone(fs::remove_file(&self.socket), &self.socket));
        problems.extend(gone(fs::remove_dir_all(&self.dir), &self.dir));
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Err(error) = self.cleanup() {
            eprintln!("bmb-monitor: demo: cleanup: {error}");
        }
    }
}

/// Whether `pid` is alive (not a zombie) and is a tmux process.
fn is_tmux(pid: u32) -> bool {
    probes::procfs::Stat::of(pid)
        .is_some_and(|stat| !stat.has_exited() && stat.comm().starts_with("tmux"))
}

/// A screen as a pane shows it: no trailing spaces, no trailing blank lines,
/// no final newline (which would scroll the top line off a full pane).
fn trim_screen(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(0, |i| i + 1);
    lines[..end].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alerts_split_into_state_reason_and_message() {
        let text = format!(
            "QUESTION question\nline one\nline two\n{ALERT_END}BLOCKED blocked\nx{ALERT_END}"
        );
        let alerts = parse_alerts(&text);
        assert_eq!(alerts.len(), 2);
        assert_eq!(alerts[0].0, "QUESTION");
        assert_eq!(alerts[0].1, "question");
        assert_eq!(alerts[0].2, "line one\nline two");
        assert_eq!(alerts[1], ("BLOCKED".into(), "blocked".into(), "x".into()));
    }

    #[test]
    fn screens_lose_trailing_blanks_and_every_step_is_a_real_capture() {
        assert_eq!(trim_screen("a  \nb\n\n  \n"), "a\nb");
        for step in &STEPS {
            assert!(
                trim_screen(step.screen).lines().count() > 5,
                "{}",
                step.case
            );
        }
        for state in FOUR {
            assert!(STEPS.iter().any(|s| s.expect == state), "{state}");
        }
    }

    /// A re-captured screen that no longer means what its step says would
    /// make the demo fail: catch it here, without tmux.
    #[test]
    fn every_screen_classifies_as_its_step_expects_with_its_work_reading() {
        for step in &STEPS {
            let work = classify::Work::parse(&step.work.to_string());
            let verdict = classify::classify(&trim_screen(step.screen), work);
            assert_eq!(verdict.state.as_str(), step.expect, "{}", step.case);
        }
    }
}
