//! End-to-end tests of `bmb-monitor watch` and `list` on `host:session`
//! targets (issue 3, "Remote"): the real binary, a real sshd on 127.0.0.1
//! (`support/sshd.rs`) reached through a throwaway `--ssh-config` alias, and
//! a private tmux server on the same machine that the remote side reaches
//! with `-S <socket>`. Real Claude Code captures are replayed in real panes
//! whose program records every line typed into it.
//!
//! Nothing here measures time: wall clocks appear only as hang guards
//! ("the monitor returns at all within 60 s").

// The shared harnesses start tmux and sshd as children of the test (a
// private server, a daemon that must outlive one call), which `probes::run`
// cannot do; this file's own commands go through `probes::run`.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use probes::run::{Invocation, Limits, run};

use bmb_testkit::sshd;
use bmb_testkit::tmux as private_tmux;
use bmb_testkit::{entries, processes_mentioning};

use private_tmux::{PrivateTmux, capture_path};
use sshd::Sshd;

const NUDGE: &str = "Please continue with the next step of your plan.";
/// Typed by the test after the monitor has ended: every byte the monitor
/// sent is in the pane's record before it, so "received nothing" is exact.
const SENTINEL: &str = "SENTINEL-END";

/// What one run of the monitor printed.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs the real binary to completion; 60 s is a hang guard, not a timing.
fn monitor(args: &[&str], env: &[(&str, &Path)]) -> Ran {
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command.args(args).envs(env.iter().copied());
    let output = bmb_testkit::bin::run(command, b"", Duration::from_secs(60));
    Ran {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A real capture replayed in a new session whose program records every
/// line typed into it; returns that record's path.
fn replay(server: &PrivateTmux, session: &str, case: &str) -> PathBuf {
    let received = server.dir.path().join(format!("{session}.received"));
    std::fs::write(&received, "").unwrap();
    server.replay(session, &capture_path(case), &received);
    received
}

/// Types the sentinel line into the pane and returns everything the pane's
/// program received before it: whatever the monitor sent, it arrived first.
fn received_before_sentinel(server: &PrivateTmux, session: &str, received: &Path) -> String {
    let target = format!("={session}:");
    server.tmux(&["send-keys", "-t", &target, "-l", SENTINEL]);
    server.tmux(&["send-keys", "-t", &target, "Enter"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let bytes = std::fs::read_to_string(received).unwrap();
        if let Some(before) = bytes.strip_suffix(&format!("{SENTINEL}\n")) {
            return before.to_string();
        }
        assert!(
            Instant::now() < deadline,
            "{session} never received the sentinel; it has {bytes:?}"
        );
        thread::sleep(Duration::from_millis(30));
    }
}

fn socket(server: &PrivateTmux) -> &str {
    server.socket.to_str().unwrap()
}

/// The absolute path of the tmux binary (remote and local are one machine).
fn tmux_path() -> String {
    let outcome = run(
        &Invocation::shell("command -v tmux"),
        &Limits::with_timeout(Duration::from_secs(10)),
    );
    let path = outcome
        .success_stdout()
        .map(|o| o.text().trim().to_string())
        .unwrap_or_default();
    assert!(path.starts_with('/'), "tmux is not installed: {path:?}");
    path
}

/// A tmux wrapper at `path` that appends one line per call to `log` (its
/// `$HOME`, then each argument in brackets) and then execs the real tmux.
fn tmux_wrapper(path: &Path, log: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let script = format!(
        "#!/bin/sh\n\
         {{ printf 'HOME=%s ' \"$HOME\"; for a in \"$@\"; do printf '[%s]' \"$a\"; done; printf '\\n'; }} >> '{log}'\n\
         exec '{tmux}' \"$@\"\n",
        log = log.display(),
        tmux = tmux_path(),
    );
    std::fs::write(path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn a_remote_stalled_pane_is_captured_and_nudged_through_ssh_text_then_enter_apart() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    let received = replay(&server, "stall", "GOLDEN-stalled-real");
    // `$HOME` is the REMOTE shell's: the harness's remote home, where the wrapper is.
    let log = dir.path().join("remote-tmux.log");
    tmux_wrapper(&sshd.remote_home().join(".bmb-test/tmux"), &log);

    let poll = || {
        monitor(
            &[
                "watch",
                "--once",
                "--ssh-config",
                sshd.config().to_str().unwrap(),
                "-S",
                socket(&server),
                "--tmux-bin",
                "$HOME/.bmb-test/tmux",
                "box:stall",
            ],
            &[("XDG_STATE_HOME", &dir.path().join("state"))],
        )
    };
    // The first poll of a target waits for its screen to hold still one interval.
    poll();
    let ran = poll();
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    let lines: Vec<&str> = ran.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", ran.stdout);
    assert!(
        lines[0].starts_with("MONITOR · box:stall · STALLED · ")
            && lines[0].contains(" · nudged (1/5) · "),
        "{}\nstderr: {}",
        lines[0],
        ran.stderr
    );

    // The pane got the nudge and one Enter, and nothing else.
    let got = received_before_sentinel(&server, "stall", &received);
    assert_eq!(got, format!("{NUDGE}\n"));

    // Through ssh, the text and the Enter were two separate tmux calls.
    let calls = std::fs::read_to_string(&log).unwrap();
    let sends = lines_with(&calls, "[send-keys]");
    assert_eq!(sends.len(), 2, "{calls}");
    // Both to the pane that was captured (`%N`), not to whatever is active by then.
    let pane = calls
        .split("[send-keys][-t][")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or("");
    assert!(pane.starts_with('%'), "{calls}");
    assert!(
        sends[0].ends_with(&format!("[send-keys][-t][{pane}][-l][--][{NUDGE}]")),
        "{calls}"
    );
    assert!(
        sends[1].ends_with(&format!("[send-keys][-t][{pane}][Enter]")),
        "{calls}"
    );
    assert_eq!(
        lines_with(&calls, "[capture-pane][-p][-e][-t][=stall:]").len(),
        1,
        "{calls}"
    );
    assert!(
        sshd.log().contains("Accepted publickey for root"),
        "{}",
        sshd.log()
    );
}

#[test]
fn a_remote_question_pane_is_escalated_through_the_alert_command_once_and_gets_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    let received = replay(&server, "ask", "GOLDEN-question-real");
    let alerts = dir.path().join("alerts.txt");
    let alert_cmd = format!(
        "{{ cat; echo; env | grep '^BMB_' | sort; echo '--- end of alert'; }} >> '{}'",
        alerts.display()
    );
    let args = [
        "watch",
        "--once",
        "--ssh-config",
        sshd.config().to_str().unwrap(),
        "-S",
        socket(&server),
        "--alert-cmd",
        &alert_cmd,
        "box:ask",
    ];
    let state = dir.path().join("state");
    let ran = monitor(&args, &[("XDG_STATE_HOME", &state)]);
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    assert!(
        ran.stdout
            .starts_with("MONITOR · box:ask · QUESTION · work=? · progress=? · nudges 0/5 · escalated to the operator, NOT answered · "),
        "{}\nstderr: {}",
        ran.stdout,
        ran.stderr
    );
    let alert = std::fs::read_to_string(&alerts).unwrap();
    for verbatim in [
        "The classifier is done. Should the monitor page on QUESTION immediately or after one confirming poll?",
        "1. Immediately",
        "Escalate on the first poll that sees the dialog",
        "2. After 2 polls",
        "BMB_REASON=question",
        "BMB_STATE=QUESTION",
        "BMB_TARGET=box:ask",
        // The host's server as written: its socket file is the host's to resolve.
        &format!("BMB_SERVER={}\n", socket(&server)),
    ] {
        assert!(
            alert.contains(verbatim),
            "missing {verbatim:?} in:\n{alert}"
        );
    }
    assert!(!alert.contains('\u{1b}'), "{alert:?}");

    // A second monitor on the same state: the question is not paged again.
    let again = monitor(&args, &[("XDG_STATE_HOME", &state)]);
    assert_eq!(again.code, Some(0), "stderr: {}", again.stderr);
    assert!(
        again.stdout.starts_with("MONITOR · box:ask · QUESTION · ")
            && !again.stdout.contains("escalated"),
        "{}",
        again.stdout
    );
    let alert = std::fs::read_to_string(&alerts).unwrap();
    assert_eq!(alert.matches("--- end of alert").count(), 1, "{alert}");

    // Not one key reached the question.
    assert_eq!(received_before_sentinel(&server, "ask", &received), "");
}

#[test]
fn a_tmux_bin_holding_home_is_expanded_by_the_remote_shell_not_locally() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    let received = replay(&server, "work", "working-bash-sleep");
    // The same relative path under two homes: the remote shell's, and the
    // monitor's own. Whichever wrapper runs says who expanded `$HOME`.
    let remote_log = dir.path().join("remote.log");
    let local_log = dir.path().join("local.log");
    let local_home = dir.path().join("local-home");
    tmux_wrapper(&sshd.remote_home().join(".bmb-test/tmux"), &remote_log);
    tmux_wrapper(&local_home.join(".bmb-test/tmux"), &local_log);

    let ran = monitor(
        &[
            "watch",
            "--once",
            "--ssh-config",
            sshd.config().to_str().unwrap(),
            "-S",
            socket(&server),
            "--tmux-bin",
            "$HOME/.bmb-test/tmux",
            "box:work",
        ],
        &[
            ("XDG_STATE_HOME", &dir.path().join("state")),
            ("HOME", &local_home),
        ],
    );
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    assert!(
        ran.stdout
            .starts_with("MONITOR · box:work · WORKING · work=? · progress=? · nudges 0/5 · "),
        "{}\nstderr: {}",
        ran.stdout,
        ran.stderr
    );
    assert_eq!(received_before_sentinel(&server, "work", &received), "");
    assert!(
        !local_log.exists(),
        "$HOME was expanded locally: {}",
        std::fs::read_to_string(&local_log).unwrap_or_default()
    );
    let calls = std::fs::read_to_string(&remote_log).unwrap_or_default();
    let home = format!("HOME={} ", sshd.remote_home().display());
    assert!(
        !calls.is_empty() && calls.lines().all(|l| l.starts_with(&home)),
        "the remote wrapper did not run, or not under the remote HOME: {calls:?}"
    );
    assert_eq!(lines_with(&calls, "[capture-pane]").len(), 1, "{calls}");
}

#[test]
fn list_shows_remote_sessions_with_the_alias_prefix_and_the_format_arrives_intact() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    server.session("alpha", "exec cat");
    server.session("beta", "exec cat");
    // An absolute wrapper, so the local listing runs it too; its `HOME=` field
    // tells the remote calls (the harness's remote home) from the local one.
    let log = dir.path().join("tmux.log");
    let wrapper = dir.path().join("bin/tmux");
    tmux_wrapper(&wrapper, &log);
    let local_home = dir.path().join("local-home");
    std::fs::create_dir(&local_home).unwrap();

    let ran = monitor(
        &[
            "list",
            "--ssh-config",
            sshd.config().to_str().unwrap(),
            "-S",
            socket(&server),
            "--tmux-bin",
            wrapper.to_str().unwrap(),
        ],
        &[("HOME", &local_home)],
    );
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    let rows: Vec<&str> = ran.stdout.lines().collect();
    assert_eq!(
        rows,
        ["alpha\t-", "beta\t-", "box:alpha\t-", "box:beta\t-"],
        "stderr: {}",
        ran.stderr
    );
    // The remote shell received `#{session_name}` quoted: unquoted, `#`
    // starts a comment and tmux would get `-F` with no argument. `-u`
    // first: names are read as UTF-8 whatever the remote locale.
    let calls = std::fs::read_to_string(&log).unwrap();
    let remote = format!(
        "HOME={} [-u][-S][{}][list-sessions][-F][#{{session_name}}]",
        sshd.remote_home().display(),
        socket(&server)
    );
    assert_eq!(calls.lines().filter(|l| *l == remote).count(), 1, "{calls}");
}

/// A TCP server on 127.0.0.1 that accepts, optionally says `greeting`, and
/// then holds every connection open without another byte.
struct Mute {
    port: u16,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Mute {
    fn start(greeting: &'static [u8]) -> Mute {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, halt) = (Arc::clone(&accepted), Arc::clone(&stop));
        let thread = thread::spawn(move || {
            // Held until the listener stops, so no peer ever sees an EOF.
            let mut held: Vec<TcpStream> = Vec::new();
            loop {
                // Once told to stop, drain the queue first: a connection the
                // kernel completed is counted even if we had not accepted it yet.
                let stopping = halt.load(Ordering::SeqCst);
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        let _ = stream.write_all(greeting);
                        held.push(stream);
                        count.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) if stopping => return,
                    Err(_) => thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Mute {
            port,
            accepted,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops listening and says how many connections ever arrived.
    fn finish(mut self) -> usize {
        self.halt();
        self.accepted.load(Ordering::SeqCst)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Mute {
    fn drop(&mut self) {
        self.halt();
    }
}

#[test]
fn a_host_that_accepts_tcp_and_never_answers_cannot_freeze_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    // One never says a word; the other sends an ssh banner and then goes
    // silent, past the point where ssh's ConnectTimeout applies.
    let silent = Mute::start(b"");
    let greets = Mute::start(b"SSH-2.0-OpenSSH_9.2 bmb-test\r\n");
    let config = dir.path().join("hang_ssh_config");
    std::fs::write(
        &config,
        format!(
            "{}{}",
            sshd::host_block("silent", silent.port, None),
            sshd::host_block("greets", greets.port, None)
        ),
    )
    .unwrap();
    let config_text = config.to_str().unwrap();

    let ran = monitor(
        &[
            "watch",
            "--once",
            "--capture-timeout",
            "2",
            "--ssh-config",
            config_text,
            "silent:s",
            "greets:s",
        ],
        &[("XDG_STATE_HOME", &dir.path().join("state"))],
    );
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    for target in ["silent:s", "greets:s"] {
        let lines = lines_with(&ran.stdout, &format!("MONITOR · {target} · ? · "));
        assert_eq!(lines.len(), 1, "{}", ran.stdout);
        assert!(lines[0].contains(" · capture failed · "), "{}", lines[0]);
        assert_eq!(
            lines_with(&ran.stderr, &format!("{target}: ")).len(),
            1,
            "{}",
            ran.stderr
        );
    }
    assert!(ran.stderr.contains("timed out"), "{}", ran.stderr);
    // No ssh outlived the monitor (checked while the listeners still hold
    // their connections open)...
    assert_eq!(processes_mentioning(config_text), Vec::new());
    // ...and it really got through to both before the wall clock stopped it.
    assert!(silent.finish() >= 1 && greets.finish() >= 1);
}

#[test]
fn hostile_coordinates_are_refused_up_front_with_one_line_and_no_connection() {
    let dir = tempfile::tempdir().unwrap();
    let listener = Mute::start(b"");
    let config = dir.path().join("ssh_config");
    std::fs::write(&config, sshd::host_block("h", listener.port, None)).unwrap();
    let pwned = dir.path().join("pwned");
    let proxy = format!("-oProxyCommand=touch {}:s", pwned.display());
    // The last case: a good target beside a bad one starts nothing either.
    let cases: [&[&str]; 5] = [
        &[&proxy],
        &["h;x:s"],
        &["h:a.b"],
        &["h:$(x)"],
        &["h:s", "h:a.b"],
    ];
    for targets in cases {
        let hostile = targets.join(" ");
        let mut args = vec!["watch", "--once", "--ssh-config", config.to_str().unwrap()];
        // After `--`, so that the target reaches our validation, not clap's.
        args.push("--");
        args.extend(targets);
        let ran = monitor(&args, &[("XDG_STATE_HOME", &dir.path().join("state"))]);
        assert_eq!(ran.code, Some(2), "{hostile}: {}{}", ran.stdout, ran.stderr);
        assert_eq!(ran.stdout, "", "{hostile}");
        let lines: Vec<&str> = ran.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{hostile}: {}", ran.stderr);
        assert!(
            lines[0].starts_with("bmb-monitor: watch: target `"),
            "{hostile}: {}",
            lines[0]
        );
    }
    assert_eq!(listener.finish(), 0, "a refused target was dialled");
    assert!(!pwned.exists(), "ssh ran the ProxyCommand");
}

#[test]
fn claude_codes_session_file_is_read_over_ssh_as_a_second_witness() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    let home = dir.path().join("agent-home");
    let (pid, received) = server.fake_agent("agent", "idle-after-tool-turn", &home);
    private_tmux::write_session_file(&home, pid, "busy", "", 0);
    let watch = |extra: &[&str]| {
        let mut args = vec![
            "watch",
            "--once",
            "--json",
            "--ssh-config",
            sshd.config().to_str().unwrap(),
            "-S",
            socket(&server),
            "box:agent",
        ];
        args.extend(extra);
        let ran = monitor(&args, &[("XDG_STATE_HOME", &dir.path().join("state"))]);
        assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
        serde_json::from_str::<serde_json::Value>(ran.stdout.trim()).expect("one JSON line")
    };
    let busy = watch(&[]);
    assert_eq!(
        (
            busy["state"].as_str(),
            busy["pane_state"].as_str(),
            busy["witness"].as_str()
        ),
        (Some("WORKING"), Some("STALLED"), Some("busy")),
        "the session file was found through the remote /proc: {busy}"
    );
    assert_eq!(
        received_before_sentinel(&server, "agent", &received),
        "",
        "a busy agent is never nudged"
    );
    private_tmux::write_session_file(&home, pid, "idle", "", 0);
    let idle = watch(&[]);
    assert_eq!(
        (idle["state"].as_str(), idle["witness"].as_str()),
        (Some("STALLED"), Some("idle")),
        "{idle}"
    );
    assert_eq!(idle["disagreements"], 0);
}

#[test]
fn a_remote_agent_gone_to_its_shell_is_not_typed_into_and_a_remote_wrapper_still_is() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    // The agent's last frame, then an interactive bash in front of it.
    let typed = dir.path().join("typed");
    server.session(
        "gone",
        &format!(
            "cat '{}'; exec bash --norc --noprofile -i",
            capture_path("GOLDEN-stalled-real").display()
        ),
    );
    server.wait_for("gone", |pane| pane.contains("bash-"));
    // A wrapper: `sh -c` waits in front, the program is its child.
    let received = dir.path().join("wrapped.received");
    server.session(
        "wrapped",
        &format!(
            "cat '{}'; cat > '{}'; true",
            capture_path("GOLDEN-stalled-real").display(),
            received.display()
        ),
    );
    server.wait_for("wrapped", |pane| pane.contains("Survey monitor.rs"));
    let nudge = format!("touch {}", typed.display());
    let poll = || {
        monitor(
            &[
                "watch",
                "--once",
                "--json",
                "--no-witness",
                "--nudge-text",
                &nudge,
                "--ssh-config",
                sshd.config().to_str().unwrap(),
                "-S",
                socket(&server),
                "box:gone",
                "box:wrapped",
            ],
            &[("XDG_STATE_HOME", &dir.path().join("state"))],
        )
    };
    // The first poll of a target waits for its screen to hold still one interval.
    let first = poll();
    let ran = poll();
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    let reports: Vec<serde_json::Value> = ran
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reports[0]["target"], "box:gone");
    assert_eq!(
        reports[0]["not_typed_because"], "agent_exited",
        "{}",
        reports[0]
    );
    assert_eq!(reports[1]["target"], "box:wrapped");
    assert_eq!(reports[1]["typing_safe"], true, "{}", reports[1]);
    // Said by the first poll, which escalated it once.
    let stderr = format!("{}{}", first.stderr, ran.stderr);
    assert!(
        stderr.contains("a shell (bash) is in the foreground"),
        "{stderr}"
    );
    // The wrapper's program got the nudge; the shell got nothing, so nothing ran.
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&received)
        .unwrap_or_default()
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the wrapped pane never got its nudge"
        );
        thread::sleep(Duration::from_millis(30));
    }
    assert!(!typed.exists(), "the nudge ran in the remote shell");
}

#[test]
fn list_skips_an_alias_watch_would_refuse_and_names_it_without_its_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let server = PrivateTmux::new();
    server.session("alpha", "exec cat");
    let config = dir.path().join("ssh_config");
    std::fs::write(
        &config,
        format!(
            "Include {}\nHost evil\u{1b}]0;pwned\u{7}$(id)\n  HostName 127.0.0.1\n",
            sshd.config().display()
        ),
    )
    .unwrap();
    let ran = monitor(
        &[
            "list",
            "--ssh-config",
            config.to_str().unwrap(),
            "-S",
            socket(&server),
        ],
        &[],
    );
    assert_eq!(ran.code, Some(0), "stderr: {}", ran.stderr);
    assert!(
        ran.stdout.lines().any(|l| l.starts_with("box:alpha\t")),
        "{}",
        ran.stdout
    );
    assert!(!ran.stdout.contains("evil"), "{}", ran.stdout);
    assert!(
        ran.stderr.contains("skipping the ssh alias"),
        "{}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains('\u{1b}') && !ran.stderr.contains('\u{7}'),
        "{:?}",
        ran.stderr
    );
}

#[test]
fn each_host_is_one_login_for_the_whole_run_and_its_master_is_closed_on_sigterm_and_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    // A second alias of the same daemon plays a second host.
    // A second alias of the same daemon plays a second host.
    let config = sshd.two_hosts_config(&dir.path().join("two_hosts"), "box2");
    let server = PrivateTmux::new();
    replay(&server, "a", "working-bash-sleep");
    replay(&server, "b", "working-bash-sleep");
    for (round, signal) in [rustix::process::Signal::TERM, rustix::process::Signal::INT]
        .into_iter()
        .enumerate()
    {
        let runtime = dir.path().join(format!("run{round}"));
        std::fs::create_dir(&runtime).unwrap();
        let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
        command
            .args([
                "watch",
                "--interval",
                "1",
                "--ssh-config",
                config.to_str().unwrap(),
                "-S",
                socket(&server),
                "box:a",
                "box2:b",
            ])
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("XDG_STATE_HOME", dir.path().join("state"));
        let mut running = bmb_testkit::bin::Running::start(command);
        // Three cycles over both hosts.
        let reported = |running: &bmb_testkit::bin::Running| {
            let out = running.out();
            ["MONITOR · box:a · ", "MONITOR · box2:b · "]
                .iter()
                .all(|target| out.iter().filter(|l| l.starts_with(target)).count() >= 3)
        };
        assert!(
            bmb_testkit::bin::wait_until(60, || reported(&running)),
            "out: {:?}\nerr: {:?}",
            running.out(),
            running.err()
        );
        // A folder of this run's own, in the runtime folder's.
        let base = runtime.join("bmb-monitor");
        let runs = entries(&base);
        assert_eq!(runs.len(), 1, "{runs:?}");
        let control = base.join(&runs[0]);
        let sockets: Vec<String> = entries(&control)
            .into_iter()
            .filter(|name| name != "lock")
            .collect();
        assert_eq!(sockets.len(), 2, "one master socket per host: {sockets:?}");
        // Every call of every cycle rode on one login per host.
        assert_eq!(
            sshd.log().matches("Accepted publickey for root").count(),
            2 * (round + 1),
            "{}",
            sshd.log()
        );
        let pid = rustix::process::Pid::from_child(&running.child);
        rustix::process::kill_process(pid, signal).unwrap();
        let status = running
            .wait_exit(30)
            .expect("the monitor ends on the signal");
        assert!(status.success(), "{status:?}: {:?}", running.err());
        assert_eq!(
            entries(&base),
            Vec::<String>::new(),
            "sockets or their folder left behind"
        );
        let needle = control.to_string_lossy().into_owned();
        assert!(
            bmb_testkit::bin::wait_until(20, || processes_mentioning(&needle).is_empty()),
            "a master outlived its monitor: {:?}",
            processes_mentioning(&needle)
        );
        assert_eq!(running.err(), Vec::<String>::new());
    }
}

/// Issue 21, item 12: a config file names a host's own tmux server
/// (`[hosts.ALIAS]`), beside the one `[server]` names for this machine; and
/// `--check` checks the files the config names and says which hosts it
/// could and could not reach.
#[test]
fn a_host_has_its_own_tmux_server_and_check_says_which_hosts_it_reached() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let here = PrivateTmux::new();
    let there = PrivateTmux::new();
    replay(&here, "local-one", "GOLDEN-question-real");
    replay(&there, "remote-one", "GOLDEN-question-real");
    let dead = dir.path().join("ssh_config");
    std::fs::write(
        &dead,
        format!(
            "{}{}",
            std::fs::read_to_string(sshd.config()).unwrap(),
            sshd::host_block("deadbox", sshd::free_port(), None)
        ),
    )
    .unwrap();
    let config = |hosts: &str, targets: &str| {
        let path = dir.path().join("fleet.toml");
        std::fs::write(
            &path,
            format!(
                "[server]\nsocket_path = '{}'\nssh_config = '{}'\n\n{hosts}\n{targets}",
                socket(&here),
                dead.display()
            ),
        )
        .unwrap();
        path
    };
    let both = "[[targets]]\ntarget = \"local-one\"\n\n[[targets]]\ntarget = \"box:remote-one\"\n";
    let hosts = format!("[hosts.box]\nsocket_path = '{}'\n", socket(&there));
    let file = config(&hosts, both);
    let state = dir.path().join("state");
    let ran = monitor(
        &["watch", "--config", file.to_str().unwrap(), "--once"],
        &[("XDG_STATE_HOME", &state)],
    );
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    for target in ["local-one", "box:remote-one"] {
        assert!(
            ran.stdout
                .contains(&format!("MONITOR · {target} · QUESTION · ")),
            "{target}: {}\n{}",
            ran.stdout,
            ran.stderr
        );
    }
    // Without its own table, the host is asked on [server]'s socket, which has no such session.
    let file = config("", both);
    let ran = monitor(
        &["watch", "--config", file.to_str().unwrap(), "--once"],
        &[("XDG_STATE_HOME", &state)],
    );
    assert!(
        ran.stderr.contains("box:remote-one") && !ran.stdout.contains("box:remote-one · QUESTION"),
        "{}\n{}",
        ran.stdout,
        ran.stderr
    );

    // --check: the reached host said on stdout, the unreachable one named, exit 1.
    let with_dead = format!("{both}\n[[targets]]\ntarget = \"deadbox:x\"\n");
    let file = config(&hosts, &with_dead);
    let ran = monitor(
        &["watch", "--config", file.to_str().unwrap(), "--check"],
        &[("XDG_STATE_HOME", &state)],
    );
    assert_eq!(ran.code, Some(1), "{}\n{}", ran.stdout, ran.stderr);
    assert!(ran.stdout.starts_with("ok: 3 targets\n"), "{}", ran.stdout);
    assert!(
        ran.stdout
            .contains("reached box: 1 session on its tmux server"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stderr.contains("cannot reach host deadbox: ") && !ran.stderr.contains("host box:"),
        "{}",
        ran.stderr
    );
    // A file the config names that is not there is named, with its key: exit 2.
    let path = dir.path().join("fleet.toml");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace(&dead.display().to_string(), "/nonexistent/ssh_config");
    std::fs::write(&path, text).unwrap();
    let ran = monitor(
        &["watch", "--config", path.to_str().unwrap(), "--check"],
        &[("XDG_STATE_HOME", &state)],
    );
    assert_eq!(ran.code, Some(2), "{}\n{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr
            .contains("server.ssh_config: cannot read /nonexistent/ssh_config: No such file"),
        "{}",
        ran.stderr
    );
    // A host table no target is on is a mistake of the file.
    let file = config(&hosts, "[[targets]]\ntarget = \"local-one\"\n");
    let ran = monitor(
        &["watch", "--config", file.to_str().unwrap(), "--check"],
        &[("XDG_STATE_HOME", &state)],
    );
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("hosts.box: no target names this host"),
        "{}",
        ran.stderr
    );
}

/// Issue 21, item 10 on a remote host: a pattern of sessions is matched
/// against the host's own pane listing, inside the cycle's one round trip.
#[test]
fn a_pattern_of_sessions_on_a_remote_host_finds_a_new_session_from_the_cycles_listing() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let local = PrivateTmux::new();
    let there = PrivateTmux::new();
    replay(&there, "agent-1", "GOLDEN-question-real");
    replay(&there, "other", "GOLDEN-question-real");
    let file = dir.path().join("fleet.toml");
    std::fs::write(
        &file,
        format!(
            "[defaults]\ninterval = 1\n[server]\nsocket_path = '{}'\nssh_config = '{}'\n\
             [hosts.box]\nsocket_path = '{}'\n[[targets]]\nhost = \"box\"\nsessions = \"agent-*\"\n",
            socket(&local),
            sshd.config().display(),
            socket(&there)
        ),
    )
    .unwrap();
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .args(["watch", "--config", file.to_str().unwrap()])
        .env("XDG_STATE_HOME", dir.path().join("state"));
    let running = bmb_testkit::bin::Running::start(command);
    let polled = |target: &str| {
        running
            .out()
            .iter()
            .any(|l| l.starts_with(&format!("MONITOR · {target} · QUESTION · ")))
    };
    assert!(
        bmb_testkit::bin::wait_until(60, || polled("box:agent-1")),
        "{:?}\n{:?}",
        running.out(),
        running.err()
    );
    replay(&there, "agent-2", "GOLDEN-question-real");
    assert!(
        bmb_testkit::bin::wait_until(60, || polled("box:agent-2")),
        "{:?}\n{:?}",
        running.out(),
        running.err()
    );
    assert!(!running.out().iter().any(|l| l.contains("box:other")));
    assert!(
        running.err().iter().any(|l| l
            == "bmb-monitor: watch: watching box:agent-2 (found by sessions = \"box:agent-*\")"),
        "{:?}",
        running.err()
    );
}

/// Issue 19: with the remote tmux server stopped (`kill -STOP`), each cycle
/// left one stuck `tmux list-panes` on the host (9 after 30 s), all
/// outliving the monitor. Every tmux call on the host now runs under a
/// deadline of its own there: while the server stays stopped the stuck
/// clients do not pile up, the other host's (here: this machine's) target is
/// polled every cycle, and once the monitor is gone none is left past its
/// deadline.
#[test]
fn a_stopped_remote_tmux_server_leaves_no_pile_of_stuck_clients_and_none_past_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let here = PrivateTmux::new();
    let there = PrivateTmux::new();
    here.session("local-one", "exec sleep 600");
    there.session("remote-one", "exec sleep 600");
    let file = dir.path().join("fleet.toml");
    std::fs::write(
        &file,
        format!(
            "[defaults]\ninterval = \"1s\"\ncapture_timeout = \"2s\"\n\n[server]\nsocket_path = '{}'\nssh_config = '{}'\n\n[hosts.box]\nsocket_path = '{}'\n\n[[targets]]\ntarget = \"local-one\"\n\n[[targets]]\ntarget = \"box:remote-one\"\n",
            socket(&here),
            sshd.config().display(),
            socket(&there),
        ),
    )
    .unwrap();
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .args(["watch", "--config", file.to_str().unwrap()])
        .env("XDG_STATE_HOME", dir.path().join("state"));
    let mut watcher = bmb_testkit::bin::Running::start(command);
    let polls = |watcher: &bmb_testkit::bin::Running, target: &str| {
        let needle = format!("MONITOR · {target} · ");
        watcher.out().iter().filter(|l| l.contains(&needle)).count()
    };
    assert!(
        bmb_testkit::bin::wait_until(60, || polls(&watcher, "box:remote-one") >= 1),
        "{:?}\n{:?}",
        watcher.out(),
        watcher.err()
    );

    let pid_line = there.tmux(&["display-message", "-p", "#{pid}"]);
    let server_pid: i32 = String::from_utf8_lossy(&pid_line.stdout)
        .trim()
        .parse()
        .unwrap();
    let server = rustix::process::Pid::from_raw(server_pid).unwrap();
    // The stuck clients: tmux clients of the stopped server's socket (a
    // process run as `tmux`, not the server; the session's own shell and
    // ssh name the socket in their script).
    let there_socket = socket(&there).to_string();
    let stuck = || {
        processes_mentioning(&there_socket)
            .into_iter()
            .filter(|(pid, cmdline)| *pid as i32 != server_pid && cmdline.starts_with("tmux "))
            .count()
    };
    rustix::process::kill_process(server, rustix::process::Signal::STOP).unwrap();
    struct Resume(rustix::process::Pid);
    impl Drop for Resume {
        fn drop(&mut self) {
            let _ = rustix::process::kill_process(self.0, rustix::process::Signal::CONT);
        }
    }
    let _resume = Resume(server);

    // Ten cycles of this machine's target while the host's server is
    // stopped: the host's stuck clients never pile up (before: one more
    // per cycle).
    let start = polls(&watcher, "local-one");
    let mut most = 0;
    let mut worst = Vec::new();
    let mut seen = start;
    while seen < start + 10 {
        assert!(
            bmb_testkit::bin::wait_until(60, || polls(&watcher, "local-one") > seen),
            "this machine's target is still polled: {:?}",
            watcher.err()
        );
        seen = polls(&watcher, "local-one");
        if stuck() > most {
            most = stuck();
            worst = processes_mentioning(&there_socket);
        }
    }
    assert!(
        most <= 2,
        "{most} stuck tmux clients at once on the host: {worst:#?}"
    );
    assert!(
        watcher
            .err()
            .iter()
            .any(|l| l.contains("box:remote-one") || l.contains("box")),
        "the host's trouble is said: {:?}",
        watcher.err()
    );

    // The monitor ends; what it started on the host ends at its deadline
    // there, with the server still stopped.
    watcher.signal(rustix::process::Signal::TERM);
    assert!(watcher.wait_exit(60).is_some(), "ends on SIGTERM");
    assert!(
        bmb_testkit::bin::wait_until(30, || stuck() == 0),
        "left on the host after the monitor ended: {:?}",
        processes_mentioning(&there_socket)
    );
}

/// `pid` and every live descendant (a daemon and its connections' processes).
fn process_tree(pid: u32) -> Vec<u32> {
    let table = probes::os::procfs::ProcessTable::scan().expect("/proc");
    let root = probes::os::pid::Pid::new(pid).expect("a pid");
    std::iter::once(pid)
        .chain(table.descendants(root))
        .collect()
}

fn signal_tree(pids: &[u32], signal: rustix::process::Signal) {
    for &pid in pids {
        if let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

/// The stdout lines from `from` on until the first line of `target` that
/// says `capture failed` (waited for), and that line's index.
fn lines_until_failed(
    watcher: &bmb_testkit::bin::Running,
    from: usize,
    target: &str,
) -> (Vec<String>, usize) {
    let needle = format!("MONITOR · {target} · ");
    let failed = |lines: &[String]| {
        lines
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, l)| l.contains(&needle) && l.contains(" · capture failed · "))
            .map(|(index, _)| index)
    };
    assert!(
        bmb_testkit::bin::wait_until(60, || failed(&watcher.out()).is_some()),
        "{target} never failed: {:?}\n{:?}",
        watcher.out(),
        watcher.err()
    );
    let out = watcher.out();
    let at = failed(&out).unwrap();
    (out[from..at].to_vec(), at)
}

#[test]
fn a_hung_hosts_first_cycle_and_a_hang_mid_run_leave_the_other_hosts_lines_at_their_pace() {
    let dir = tempfile::tempdir().unwrap();
    let hung = Sshd::start("boxa", &[]);
    let fine = Sshd::start("boxb", &[]);
    let ssh_config = dir.path().join("ssh_config");
    std::fs::write(
        &ssh_config,
        format!(
            "{}{}",
            std::fs::read_to_string(hung.config()).unwrap(),
            fine.host_block("boxb")
        ),
    )
    .unwrap();
    let server = PrivateTmux::new();
    replay(&server, "a", "working-bash-sleep");
    replay(&server, "b", "working-bash-sleep");
    let file = dir.path().join("fleet.toml");
    std::fs::write(
        &file,
        format!(
            "[defaults]\ninterval = 1\ncapture_timeout = 2\n\n[server]\nsocket_path = '{}'\nssh_config = '{}'\n\n[[targets]]\ntarget = \"boxa:a\"\n\n[[targets]]\ntarget = \"boxb:b\"\n",
            socket(&server),
            ssh_config.display(),
        ),
    )
    .unwrap();
    struct Resume(Vec<u32>);
    impl Drop for Resume {
        fn drop(&mut self) {
            signal_tree(&self.0, rustix::process::Signal::CONT);
        }
    }
    let mut resume = Resume(Vec::new());
    let healthy = |lines: &[String]| {
        lines
            .iter()
            .filter(|l| l.contains("MONITOR · boxb:b · "))
            .count()
    };

    // The host hangs before the watcher starts: its first cycle.
    let stopped = process_tree(hung.pid());
    signal_tree(&stopped, rustix::process::Signal::STOP);
    resume.0.extend(&stopped);
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .args(["watch", "--config", file.to_str().unwrap()])
        .env("XDG_STATE_HOME", dir.path().join("state"));
    let mut watcher = bmb_testkit::bin::Running::start(command);
    // The other host's lines came while the stopped one's request was out
    // (it cannot answer), not after its deadline: before, the first cycle
    // printed nothing until the stopped host failed.
    let (before, at) = lines_until_failed(&watcher, 0, "boxa:a");
    assert!(healthy(&before) >= 2, "{before:#?}");

    // It runs again and answers; then it hangs mid-run.
    signal_tree(&stopped, rustix::process::Signal::CONT);
    let answered = |from: usize| {
        watcher.out()[from..]
            .iter()
            .any(|l| l.contains("MONITOR · boxa:a · WORKING · "))
    };
    assert!(
        bmb_testkit::bin::wait_until(60, || answered(at)),
        "{:?}\n{:?}",
        watcher.out(),
        watcher.err()
    );
    let stopped = process_tree(hung.pid());
    assert!(stopped.len() > 1, "no connection to the host: {stopped:?}");
    signal_tree(&stopped, rustix::process::Signal::STOP);
    resume.0.extend(&stopped);
    let from = watcher.out().len();
    let (during, at) = lines_until_failed(&watcher, from, "boxa:a");
    // One cycle may have been on its way when the host stopped; the next
    // ones did not wait for it.
    assert!(healthy(&during) >= 2, "{during:#?}");
    // And the other host goes on after it failed.
    assert!(
        bmb_testkit::bin::wait_until(60, || healthy(&watcher.out()[at..]) >= 2),
        "{:?}",
        watcher.out()
    );
    // The host runs again, then the watcher ends and closes its masters.
    drop(resume);
    watcher.signal(rustix::process::Signal::TERM);
    assert!(watcher.wait_exit(30).is_some(), "the watcher did not end");
}

/// A reload that names another tmux server for a host reads and types
/// there from the next cycle: the host's loop, started for the old server,
/// kept reading it while the nudges went to the new one, into another
/// session (found by review).
#[test]
fn a_reload_naming_another_server_for_a_host_reads_that_server() {
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    let old = PrivateTmux::new();
    let new = PrivateTmux::new();
    replay(&old, "agent", "working-bash-sleep");
    replay(&new, "agent", "GOLDEN-question-real");
    let path = dir.path().join("fleet.toml");
    let write = |server: &PrivateTmux| {
        std::fs::write(
            &path,
            format!(
                "[server]\nssh_config = '{}'\n\n[defaults]\ninterval = 1\n\n[hosts.box]\nsocket_path = '{}'\n\n\
                 [[targets]]\ntarget = \"box:agent\"\n",
                sshd.config().display(),
                socket(server)
            ),
        )
        .unwrap();
    };
    write(&old);
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .args(["watch", "--config", path.to_str().unwrap()])
        .env("XDG_STATE_HOME", dir.path().join("state"));
    let monitor = bmb_testkit::bin::Running::start(command);
    let polled = |state: &str| {
        monitor
            .out()
            .iter()
            .any(|l| l.starts_with(&format!("MONITOR · box:agent · {state} · ")))
    };
    assert!(
        bmb_testkit::bin::wait_until(60, || polled("WORKING")),
        "{:?}\n{:?}",
        monitor.out(),
        monitor.err()
    );
    write(&new);
    monitor.signal(rustix::process::Signal::HUP);
    assert!(
        bmb_testkit::bin::wait_until(60, || polled("QUESTION")),
        "the old server is still read: {:?}\n{:?}",
        monitor.out(),
        monitor.err()
    );
    assert!(
        monitor
            .err()
            .iter()
            .any(|l| l.starts_with("bmb-monitor: watch: [hosts.box] names another tmux server")),
        "{:?}",
        monitor.err()
    );
}
