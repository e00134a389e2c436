//! One worker-monitor pass, measured beside the seed's approach in one run.
//!
//! Ours (a quiet pass, the most expensive kind): read the pid file and
//! `kill(pid, 0)`, stat the transcript, ONE `/proc` scan for the descendant
//! CPU clocks, `git status --porcelain=v2 --branch` and `git rev-list
//! --count` (the base ref read from ref files): 2 subprocesses.
//!
//! The seed's (`plot-worker-monitor.sh`): a `ps` snapshot for the subtree CPU,
//! then `git status --porcelain`, `git rev-parse HEAD`, `git symbolic-ref`,
//! `git rev-parse --verify origin/main` and `git rev-list --count`: 6
//! subprocesses (bash's own `$(...)`, `cat` and `tr` forks are not counted,
//! which flatters the seed).
//!
//! CPU time is this process's plus its reaped children's (getrusage), so a
//! subprocess's cost is counted where it lands. Printed, never asserted.
#![expect(
    clippy::disallowed_methods,
    reason = "the agent stand-in is a real child process"
)]

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use bmb_probes as probes;
use probes::agent::transcript;
use probes::fs::pid_file::{PidFileState, read_pid_file};
use probes::os::procfs::ProcessTable;
use probes::project::git;
use probes::run::{Invocation, Limits, run};

const PASSES: u32 = 40;

fn cpu_micros() -> u64 {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike;
    let mut total = 0;
    for who in [UsageWho::RUSAGE_SELF, UsageWho::RUSAGE_CHILDREN] {
        let usage = getrusage(who).expect("getrusage");
        for t in [usage.user_time(), usage.system_time()] {
            total += t.num_microseconds() as u64;
        }
    }
    total
}

fn sh(dir: &Path, script: &str) {
    let outcome = run(
        &Invocation::shell(script)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "b")
            .env("GIT_AUTHOR_EMAIL", "b@example.invalid")
            .env("GIT_COMMITTER_NAME", "b")
            .env("GIT_COMMITTER_EMAIL", "b@example.invalid"),
        &Limits::with_timeout(Duration::from_secs(60)),
    );
    assert!(outcome.success_stdout().is_some(), "{script}: {outcome:?}");
}

fn ours(worktree: &Path, pid_file: &Path, claude: &Path) -> u32 {
    let mut subprocesses = 0;
    let PidFileState::Alive(pid) = read_pid_file(pid_file) else {
        panic!("the agent should be alive");
    };
    let quiet = transcript::quiet_seconds(claude, worktree, SystemTime::now());
    assert!(quiet.is_some());
    let table = ProcessTable::scan().unwrap();
    std::hint::black_box(table.descendants_cpu(pid));
    subprocesses += 1;
    std::hint::black_box(git::tree_fingerprint(worktree, git::GIT_TIMEOUT).unwrap());
    subprocesses += 1;
    assert_eq!(git::commits_since_base(worktree, git::GIT_TIMEOUT), Ok(1));
    subprocesses
}

fn seeds(worktree: &Path) -> u32 {
    let limits = Limits::with_timeout(Duration::from_secs(10));
    let calls: [&[&str]; 6] = [
        &["ps", "-e", "-o", "pid=,ppid=,time="],
        &["git", "status", "--porcelain"],
        &["git", "rev-parse", "HEAD"],
        &[
            "git",
            "symbolic-ref",
            "--quiet",
            "--short",
            "refs/remotes/origin/HEAD",
        ],
        &["git", "rev-parse", "--verify", "--quiet", "origin/main"],
        &["git", "rev-list", "--count", "origin/main..HEAD", "--", "."],
    ];
    for call in calls {
        let outcome = run(
            &Invocation::new(call[0])
                .args(&call[1..])
                .current_dir(worktree),
            &limits,
        );
        std::hint::black_box(outcome);
    }
    calls.len() as u32
}

fn measure(label: &str, mut pass: impl FnMut() -> u32) -> (f64, f64, u32) {
    pass(); // warm the page cache and git's index
    let cpu0 = cpu_micros();
    let wall0 = Instant::now();
    let mut subprocesses = 0;
    for _ in 0..PASSES {
        subprocesses = pass();
    }
    let cpu = (cpu_micros() - cpu0) as f64 / f64::from(PASSES);
    let wall = wall0.elapsed().as_micros() as f64 / f64::from(PASSES);
    println!(
        "{label:<28} {cpu:>9.0} µs CPU {wall:>9.0} µs wall  {subprocesses} subprocesses, 1 pass = 1 /proc scan or 1 ps"
    );
    (cpu, wall, subprocesses)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    sh(
        dir.path(),
        "git init -q -b main --bare origin.git && git init -q -b main desk && cd desk \
         && for i in $(seq 1 200); do echo $i > f$i; done && git add . && git commit -qm base \
         && git remote add origin ../origin.git && git push -q origin main \
         && echo w > work && git add work && git commit -qm work && echo x > untracked",
    );
    let worktree = dir.path().join("desk");
    let claude = dir.path().join("claude");
    let project = claude
        .join("projects")
        .join(transcript::slug(&worktree.to_string_lossy()));
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("s.jsonl"), "{}\n").unwrap();
    let mut agent = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .unwrap();
    let pid_file = worktree.join(".plot-worker.pid");
    std::fs::write(&pid_file, agent.id().to_string()).unwrap();

    let processes = ProcessTable::scan().map(|t| t.len()).unwrap_or(0);
    println!("worker pass, {PASSES} passes each, {processes} processes in /proc, 201-file repo");
    let (our_cpu, our_wall, _) =
        measure("bmb-monitor worker", || ours(&worktree, &pid_file, &claude));
    let (seed_cpu, seed_wall, _) = measure("seed (ps + 5 git calls)", || seeds(&worktree));
    println!(
        "ratio seed/ours: {:.1}x CPU, {:.1}x wall",
        seed_cpu / our_cpu,
        seed_wall / our_wall
    );

    let _ = agent.kill();
    let _ = agent.wait();
}
