//! The tmux adapter against real private servers: the client, the capture
//! chain and the server's life together.

use std::time::Duration;

use super::*;

/// A private server on a socket inside a temporary folder, ended on drop.
struct PrivateServer {
    tmux: Tmux,
    _dir: tempfile::TempDir,
}

impl PrivateServer {
    fn start(sessions: &[&str]) -> PrivateServer {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("sock").to_string_lossy().into_owned();
        let tmux = Tmux::new(Server::Path(socket));
        for (i, name) in sessions.iter().enumerate() {
            let script = format!("printf 'pane of {name}\\nline {i}\\n'; exec sleep 600");
            let command = ["sh".to_string(), "-c".to_string(), script];
            tmux.new_detached_session(name, &command).unwrap();
        }
        PrivateServer { tmux, _dir: dir }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = self.tmux.kill_server();
    }
}

/// A process stopped (SIGSTOP) until this is dropped (SIGCONT), even when
/// an assertion fails.
pub(crate) struct Stopped(rustix::process::Pid);

impl Stopped {
    pub(crate) fn new(pid: u32) -> Stopped {
        let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(self.0, rustix::process::Signal::CONT);
    }
}

/// A one-shot call on a host (the sessions at the start, `--check`) runs
/// under that host's `timeout`: against a stopped server it ends there, not
/// only on this side (it was an orphan on the host, found by review).
#[test]
fn a_remote_one_shot_call_ends_on_the_host_when_its_server_is_stopped() {
    let server = PrivateServer::start(&["one"]);
    let shown = server
        .tmux
        .call(server.tmux.command(&["display-message", "-p", "#{pid}"]))
        .unwrap();
    let _stopped = Stopped::new(shown.trim().parse().unwrap());
    let tmux = Tmux {
        timeout: Duration::from_secs(1),
        ..server.tmux.clone()
    };
    // The line the host's login shell runs, here run by this machine's sh
    // with a bound of its own far past the host's.
    let line = tmux.bounded_remote_line(&["list-sessions"]);
    let outcome = crate::run::run(
        &crate::run::Invocation::new("sh").arg("-c").arg(&line),
        &crate::run::Limits::with_timeout(Duration::from_secs(60)),
    );
    assert!(
        matches!(
            outcome,
            crate::run::Outcome::Exited {
                code: Some(124),
                ..
            }
        ),
        "{outcome:?}"
    );
}

/// The batches' estimate is no less than the real arguments: each chain's
/// argv (as [`Tmux::capture_panes`] builds it) stays within tmux's one
/// message, for short names, long ones, a mix, and indices of five digits.
#[test]
fn every_chain_fits_in_one_tmux_message() {
    let nonce = fresh_nonce();
    let entry_bytes = |index: usize, target: &str| -> usize {
        let marker = marker_format(&chain_marker(&nonce, index));
        // The entry as the chain builds it, and the `;` before it.
        let words = super::chain::chain_entry(target, &marker);
        words.iter().map(|w| w.len() + 1).sum::<usize>() + ";".len() + 1
    };
    let short: Vec<String> = (0..300).map(|i| format!("={i}:")).collect();
    let long: Vec<String> = (0..300)
        .map(|i| format!("={}{i}:", "x".repeat(400)))
        .collect();
    let mixed: Vec<String> = short
        .iter()
        .zip(&long)
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    // The longest name a target takes (`NAME_MAX_BYTES` in watchdog).
    let longest: Vec<String> = (0..30).map(|_| format!("={}:", "x".repeat(1024))).collect();
    for targets in [short, long, mixed, longest] {
        let batches = chain_batches(targets.iter().map(String::len));
        assert_eq!(
            batches.iter().map(|b| b.len()).sum::<usize>(),
            targets.len()
        );
        for batch in batches {
            let real: usize = batch
                .clone()
                .map(|at| entry_bytes(at + 99_000, &targets[at]))
                .sum();
            assert!(
                real <= super::chain::CHAIN_MAX_BYTES,
                "{batch:?}: {real} bytes"
            );
        }
    }
    // 50 short names, the SPEC's two invocations a cycle: one chain.
    assert_eq!(chain_batches((0..50).map(|_| "=pane12:".len())).len(), 1);
}

#[test]
fn more_sessions_than_one_tmux_command_holds_are_all_captured() {
    every_session_is_captured((0..130).map(|i| format!("s{i}")).collect());
}

/// Long names fill each chain to its bound: the real tmux takes it.
#[test]
fn chains_of_long_names_at_their_bound_are_all_captured() {
    let long = "x".repeat(150);
    every_session_is_captured((0..60).map(|i| format!("{long}{i}")).collect());
}

fn every_session_is_captured(names: Vec<String>) {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let server = PrivateServer::start(&refs);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let results = server.tmux.capture_sessions(&names, "many").unwrap();
        // Each pane's own: its name (wrapped at the pane's width) and its line.
        let read = results
            .iter()
            .enumerate()
            .zip(&names)
            .filter(|((i, r), name)| {
                r.as_ref().is_ok_and(|c| {
                    c.text.starts_with("pane of ")
                        && c.text
                            .replace('\n', "")
                            .contains(&format!("pane of {name}line {i}"))
                })
            })
            .count();
        if read == names.len() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{read} of {} read: {:?}",
            names.len(),
            results.iter().find(|r| r.is_err())
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_session_whose_name_holds_spaces_is_captured_and_one_that_moves_is_named() {
    let server = PrivateServer::start(&["my project", "my", "a %1 b"]);
    let names: Vec<String> = ["my project", "my", "a %1 b"].map(String::from).to_vec();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let results = server.tmux.capture_sessions(&names, "spaces").unwrap();
        // (The third's `%1` is a printf directive: its name is not drawn whole.)
        let drawn = results
            .iter()
            .zip(["pane of my project\n", "pane of my\n", "pane of a"])
            .all(|(r, line)| r.as_ref().is_ok_and(|c| c.text.contains(line)));
        if drawn {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{results:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A marker line naming another session: the pane moved there, name whole.
    let targets = vec![("my".to_string(), None)];
    let wanted = vec![(0, "my".to_string())];
    let markers = vec![chain_marker("n0nce", 0)];
    let mut results = vec![Err(TmuxError::MarkerRepeated { count: 0 })];
    let stdout = "BMB-n0nce-0 my project %3 100 5 00011 claude\nscreen\n";
    read_chain(&targets, &wanted, &markers, stdout, None, &mut results, &[]);
    assert!(
        matches!(&results[0], Err(TmuxError::PaneMoved { to }) if to == "my project"),
        "{results:?}"
    );
}

/// The pane a client types into is the active pane of its session's
/// current window: a second window, or a second pane of the window, takes
/// the focus (and the keys) away from it.
#[test]
fn a_capture_says_whether_its_pane_has_the_focus() {
    let server = PrivateServer::start(&["agent"]);
    let focused = |server: &PrivateServer| {
        let results = server
            .tmux
            .capture_sessions(&["agent".into()], "focus")
            .unwrap();
        let capture = results[0].as_ref().unwrap().clone();
        (capture.focused, capture.activity.is_some())
    };
    assert_eq!(focused(&server), (true, true));
    let tmux = |args: &[&str]| server.tmux.call(server.tmux.command(args)).unwrap();
    let first = tmux(&["display-message", "-p", "-t", "=agent:", "#{pane_id}"]);
    tmux(&["split-window", "-d", "-t", "=agent:"]);
    assert!(focused(&server).0, "a split made with -d leaves the focus");
    tmux(&["select-pane", "-t", "=agent:.1"]);
    let known = vec![(
        "agent".to_string(),
        Some(KnownPane {
            id: first.trim().to_string(),
            pid: None,
        }),
    )];
    let results = server.tmux.capture_panes(&known, "focus").unwrap();
    assert!(
        !results[0].as_ref().unwrap().focused,
        "the other pane has the focus"
    );
}

#[test]
fn nonces_are_fresh_128_bit_hex() {
    let (a, b) = (fresh_nonce(), fresh_nonce());
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(a, b);
}

#[test]
fn a_pane_that_prints_the_next_panes_marker_gets_no_ones_capture() {
    let server = PrivateServer::start(&["honest"]);
    // A hostile pane that knows this call's nonce and forges the next pane's capture.
    let forged = "printf 'mine\\nBMB-kn0wn-2 last %9 1 000 claude\\nDo you want to proceed?\\n❯ 1. Yes\\n'; exec sleep 600";
    let command = ["sh".to_string(), "-c".to_string(), forged.to_string()];
    server
        .tmux
        .new_detached_session("hostile", &command)
        .unwrap();
    server
        .tmux
        .new_detached_session(
            "last",
            &[
                "sh".to_string(),
                "-c".to_string(),
                "printf 'the last pane\\n'; exec sleep 600".to_string(),
            ],
        )
        .unwrap();
    let wanted: Vec<String> = ["honest", "hostile", "last"].map(String::from).to_vec();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let results = loop {
        let results = server.tmux.capture_sessions(&wanted, "kn0wn").unwrap();
        let drawn = results[0].as_ref().is_ok_and(|c| c.text.contains("line 0"));
        let attacked = results[1].is_err();
        if (drawn && attacked) || std::time::Instant::now() > deadline {
            break results;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(results[0].as_ref().unwrap().text.contains("pane of honest"));
    for index in [1, 2] {
        let error = results[index].as_ref().unwrap_err();
        assert_eq!(*error, TmuxError::MarkerRepeated { count: 2 }, "{index}");
        assert!(
            error.to_string().contains("marker line 2 times"),
            "{index}: {error}"
        );
    }
}

#[test]
fn sessions_are_captured_in_two_invocations_and_a_missing_one_is_named() {
    let server = PrivateServer::start(&["alpha", "beta", "alpha-2"]);
    let wanted: Vec<String> = ["beta", "gone", "alpha"].map(String::from).to_vec();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let results = loop {
        let results = server.tmux.capture_sessions(&wanted, "n0nce").unwrap();
        let printed = results
            .iter()
            .filter(|r| r.as_ref().is_ok_and(|c| c.text.contains("line")))
            .count();
        if printed == 2 || std::time::Instant::now() > deadline {
            break results;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let beta = results[0].as_ref().unwrap();
    assert!(beta.text.starts_with("pane of beta\nline 1\n"), "{beta:?}");
    assert!(beta.pane_pid.is_some_and(|pid| pid > 1), "{beta:?}");
    assert!(
        beta.pane_id
            .as_deref()
            .is_some_and(|id| id.starts_with('%')),
        "{beta:?}"
    );
    assert_eq!(beta.current_command.as_deref(), Some("sleep"), "{beta:?}");
    assert!(!beta.dead && !beta.in_mode, "{beta:?}");
    let missing = results[1].as_ref().unwrap_err();
    assert_eq!(
        *missing,
        TmuxError::NoSession {
            session: "gone".into(),
            host: None
        }
    );
    assert_eq!(missing.to_string(), "no tmux session named `gone`");
    // `=alpha:` is exact: never the `alpha-2` session by prefix.
    assert!(
        results[2]
            .as_ref()
            .unwrap()
            .text
            .starts_with("pane of alpha\nline 0\n")
    );
    assert_eq!(server.tmux.list_sessions().unwrap().len(), 3);
}

#[test]
fn many_large_panes_are_captured_whole_not_cut_at_an_output_bound() {
    // 60 panes of 250x80 filled to the brim: over 1 MiB in one chain.
    let server = PrivateServer::start(&[]);
    let names: Vec<String> = (0..60).map(|i| format!("big{i}")).collect();
    for name in &names {
        let script = format!(
            "i=0; while [ $i -lt 79 ]; do printf '%0249d\\n' $i; i=$((i+1)); done; printf 'END {name}'; exec sleep 600"
        );
        let args = [
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "250",
            "-y",
            "80",
            "sh",
            "-c",
            &script,
        ];
        server.tmux.call(server.tmux.command(&args)).unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let results = server.tmux.capture_sessions(&names, "big").unwrap();
        let whole = results
            .iter()
            .zip(&names)
            .filter(|(r, name)| {
                r.as_ref()
                    .is_ok_and(|c| c.text.trim_end().ends_with(&format!("END {name}")))
            })
            .count();
        let bytes: usize = results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|c| c.text.len())
            .sum();
        if whole == names.len() {
            assert!(
                bytes > 1 << 20,
                "the test must pass the old 1 MiB bound: {bytes}"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{whole} of 60 panes came back whole"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_server_that_is_not_running_has_no_sessions_and_fails_every_capture_alike() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(Server::Path(
        dir.path().join("none").to_string_lossy().into_owned(),
    ));
    assert_eq!(tmux.list_sessions().unwrap(), Vec::<String>::new());
    // The server is what is missing, for every session alike: one outage.
    assert_eq!(
        tmux.capture_sessions(&["x".to_string(), "y".to_string()], "n"),
        Err(TmuxError::NoServer { host: None })
    );
    // A call addressed to a session: without a server, the server is what is missing.
    assert_eq!(
        tmux.kill_session("x"),
        Err(TmuxError::NoServer { host: None })
    );
}

#[test]
fn a_missing_server_is_an_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(Server::Path(
        dir.path().join("no-server").to_string_lossy().into_owned(),
    ));
    let err = tmux.list_panes(None).unwrap_err();
    assert_eq!(err, TmuxError::NoServer { host: None });
    assert_eq!(err.to_string(), "no tmux server is running");
}

#[test]
fn a_session_tmux_cannot_find_is_no_session_on_a_running_server() {
    let server = PrivateServer::start(&["here"]);
    assert_eq!(
        server.tmux.kill_session("elsewhere"),
        Err(TmuxError::NoSession {
            session: "elsewhere".into(),
            host: None
        })
    );
    assert!(matches!(
        server.tmux.session_panes("elsewhere"),
        Err(TmuxError::NoSession { .. })
    ));
    assert_eq!(server.tmux.session_panes("here").map(|p| p.len()), Ok(1));
}

#[test]
fn a_private_server_has_its_size_its_pid_and_a_pane_that_can_be_respawned() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("sock").to_string_lossy().into_owned();
    let server = PrivateServer {
        tmux: Tmux::new(Server::Path(socket)),
        _dir: dir,
    };
    let sh = |script: &str| ["sh".to_string(), "-c".to_string(), script.to_string()];
    let pid = server
        .tmux
        .start_private_server("demo", (90, 20), &sh("echo first; exec sleep 600"))
        .unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    let size = server
        .tmux
        .call(server.tmux.command(&[
            "display-message",
            "-p",
            "-t",
            "=demo:",
            "#{window_width}x#{window_height}",
        ]))
        .unwrap();
    assert_eq!(size.trim(), "90x20");
    server
        .tmux
        .respawn_pane("=demo:", &sh("echo second; exec sleep 600"))
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let shown = server
            .tmux
            .capture_sessions(&["demo".to_string()], "n")
            .unwrap();
        let text = shown[0]
            .as_ref()
            .map(|c| c.text.clone())
            .unwrap_or_default();
        if text.contains("second") {
            assert!(!text.contains("first"), "{text}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never respawned: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A marker line is found by its first word: `BMB-n-1` is not the start of
/// `BMB-n-10`'s line, and a line that only begins like a marker is text.
#[test]
fn each_capture_is_cut_at_its_own_markers_line_among_many() {
    let count = 12;
    let targets: Vec<(String, Option<KnownPane>)> =
        (0..count).map(|i| (format!("s{i}"), None)).collect();
    let wanted: Vec<(usize, String)> = (0..count).map(|i| (i, format!("s{i}"))).collect();
    let markers: Vec<String> = (0..count).map(|i| chain_marker("n0nce", i)).collect();
    let mut stdout = String::new();
    for i in 0..count {
        stdout.push_str(&format!(
            "BMB-n0nce-{i} s{i} %{i} {} 5 00011 claude\n",
            100 + i
        ));
        stdout.push_str(&format!("screen of s{i}\nBMB-n0nce-{i}x not a marker\n"));
    }
    let mut results = vec![Err(TmuxError::MarkerRepeated { count: 0 }); count];
    read_chain(
        &targets,
        &wanted,
        &markers,
        &stdout,
        None,
        &mut results,
        &[],
    );
    for (i, result) in results.iter().enumerate() {
        let capture = result.as_ref().unwrap();
        assert_eq!(
            capture.text,
            format!("screen of s{i}\nBMB-n0nce-{i}x not a marker\n")
        );
        assert_eq!(capture.pane_id, Some(format!("%{i}")));
        assert_eq!(capture.pane_pid, Some(100 + i as u32));
        assert_eq!(capture.current_command.as_deref(), Some("claude"));
        assert!(capture.focused && !capture.dead);
    }
}

/// The attach's time is read in the same instant as the activity it is
/// compared with (the chain's display line): a client attaching after the
/// cycle's listing and before its capture still reads as an attach, where
/// a last attach read from the listing read it as a key (found by review).
#[test]
fn an_attach_between_the_listing_and_the_capture_reads_as_an_attach() {
    let server = PrivateServer::start(&["agent"]);
    let Server::Path(inner) = &server.tmux.server else {
        unreachable!("a private server has a path")
    };
    let dir = tempfile::tempdir().unwrap();
    let (asked, go) = (dir.path().join("asked"), dir.path().join("go"));
    // tmux, but a capture waits for `go` after saying it was asked.
    let wrapper = dir.path().join("tmux");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \" $* \" in *\" capture-pane \"*) : > '{}'; while [ ! -e '{}' ]; do sleep 0.02; done ;; esac\nexec tmux \"$@\"\n",
            asked.display(),
            go.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut held = server.tmux.clone();
    held.program = wrapper.to_string_lossy().into_owned();
    held.timeout = Duration::from_secs(30);
    let reading = std::thread::spawn(move || {
        held.capture_sessions(&["agent".to_string()], &fresh_nonce())
            .unwrap()
            .remove(0)
            .unwrap()
    });
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait("the capture was never asked for", &|| asked.exists());
    // The listing is made: a client attaches before the capture runs.
    let outer = PrivateServer {
        tmux: Tmux::new(Server::Path(format!("{inner}-outer"))),
        _dir: tempfile::tempdir().unwrap(),
    };
    let attach = format!("env -u TMUX tmux -S '{inner}' attach -r -t =agent");
    outer
        .tmux
        .new_detached_session("look", &["sh".to_string(), "-c".to_string(), attach])
        .unwrap();
    wait("the client never attached", &|| {
        server
            .tmux
            .call(
                server
                    .tmux
                    .command(&["list-clients", "-F", "#{client_session}"]),
            )
            .is_ok_and(|out| out.trim() == "agent")
    });
    std::fs::write(&go, "").unwrap();
    let capture = reading.join().unwrap();
    assert!(
        capture.activity.is_some() && capture.activity == capture.last_attached,
        "{:?} {:?}",
        capture.activity,
        capture.last_attached
    );
}

/// A session grouped with the target (`new-session -t agent -s view`)
/// shares its windows: read by its id, the agent's pane is named by
/// whichever of the two was used last, which is no move (every poll read
/// "the pane moved to another session", for good: found by review), and a
/// person's key through the other session is the key time read.
#[test]
fn a_pane_shared_with_a_grouped_session_is_read_and_keys_through_either_count() {
    let server = PrivateServer::start(&["agent"]);
    let Server::Path(inner) = &server.tmux.server else {
        unreachable!("a private server has a path")
    };
    let rows = server.tmux.list_panes(Some("=agent:")).unwrap();
    let known = KnownPane {
        id: rows[0].id.clone(),
        pid: Some(rows[0].pid),
    };
    let new = ["new-session", "-d", "-t", "=agent", "-s", "view"];
    server.tmux.call(server.tmux.command(&new)).unwrap();
    let targets = [("agent".to_string(), Some(known))];
    let read = || {
        server
            .tmux
            .capture_panes(&targets, &fresh_nonce())
            .unwrap()
            .remove(0)
    };
    let first = read().unwrap_or_else(|e| panic!("the shared pane: {e}"));
    assert!(first.text.starts_with("pane of agent\n"), "{first:?}");
    // The twin made detached moved no key time but its creation's: no key
    // (it renewed a spent budget, found by review).
    assert!(
        first.activity.is_some() && first.activity == first.last_attached,
        "{first:?}"
    );
    // A person attached to the other session types.
    let outer = PrivateServer {
        tmux: Tmux::new(Server::Path(format!("{inner}-outer"))),
        _dir: tempfile::tempdir().unwrap(),
    };
    let attach = format!("env -u TMUX tmux -S '{inner}' attach -t =view");
    outer
        .tmux
        .new_detached_session("person", &["sh".to_string(), "-c".to_string(), attach])
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let attached = loop {
        let capture = read().unwrap();
        if let Some(at) = capture
            .last_attached
            .filter(|&at| Some(at) == capture.activity)
        {
            break at;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no attach read: {capture:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    while std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        <= attached.unsigned_abs()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the clock stood still"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let key = ["send-keys", "-t", "=person:", "x"];
    outer.tmux.call(outer.tmux.command(&key)).unwrap();
    loop {
        let capture = read().unwrap();
        if capture.activity.is_some_and(|at| at > attached) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the key was never read: {capture:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A session whose every pane an earlier-listed one holds is its twin (a
/// session group); one with a pane of its own is not, whatever it shares.
#[test]
fn a_sessions_twin_is_the_earlier_one_holding_all_its_panes() {
    let pane = |session: &str, id: &str| {
        (
            session.to_string(),
            KnownPane {
                id: id.to_string(),
                pid: Some(1),
            },
        )
    };
    let panes = [
        pane("a", "%0"),
        pane("a", "%1"),
        pane("b", "%0"),
        pane("b", "%1"),
        pane("c", "%0"),
        pane("c", "%2"),
        pane("d", "%1"),
    ];
    let twins: Vec<(String, Option<String>)> = listed_sessions(&panes)
        .into_iter()
        .map(|s| (s.name, s.shares_with))
        .collect();
    let expected = [("a", None), ("b", Some("a")), ("c", None), ("d", Some("a"))];
    assert_eq!(
        twins,
        expected.map(|(name, of)| (name.to_string(), of.map(str::to_string)))
    );
}
