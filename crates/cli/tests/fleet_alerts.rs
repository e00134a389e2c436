//! The operator's kit end to end (issue 21): the shipped Prometheus rules,
//! Alertmanager example and Grafana dashboard, checked by their own tools
//! and against the real binary; a real Prometheus evaluating the shipped
//! rules, a real Alertmanager with the shipped routing and inhibition, and
//! a webhook receiver counting the pages a person would get.
// These tests start the binary, tmux, sshd, Prometheus and Alertmanager; that is their point.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bmb_testkit::alertmanager::Alertmanager;
use bmb_testkit::bin::{Running, wait_until};
use bmb_testkit::prometheus::Prometheus;
use bmb_testkit::sshd::{Sshd, free_port};
use bmb_testkit::tmux::{PrivateTmux, capture_path};
use bmb_testkit::webhook::Webhook;

fn contrib(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib")
        .join(path)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `program ARGS` in `dir`, which must succeed; its stdout and stderr.
fn tool(program: &str, args: &[&str], dir: &Path) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{program} {args:?}: {said}");
    said
}

#[test]
fn the_shipped_rules_pass_promtool_and_the_alertmanager_example_passes_amtool() {
    let rules = contrib("prometheus");
    let checked = tool(
        "promtool",
        &["check", "rules", "bmb-monitor.rules.yml"],
        &rules,
    );
    assert!(checked.contains("SUCCESS: 2 rules found"), "{checked}");
    let tested = tool(
        "promtool",
        &["test", "rules", "bmb-monitor.rules.test.yml"],
        &rules,
    );
    assert!(tested.contains("SUCCESS"), "{tested}");
    let checked = tool(
        "amtool",
        &["check-config", "alertmanager.yml"],
        &contrib("alertmanager"),
    );
    assert!(
        checked.contains("SUCCESS") && checked.contains("1 inhibit rules"),
        "{checked}"
    );
}

/// The metric names a /metrics exposition holds: each sample's, and each
/// family's as PromQL names it (a counter's `_total`, a histogram's
/// `_bucket`, `_sum` and `_count`), whether or not it has a sample yet.
fn exported(exposition: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split_whitespace();
            let (Some(name), Some(kind)) = (words.next(), words.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            names.insert(name.to_string());
            for suffix in suffixes {
                if !name.ends_with(suffix) {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_string());
        }
    }
    names
}

/// The metric names a PromQL expression reads: its identifiers once string
/// literals, label matchers, ranges, Grafana variables and the label lists
/// of `by`/`without`/`on`/`ignoring`/`group_*` are taken out, less the
/// functions and aggregations (an identifier before a parenthesis) and the
/// language's keywords.
fn promql_metrics(expr: &str) -> BTreeSet<String> {
    const KEYWORDS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "bool",
        "and",
        "or",
        "unless",
        "offset",
        "inf",
        "nan",
    ];
    // Strings, matchers and ranges out.
    let mut plain = String::new();
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        let close = match c {
            '"' | '\'' | '`' => c,
            '{' => '}',
            '[' => ']',
            _ => {
                plain.push(c);
                continue;
            }
        };
        // To the closing character, a quoted string inside a matcher skipped whole.
        let mut quote = (close != '}' && close != ']').then_some(close);
        let mut escaped = false;
        for inner in chars.by_ref() {
            match quote {
                Some(_) if escaped => escaped = false,
                Some(_) if inner == '\\' => escaped = true,
                Some(q) if inner == q => {
                    quote = None;
                    if q == close {
                        break;
                    }
                }
                Some(_) => {}
                None if matches!(inner, '"' | '\'' | '`') => quote = Some(inner),
                None if inner == close => break,
                None => {}
            }
        }
        plain.push(' ');
    }
    #[derive(PartialEq)]
    enum Tok {
        Ident(String),
        Open,
        Close,
        Other,
    }
    let chars: Vec<char> = plain.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_ascii_alphabetic() || matches!(c, '_' | ':' | '$') {
            let start = at;
            while at < chars.len()
                && (chars[at].is_ascii_alphanumeric() || matches!(chars[at], '_' | ':' | '$'))
            {
                at += 1;
            }
            tokens.push(Tok::Ident(chars[start..at].iter().collect()));
            continue;
        }
        if c.is_ascii_digit() || c == '.' {
            // A number or a duration (`1e3`, `0.9`, `5m`).
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '.') {
                at += 1;
            }
            tokens.push(Tok::Other);
            continue;
        }
        tokens.push(match c {
            '(' => Tok::Open,
            ')' => Tok::Close,
            c if c.is_whitespace() => {
                at += 1;
                continue;
            }
            _ => Tok::Other,
        });
        at += 1;
    }
    const LISTS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    let mut names = BTreeSet::new();
    let mut at = 0;
    while at < tokens.len() {
        let Tok::Ident(token) = &tokens[at] else {
            at += 1;
            continue;
        };
        // A function's or aggregation's name: `rate(`, `sum (`, `sum by (`.
        let called = match tokens.get(at + 1) {
            Some(Tok::Open) => true,
            Some(Tok::Ident(next)) => next == "by" || next == "without",
            _ => false,
        };
        if LISTS.contains(&token.as_str()) && called {
            // A label list: skip to its closing parenthesis.
            while at < tokens.len() && tokens[at] != Tok::Close {
                at += 1;
            }
        } else if !(called || token.starts_with('$') || KEYWORDS.contains(&token.as_str())) {
            names.insert(token.clone());
        }
        at += 1;
    }
    names
}

#[test]
fn a_promql_expression_names_its_metrics_and_nothing_else() {
    let names = |expr: &str| promql_metrics(expr).into_iter().collect::<Vec<_>>();
    assert_eq!(
        names(
            r#"histogram_quantile(0.9, sum by (le, instance) (rate(bmb_watch_cycle_duration_seconds_bucket{job="bmb"}[5m])))"#
        ),
        ["bmb_watch_cycle_duration_seconds_bucket"]
    );
    assert_eq!(
        names(r#"up{job="bmb"} == 0 or absent(up{job="bmb", x="a} or b"})"#),
        ["up"]
    );
    assert_eq!(
        names(
            "time() - bmb_watch_last_cycle_timestamp_seconds > 3 * bmb_watch_interval_seconds + 60"
        ),
        [
            "bmb_watch_interval_seconds",
            "bmb_watch_last_cycle_timestamp_seconds"
        ]
    );
    assert_eq!(
        names("a * on (target, host) group_left (cli) b offset 5m / $__rate_interval"),
        ["a", "b"]
    );
    assert_eq!(names("count(x == 0) or vector(0)"), ["x"]);
}

/// A watcher of one working pane with `/metrics` on a free port, and the
/// address it said it bound.
fn serving(tmux: &PrivateTmux, state: &Path, extra: &[&str]) -> (Running, String) {
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args(["agent", "--interval", "1", "--work-probe", "echo 4"])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .args(extra)
        .env("XDG_STATE_HOME", state);
    let monitor = Running::start(command);
    let address = monitor.metrics_address(30);
    (monitor, address)
}

fn http_get(url: &str) -> String {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .proxy(None)
            .build(),
    )
    .get(url)
    .call()
    .unwrap_or_else(|e| panic!("GET {url}: {e}"))
    .body_mut()
    .read_to_string()
    .expect("a body")
}

/// Every `expr` in a Grafana dashboard, panel by panel (rows' panels too).
fn dashboard_queries(value: &serde_json::Value, found: &mut Vec<(String, String)>) {
    if let Some(panels) = value["panels"].as_array() {
        for panel in panels {
            let title = panel["title"].as_str().unwrap_or("?").to_string();
            for target in panel["targets"].as_array().into_iter().flatten() {
                if let Some(expr) = target["expr"].as_str() {
                    found.push((title.clone(), expr.to_string()));
                }
            }
            dashboard_queries(panel, found);
        }
    }
}

/// Issue 21, item 11: the dashboard's every query (and the shipped rules')
/// names only metrics the real watcher serves, or Prometheus's own `up`;
/// and each one is a query the real Prometheus accepts.
#[test]
fn every_query_of_the_dashboard_and_the_rules_names_only_metrics_a_running_watcher_exports() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let received = tmux.dir.path().join("received");
    tmux.replay("agent", &capture_path("working-bash-sleep"), &received);
    let (monitor, address) = serving(&tmux, state.path(), &[]);
    assert!(monitor.wait_out(" · WORKING · ", 30), "{:?}", monitor.out());
    let exposition = http_get(&format!("http://{address}/metrics"));
    let mut known = exported(&exposition);
    known.insert("up".to_string());
    assert!(
        known.contains("bmb_watch_target_state") && known.contains("bmb_watch_nudges_total"),
        "{known:?}"
    );

    let dashboard: serde_json::Value =
        serde_json::from_str(&read(&contrib("grafana/bmb-monitor.json"))).expect("JSON");
    let mut queries = Vec::new();
    dashboard_queries(&dashboard, &mut queries);
    assert!(queries.len() >= 10, "{queries:?}");
    let rules = read(&contrib("prometheus/bmb-monitor.rules.yml"));
    for line in rules.lines() {
        if let Some(expr) = line.trim().strip_prefix("expr: ") {
            queries.push(("rules".to_string(), expr.to_string()));
        }
    }
    let mut unknown = Vec::new();
    for (title, expr) in &queries {
        let names = promql_metrics(expr);
        assert!(!names.is_empty(), "{title}: {expr} names no metric");
        for name in names {
            if !known.contains(&name) {
                unknown.push(format!("{title}: {expr}: {name}"));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "metrics the watcher does not export: {unknown:#?}\nexported: {known:?}"
    );

    // Each one parses and runs on the real Prometheus, scraping this watcher.
    let prometheus = Prometheus::start(
        &format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: bmb\n    static_configs:\n      - targets: ['{address}']\n"
        ),
        &[],
    );
    let query = |expr: &str| -> serde_json::Value {
        let url = format!(
            "http://127.0.0.1:{}/api/v1/query?query={}",
            prometheus.port(),
            percent(&expr.replace("${datasource}", ""))
        );
        let agent = ureq::Agent::new_with_config(
            ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(5)))
                .http_status_as_error(false)
                .proxy(None)
                .build(),
        );
        let text = agent
            .get(&url)
            .call()
            .expect("query")
            .body_mut()
            .read_to_string()
            .expect("body");
        serde_json::from_str(&text).expect("JSON")
    };
    assert!(
        wait_until(60, || query(
            r#"bmb_watch_target_state{state="WORKING"} == 1"#
        )["data"]["result"]
            .as_array()
            .is_some_and(|r| !r.is_empty())),
        "Prometheus never scraped the watcher: {}",
        prometheus.log()
    );
    for (title, expr) in &queries {
        let answer = query(expr);
        assert_eq!(answer["status"], "success", "{title}: {expr}: {answer}");
    }
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The shipped Alertmanager example, its receiver the test's webhook and its
/// waits a second (a test cannot wait 30 s per group); every replacement
/// must find its text, so the test follows the file.
fn shipped_alertmanager(webhook: &Webhook) -> String {
    let mut text = read(&contrib("alertmanager/alertmanager.yml"));
    for (from, to) in [
        ("http://127.0.0.1:5001/bmb".to_string(), webhook.url()),
        ("group_wait: 30s".to_string(), "group_wait: 1s".to_string()),
        (
            "group_interval: 5m".to_string(),
            "group_interval: 1s".to_string(),
        ),
    ] {
        assert!(text.contains(&from), "the shipped example lost `{from}`");
        text = text.replace(&from, &to);
    }
    text
}

fn active(alertmanager: &Alertmanager, name: &str) -> Vec<serde_json::Value> {
    alertmanager
        .alerts()
        .into_iter()
        .filter(|a| a["labels"]["alertname"] == name)
        .collect()
}

fn stamp(alert: &serde_json::Value, key: &str) -> jiff::Timestamp {
    alert[key]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {alert}"))
}

/// The question watcher of the restart test: `/metrics` on `port`, and a
/// re-sending every second (the tests' refresh) so the old hold would have
/// been three seconds.
fn question_watcher(tmux: &PrivateTmux, state: &Path, alertmanager: &str, port: u16) -> Running {
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args(["agent", "--interval", "1", "--work-probe", "echo 4"])
        .args(["--alertmanager", alertmanager])
        .args(["--alert-cmd", "cat > /dev/null"])
        .args(["--metrics-listen", &format!("127.0.0.1:{port}")])
        .env("BMB_MONITOR_ALERT_REFRESH_SECS", "1")
        .env("XDG_STATE_HOME", state);
    Running::start(command)
}

/// Issue 21, item 3: after a `kill -9` and a gap longer than the old
/// `endsAt`, Alertmanager resolved every question still on screen (one
/// "resolved" notification each), and the restarted watcher paged them all
/// again. Now the question stays firing, the shipped rules page that the
/// watcher is down, and the restart is no new page.
#[test]
fn a_killed_watcher_leaves_its_question_firing_pages_monitor_down_and_restarts_without_a_new_page()
{
    let webhook = Webhook::start();
    let alertmanager = Alertmanager::with_config(None, &shipped_alertmanager(&webhook));
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let received = tmux.dir.path().join("received");
    tmux.replay(
        "agent",
        &capture_path("question-permission-bash"),
        &received,
    );
    let port = free_port();
    let prometheus = Prometheus::start(
        &format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files: [bmb-monitor.rules.yml]\n\
             alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['127.0.0.1:{}']\n\
             scrape_configs:\n  - job_name: bmb\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n",
            alertmanager.port()
        ),
        &[&contrib("prometheus/bmb-monitor.rules.yml")],
    );
    let mut monitor = question_watcher(&tmux, state.path(), &alertmanager.url(), port);
    assert!(
        wait_until(60, || webhook.about("BmbQuestion")
            == [("firing".into(), "firing".into())]),
        "no page for the question: {:?}; stderr {:?}",
        webhook.notifications(),
        monitor.err()
    );
    let before = active(&alertmanager, "BmbQuestion");
    assert_eq!(before.len(), 1, "{before:?}");
    let held = stamp(&before[0], "endsAt").duration_since(stamp(&before[0], "updatedAt"));
    assert!(
        held >= jiff::SignedDuration::from_hours(5),
        "each sending holds hours, not minutes: {}",
        before[0]
    );

    // kill -9: nothing resolves anything on the way out.
    monitor.child.kill().expect("SIGKILL our own watcher");
    let _ = monitor.child.wait();
    let killed = Instant::now();
    assert!(
        wait_until(240, || prometheus.firing("BmbMonitorDown")),
        "the shipped rules never fired BmbMonitorDown: {:?}\n{}",
        prometheus.alerts(),
        prometheus.log()
    );
    assert!(
        wait_until(60, || !webhook.about("BmbMonitorDown").is_empty()),
        "BmbMonitorDown never paged: {:?}",
        webhook.notifications()
    );
    // Far longer than the old hold (three re-sendings, 3 s here), and the question fires on.
    assert!(killed.elapsed() > Duration::from_secs(10));
    let during = active(&alertmanager, "BmbQuestion");
    assert_eq!(during.len(), 1, "{during:?}");
    assert_eq!(during[0]["status"]["state"], "active", "{}", during[0]);
    assert_eq!(
        webhook.about("BmbQuestion").len(),
        1,
        "{:?}",
        webhook.notifications()
    );

    // The restart re-posts the question as it was: the same labels and start.
    let restarted_at = jiff::Timestamp::now();
    let monitor = question_watcher(&tmux, state.path(), &alertmanager.url(), port);
    let mut after = Vec::new();
    assert!(
        wait_until(60, || {
            after = active(&alertmanager, "BmbQuestion");
            after.len() == 1 && stamp(&after[0], "updatedAt") > restarted_at
        }),
        "the restarted watcher never re-posted the question: {after:?}; stderr {:?}",
        monitor.err()
    );
    assert_eq!(after[0]["labels"], before[0]["labels"]);
    assert_eq!(after[0]["startsAt"], before[0]["startsAt"]);
    assert_eq!(after[0]["fingerprint"], before[0]["fingerprint"]);
    // Prometheus sees it back: BmbMonitorDown resolves (a page of its own),
    // well after the re-post; the question was paged once in all.
    assert!(
        wait_until(120, || webhook
            .about("BmbMonitorDown")
            .iter()
            .any(|(_, status)| status == "resolved")),
        "BmbMonitorDown never resolved: {:?}",
        webhook.notifications()
    );
    assert_eq!(
        webhook.about("BmbQuestion"),
        [("firing".to_string(), "firing".to_string())],
        "{:#?}",
        webhook.notifications()
    );
}

/// Issue 21, item 4: one stopped sshd was 20 `BmbCaptureFailing` alerts and
/// 20 stderr lines. Now it is one `BmbHostUnreachable` page (the shipped
/// example inhibits the panes' alerts under it) and one line on stderr.
#[test]
fn one_stopped_sshd_is_one_page_and_one_line_its_panes_alerts_inhibited() {
    one_outage_is_one_page(|sshd, _| sshd.kill_with_sessions());
}

/// The same for the host's tmux server killed under its panes: it was a
/// missing session per target, a page each (found by review).
#[test]
fn a_killed_tmux_server_on_a_host_is_one_page_and_one_line() {
    one_outage_is_one_page(|_, tmux| {
        tmux.tmux(&["kill-server"]);
    });
}

fn one_outage_is_one_page(outage: impl FnOnce(&mut Sshd, &PrivateTmux)) {
    let webhook = Webhook::start();
    let alertmanager = Alertmanager::with_config(None, &shipped_alertmanager(&webhook));
    let mut sshd = Sshd::start("box", &[]);
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    let sessions = ["one", "two", "three"];
    for name in sessions {
        let received = tmux.dir.path().join(format!("{name}.received"));
        tmux.replay(name, &capture_path("working-bash-sleep"), &received);
    }
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("--ssh-config")
        .arg(sshd.config())
        .arg("-S")
        .arg(&tmux.socket)
        .args(sessions.map(|s| format!("box:{s}")))
        .args(["--interval", "1", "--work-probe", "echo 4"])
        .args(["--alertmanager", &alertmanager.url()])
        .args(["--alert-cmd", "cat > /dev/null"])
        .env("BMB_MONITOR_ALERT_REFRESH_SECS", "1")
        .env("XDG_STATE_HOME", state.path());
    let monitor = Running::start(command);
    assert!(
        wait_until(60, || monitor
            .out()
            .iter()
            .filter(|l| l.contains(" · WORKING · "))
            .count()
            >= 3),
        "{:?}; stderr {:?}",
        monitor.out(),
        monitor.err()
    );

    outage(&mut sshd, &tmux);
    assert!(
        wait_until(90, || active(&alertmanager, "BmbHostUnreachable").len()
            == 1),
        "no BmbHostUnreachable: {:?}; stderr {:?}",
        alertmanager.alerts(),
        monitor.err()
    );
    let host = &active(&alertmanager, "BmbHostUnreachable")[0];
    assert_eq!(
        host["labels"],
        serde_json::json!({"alertname": "BmbHostUnreachable", "host": "box"})
    );
    // The panes' own alerts reach Alertmanager, muted under the host's.
    let mut failing = Vec::new();
    assert!(
        wait_until(60, || {
            failing = active(&alertmanager, "BmbCaptureFailing");
            failing.len() == 3
                && failing.iter().all(|a| {
                    a["status"]["state"] == "suppressed"
                        && a["status"]["inhibitedBy"]
                            .as_array()
                            .is_some_and(|by| by.contains(&host["fingerprint"]))
                })
        }),
        "{failing:#?}"
    );
    assert!(
        wait_until(60, || !webhook.about("BmbHostUnreachable").is_empty()),
        "no page for the host: {:?}",
        webhook.notifications()
    );
    assert_eq!(
        webhook.notifications().len(),
        1,
        "one page for the outage: {:#?}",
        webhook.notifications()
    );
    assert!(webhook.about("BmbCaptureFailing").is_empty());
    let said: Vec<String> = monitor
        .err()
        .into_iter()
        .filter(|l| l.contains("box"))
        .collect();
    assert_eq!(said.len(), 1, "one line for the outage: {said:#?}");
    assert!(
        said[0].starts_with("bmb-monitor: watch: host box unreachable: ")
            && said[0].contains("(3 targets;"),
        "{said:?}"
    );
}

/// Issue 21, item 9: `log = "changes"` prints a target's line only when its
/// state or what was done changes; the cycles go on meanwhile.
#[test]
fn log_changes_prints_a_line_per_change_not_per_poll() {
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    for name in ["busy", "asks"] {
        let received = tmux.dir.path().join(format!("{name}.received"));
        tmux.replay(name, &capture_path("working-bash-sleep"), &received);
    }
    let config = tmux.dir.path().join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "log = \"changes\"\nmetrics_listen = \"127.0.0.1:0\"\n[defaults]\ninterval = 1\nwork_probe = \"echo 4\"\n\
             [sinks]\nalert_cmd = \"cat > /dev/null\"\n[server]\nsocket_path = \"{}\"\n\
             [[targets]]\ntarget = \"busy\"\n[[targets]]\ntarget = \"asks\"\n",
            tmux.socket.display()
        ),
    )
    .expect("config");
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("--config")
        .arg(&config)
        .env("XDG_STATE_HOME", state.path());
    let monitor = Running::start(command);
    let address = monitor.metrics_address(30);
    let cycles = || -> u64 {
        http_get(&format!("http://{address}/metrics"))
            .lines()
            .find_map(|l| l.strip_prefix("bmb_watch_cycle_duration_seconds_count "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    assert!(wait_until(60, || cycles() >= 6), "{:?}", monitor.err());
    let lines = monitor.out();
    assert_eq!(
        lines.len(),
        2,
        "one line per target in six cycles: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("MONITOR · busy · WORKING · "))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("MONITOR · asks · WORKING · "))
    );

    // One target asks: its line comes, the other stays quiet.
    show(&tmux, "asks", "question-permission-bash");
    assert!(
        wait_until(60, || monitor
            .out()
            .iter()
            .any(|l| l.starts_with("MONITOR · asks · QUESTION · "))),
        "{:?}",
        monitor.out()
    );
    let seen = cycles();
    assert!(wait_until(60, || cycles() >= seen + 4));
    let lines = monitor.out();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines[2].contains("escalated to the operator, NOT answered"),
        "{lines:#?}"
    );
}

/// The `name` pane's program replaced by one showing `case` (and echoing
/// no key); returns once it is on screen.
fn show(tmux: &PrivateTmux, name: &str, case: &str) {
    let capture = capture_path(case);
    tmux.tmux(&[
        "respawn-pane",
        "-k",
        "-t",
        &format!("={name}:"),
        "sh",
        "-c",
        // No echo: a person's key leaves the screen as it was.
        &format!("cat '{}'; stty -echo; exec sleep 600", capture.display()),
    ]);
    let text = read(&capture);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    tmux.wait_for(name, |pane| pane.contains(&last));
}

#[test]
fn a_log_mode_that_is_not_one_is_a_mistake_named_by_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("fleet.toml");
    std::fs::write(&config, "log = \"loud\"\n[[targets]]\ntarget = \"a\"\n").expect("config");
    let output = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"))
        .arg("watch")
        .arg("--config")
        .arg(&config)
        .arg("--check")
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("fleet.toml:1: log: `loud` is not a log mode: polls"),
        "{stderr}"
    );
}

/// A person at a real terminal: an outer private tmux server whose pane runs
/// `tmux attach` to the session, so a key sent to the outer pane reaches it
/// through a real attached client and moves its key time (which `send-keys`
/// never does). Ended by its own socket on drop.
struct Person {
    outer: PrivateTmux,
}

impl Person {
    fn attach(tmux: &PrivateTmux, session: &str) -> Person {
        let outer = PrivateTmux::new();
        outer.tmux(&[
            "new-session",
            "-d",
            "-s",
            "person",
            "-x",
            "120",
            "-y",
            "41",
            &format!(
                "env -u TMUX tmux -S '{}' attach -t '={session}'",
                tmux.socket.display()
            ),
        ]);
        outer.tmux(&["set-option", "-g", "status", "off"]);
        assert!(
            wait_until(30, || !String::from_utf8_lossy(
                &tmux
                    .tmux(&["list-clients", "-t", &format!("={session}")])
                    .stdout
            )
            .trim()
            .is_empty()),
            "the person's client never attached"
        );
        // tmux counts whole seconds, and a key in the second of the attach
        // reads as the attach (which is no key): the person's keys come after.
        let attached_at: i64 = String::from_utf8_lossy(
            &tmux
                .tmux(&[
                    "display-message",
                    "-p",
                    "-t",
                    &format!("={session}:"),
                    "#{session_last_attached}",
                ])
                .stdout,
        )
        .trim()
        .parse()
        .expect("an attach time");
        assert!(
            wait_until(5, || jiff::Timestamp::now().as_second() > attached_at),
            "the clock stands at the attach's second"
        );
        Person { outer }
    }

    fn key(&self, key: &str) {
        self.outer.tmux(&["send-keys", "-t", "person", "-l", key]);
    }
}

impl Drop for Person {
    fn drop(&mut self) {
        let _ = self.outer.try_tmux(&["kill-server"]);
    }
}

/// Issue 21, item 8, on the real binary: a spent budget's alert resolves
/// when the pane works again, the next stop is escalated again (not
/// nudged), and a person's key starts a new budget that nudges again;
/// a person who only attaches buys none (found by review).
#[test]
fn a_spent_budget_resolves_when_the_pane_works_and_a_persons_key_renews_it_an_attach_does_not() {
    let alertmanager = Alertmanager::start();
    let tmux = PrivateTmux::new();
    let state = tempfile::tempdir().expect("tempdir");
    tmux.session("agent", "exec sleep 600");
    show(&tmux, "agent", "GOLDEN-stalled-real");
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("-S")
        .arg(&tmux.socket)
        .args([
            "agent",
            "--json",
            "--interval",
            "1",
            "--work-probe",
            "echo 4",
        ])
        .args(["--nudge-budget", "1", "--alertmanager", &alertmanager.url()])
        .args(["--alert-cmd", "cat > /dev/null"])
        .env("BMB_MONITOR_ALERT_REFRESH_SECS", "1")
        .env("XDG_STATE_HOME", state.path());
    let monitor = Running::start(command);
    let lines = || -> Vec<serde_json::Value> {
        monitor
            .out()
            .iter()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    };
    let did = |line: &serde_json::Value, what: &str| {
        line["done"].as_array().is_some_and(|done| {
            done.iter()
                .any(|d| d.as_str().is_some_and(|d| d.starts_with(what)))
        })
    };
    let count = |what: &str| lines().iter().filter(|l| did(l, what)).count();
    let spent = || active(&alertmanager, "BmbBudgetSpent").len();
    assert!(
        wait_until(60, || count("nudged (1/1)") == 1 && spent() == 1),
        "{:#?}; stderr {:?}",
        lines(),
        monitor.err()
    );
    // The pane works again: the alert resolves.
    show(&tmux, "agent", "working-bash-sleep");
    assert!(
        wait_until(60, || spent() == 0),
        "BmbBudgetSpent still fires: {:?}; {:#?}",
        alertmanager.alerts(),
        lines()
    );
    // It stops again: a new episode, escalated again, not nudged (no budget was bought).
    show(&tmux, "agent", "GOLDEN-stalled-real");
    assert!(
        wait_until(60, || spent() == 1 && count("not nudged, escalated") == 2),
        "{:#?}",
        lines()
    );
    assert_eq!(count("nudged (1/1)"), 1, "{:#?}", lines());
    // A person attaches only to look (tmux moves the session's activity
    // then too): the polls that follow renew nothing, and the alert stays.
    let person = Person::attach(&tmux, "agent");
    let seen = lines().len();
    assert!(
        wait_until(60, || lines().len() >= seen + 3),
        "{:#?}",
        lines()
    );
    assert_eq!(count("nudge budget renewed"), 0, "{:#?}", lines());
    assert_eq!(spent(), 1, "{:?}", alertmanager.alerts());
    // A person presses a key in the session: a new budget, and a nudge once the screen holds still.
    person.key("x");
    assert!(
        wait_until(60, || count("nudge budget renewed") >= 1),
        "{:#?}",
        lines()
    );
    assert!(
        wait_until(60, || count("nudged (1/1)") == 2),
        "{:#?}",
        lines()
    );
}
