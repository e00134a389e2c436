//! `bmb-monitor watch --alertmanager URL` end to end: the real binary, a
//! private tmux server replaying real Claude Code captures, and a real
//! Alertmanager (Debian's `prometheus-alertmanager`) on 127.0.0.1, read back
//! through its own API as an operator's tools would read it.
// These tests start the binary, tmux, Alertmanager and fake servers; that is their point.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bmb_testkit::alertmanager::Alertmanager;
use bmb_testkit::bin::{Running, wait_until};
use bmb_testkit::sshd::free_port;
use bmb_testkit::tmux::{PrivateTmux, capture_path};

/// A monitor of the private server's `agent` session, polling every second.
fn watch(tmux: &PrivateTmux, state: &tempfile::TempDir, extra: &[&str]) -> Running {
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args(["agent", "--interval", "1", "--work-probe", "echo 4"])
        .args(extra)
        .env("XDG_STATE_HOME", state.path());
    Running::start(command)
}

/// A private server whose `agent` pane shows a permission question, and a
/// state folder for its monitor.
fn asking() -> (PrivateTmux, tempfile::TempDir) {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let received = tmux.dir.path().join("agent.received");
    tmux.replay(
        "agent",
        &capture_path("question-permission-bash"),
        &received,
    );
    (tmux, state)
}

/// The active alerts Alertmanager holds for our target under `name`.
fn ours(alertmanager: &Alertmanager, name: &str) -> Vec<serde_json::Value> {
    alertmanager
        .alerts()
        .into_iter()
        .filter(|a| a["labels"]["alertname"] == name && a["labels"]["target"] == "agent")
        .collect()
}

/// The `agent` pane's program replaced by one replaying `case` (then
/// recording what is typed into it); returns once it is on screen.
fn show(tmux: &PrivateTmux, case: &str, received: &std::path::Path) {
    let capture = capture_path(case);
    tmux.tmux(&[
        "respawn-pane",
        "-k",
        "-t",
        "=agent:",
        "sh",
        "-c",
        &format!(
            "cat '{}'; exec cat >> '{}'",
            capture.display(),
            received.display()
        ),
    ]);
    let text = std::fs::read_to_string(&capture).expect("capture");
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    tmux.wait_for("agent", |pane| pane.contains(&last));
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("the kernel's host name")
        .trim()
        .to_string()
}

#[test]
fn a_question_fires_in_alertmanager_with_its_labels_and_text_and_resolves_when_the_pane_moves_on() {
    let alertmanager = Alertmanager::start();
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let received = tmux.dir.path().join("agent.received");
    // The agent works (its screen names its CLI), then asks.
    tmux.replay("agent", &capture_path("working-bash-sleep"), &received);
    let funnel = tmux.dir.path().join("funnel");
    let alert_cmd = format!("cat >> '{}'", funnel.display());
    let monitor = watch(
        &tmux,
        &state,
        &[
            "--alertmanager",
            &alertmanager.url(),
            "--alert-cmd",
            &alert_cmd,
        ],
    );
    assert!(
        monitor.wait_out(" · WORKING · ", 30),
        "the monitor never read the working pane: {:?}",
        monitor.out()
    );
    show(&tmux, "question-permission-bash", &received);
    assert!(
        wait_until(60, || !ours(&alertmanager, "BmbQuestion").is_empty()),
        "no BmbQuestion alert reached Alertmanager; stdout: {:?}; stderr: {:?}",
        monitor.out(),
        monitor.err()
    );
    let alerts = ours(&alertmanager, "BmbQuestion");
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    let alert = &alerts[0];
    assert_eq!(
        alert["labels"],
        serde_json::json!({
            "alertname": "BmbQuestion",
            "target": "agent",
            "host": hostname(),
            "session": "agent",
            "cli": "claude",
            "server": tmux.socket.canonicalize().expect("the socket").to_string_lossy(),
        }),
        "{alert}"
    );
    let description = alert["annotations"]["description"]
        .as_str()
        .expect("a description");
    assert!(
        description.contains("Do you want to proceed?")
            && description.contains("python3 -m pytest -q tests/")
            && description.contains("NOT answered"),
        "{description}"
    );
    assert_eq!(
        alert["annotations"]["summary"],
        "QUESTION on agent: the agent is waiting for a human. It was NOT answered."
    );
    assert_eq!(alert["status"]["state"], "active", "{alert}");
    // The plain funnel still ran, once, with the same question.
    assert!(
        wait_until(10, || std::fs::read_to_string(&funnel)
            .unwrap_or_default()
            .contains("Do you want to proceed?")),
        "the alert command did not get the question"
    );
    assert_eq!(std::fs::read_to_string(&received).unwrap_or_default(), "");

    // The agent moves on: the question's dialog gives way to a working screen.
    let seen = monitor.out().len();
    show(&tmux, "working-bash-sleep", &received);
    assert!(
        wait_until(30, || monitor.out()[seen..]
            .iter()
            .any(|l| l.contains(" · WORKING · "))),
        "the monitor never read the working pane again: {:?}",
        monitor.out()
    );
    assert!(
        wait_until(30, || ours(&alertmanager, "BmbQuestion").is_empty()),
        "the question is still active in Alertmanager: {:?}",
        alertmanager.alerts()
    );
    let funnel_text = std::fs::read_to_string(&funnel).unwrap_or_default();
    assert_eq!(
        funnel_text.matches("Do you want to proceed?").count(),
        1,
        "the alert command ran once: {funnel_text}"
    );
    assert!(
        !monitor.err().iter().any(|l| l.contains("alertmanager")),
        "a healthy Alertmanager is not complained about: {:?}",
        monitor.err()
    );
}

#[test]
fn an_alertmanager_that_is_down_is_said_once_and_gets_the_alert_when_it_comes_up() {
    let port = free_port();
    let (tmux, state) = asking();
    let url = format!("http://127.0.0.1:{port}");
    let monitor = watch(&tmux, &state, &["--alertmanager", &url]);
    assert!(
        wait_until(30, || monitor.err().iter().any(|l| l
            .contains("alertmanager")
            && l.contains("sent again next poll"))),
        "a refused connection was not said: {:?}",
        monitor.err()
    );
    // The loop goes on polling while nothing listens.
    let polls = |m: &Running| {
        m.out()
            .iter()
            .filter(|l| l.contains(" · QUESTION · "))
            .count()
    };
    assert!(
        wait_until(30, || polls(&monitor) >= 4),
        "{:?}",
        monitor.out()
    );
    let complaints = |m: &Running| {
        m.err()
            .iter()
            .filter(|l| l.contains("alertmanager") && l.contains("sent again"))
            .count()
    };
    assert_eq!(complaints(&monitor), 1, "said once: {:?}", monitor.err());

    let alertmanager = Alertmanager::start_at(Some(port));
    assert!(
        wait_until(60, || !ours(&alertmanager, "BmbQuestion").is_empty()),
        "the undelivered alert was not sent again: {:?}",
        monitor.err()
    );
    assert!(
        wait_until(10, || monitor.err().iter().any(|l| l
            .contains("alertmanager")
            && l.contains("delivering again"))),
        "{:?}",
        monitor.err()
    );
    assert_eq!(complaints(&monitor), 1, "{:?}", monitor.err());
}

/// A fake Alertmanager: the first connection is accepted and never
/// answered (a hung server), every later request answered 500.
fn slow_then_failing() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let requests = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&requests);
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            if count.fetch_add(1, Ordering::SeqCst) == 0 {
                held.push(stream);
                continue;
            }
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = [0u8; 65536];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\nboom",
            );
        }
    });
    (port, requests)
}

#[test]
fn a_hung_or_failing_alertmanager_costs_a_poll_a_short_timeout_and_is_said_once_per_change() {
    let (port, requests) = slow_then_failing();
    let (tmux, state) = asking();
    let url = format!("http://127.0.0.1:{port}");
    let monitor = watch(&tmux, &state, &["--alertmanager", &url]);
    // The hung post, then three answered 500: each one a poll that went on.
    assert!(
        wait_until(60, || requests.load(Ordering::SeqCst) >= 4),
        "{} requests; stderr {:?}",
        requests.load(Ordering::SeqCst),
        monitor.err()
    );
    assert!(
        monitor.wait_out(" · QUESTION · ", 10),
        "{:?}",
        monitor.out()
    );
    let said: Vec<String> = monitor
        .err()
        .into_iter()
        .filter(|l| l.contains("alertmanager"))
        .collect();
    assert_eq!(said.len(), 2, "one line per change: {said:?}");
    assert!(said[0].contains("no answer within 2 s"), "{said:?}");
    assert!(
        said[1].contains("answered 500") && said[1].contains("boom"),
        "{said:?}"
    );
    // The funnel (stderr without --alert-cmd) relayed the question once regardless.
    let relayed = monitor
        .err()
        .iter()
        .filter(|l| l.starts_with("bmb-monitor: alert (question)"))
        .count();
    assert_eq!(relayed, 1, "{:?}", monitor.err());
}

#[test]
fn an_https_or_malformed_alertmanager_url_exits_2_naming_it() {
    for (url, says) in [
        ("https://127.0.0.1:9093", "no TLS"),
        ("127.0.0.1:9093", "not an http:// URL"),
    ] {
        let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
            .args(["watch", "agent", "--once", "--alertmanager", url])
            .output()
            .expect("runs");
        assert_eq!(output.status.code(), Some(2), "{url}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--alertmanager") && stderr.contains(says),
            "{stderr}"
        );
    }
}

/// Found by a review: a reload from a 1 s to a 300 s interval kept the old
/// 3-minute hold until the next cycle, 5 minutes on, so Alertmanager
/// resolved a question still on screen. The reload re-sends the firing alert
/// with the new hold at once (each sending holds six hours now, and three
/// re-sendings past a two-hour interval).
#[test]
fn a_reload_to_a_longer_interval_re_sends_the_firing_alert_with_the_new_hold() {
    let mut alertmanager = Alertmanager::start();
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let received = tmux.dir.path().join("received");
    tmux.session("agent", "exec sleep 600");
    show(&tmux, "question-permission-bash", &received);
    let config = tmux.dir.path().join("fleet.toml");
    let body = |interval: u64| {
        format!(
            "[defaults]\ninterval = {interval}\n[sinks]\nalertmanager = \"{}\"\n[server]\nsocket_path = \"{}\"\n[[targets]]\ntarget = \"agent\"\n",
            alertmanager.url(),
            tmux.socket.display()
        )
    };
    std::fs::write(&config, body(1)).expect("config");
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("--config")
        .arg(&config)
        .env("XDG_STATE_HOME", state.path());
    let monitor = Running::start(command);
    let held = |alert: &serde_json::Value| -> i64 {
        let stamp = |key: &str| {
            alert[key]
                .as_str()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map_or(0, |t| t.as_second())
        };
        stamp("endsAt") - stamp("updatedAt")
    };
    let mut last = Vec::new();
    assert!(
        wait_until(60, || {
            last = ours(&alertmanager, "BmbQuestion");
            last.len() == 1
        }),
        "{:?}",
        monitor.err()
    );
    assert!(held(&last[0]) <= 6 * 3600 + 5, "{}", last[0]);
    std::fs::write(&config, body(3 * 3600)).expect("config");
    monitor.signal(rustix::process::Signal::HUP);
    assert!(
        wait_until(60, || {
            last = ours(&alertmanager, "BmbQuestion");
            last.len() == 1 && held(&last[0]) > 8 * 3600
        }),
        "{last:?} {:?}",
        monitor.err()
    );
    alertmanager.stop();
}

/// Found by a review (issue 19): behind an auth proxy answering 302 to its
/// login page, the client followed the redirect, re-sent the POST as a GET
/// without its body, the GET answered 200, and every alert counted as
/// delivered. A redirect is now a failed delivery, said, and sent again.
#[test]
fn an_alertmanager_url_that_redirects_is_a_failed_delivery_said_and_retried() {
    let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&lines);
    let port = bmb_testkit::http::serve(move |request| {
        let first = request.lines().next().unwrap_or("").to_string();
        seen.lock().unwrap().push(first);
        b"HTTP/1.1 302 Found\r\nLocation: /login\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            .to_vec()
    });
    let (tmux, state) = asking();
    let url = format!("http://127.0.0.1:{port}");
    let monitor = watch(&tmux, &state, &["--alertmanager", &url]);
    // Sent again next poll: two posts, neither followed to the login page.
    assert!(
        wait_until(60, || lines.lock().unwrap().len() >= 2),
        "{:?}; stderr {:?}",
        lines.lock().unwrap(),
        monitor.err()
    );
    let requests = lines.lock().unwrap().clone();
    assert!(
        requests.iter().all(|l| l == "POST /api/v2/alerts HTTP/1.1"),
        "{requests:?}"
    );
    let said: Vec<String> = monitor
        .err()
        .into_iter()
        .filter(|l| l.contains("alertmanager"))
        .collect();
    assert_eq!(said.len(), 1, "said once: {said:?}");
    assert!(
        said[0].contains("answered 302 Found (a redirect, not followed"),
        "{said:?}"
    );
}

/// Found by a review (issue 19): the labels named no tmux server, so the
/// same session name on two servers was one alert: Alertmanager held one
/// question's text for both, and answering one resolved the other's. The
/// `server` label (the socket file the state folder is keyed by) keeps them
/// apart, and so does `BMB_SERVER` for the alert command.
#[test]
fn the_same_session_on_two_tmux_servers_is_two_alerts_and_answering_one_resolves_only_it() {
    let alertmanager = Alertmanager::start();
    let (first, first_state) = asking();
    let (second, second_state) = asking();
    let funnel = first.dir.path().join("funnel");
    let alert_cmd = format!("echo \"$BMB_SERVER\" >> '{}'", funnel.display());
    let extra = [
        "--alertmanager",
        &alertmanager.url(),
        "--alert-cmd",
        &alert_cmd,
    ];
    let first_monitor = watch(&first, &first_state, &extra);
    let second_monitor = watch(&second, &second_state, &extra);
    let socket = |tmux: &PrivateTmux| {
        tmux.socket
            .canonicalize()
            .expect("the socket")
            .to_string_lossy()
            .into_owned()
    };
    let servers = |alerts: &[serde_json::Value]| -> Vec<String> {
        let mut servers: Vec<String> = alerts
            .iter()
            .map(|a| a["labels"]["server"].as_str().unwrap_or("").to_string())
            .collect();
        servers.sort();
        servers
    };
    let mut both = vec![socket(&first), socket(&second)];
    both.sort();
    let mut held = Vec::new();
    assert!(
        wait_until(60, || {
            held = ours(&alertmanager, "BmbQuestion");
            servers(&held) == both
        }),
        "not one alert per server: {held:?}; stderr {:?} {:?}",
        first_monitor.err(),
        second_monitor.err()
    );
    assert!(
        wait_until(10, || {
            let mut said: Vec<String> = std::fs::read_to_string(&funnel)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect();
            said.sort();
            said == both
        }),
        "BMB_SERVER did not name each server: {:?}",
        std::fs::read_to_string(&funnel)
    );

    // The first server's agent is answered: only its alert resolves.
    let received = first.dir.path().join("agent.answered");
    let seen = first_monitor.out().len();
    show(&first, "working-bash-sleep", &received);
    assert!(
        wait_until(30, || first_monitor.out()[seen..]
            .iter()
            .any(|l| l.contains(" · WORKING · "))),
        "{:?}",
        first_monitor.out()
    );
    assert!(
        wait_until(30, || {
            held = ours(&alertmanager, "BmbQuestion");
            servers(&held) == [socket(&second)]
        }),
        "answering the first server's question did not leave the second's alone: {held:?}"
    );
    // The second keeps firing: a later poll still reads its question.
    let polled = second_monitor.out().len();
    assert!(
        wait_until(10, || second_monitor.out()[polled..]
            .iter()
            .any(|l| l.contains(" · QUESTION · "))),
        "{:?}",
        second_monitor.out()
    );
    assert_eq!(
        servers(&ours(&alertmanager, "BmbQuestion")),
        [socket(&second)]
    );
}

/// A fake Alertmanager that takes the first post whole, hands its body to
/// the test, and answers nothing until the test sends on the returned
/// `release` (or drops it).
fn holding() -> (
    u16,
    std::sync::mpsc::Receiver<String>,
    std::sync::mpsc::Sender<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    let (took, taken) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let Some(Ok(mut stream)) = listener.incoming().next() else {
            return;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
        let mut request = Vec::new();
        let mut chunk = [0u8; 65536];
        // The head, then the body its Content-Length says.
        let whole = |request: &[u8]| {
            let text = String::from_utf8_lossy(request);
            let (head, body) = text.split_once("\r\n\r\n")?;
            let length: usize = head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse().ok())?
            })?;
            (body.len() >= length).then(|| body.to_string())
        };
        let body = loop {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => request.extend_from_slice(&chunk[..n]),
            }
            if let Some(body) = whole(&request) {
                break body;
            }
        };
        let _ = took.send(body);
        let _ = released.recv();
        let _ =
            stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    (port, taken, release)
}

/// Issue 19, item 4: a SIGTERM while Alertmanager held a post waited for
/// the post's own timeout. The monitor now ends while the post is still
/// held, and the alert it carried is posted by the next run, with the
/// start it had: kept, not lost.
#[test]
fn a_sigterm_while_alertmanager_holds_a_post_ends_the_monitor_and_the_next_run_posts_it() {
    let (port, taken, release) = holding();
    let (tmux, state) = asking();
    let url = format!("http://127.0.0.1:{port}");
    let mut monitor = watch(&tmux, &state, &["--alertmanager", &url]);
    let body = taken
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("no post came: {:?}", monitor.err()));
    let held: serde_json::Value = serde_json::from_str(&body).expect("a JSON body");
    let question = held
        .as_array()
        .and_then(|alerts| {
            alerts
                .iter()
                .find(|a| a["labels"]["alertname"] == "BmbQuestion")
        })
        .cloned()
        .unwrap_or_else(|| panic!("the question is in the held post: {body}"));
    monitor.signal(rustix::process::Signal::TERM);
    let status = monitor.wait_exit(60).expect("it ends on SIGTERM");
    // Released only now: it ended while the post was held, not at the
    // post's timeout (which it would have said).
    drop(release);
    assert_eq!(status.code(), Some(0), "{:?}", monitor.err());
    let said: Vec<String> = monitor
        .err()
        .into_iter()
        .filter(|l| l.contains("alertmanager"))
        .collect();
    assert!(
        said.len() == 1 && said[0].contains("a post was cut short by the stop"),
        "{said:?}"
    );

    let alertmanager = Alertmanager::start();
    let mut again = watch(&tmux, &state, &["--alertmanager", &alertmanager.url()]);
    assert!(
        wait_until(60, || !ours(&alertmanager, "BmbQuestion").is_empty()),
        "the next run never posted the question: {:?}",
        again.err()
    );
    let delivered = ours(&alertmanager, "BmbQuestion");
    let start = |alert: &serde_json::Value| {
        alert["startsAt"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            // Alertmanager keeps milliseconds.
            .map(|t| t.as_millisecond())
    };
    assert!(start(&question).is_some(), "{question}");
    assert_eq!(
        start(&delivered[0]),
        start(&question),
        "the kept alert, with its start: {delivered:?}"
    );
    again.signal(rustix::process::Signal::TERM);
    assert!(again.wait_exit(30).is_some());
}
