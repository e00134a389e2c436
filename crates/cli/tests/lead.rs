//! End-to-end tests of `bmb-monitor lead`: the real binary, real files, real
//! `sleep` processes with real pid files, a real inbox folder, control
//! messages on stdin, and a private tmux server for the sweep.
//!
//! Times are never asserted: each `ts` is checked for its `HH:MM` shape and
//! then masked, so the lines can be compared exactly.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bmb_testkit::bin::{Running, wait_until};
use probes::run::{Invocation, Limits, run};

/// The lead under test: the harness's running binary, and its shutdown.
struct Monitor(Running);

impl Monitor {
    fn start(args: &[&str], env: &[(&str, &str)]) -> Monitor {
        let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
        command.arg("lead").args(args);
        for (k, v) in env {
            command.env(k, v);
        }
        Monitor(Running::start(command))
    }

    fn shutdown(&mut self) -> ExitStatus {
        self.send(r#"{"type":"shutdown_request"}"#);
        self.wait_exit(10)
            .expect("monitor exits after shutdown_request")
    }
}

impl std::ops::Deref for Monitor {
    type Target = Running;
    fn deref(&self) -> &Running {
        &self.0
    }
}

impl std::ops::DerefMut for Monitor {
    fn deref_mut(&mut self) -> &mut Running {
        &mut self.0
    }
}

/// A real process that lives until killed; killed and reaped on drop.
struct Sleeper(Child);

impl Sleeper {
    // A real agent stand-in: a process the test owns and kills by its pid.
    #[expect(
        clippy::disallowed_methods,
        reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
    )]
    fn start() -> Sleeper {
        Sleeper(
            std::process::Command::new("sleep")
                .arg("600")
                .stdin(Stdio::null())
                .spawn()
                .expect("start sleep"),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn write_pid(&self, path: &Path) {
        std::fs::write(path, format!("{}\n", self.pid())).unwrap();
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.kill();
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn watch(agent: &str, dir: &Path, extra: &str) -> String {
    watch_at(agent, dir, now(), 3600, extra)
}

fn watch_at(agent: &str, dir: &Path, started: i64, timeout: u64, extra: &str) -> String {
    let d = dir.display();
    format!(
        r#"{{"agent":"{agent}","step":"1","result_path":"{d}/{agent}.md","pid_file":"{d}/{agent}.pid","timeout_sec":{timeout},"started_at_epoch":{started},"blind_phase":false,"consultant_reporting":"filtered"{extra}}}"#
    )
}

/// Checks every `ts` has the `HH:MM` shape, then masks it as `HH:MM`.
fn mask(line: &str) -> String {
    let mut out = line.to_owned();
    for key in ["ts=", "\"ts\":\""] {
        if let Some(at) = out.find(key) {
            let start = at + key.len();
            let ts = &out[start..start + 5];
            let b = ts.as_bytes();
            assert!(
                b[0].is_ascii_digit()
                    && b[1].is_ascii_digit()
                    && b[2] == b':'
                    && b[3].is_ascii_digit()
                    && b[4].is_ascii_digit(),
                "ts is not HH:MM in {line}"
            );
            out.replace_range(start..start + 5, "HH:MM");
        }
    }
    out
}

fn masked(lines: &[String]) -> Vec<String> {
    lines.iter().map(|l| mask(l)).collect()
}

fn assert_no_repeats(lines: &[String]) {
    let mut seen = std::collections::HashSet::new();
    for line in masked(lines) {
        assert!(
            seen.insert(line.clone()),
            "repeated: {line}\nall: {lines:#?}"
        );
    }
}

/// Moves `path`'s mtime `secs` into the future: a change on any filesystem clock.
fn touch_later(path: &Path, secs: u64) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(secs))
        .unwrap();
}

fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

struct Dirs {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    bmb: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let bmb = root.join(".bmb");
    std::fs::create_dir_all(&bmb).unwrap();
    Dirs {
        _tmp: tmp,
        root,
        bmb,
    }
}

fn base_args(d: &Dirs) -> Vec<String> {
    vec![
        "--interval".into(),
        "1".into(),
        "--no-sweep".into(),
        "--bmb-dir".into(),
        d.bmb.display().to_string(),
    ]
}

fn args_ref(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

#[test]
fn each_real_state_change_is_reported_once_in_the_seeds_format() {
    let d = dirs();
    let r = d.root.display().to_string();
    let mut done = Sleeper::start();
    let mut dies = Sleeper::start();
    let stalls = Sleeper::start();
    let busy = Sleeper::start();
    let late = Sleeper::start();
    for (s, name) in [
        (&done, "executor"),
        (&dies, "tester-claude"),
        (&stalls, "analyst"),
        (&busy, "writer"),
        (&late, "simplifier"),
    ] {
        s.write_pid(&d.root.join(format!("{name}.pid")));
    }
    std::fs::write(d.bmb.join("consultant-feed.md"), "feed v1").unwrap();
    let mut args = base_args(&d);
    args.extend(["--idle-stall".into(), "2".into()]);
    let mut m = Monitor::start(&args_ref(&args), &[]);
    m.send(&watch("executor", &d.root, r#","idle_stall_sec":600"#));
    m.send(&watch("tester-claude", &d.root, r#","idle_stall_sec":600"#));
    m.send(&watch("analyst", &d.root, ""));
    m.send(&watch(
        "writer",
        &d.root,
        &format!(r#","watch_paths":["{r}/writer.log"]"#),
    ));
    // 90% of 20 s is 18 s: started 17 s ago, the warning is a second or two away.
    m.send(&watch_at(
        "simplifier",
        &d.root,
        now() - 17,
        20,
        r#","idle_stall_sec":600"#,
    ));

    // The writer keeps its log growing: metadata progress, never a stall.
    let log = d.root.join("writer.log");
    let writer_progress = {
        let log = log.clone();
        let stop = Arc::new(AtomicUsize::new(0));
        let flag = Arc::clone(&stop);
        let handle = thread::spawn(move || {
            let mut n = 0;
            while flag.load(Ordering::SeqCst) == 0 {
                n += 1;
                std::fs::write(&log, "x".repeat(n)).unwrap();
                thread::sleep(Duration::from_millis(300));
            }
        });
        (stop, handle)
    };

    std::fs::write(d.root.join("executor.md"), "Type: handoff\nStatus: PASS\n").unwrap();
    dies.kill();
    assert!(m.wait_out("state=result_ready", 10), "{:?}", m.out());
    assert!(m.wait_out("state=process_died", 10), "{:?}", m.out());
    assert!(
        m.wait_out("agent=analyst step=1 state=stalled", 10),
        "{:?}",
        m.out()
    );
    assert!(m.wait_out("state=timeout_imminent", 10), "{:?}", m.out());
    assert!(m.wait_out("state=timeout_exceeded", 10), "{:?}", m.out());
    std::fs::write(d.bmb.join("consultant-feed.md"), "feed v2").unwrap();
    touch_later(&d.bmb.join("consultant-feed.md"), 5);
    let events = d.bmb.join("consultant-events.jsonl");
    assert!(
        wait_until(10, || read_lines(&events)
            .iter()
            .any(|l| l.contains("feed_update"))),
        "{:?}",
        read_lines(&events)
    );
    writer_progress.0.store(1, Ordering::SeqCst);
    writer_progress.1.join().unwrap();
    let status = m.shutdown();
    assert!(status.success(), "{status:?}");

    let out = m.out();
    assert_no_repeats(&out);
    let mut lines = masked(&out);
    // The stall's idle_sec is a measurement; check it, then mask it too.
    for line in &mut lines {
        if let Some(rest) =
            line.strip_prefix("[MONITOR] agent=analyst step=1 state=stalled idle_sec=")
        {
            let (n, tail) = rest.split_once(' ').unwrap();
            assert!(n.parse::<u64>().unwrap() >= 2, "{line}");
            // A `sleep` burns no CPU: measured from halfway to the stall, 0%.
            assert_eq!(tail, "cpu_pct=0 ts=HH:MM", "{line}");
            *line =
                "[MONITOR] agent=analyst step=1 state=stalled idle_sec=N cpu_pct=0 ts=HH:MM".into();
        }
        if line.contains("state=timeout_") {
            // elapsed=N/20s: N is measured; the shape and the order are checked.
            let n: u64 = line
                .split("elapsed=")
                .nth(1)
                .unwrap()
                .split('/')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            if line.contains("imminent") {
                assert!((18..20).contains(&n), "{line}");
            } else {
                assert!(n >= 20, "{line}");
            }
            *line = line.replace(&format!("elapsed={n}/"), "elapsed=N/");
        }
    }
    lines.sort();
    let mut expected = vec![
        format!("[MONITOR] agent=executor step=1 state=result_ready file={r}/executor.md ts=HH:MM"),
        format!(
            "[MONITOR] agent=tester-claude step=1 state=process_died pid={} ts=HH:MM",
            dies.pid()
        ),
        "[MONITOR] agent=analyst step=1 state=stalled idle_sec=N cpu_pct=0 ts=HH:MM".to_owned(),
        "[MONITOR] agent=simplifier step=1 state=timeout_imminent elapsed=N/20s ts=HH:MM"
            .to_owned(),
        "[MONITOR] agent=simplifier step=1 state=timeout_exceeded elapsed=N/20s ts=HH:MM"
            .to_owned(),
    ];
    expected.sort();
    assert_eq!(lines, expected);
    assert!(
        !out.iter().any(|l| l.contains("agent=writer")),
        "progress is not a stall"
    );

    let consultant = masked(&read_lines(&events));
    assert_no_repeats(&read_lines(&events));
    assert!(consultant.contains(&format!(
        r#"{{"event":"agent_complete","step":"1","agent":"executor","result":"{r}/executor.md","ts":"HH:MM","source":"monitor"}}"#
    )), "{consultant:#?}");
    assert!(consultant.iter().any(|l| {
        l.starts_with(r#"{"event":"monitor_stall","step":"1","agent":"analyst","idle_sec":"#)
    }));
    assert!(consultant.iter().any(|l| l.starts_with(r#"{"event":"monitor_timeout_imminent","step":"1","agent":"simplifier","elapsed_sec":"#) && l.ends_with(r#","timeout_sec":20,"ts":"HH:MM","source":"monitor"}"#)));
    assert!(
        consultant
            .contains(&r#"{"type":"feed_update","source":"monitor","ts":"HH:MM"}"#.to_owned())
    );
    assert_eq!(consultant.len(), 4, "{consultant:#?}");
    assert!(
        !consultant.iter().any(|l| l.contains("PASS")),
        "filtered reporting never carries the handoff"
    );
    drop((done.kill(), stalls, busy, late));
}

#[test]
fn a_thousand_bad_lines_are_each_named_and_every_valid_one_applied() {
    let d = dirs();
    let r = d.root.display().to_string();
    let mut m = Monitor::start(&args_ref(&base_args(&d)), &[]);
    let bad = [
        "not json",
        "{",
        "[]",
        r#"{"agent":"x"}"#,
        r#"{"ack":"stalled"}"#,
        r#"{"ack":"later","agent":"x"}"#,
        r#"{"type":"reboot"}"#,
        r#"{"agent":"x","step":"1","result_path":"/r"}"#,
        r#"{"agent":"x","step":"1","result_path":"/r","pid_file":"/p","timeout_sec":"soon","started_at_epoch":1,"blind_phase":false,"consultant_reporting":"full"}"#,
        r#"{"agent":"nobody","step":"1","blind_phase":true}"#,
    ];
    let mut expected_errors = 0;
    let mut valid = 0;
    for i in 0..1000 {
        let line = bad[i % bad.len()];
        m.send(line);
        expected_errors += 1;
        if i % 10 == 0 {
            let agent = format!("agent{valid:03}");
            std::fs::write(d.root.join(format!("{agent}.md")), "done").unwrap();
            m.send(&watch(&agent, &d.root, ""));
            valid += 1;
        }
    }
    assert!(
        wait_until(20, || m.out().len() >= valid
            && m.err().len() >= expected_errors),
        "out {} err {}",
        m.out().len(),
        m.err().len()
    );
    let status = m.shutdown();
    assert!(status.success());
    let err = m.err();
    assert_eq!(err.len(), expected_errors, "one line per bad message");
    for (n, line) in err.iter().enumerate() {
        assert!(
            line.starts_with("lead: bad control message (stdin line "),
            "{line}"
        );
        let names_what = line.contains('`') || line.contains("not a JSON object");
        assert!(names_what, "line {n} names no field: {line}");
    }
    assert!(err.iter().any(|l| l.contains("field `timeout_sec`")));
    assert!(err.iter().any(|l| l.contains("missing field `pid_file`")));
    let mut out = masked(&m.out());
    out.sort();
    let expected: Vec<String> = (0..valid)
        .map(|i| {
            format!("[MONITOR] agent=agent{i:03} step=1 state=result_ready file={r}/agent{i:03}.md ts=HH:MM")
        })
        .collect();
    assert_eq!(out, expected);
}

#[test]
fn inbox_files_are_applied_in_name_order_exactly_once_and_eof_is_not_a_shutdown() {
    let d = dirs();
    let inbox = d.bmb.join("monitor-inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    let marker = "MARKER-inbox-91c2";
    std::fs::write(
        d.root.join("verifier-claude.md"),
        format!("Type: verification\nStatus: {marker}\n"),
    )
    .unwrap();
    // Writers create under another name and rename into place.
    let drop_file = |name: &str, body: &str| {
        let tmp = inbox.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, body).unwrap();
        std::fs::rename(&tmp, inbox.join(name)).unwrap();
    };
    // 001 registers with full reporting; 002 turns the blind phase on. Applied
    // out of order, 002 would fail ("no such watch item") and the marker would leak.
    drop_file(
        "001-watch.json",
        &watch(
            "verifier-claude",
            &d.root,
            r#","consultant_reporting":"full""#,
        ),
    );
    drop_file(
        "002-blind.json",
        r#"{"agent":"verifier-claude","step":"1","blind_phase":true}"#,
    );
    std::fs::write(inbox.join("notes.txt"), "not a message").unwrap();
    let mut m = Monitor::start(&args_ref(&base_args(&d)), &[]);
    // EOF on stdin: not a shutdown.
    drop(m.stdin.take());
    assert!(
        m.wait_out("agent=verifier-claude", 10),
        "{:?} {:?}",
        m.out(),
        m.err()
    );
    for i in 0..20 {
        let agent = format!("w{i:02}");
        std::fs::write(d.root.join(format!("{agent}.md")), "x").unwrap();
        drop_file(&format!("1{i:02}.json"), &watch(&agent, &d.root, ""));
    }
    // Twenty items applied after the EOF: it did not end the monitor.
    assert!(wait_until(10, || m.out().len() >= 21), "{:?}", m.out());
    drop_file("999-stop.json", r#"{"type":"shutdown_request"}"#);
    let status = m.wait_exit(10).expect("shutdown from the inbox");
    assert!(status.success());

    let out = m.out();
    assert_eq!(out.len(), 21, "{out:#?}");
    assert_no_repeats(&out);
    assert!(m.err().is_empty(), "{:?}", m.err());
    let events = read_lines(&d.bmb.join("consultant-events.jsonl"));
    assert!(events.iter().any(|l| l.contains("verifier-claude")));
    assert!(
        !events.iter().any(|l| l.contains(marker)),
        "blind phase leaked: {events:?}"
    );
    let mut left: Vec<String> = std::fs::read_dir(&inbox)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, [".claimed", "notes.txt"], "consumed, not left behind");
    assert_eq!(
        std::fs::read_dir(inbox.join(".claimed")).unwrap().count(),
        0
    );
}

#[test]
fn runtime_errors_are_said_once_and_survived() {
    let d = dirs();
    // The Consultant's file cannot be written: it is a directory.
    let events = d.root.join("events-dir");
    std::fs::create_dir_all(&events).unwrap();
    let inbox = d.root.join("inbox");
    std::fs::write(d.root.join("garbage.pid"), "-1\n").unwrap();
    let mut args = base_args(&d);
    args.extend([
        "--consultant-out".into(),
        events.display().to_string(),
        "--inbox".into(),
        inbox.display().to_string(),
    ]);
    let mut m = Monitor::start(&args_ref(&args), &[]);
    m.send(&watch("garbage", &d.root, ""));
    std::fs::write(d.root.join("done.md"), "x").unwrap();
    m.send(&watch("done", &d.root, ""));
    assert!(m.wait_out("agent=done step=1 state=result_ready", 10));
    // The inbox folder vanishes under the running monitor: said when it is
    // first found missing; the later item is applied in a loop turn that
    // finds it missing again.
    std::fs::remove_dir_all(&inbox).unwrap();
    assert!(
        wait_until(10, || m.err().iter().any(|l| l.starts_with("lead: inbox "))),
        "{:?}",
        m.err()
    );
    std::fs::write(d.root.join("later.md"), "x").unwrap();
    m.send(&watch("later", &d.root, ""));
    assert!(
        m.wait_out("agent=later step=1 state=result_ready", 10),
        "kept running"
    );
    assert!(m.shutdown().success());
    let err = m.err();
    let count = |needle: &str| err.iter().filter(|l| l.contains(needle)).count();
    assert_eq!(count("field `pid_file`"), 1, "{err:#?}");
    assert!(
        err.iter()
            .any(|l| l.contains("field `pid_file`") && l.contains("\"-1\"")),
        "{err:#?}"
    );
    assert_eq!(count("consultant file"), 1, "{err:#?}");
    assert_eq!(count("lead: inbox"), 1, "{err:#?}");
    assert!(
        !m.out().iter().any(|l| l.contains("agent=garbage")),
        "-1 is not a death"
    );
}

/// A private tmux server, killed and its socket removed on drop.
struct TmuxServer {
    name: String,
    socket: PathBuf,
}

impl TmuxServer {
    fn start() -> TmuxServer {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "bmb-lead-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let mut server = TmuxServer {
            name,
            socket: PathBuf::new(),
        };
        server.tmux(&[
            "new-session",
            "-d",
            "-s",
            "lead",
            "-x",
            "200",
            "-y",
            "60",
            "sleep 600",
        ]);
        server.socket = PathBuf::from(server.tmux(&["display-message", "-p", "#{socket_path}"]));
        server.tmux(&["set-option", "-g", "remain-on-exit", "on"]);
        server
    }

    fn tmux(&self, args: &[&str]) -> String {
        let inv = Invocation::new("tmux")
            .args(["-L", &self.name, "-f", "/dev/null"])
            .args(args);
        let outcome = run(&inv, &Limits::with_timeout(Duration::from_secs(10)));
        match outcome.success_stdout() {
            Some(out) => out.text().trim().to_owned(),
            None => panic!("tmux {args:?}: {}", outcome.describe()),
        }
    }

    /// A new pane running `command`; returns its id and pid.
    fn split(&self, command: &str) -> (String, u32) {
        let row = self.tmux(&[
            "split-window",
            "-d",
            "-t",
            "lead:0",
            "-P",
            "-F",
            "#{pane_id} #{pane_pid}",
            command,
        ]);
        self.tmux(&["select-layout", "-t", "lead:0", "tiled"]);
        let (id, pid) = row.split_once(' ').unwrap();
        (id.to_owned(), pid.parse().unwrap())
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = run(
            &Invocation::new("tmux").args(["-L", &self.name, "kill-server"]),
            &Limits::with_timeout(Duration::from_secs(10)),
        );
        let _ = std::fs::remove_file(&self.socket);
    }
}

#[test]
fn the_sweep_reports_dead_and_untracked_panes_of_the_current_window_once() {
    let d = dirs();
    let server = TmuxServer::start();
    let lead_pane = server.tmux(&["display-message", "-p", "-t", "lead:0.0", "#{pane_id}"]);
    let typed = d.root.join("typed.txt");
    let (typing_pane, _) = server.split(&format!("cat > {}", typed.display()));
    let (untracked, untracked_pid) = server.split("sleep 601");
    let pidfile = d.root.join("executor.pid");
    // The registered pid is a CHILD of the pane's shell, not the pane's pid.
    let (tracked, tracked_pid) = server.split(&format!(
        "sh -c 'sleep 602 & echo $! > {}; wait'",
        pidfile.display()
    ));
    let (dead, _) = server.split("true");
    let consultant_typed = d.root.join("consultant-typed.txt");
    let (consultant, _) = server.split(&format!("cat > {}", consultant_typed.display()));
    let feed = d.bmb.join("consultant-feed.md");
    std::fs::write(&feed, "feed").unwrap();
    std::fs::write(d.bmb.join("consultant-pane-id"), format!("{consultant}\n")).unwrap();
    // Another window of the same session is not ours to sweep.
    server.tmux(&["new-window", "-d", "-t", "lead", "sleep 604"]);
    assert!(wait_until(10, || std::fs::read_to_string(&pidfile)
        .map(|s| s.trim().parse::<u32>().is_ok())
        .unwrap_or(false)));
    let registered: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_ne!(registered, tracked_pid);

    // Registered before the monitor starts (the inbox is read before the
    // first pass), so the first sweep already knows the tracked pane.
    let inbox = d.bmb.join("monitor-inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::write(
        inbox.join("001.json"),
        watch("executor", &d.root, r#","idle_stall_sec":600"#),
    )
    .unwrap();
    let socket = server.socket.display().to_string();
    let tmux_env = format!("{socket},1,0");
    let args = [
        "--interval",
        "1",
        "--sweep-interval",
        "1",
        "--bmb-dir",
        &d.bmb.display().to_string(),
        "-L",
        &server.name,
        "--lead-pane",
        &typing_pane,
        "--consultant-pane",
        &consultant,
    ]
    .map(String::from);
    let mut m = Monitor::start(
        &args_ref(&args),
        &[("TMUX", &tmux_env), ("TMUX_PANE", &lead_pane)],
    );
    assert!(m.wait_out("pane_dead", 10), "{:?} {:?}", m.out(), m.err());
    assert!(
        m.wait_out("untracked_pane", 10),
        "{:?} {:?}",
        m.out(),
        m.err()
    );
    let before = m.out();
    // The sleeper in the untracked pane ends: now that pane is dead, a change.
    let _ = run(
        &Invocation::new("kill").arg(untracked_pid.to_string()),
        &Limits::default(),
    );
    assert!(
        wait_until(10, || m.out().len() > before.len()),
        "{:?}",
        m.out()
    );
    // A Consultant event is typed into the Consultant's pane.
    let events = d.bmb.join("consultant-events.jsonl");
    touch_later(&feed, 10);
    assert!(
        wait_until(10, || read_lines(&consultant_typed).len() == 1),
        "{:?} {:?}",
        read_lines(&consultant_typed),
        m.err()
    );
    assert_eq!(read_lines(&consultant_typed), read_lines(&events));
    assert!(m.err().is_empty(), "{:?}", m.err());
    let lead_lines_before_kill = m.out();
    // Every Lead line so far was typed into the --lead-pane, text then Enter.
    assert!(
        wait_until(5, || read_lines(&typed) == lead_lines_before_kill),
        "{:?} vs {:?}",
        read_lines(&typed),
        lead_lines_before_kill
    );

    // The tmux server dies under the monitor: each failing sink is said once,
    // and the monitor goes on (the Consultant's file still gets its events).
    server.tmux(&["kill-server"]);
    for (n, later) in [(2, 20), (3, 30)] {
        touch_later(&feed, later);
        assert!(
            wait_until(10, || read_lines(&events).len() == n),
            "{:?} {:?}",
            read_lines(&events),
            m.err()
        );
    }
    // The sweep fails too once the server is gone: wait until it said so.
    assert!(
        wait_until(10, || m
            .err()
            .iter()
            .any(|l| l.starts_with("lead: sweep: "))),
        "{:?}",
        m.err()
    );
    assert!(m.shutdown().success());
    let err = m.err();
    let said = |prefix: &str| err.iter().filter(|l| l.starts_with(prefix)).count();
    assert_eq!(said("lead: sweep: "), 1, "{err:#?}");
    assert_eq!(said("lead: consultant pane "), 1, "{err:#?}");
    // The dying server took its panes' processes along, the registered agent
    // included: that death is news for the Lead, whose pane is gone too.
    assert_eq!(said("lead: lead pane "), 1, "{err:#?}");
    assert_eq!(err.len(), 3, "{err:#?}");
    let after = m.out()[lead_lines_before_kill.len()..].to_vec();
    assert_eq!(
        masked(&after),
        [format!(
            "[MONITOR] agent=executor step=1 state=process_died pid={registered} ts=HH:MM"
        )]
    );

    let out = masked(&lead_lines_before_kill);
    assert_eq!(out.len(), 3, "{out:#?}");
    // The first sweep's two reports come in the window's pane order; sort them.
    let mut first = out[..2].to_vec();
    first.sort();
    let mut expected = vec![
        format!(
            r#"{{"type":"watchdog","event":"untracked_pane","pane":"{untracked}","pid":{untracked_pid},"ts":"HH:MM"}}"#
        ),
        format!(r#"{{"type":"watchdog","event":"pane_dead","pane":"{dead}","ts":"HH:MM"}}"#),
    ];
    expected.sort();
    assert_eq!(first, expected);
    assert_eq!(
        out[2],
        format!(r#"{{"type":"watchdog","event":"pane_dead","pane":"{untracked}","ts":"HH:MM"}}"#)
    );
    assert!(
        !out.iter().any(|l| l.contains(&format!("\"{tracked}\""))),
        "the pane holding the registered pid is tracked"
    );
}

/// A busy process that writes nothing: CPU is evidence beside the stall,
/// never a reason to withhold it.
struct Spinner(Child);

impl Spinner {
    // A real process that burns a core, owned and killed by this test.
    #[expect(
        clippy::disallowed_methods,
        reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
    )]
    fn start() -> Spinner {
        Spinner(
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .stdin(Stdio::null())
                .spawn()
                .expect("start a spinning sh"),
        )
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_stall_of_a_busy_process_carries_its_measured_cpu() {
    let d = dirs();
    let spinner = Spinner::start();
    std::fs::write(d.root.join("executor.pid"), format!("{}\n", spinner.0.id())).unwrap();
    let mut args = base_args(&d);
    args.extend(["--idle-stall".into(), "4".into()]);
    let mut m = Monitor::start(&args_ref(&args), &[]);
    m.send(&watch("executor", &d.root, ""));
    assert!(
        m.wait_out("state=stalled", 15),
        "{:?} {:?}",
        m.out(),
        m.err()
    );
    assert!(m.shutdown().success());
    let line = m
        .out()
        .into_iter()
        .find(|l| l.contains("state=stalled"))
        .unwrap();
    let cpu: u32 = line
        .split("cpu_pct=")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no cpu_pct in {line}"));
    // A spinning shell holds most of an idle core, but CI runs tests side by
    // side on two cores: the claim is that it was measured and seen busy.
    assert!(cpu >= 1, "{line}");
    drop(spinner);
}

#[test]
fn a_zero_interval_is_a_usage_error_in_one_line() {
    let d = dirs();
    for flag in [
        "--interval",
        "--sweep-interval",
        "--idle-stall",
        "--ack-timeout",
    ] {
        let args = ["--bmb-dir", &d.bmb.display().to_string(), flag, "0"].map(String::from);
        let mut m = Monitor::start(&args_ref(&args), &[]);
        let status = m.wait_exit(10).expect("exits at once");
        assert_eq!(status.code(), Some(2), "{flag}");
        assert!(wait_until(5, || !m.err().is_empty()));
        let err = m.err();
        assert_eq!(err.len(), 1, "{flag}: {err:?}");
        assert!(
            err[0].contains(flag) && err[0].contains("at least 1"),
            "{err:?}"
        );
        assert!(m.out().is_empty());
    }
}

#[test]
fn items_sent_at_startup_and_later_are_checked_at_once_not_an_interval_later() {
    let d = dirs();
    let r = d.root.display().to_string();
    std::fs::write(d.root.join("executor.md"), "done").unwrap();
    std::fs::write(d.root.join("writer.md"), "done").unwrap();
    // An hour between passes: only a prompt check can say anything here.
    let args = [
        "--interval",
        "3600",
        "--no-sweep",
        "--bmb-dir",
        &d.bmb.display().to_string(),
    ]
    .map(String::from);
    let mut m = Monitor::start(&args_ref(&args), &[]);
    // Written as the monitor starts: already in the pipe at its first pass.
    m.send(&watch("executor", &d.root, ""));
    assert!(
        m.wait_out("agent=executor step=1 state=result_ready", 20),
        "{:?} {:?}",
        m.out(),
        m.err()
    );
    // One registered later, between passes, is checked at once too.
    m.send(&watch("writer", &d.root, ""));
    assert!(
        m.wait_out("agent=writer step=1 state=result_ready", 20),
        "{:?} {:?}",
        m.out(),
        m.err()
    );
    assert!(m.shutdown().success());
    assert_eq!(
        masked(&m.out()),
        [
            format!(
                "[MONITOR] agent=executor step=1 state=result_ready file={r}/executor.md ts=HH:MM"
            ),
            format!("[MONITOR] agent=writer step=1 state=result_ready file={r}/writer.md ts=HH:MM"),
        ]
    );
}

#[test]
fn a_directory_at_the_result_path_is_not_a_result_test_f() {
    let d = dirs();
    let r = d.root.display().to_string();
    let agent = Sleeper::start();
    agent.write_pid(&d.root.join("executor.pid"));
    std::fs::create_dir(d.root.join("executor.md")).unwrap();
    // A symlink to a file is `test -f`: that one is a result.
    std::fs::write(d.root.join("real.md"), "done").unwrap();
    std::os::unix::fs::symlink(d.root.join("real.md"), d.root.join("writer.md")).unwrap();
    let mut m = Monitor::start(&args_ref(&base_args(&d)), &[]);
    m.send(&watch("executor", &d.root, ""));
    m.send(&watch("writer", &d.root, ""));
    // Items are checked in registration order: once the writer's result is
    // reported, the executor's directory has been looked at too.
    assert!(m.wait_out("agent=writer step=1 state=result_ready", 20));
    assert!(
        !m.out().iter().any(|l| l.contains("agent=executor")),
        "{:?}",
        m.out()
    );
    std::fs::remove_dir(d.root.join("executor.md")).unwrap();
    std::fs::write(d.root.join("executor.md"), "done").unwrap();
    assert!(m.wait_out("agent=executor step=1 state=result_ready", 20));
    assert!(m.shutdown().success());
    assert_eq!(
        masked(&m.out()),
        [
            format!("[MONITOR] agent=writer step=1 state=result_ready file={r}/writer.md ts=HH:MM"),
            format!(
                "[MONITOR] agent=executor step=1 state=result_ready file={r}/executor.md ts=HH:MM"
            ),
        ]
    );
    drop(agent);
}

#[test]
fn agent_panes_registered_at_startup_are_never_called_untracked() {
    let d = dirs();
    let server = TmuxServer::start();
    let lead_pane = server.tmux(&["display-message", "-p", "-t", "lead:0.0", "#{pane_id}"]);
    let (_working, working_pid) = server.split("sleep 611");
    // This agent has already written its result, and is still alive.
    let (_finished, finished_pid) = server.split("sleep 612");
    let (orphan, orphan_pid) = server.split("sleep 613");
    for (name, pid) in [("executor", working_pid), ("writer", finished_pid)] {
        std::fs::write(d.root.join(format!("{name}.pid")), format!("{pid}\n")).unwrap();
    }
    std::fs::write(d.root.join("writer.md"), "done").unwrap();
    let tmux_env = format!("{},1,0", server.socket.display());
    let args = [
        "--interval",
        "1",
        "--sweep-interval",
        "1",
        "--bmb-dir",
        &d.bmb.display().to_string(),
        "-L",
        &server.name,
    ]
    .map(String::from);
    let mut m = Monitor::start(
        &args_ref(&args),
        &[("TMUX", &tmux_env), ("TMUX_PANE", &lead_pane)],
    );
    // The Lead registers its agents as it starts its monitor.
    m.send(&watch("executor", &d.root, r#","idle_stall_sec":600"#));
    m.send(&watch("writer", &d.root, r#","idle_stall_sec":600"#));
    assert!(
        m.wait_out("untracked_pane", 20),
        "{:?} {:?}",
        m.out(),
        m.err()
    );
    assert!(m.shutdown().success());
    let r = d.root.display();
    assert_eq!(
        masked(&m.out()),
        [
            format!("[MONITOR] agent=writer step=1 state=result_ready file={r}/writer.md ts=HH:MM"),
            format!(
                r#"{{"type":"watchdog","event":"untracked_pane","pane":"{orphan}","pid":{orphan_pid},"ts":"HH:MM"}}"#
            ),
        ],
        "{:?}",
        m.err()
    );
}

#[test]
fn a_second_lead_on_one_bmb_dir_however_spelled_is_refused() {
    let d = dirs();
    let mut first = Monitor::start(&args_ref(&base_args(&d)), &[]);
    assert!(
        wait_until(30, || d.bmb.join("monitor.lock").exists()),
        "the first lead never took its lock"
    );
    // The same folder by another spelling: `<root>/./.bmb/`.
    let other = format!("{}/./.bmb/", d.root.display());
    let mut second = Monitor::start(&["--interval", "1", "--no-sweep", "--bmb-dir", &other], &[]);
    let status = second.wait_exit(30).expect("the second lead exits");
    assert_eq!(status.code(), Some(2));
    assert!(
        wait_until(10, || second.err().iter().any(
            |l| l.contains("already watched by another bmb-monitor lead (pid ")
        )),
        "{:?}",
        second.err()
    );
    assert_eq!(first.shutdown().code(), Some(0));
}

#[test]
fn a_fifo_or_a_folder_named_json_in_the_inbox_is_moved_aside_once_and_nothing_hangs() {
    let d = dirs();
    let inbox = d.bmb.join("monitor-inbox");
    std::fs::create_dir_all(inbox.join("a-folder.json")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        inbox.join("b-fifo.json"),
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let mut m = Monitor::start(&args_ref(&base_args(&d)), &[]);
    let named = |m: &Monitor, file: &str| {
        m.err()
            .iter()
            .filter(|l| {
                l.contains(&format!("inbox file {file}: it is a")) && l.contains("moved aside")
            })
            .count()
    };
    assert!(
        wait_until(30, || named(&m, "a-folder.json") == 1
            && named(&m, "b-fifo.json") == 1),
        "{:?}",
        m.err()
    );
    // A message dropped in after them is still applied: the inbox did not hang.
    std::fs::write(inbox.join("c.json"), r#"{"type":"shutdown_request"}"#).unwrap();
    let status = m
        .wait_exit(30)
        .expect("the lead applies the next message and exits");
    assert_eq!(status.code(), Some(0));
    // Each was said once and kept aside, never retried.
    assert_eq!(
        (named(&m, "a-folder.json"), named(&m, "b-fifo.json")),
        (1, 1),
        "{:?}",
        m.err()
    );
    assert!(inbox.join(".rejected/a-folder.json").is_dir());
    assert!(inbox.join(".rejected/b-fifo.json").exists());
}

#[test]
fn sigterm_ends_a_lead_at_once() {
    let d = dirs();
    let mut m = Monitor::start(&args_ref(&base_args(&d)), &[]);
    assert!(wait_until(30, || d.bmb.join("monitor.lock").exists()));
    let child = rustix::process::Pid::from_child(&m.child);
    rustix::process::kill_process(child, rustix::process::Signal::TERM).unwrap();
    let status = m.wait_exit(10).expect("SIGTERM did not end the lead");
    assert_eq!(status.code(), Some(0), "a clean end, exit 0: {status:?}");
}
