//! `cargo bench -p bmb-monitor --bench watch_cycle`: the session monitor's
//! cost on a private tmux server. Prints figures for PERFORMANCE.md; asserts
//! no time (SPEC §9: a cycle over N panes, resident memory for 100 targets,
//! and how long a hung capture takes to be abandoned).

use std::path::Path;
use std::time::{Duration, Instant};

use bmb_testkit::tmux::PrivateTmux;
use probes::run::{Background, Invocation, Limits, run};

/// utime + stime and cutime + cstime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> (u64, u64) {
    let stat = probes::os::procfs::Stat::of(pid).expect("stat");
    (
        stat.own_ticks().expect("utime, stime"),
        stat.reaped_children_ticks().expect("cutime, cstime"),
    )
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Runs the monitor over `panes` sessions for `cycles` cycles at a 1 s interval.
fn measure(dir: &Path, panes: usize, cycles: usize) {
    // Its own server, ended when this measurement ends.
    let server = PrivateTmux::new();
    let socket = server.socket.clone();
    let working = bmb_testkit::tmux::capture_path("working-bash-sleep");
    let names: Vec<String> = (0..panes).map(|i| format!("p{i}")).collect();
    for name in &names {
        server.session(
            name,
            &format!("cat '{}'; exec sleep 600", working.display()),
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let out_path = dir.join(format!("out{panes}"));
    let monitor = Invocation::new(env!("CARGO_BIN_EXE_bmb-monitor"))
        .arg("watch")
        .arg("-S")
        .arg(&socket)
        .args(&names)
        .args(["--interval", "1"])
        .env("XDG_STATE_HOME", dir);
    let child = Background::start(
        &monitor,
        Some(std::fs::File::create(&out_path).expect("out")),
    )
    .expect("monitor");
    let lines = |n: usize| {
        std::fs::read_to_string(&out_path)
            .unwrap_or_default()
            .lines()
            .count()
            >= n
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !lines(panes) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (own0, children0) = cpu_ticks(child.id());
    while !lines(panes * (cycles + 1)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (own1, children1) = cpu_ticks(child.id());
    let rss = rss_kib(child.id());
    child.stop();
    drop(server);
    let hz = probes::os::clock::ticks_per_second() as f64;
    let per_cycle = |ticks: u64| ticks as f64 / hz / cycles as f64 * 1000.0;
    println!(
        "{panes:>4} panes: monitor CPU {:.2} ms/cycle, with its tmux clients {:.2} ms/cycle, resident {:.1} MiB",
        per_cycle(own1 - own0),
        per_cycle(own1 - own0 + children1 - children0),
        rss as f64 / 1024.0
    );
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    measure(dir.path(), 1, 10);
    measure(dir.path(), 50, 10);
    measure(dir.path(), 100, 10);

    let fake = dir.path().join("hanging-tmux");
    std::fs::write(&fake, "#!/bin/sh\nsleep 300 &\nwait\n").expect("fake tmux");
    run(
        &Invocation::new("chmod").arg("+x").arg(&fake),
        &Limits::default(),
    );
    for timeout in [1, 2] {
        let start = Instant::now();
        let monitor = Invocation::new(env!("CARGO_BIN_EXE_bmb-monitor"))
            .args([
                "watch",
                "agent",
                "--once",
                "--capture-timeout",
                &timeout.to_string(),
                "--tmux-bin",
            ])
            .arg(&fake)
            .env("XDG_STATE_HOME", dir.path());
        let outcome = run(&monitor, &Limits::with_timeout(Duration::from_secs(60)));
        assert!(outcome.success_stdout().is_some(), "{}", outcome.describe());
        println!(
            "hung capture, --capture-timeout {timeout}: the poll returned after {:.2} s",
            start.elapsed().as_secs_f64()
        );
    }
}
