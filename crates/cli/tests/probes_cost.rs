//! Issue 21, item 5, end to end on the real binary: a remote target's
//! probes with `probes_on = "host"` run on its host inside the cycle's one
//! request (one login for the whole run, over the real sshd), their counts
//! reach the poll line, one that hangs there is cut at its deadline and
//! reads as unknown; twenty local targets' probes run side by side (a
//! rendezvous only side-by-side runs can meet) and never more than eight at
//! once; `/metrics` counts the runs, and `promtool check metrics` is clean.
//!
//! Nothing here measures time: wall clocks are hang guards only.

// These tests start the binary, tmux, sshd and promtool; that is their point.
#![expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use bmb_testkit::bin::{Running, wait_until};
use bmb_testkit::metrics::{promtool_clean, value};
use bmb_testkit::sshd::Sshd;
use bmb_testkit::tmux::{PrivateTmux, capture_path};

fn scrape(address: &str) -> String {
    bmb_testkit::http::get(
        &format!("http://{address}/metrics"),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|e| panic!("/metrics answers: {e}"))
}

fn polls<'a>(lines: &'a [String], prefix: &str) -> Vec<&'a String> {
    lines.iter().filter(|l| l.starts_with(prefix)).collect()
}

/// Starts `watch --config FILE` with its state under `dir`.
fn watch_config(config: &Path, dir: &Path, env: &[(&str, &Path)]) -> Running {
    let mut command = bmb_testkit::bin::command(env!("CARGO_BIN_EXE_bmb-monitor"));
    command
        .arg("watch")
        .arg("--config")
        .arg(config)
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_RUNTIME_DIR", dir)
        .envs(env.iter().copied())
        .env_remove("TMUX");
    Running::start(command)
}

#[test]
fn a_remote_targets_probe_runs_on_its_host_in_the_one_request_and_one_that_hangs_there_is_unknown()
{
    let dir = tempfile::tempdir().unwrap();
    let sshd = Sshd::start("box", &[]);
    // Only the host's HOME holds the counts: run here, the probe would fail.
    std::fs::write(sshd.remote_home().join("todo-a"), "1\n2\n3\n").unwrap();
    let server = PrivateTmux::new();
    for name in ["a", "b"] {
        let received = server.dir.path().join(format!("{name}.received"));
        server.replay(name, &capture_path("working-bash-sleep"), &received);
    }
    let config = dir.path().join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            r#"metrics_listen = "127.0.0.1:0"

[defaults]
interval = 1
probe_timeout = 1
probes_on = "host"
work_probe = 'case $BMB_TARGET in *:b) exec sleep 86398;; esac; wc -l < "$HOME/todo-${{BMB_TARGET#*:}}"'

[server]
socket_path = "{socket}"
ssh_config = "{ssh}"

[[targets]]
target = "box:a"

[[targets]]
target = "box:b"
"#,
            socket = server.socket.display(),
            ssh = sshd.config().display(),
        ),
    )
    .unwrap();
    let monitor = watch_config(&config, dir.path(), &[]);
    let address = monitor.metrics_address(60);
    let three_each = || {
        let out = monitor.out();
        polls(&out, "MONITOR · box:a · ").len() >= 3 && polls(&out, "MONITOR · box:b · ").len() >= 3
    };
    assert!(
        wait_until(90, three_each),
        "out: {:?}\nerr: {:?}",
        monitor.out(),
        monitor.err()
    );
    let out = monitor.out();
    for line in polls(&out, "MONITOR · box:a · ") {
        assert!(
            line.contains(" · work=3 · "),
            "{line}\nerr: {:?}",
            monitor.err()
        );
    }
    for line in polls(&out, "MONITOR · box:b · ") {
        assert!(line.contains(" · work=? · "), "{line}");
    }
    // Said once, as the host's trouble with it.
    let said: Vec<String> = monitor
        .err()
        .into_iter()
        .filter(|l| l.contains("work probe"))
        .collect();
    assert_eq!(
        said,
        [
            "bmb-monitor: watch: box:b: work probe on box timed out after 1.0s; reading it as unknown"
        ],
        "{:?}",
        monitor.err()
    );
    // Every cycle's probes and captures rode on the one login.
    assert_eq!(
        sshd.log().matches("Accepted publickey for root").count(),
        1,
        "{}",
        sshd.log()
    );
    let metrics = scrape(&address);
    let runs = value(
        &metrics,
        r#"bmb_watch_probe_runs_total{kind="work",runs_on="host"}"#,
    );
    assert!(runs >= 6.0, "{metrics}");
    assert_eq!(
        value(
            &metrics,
            r#"bmb_watch_probe_runs_total{kind="work",runs_on="monitor"}"#
        ),
        0.0
    );
    assert_eq!(
        value(&metrics, r#"bmb_watch_probe_failures_total{host="box"}"#),
        value(
            &metrics,
            r#"bmb_watch_probe_runs_total{kind="work",runs_on="host"}"#
        ) / 2.0,
        "box:b's failed every time, box:a's never"
    );
    promtool_clean(&metrics);
}

#[test]
fn twenty_local_targets_probes_run_side_by_side_at_most_eight_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let meet = dir.path().join("meet");
    std::fs::create_dir(&meet).unwrap();
    let total = 20;
    for rank in 1..=total {
        let made = Command::new("mkfifo")
            .arg(meet.join(format!("fifo.{rank}")))
            .status()
            .expect("mkfifo");
        assert!(made.success());
    }
    let server = PrivateTmux::new();
    let mut targets = String::new();
    for i in 0..total {
        let name = format!("t{i}");
        let received = server.dir.path().join(format!("{name}.received"));
        server.replay(&name, &capture_path("working-bash-sleep"), &received);
        targets.push_str(&format!("[[targets]]\ntarget = \"{name}\"\n\n"));
    }
    // Each run takes the next rank, says how many runs are alive (its own
    // file among them), then meets the one ranked before it and the one
    // after it on fifos. One after another, the first would wait for the
    // second until its timeout: every count below is an answer only
    // side-by-side runs can give.
    let probe = r#"d=$MEET; : "$BMB_TARGET"; i=1
until mkdir "$d/rank.$i" 2>/dev/null; do i=$((i+1)); done
: > "$d/alive.$$"
ls "$d" | grep -c '^alive\.' >> "$d/counts"
if [ "$i" -gt 1 ]; then echo go > "$d/fifo.$((i-1))"; fi
if [ "$i" -lt 20 ]; then read x < "$d/fifo.$i"; fi
rm "$d/alive.$$"
echo 0"#;
    let config = dir.path().join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "metrics_listen = \"127.0.0.1:0\"\n\n[defaults]\ninterval = 3600\nprobe_timeout = 60\n\
             work_probe = '''{probe}'''\n\n[server]\nsocket_path = \"{}\"\n\n{targets}",
            server.socket.display()
        ),
    )
    .unwrap();
    let monitor = watch_config(&config, dir.path(), &[("MEET", &meet)]);
    let address = monitor.metrics_address(60);
    assert!(
        wait_until(120, || polls(&monitor.out(), "MONITOR · t").len() >= total),
        "out: {:?}\nerr: {:?}",
        monitor.out(),
        monitor.err()
    );
    let out = monitor.out();
    for line in polls(&out, "MONITOR · t") {
        assert!(
            line.contains(" · work=0 · "),
            "{line}\nerr: {:?}",
            monitor.err()
        );
    }
    assert!(
        !monitor.err().iter().any(|l| l.contains("probe")),
        "{:?}",
        monitor.err()
    );
    let counts: Vec<usize> = std::fs::read_to_string(meet.join("counts"))
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(counts.len(), total, "one run per target: {counts:?}");
    let most = counts.iter().copied().max().unwrap();
    assert!(
        (2..=8).contains(&most),
        "side by side, at most 8 at once: {counts:?}"
    );
    // The poll lines are printed before the cycle publishes its counters:
    // wait for the count to reach every run, then read the rest of it.
    let runs = r#"bmb_watch_probe_runs_total{kind="work",runs_on="monitor"}"#;
    let published = |metrics: &str| {
        metrics
            .lines()
            .any(|l| l.strip_prefix(runs) == Some(&format!(" {total}")))
    };
    assert!(
        wait_until(60, || published(&scrape(&address))),
        "{}",
        scrape(&address)
    );
    let metrics = scrape(&address);
    assert_eq!(value(&metrics, runs), total as f64);
    assert!(
        value(&metrics, r#"bmb_watch_probe_seconds_total{kind="work"}"#) > 0.0,
        "{metrics}"
    );
    promtool_clean(&metrics);
}
