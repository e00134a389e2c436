//! `cargo bench -p bmb-monitor --bench lead_pass`: the CPU cost of one lead
//! pass over 1,000 watch items (SPEC §9: target ≤ 2 ms, zero subprocesses),
//! beside a shell loop doing the same checks with `test`, `stat` and `ps`,
//! as a ratio measured in one run. Reports; asserts nothing about time.
//!
//! The pass runs on a thread fenced by seccomp (no process can be created
//! from it), with the real adapter the binary uses, so "zero subprocesses"
//! is enforced while it is measured: an attempt would show up as errors.

use bmb_testkit::fence as seccomp_fence;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use bmb_monitor::RealPort;
use bmb_monitor::SystemClock;
use probes::run::{Invocation, Limits, run};
use watchdog::lead::{LeadConfig, LeadMonitor, Output, parse_control};

const ITEMS: usize = 1000;
const PASSES: usize = 200;

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// User + system CPU of every child this process has waited for (and theirs).
fn children_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike;
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let micros = usage.user_time().num_microseconds() + usage.system_time().num_microseconds();
    Duration::from_micros(micros as u64)
}

/// The kernel's count of processes created since boot (all users: approximate
/// when other work runs, exact enough to tell 0 from 2,000).
fn forks_since_boot() -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .find_map(|l| l.strip_prefix("processes "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// A really dead pid: a shell that printed its own pid, exited and was reaped.
fn dead_pid() -> u32 {
    let outcome = probes::run::run(
        &probes::run::Invocation::shell("echo $$"),
        &probes::run::Limits::default(),
    );
    outcome
        .success_stdout()
        .and_then(|out| out.text().trim().parse().ok())
        .expect("a shell printed its pid")
}

/// 1,000 items: a quarter finished, a quarter dead, a quarter alive, a
/// quarter not yet recorded; each with one watch path. Returns the control lines.
fn setup(dir: &Path) -> Vec<String> {
    let dead = dead_pid();
    let alive = std::process::id();
    let now = probes::os::clock::now_epoch();
    (0..ITEMS)
        .map(|i| {
            let result = dir.join(format!("r{i}.md"));
            let pid_file = dir.join(format!("p{i}.pid"));
            let log = dir.join(format!("w{i}.log"));
            std::fs::write(&log, "working").unwrap();
            match i % 4 {
                0 => std::fs::write(&result, "Type: handoff\nStatus: done\n").unwrap(),
                1 => std::fs::write(&pid_file, format!("{dead}\n")).unwrap(),
                2 => std::fs::write(&pid_file, format!("{alive}\n")).unwrap(),
                _ => {}
            }
            format!(
                r#"{{"agent":"a{i}","step":"1","result_path":"{}","pid_file":"{}","timeout_sec":3600,"started_at_epoch":{now},"blind_phase":false,"consultant_reporting":"full","watch_paths":["{}"]}}"#,
                result.display(),
                pid_file.display(),
                log.display()
            )
        })
        .collect()
}

/// The seed's way: per item, `test -f` the result, `stat` it and the watch
/// path, and `ps -p $(cat pid_file)`.
fn shell_script(dir: &Path) -> String {
    let mut s = String::from("cd \"$1\" || exit 1\ni=0\n");
    let _ = writeln!(
        s,
        "while [ $i -lt {ITEMS} ]; do\n  test -f r$i.md\n  stat -c '%s %Y' r$i.md w$i.log >/dev/null 2>&1\n  if test -f p$i.pid; then ps -p \"$(cat p$i.pid)\" >/dev/null; fi\n  i=$((i+1))\ndone"
    );
    let _ = dir;
    s
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let controls = setup(&dir);
    let mut monitor = LeadMonitor::new(LeadConfig {
        idle_stall_sec: 180,
        ack_timeout_sec: 120,
        sweep_interval_sec: None,
        feed_path: dir.join("consultant-feed.md").display().to_string(),
        known_panes: vec![],
    });
    let now = probes::os::clock::now_epoch();
    for c in &controls {
        monitor.apply(parse_control(c).unwrap(), now).unwrap();
    }
    let mut port = RealPort::new(None, dir.join("consultant-pane-id"));

    let forks_before = forks_since_boot();
    let (first, steady, errors) = std::thread::spawn(move || {
        seccomp_fence::forbid_process_creation_on_this_thread();
        let mut errors = 0;
        let t = thread_cpu();
        let out = monitor.pass(&mut port, &SystemClock);
        let first = thread_cpu() - t;
        errors += out.iter().filter(|o| matches!(o, Output::Error(_))).count();
        let mut steady = Vec::with_capacity(PASSES);
        for _ in 0..PASSES {
            let t = thread_cpu();
            let out = monitor.pass(&mut port, &SystemClock);
            steady.push(thread_cpu() - t);
            errors += out.iter().filter(|o| matches!(o, Output::Error(_))).count();
        }
        (first, steady, errors)
    })
    .join()
    .unwrap();
    let forks_during_passes = forks_since_boot() - forks_before;
    let mut sorted = steady.clone();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    let p90 = sorted[sorted.len() * 9 / 10];

    let script = shell_script(&dir);
    let cpu_before = children_cpu();
    let forks_before = forks_since_boot();
    let wall = Instant::now();
    let outcome = run(
        &Invocation::shell(script).arg("bench").arg(&dir),
        &Limits::with_timeout(Duration::from_secs(120)),
    );
    let shell_wall = wall.elapsed();
    let shell_forks = forks_since_boot() - forks_before;
    let shell_cpu = children_cpu() - cpu_before;
    assert!(
        outcome.success_stdout().is_some(),
        "shell loop: {}",
        outcome.describe()
    );

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "lead pass over {ITEMS} watch items (250 results, 250 dead, 250 alive, 250 unrecorded; 1 watch path each)"
    );
    println!(
        "  first pass (1,000 reports, 250 5-line head reads): {:.3} ms CPU",
        ms(first)
    );
    println!(
        "  steady pass, {PASSES} passes: median {:.3} ms CPU, p90 {:.3} ms CPU (target <= 2 ms)",
        ms(median),
        ms(p90)
    );
    println!(
        "  subprocesses: 0 possible (seccomp-fenced thread), {errors} errors; system-wide forks meanwhile: {forks_during_passes}"
    );
    println!(
        "shell loop with test/stat/ps, same {ITEMS} items, once: {:.1} ms CPU ({:.1} ms wall), {shell_forks} forks",
        ms(shell_cpu),
        ms(shell_wall)
    );
    println!(
        "ratio: the shell loop costs {:.0}x the CPU of a steady lead pass",
        shell_cpu.as_secs_f64() / median.as_secs_f64()
    );
}
