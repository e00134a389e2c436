//! No secret in a message, a metric or `ps` (issue 19): a password in the
//! Alertmanager URL's userinfo and a token in the config file's alert
//! command are planted, deliveries fail, an audit runs beside the watcher,
//! and every stream, every file the monitor keeps, its `/metrics` and
//! `/board.json`, and the command line of every process it started are
//! searched for them. The real binary, a private tmux server, a real git
//! project for the audit.
// These tests start the binary, tmux and a fake Alertmanager; that is their point.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bmb_testkit::bin::{Running, wait_until};
use bmb_testkit::tmux::{PrivateTmux, capture_path};

const BIN: &str = env!("CARGO_BIN_EXE_bmb-monitor");
const PASSWORD: &str = "S3cr3tPW";
const TOKEN: &str = "S3cr3tTOKEN";

/// A fake Alertmanager that answers every post 500; the requests' heads, kept.
fn failing_alertmanager() -> (u16, Arc<Mutex<Vec<String>>>) {
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&heads);
    let port = bmb_testkit::http::serve(move |text| {
        let head = text.split("\r\n\r\n").next().unwrap_or("").to_string();
        seen.lock().unwrap().push(head);
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\nboom"
            .to_vec()
    });
    (port, heads)
}

/// Every live process below `root`, with its parent and its command line.
fn descendants(root: u32) -> Vec<(u32, u32, String)> {
    let mut all: HashMap<u32, (u32, String)> = HashMap::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
        let Some(after) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        all.insert(pid, (ppid, cmdline));
    }
    let mut found = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for (pid, (ppid, cmdline)) in &all {
            if *ppid == parent {
                found.push((*pid, *ppid, cmdline.clone()));
                parents.push(*pid);
            }
        }
    }
    found
}

/// Every file under `dir`, read whole (the journals, boards, locks, audit reports).
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            out.extend(files_under(&path));
        } else if kind.is_file() {
            out.push((
                path.display().to_string(),
                std::fs::read(&path).unwrap_or_default(),
            ));
        }
    }
    out
}

fn get(url: &str) -> String {
    bmb_testkit::http::get(url, Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("the monitor answers: {e}"))
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [PASSWORD, TOKEN] {
        assert!(!text.contains(secret), "{secret} in {what}: {text}");
    }
}

/// `status` of `url` as a board endpoint and as a Prometheus, each as a
/// table and as JSON: the flag, whether it was JSON, and what it printed.
fn status_every_way(url: &str) -> Vec<(&'static str, bool, std::process::Output)> {
    let mut outputs = Vec::new();
    for flag in ["--endpoint", "--prometheus"] {
        for json in [false, true] {
            let mut command = bmb_testkit::bin::command(BIN);
            command.args(["status", flag, url]);
            if json {
                command.arg("--json");
            }
            outputs.push((flag, json, command.output().expect("status runs")));
        }
    }
    outputs
}

/// A private tmux server whose `agent` pane shows a permission question.
fn asking() -> PrivateTmux {
    let tmux = PrivateTmux::new();
    tmux.replay(
        "agent",
        &capture_path("question-permission-bash"),
        &tmux.dir.path().join("agent.received"),
    );
    tmux
}

/// A project with rules of its own, in a real git repository, for the audit.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("CLAUDE.md"),
        "# Project rules\n\n## Testing\n\n- Every test must wait for an event, never sleep.\n",
    )
    .expect("rules");
    bmb_testkit::git(dir.path(), &["init", "-q"]);
    bmb_testkit::git(dir.path(), &["add", "."]);
    bmb_testkit::git(dir.path(), &["commit", "-q", "-m", "start"]);
    dir
}

/// Found by a review (issue 19): the URL's password was printed in every
/// failed delivery's line, so it reached the journal; `watch --config …
/// --audit` gave the config's alert command (a bearer token) to the audit
/// child as argv, and every `sh -c` carried it too: `ps` showed it to every
/// local user.
#[test]
fn a_planted_password_and_token_reach_no_stream_no_file_no_metric_and_no_child_argv() {
    let (port, heads) = failing_alertmanager();
    let tmux = asking();
    let state = tempfile::tempdir().expect("tempdir");
    let project = project();
    let work = tempfile::tempdir().expect("tempdir");
    let funnel = work.path().join("funnel");
    let release = work.path().join("release");
    let auditor = work.path().join("auditor.sh");
    let auditing = work.path().join("auditing");
    std::fs::write(
        &auditor,
        format!(
            "cat > /dev/null\necho $$ > '{auditing}'\nwhile [ ! -e '{release}' ]; do sleep 0.05; done\n\
             echo '{{\"holds\":\"no test sleeps\",\"file\":\"CLAUDE.md\",\"line\":5}}'\n",
            auditing = auditing.display(),
            release = release.display()
        ),
    )
    .expect("auditor");
    // The token reaches the command the alert runs through its environment,
    // the way a user keeps it out of that command's own argv.
    let alert_cmd = format!(
        "AUTH='Bearer {TOKEN}' sh -c 'cat >> \"{funnel}\"; while [ ! -e \"{release}\" ]; do sleep 0.05; done'",
        funnel = funnel.display(),
        release = release.display()
    );
    let config = work.path().join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "metrics_listen = \"127.0.0.1:0\"\n[defaults]\ninterval = 1\nprobe_timeout = 30\nwork_probe = \"echo 4\"\n\
             [sinks]\nalertmanager = \"http://admin:{PASSWORD}@127.0.0.1:{port}\"\nalert_cmd = {alert_cmd:?}\n\
             [server]\nsocket_path = \"{}\"\n[[targets]]\ntarget = \"agent\"\n",
            tmux.socket.display()
        ),
    )
    .expect("config");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut command = bmb_testkit::bin::command(BIN);
    command
        .arg("watch")
        .arg("--config")
        .arg(&config)
        .arg("--audit")
        .arg(project.path())
        .args(["--audit-every", "1d"])
        .args(["--audit-agent-cmd", &format!("sh {}", auditor.display())])
        .env("XDG_STATE_HOME", state.path());
    let mut monitor = Running::start(command);
    let pid = monitor.child.id();

    // The alert command and the auditor both hold: every process the
    // monitor started is alive to be read.
    assert!(
        wait_until(60, || std::fs::metadata(&funnel).is_ok_and(|m| m.len() > 0)
            && auditing.exists()),
        "the alert and the audit never both ran; stderr {:?}",
        monitor.err()
    );
    let children = descendants(pid);
    let auditor_pid: u32 = std::fs::read_to_string(&auditing)
        .expect("the auditor's pid")
        .trim()
        .parse()
        .expect("a pid");
    // Up from the auditor to the monitor's own child: the audit.
    let parent_of: HashMap<u32, u32> = children
        .iter()
        .map(|(p, parent, _)| (*p, *parent))
        .collect();
    let mut audit_pid = auditor_pid;
    while let Some(parent) = parent_of.get(&audit_pid).filter(|p| **p != pid) {
        audit_pid = *parent;
    }
    assert!(
        children
            .iter()
            .any(|(p, parent, line)| *p == audit_pid && *parent == pid && line.contains(" audit ")),
        "the audit child is not among the monitor's: {children:?}"
    );
    assert!(
        children
            .iter()
            .any(|(_, parent, line)| *parent == pid && line.starts_with("sh ")),
        "the alert command's shell is not among the monitor's: {children:?}"
    );
    for (child, _, cmdline) in &children {
        assert_no_secret(&format!("/proc/{child}/cmdline"), cmdline);
    }

    // Deliveries failed (and said so, with the password redacted); the URL's
    // credentials still reached Alertmanager, as basic auth. A cycle posts
    // after its alert command is done: released first.
    std::fs::write(&release, "").expect("release");
    let refused =
        format!("alertmanager http://admin:***@127.0.0.1:{port}/api/v2/alerts: answered 500");
    assert!(
        wait_until(30, || monitor.err().iter().any(|l| l.contains(&refused))),
        "{:?}",
        monitor.err()
    );
    // `admin:S3cr3tPW` in base64, as Authorization: Basic carries it.
    let basic = "Authorization: Basic YWRtaW46UzNjcjN0UFc=";
    assert!(
        heads
            .lock()
            .unwrap()
            .iter()
            .any(|h| h.to_ascii_lowercase().contains(&basic.to_ascii_lowercase())),
        "{:?}",
        heads.lock().unwrap()
    );
    assert!(
        wait_until(60, || monitor.err().iter().any(|l| l.contains("done:"))),
        "the audit never ended: {:?}",
        monitor.err()
    );
    let listening = monitor.metrics_address(30);
    assert_no_secret("/metrics", &get(&format!("http://{listening}/metrics")));
    assert_no_secret(
        "/board.json",
        &get(&format!("http://{listening}/board.json")),
    );
    let status = bmb_testkit::bin::command(BIN)
        .args(["status", "--endpoint", &listening])
        .output()
        .expect("status runs");
    assert_no_secret("status", &String::from_utf8_lossy(&status.stdout));

    monitor.signal(rustix::process::Signal::TERM);
    assert_eq!(monitor.wait_exit(30).and_then(|s| s.code()), Some(0));
    assert_no_secret("stdout", &monitor.out().join("\n"));
    assert_no_secret("stderr", &monitor.err().join("\n"));
    let kept = files_under(state.path());
    assert!(
        kept.iter().any(|(path, _)| path.contains("/session/")),
        "no journal kept: {kept:?}"
    );
    for (path, bytes) in &kept {
        assert_no_secret(path, &String::from_utf8_lossy(bytes));
    }
}

/// A URL with a password that is refused, or that a board reader cannot
/// reach, is said without its password: clap's own error (which quotes the
/// value) never sees it, and `status` shows the endpoint redacted.
#[test]
fn a_bad_or_unreachable_url_with_a_password_is_said_without_it() {
    let output = bmb_testkit::bin::command(BIN)
        .args([
            "watch",
            "agent",
            "--once",
            "--alertmanager",
            &format!("http://admin:{PASSWORD}@bad host:9093"),
        ])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--alertmanager")
            && stderr.contains("`http://admin:***@bad host:9093` names no host"),
        "{stderr}"
    );
    assert_no_secret("watch's usage error", &stderr);

    let port = bmb_testkit::sshd::free_port();
    let endpoint = format!("http://admin:{PASSWORD}@127.0.0.1:{port}");
    for (_, json, output) in status_every_way(&endpoint) {
        let stdout = String::from_utf8_lossy(&output.stdout);
        // The table cuts a long cell; the JSON has it whole.
        let shown = if json {
            format!("http://admin:***@127.0.0.1:{port}")
        } else {
            "http://admin:***@".to_string()
        };
        assert!(stdout.contains(&shown), "{stdout}");
        assert_no_secret("status", &stdout);
        assert_no_secret("status's stderr", &String::from_utf8_lossy(&output.stderr));
    }
}

/// A fake Alertmanager, board endpoint and Prometheus behind an auth proxy
/// that refuses every request and echoes the credentials it was sent in
/// its answer: the `Authorization` header's value and the password. The
/// headers' base64 values it was sent, kept.
fn echoing_proxy() -> (u16, Arc<Mutex<Vec<String>>>) {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&sent);
    let port = bmb_testkit::http::serve(move |text| {
        let basic = text
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("authorization")
                    .then(|| value.trim().strip_prefix("Basic ").map(str::to_string))?
            })
            .unwrap_or_default();
        seen.lock().unwrap().push(basic.clone());
        let echo = format!("no entry for Basic {basic} (password {PASSWORD})");
        let (status, body) = if text.starts_with("POST ") {
            ("401 Unauthorized", echo)
        } else if text.starts_with("GET /api/v1/query") {
            (
                "200 OK",
                format!(r#"{{"status":"error","error":"{echo}"}}"#),
            )
        } else {
            // A JSON string where the board should be: a parser's error
            // quotes it.
            ("200 OK", format!("\"{echo}\""))
        };
        format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    });
    (port, sent)
}

/// Found by the adversarial run: the URL's userinfo was redacted, but an
/// answer that echoed the credentials (a proxy's error body quoting the
/// Basic header, or the password) was printed as it came. Every stream of
/// `watch` and of `status` is searched for the password and the header's
/// base64, padded or not.
#[test]
fn credentials_an_answer_echoes_are_printed_nowhere() {
    let (port, sent) = echoing_proxy();
    let url = format!("http://admin:{PASSWORD}@127.0.0.1:{port}");
    let tmux = asking();
    let state = tempfile::tempdir().expect("tempdir");
    let mut command = bmb_testkit::bin::command(BIN);
    command
        .args(["watch", "--once", "-S"])
        .arg(&tmux.socket)
        .args(["agent", "--alertmanager", &url])
        .env("XDG_STATE_HOME", state.path());
    let watch = bmb_testkit::bin::run(command, b"", Duration::from_secs(60));
    let mut streams = vec![
        ("watch's stdout", watch.stdout),
        ("watch's stderr", watch.stderr.clone()),
    ];
    let watch_err = String::from_utf8_lossy(&watch.stderr).into_owned();
    assert!(
        watch_err.contains("answered 401 Unauthorized: no entry for Basic *** (password ***)"),
        "{watch_err}"
    );
    for (flag, _, output) in status_every_way(&url) {
        let shown = String::from_utf8_lossy(&output.stdout).into_owned();
        // What it said of the answer is shown, the credentials not.
        assert!(shown.contains("no entry for Basic ***"), "{flag}: {shown}");
        streams.push(("status's stdout", output.stdout));
        streams.push(("status's stderr", output.stderr));
    }
    let basics = sent.lock().unwrap().clone();
    assert!(basics.len() >= 5, "{basics:?}");
    for basic in &basics {
        assert!(!basic.is_empty(), "every request carried Basic credentials");
        for (what, bytes) in &streams {
            let text = String::from_utf8_lossy(bytes);
            assert_no_secret(what, &text);
            assert!(
                !text.contains(basic.trim_end_matches('=')),
                "{basic} in {what}: {text}"
            );
        }
    }
}
