//! The worker monitor through its ports, with fakes: every row of the seed's
//! tables, the startup window, a pid that dies between two samples, a tree
//! that changes between two readings, a frozen CPU clock, a missing origin ref.

use super::*;
use crate::{Clock, PortError};

include!("../../tests/support/worker_fake.rs");

impl World {
    /// Alive, past the window, descendants' clocks frozen, tree `t1`, 2 commits.
    fn stalled() -> World {
        World {
            pid: PidReading::Alive(AGENT),
            quiet: Some(WINDOW + 100),
            cpu: Some(CpuClocks::from([(AGENT, 5), (5000, 70)])),
            tree: Some("oid abc\n? notes.txt".to_owned()),
            commits: CommitsReading::Count(2),
            now: T0,
        }
    }
    fn quiet(mut self, seconds: Option<u64>) -> World {
        self.quiet = seconds;
        self
    }
    fn cpu(mut self, clocks: Option<&[(u32, u64)]>) -> World {
        self.cpu = clocks.map(|c| c.iter().copied().collect());
        self
    }
    fn tree(mut self, tree: &str) -> World {
        self.tree = Some(tree.to_owned());
        self
    }
    fn commits(mut self, commits: CommitsReading) -> World {
        self.commits = commits;
        self
    }
    fn pid(mut self, pid: PidReading) -> World {
        self.pid = pid;
        self
    }
}

fn repeat(world: World, n: usize) -> Vec<World> {
    vec![world; n]
}

// ---- the transcript / CPU table -------------------------------------------

#[test]
fn transcript_inside_the_window_is_busy_whatever_the_cpu() {
    let worlds = repeat(World::stalled().quiet(Some(WINDOW - 1)), 6);
    let mut monitor = WorkerMonitor::new(config());
    let passes = run(&mut monitor, &worlds);
    assert!(passes.iter().all(|p| p.report.is_none()));
    assert!(
        passes
            .iter()
            .all(|p| matches!(&p.verdict, Verdict::Busy { why } if why.contains("transcript")))
    );
}

#[test]
fn past_the_window_a_child_burning_cpu_is_busy() {
    let worlds: Vec<World> = (0..6)
        .map(|i| World::stalled().cpu(Some(&[(AGENT, 5), (5000, 70 + 100 * i)])))
        .collect();
    assert_eq!(check(&worlds), vec![None; 6]);
}

#[test]
fn past_the_window_no_child_on_a_core_is_quiet_and_idle_needs_two_quiet_passes() {
    let mut monitor = WorkerMonitor::new(config());
    let passes = run(&mut monitor, &repeat(World::stalled(), 4));
    // Pass 1 has no previous CPU reading (counted busy); passes 2 and 3 are
    // the two consecutive quiet samples; `idle` is published once, at pass 3.
    assert!(matches!(passes[0].verdict, Verdict::Busy { .. }));
    assert_eq!(passes[1].verdict, Verdict::Quiet { pid: AGENT });
    let words: Vec<_> = passes
        .iter()
        .map(|p| p.report.as_ref().map(|r| r.finding))
        .collect();
    assert_eq!(words, vec![None, None, Some("idle"), None]);
}

#[test]
fn a_live_pid_with_no_children_at_all_past_the_window_is_quiet() {
    let world = World::stalled().cpu(Some(&[(AGENT, 0)]));
    assert_eq!(check(&repeat(world, 3)), vec![None, None, Some("idle")]);
}

#[test]
fn no_transcript_is_unknown_and_never_a_finding() {
    let world = World::stalled().quiet(None);
    let mut monitor = WorkerMonitor::new(config());
    let passes = run(&mut monitor, &repeat(world, 5));
    assert!(passes.iter().all(|p| p.report.is_none()));
    assert!(matches!(passes[4].verdict, Verdict::Unknown { .. }));
}

#[test]
fn a_held_idle_is_cleared_when_the_transcript_becomes_unreadable() {
    let mut worlds = repeat(World::stalled(), 3);
    worlds.push(World::stalled().quiet(None));
    assert_eq!(
        check(&worlds),
        vec![None, None, Some("idle"), Some("clear")]
    );
}

#[test]
fn an_unreadable_process_table_counts_busy_not_idle() {
    let world = World::stalled().cpu(None);
    assert_eq!(check(&repeat(world, 5)), vec![None; 5]);
}

#[test]
fn a_frozen_cpu_clock_is_quiet_and_a_moving_one_between_quiet_passes_breaks_the_pair() {
    let frozen = World::stalled();
    let moved = World::stalled().cpu(Some(&[(AGENT, 5), (5000, 71)]));
    // frozen, frozen → quiet; then a tick → busy; then frozen again at the new value.
    let worlds = vec![
        frozen.clone(),
        frozen.clone(),
        moved.clone(),
        moved.clone(),
        moved,
    ];
    assert_eq!(check(&worlds), vec![None, None, None, None, Some("idle")]);
    // A NEW descendant that has already used CPU is a moving clock too.
    let spawned = World::stalled().cpu(Some(&[(AGENT, 5), (5000, 70), (6000, 3)]));
    assert_eq!(
        check(&[
            frozen.clone(),
            frozen,
            spawned.clone(),
            spawned.clone(),
            spawned
        ]),
        vec![None, None, None, None, Some("idle")]
    );
}

// ---- the tree / commits table --------------------------------------------

#[test]
fn quiet_tree_unchanged_commits_present_is_idle() {
    assert_eq!(
        check(&repeat(World::stalled(), 3)),
        vec![None, None, Some("idle")]
    );
}

#[test]
fn quiet_tree_unchanged_no_commits_yet_is_silent() {
    let world = World::stalled().commits(CommitsReading::Count(0));
    let mut monitor = WorkerMonitor::new(config());
    let passes = run(&mut monitor, &repeat(world, 6));
    assert!(passes.iter().all(|p| p.report.is_none()));
    assert_eq!(
        passes[5].note.as_deref(),
        Some("no commits that touched a file yet")
    );
}

#[test]
fn quiet_tree_changed_between_samples_is_silent() {
    let worlds: Vec<World> = (0..6)
        .map(|i| World::stalled().tree(&format!("oid abc\n? file{i}")))
        .collect();
    assert_eq!(check(&worlds), vec![None; 6]);
}

#[test]
fn a_tree_that_changes_once_delays_idle_by_one_pass() {
    let worlds = vec![
        World::stalled(),
        World::stalled(),
        World::stalled().tree("oid def"),
        World::stalled().tree("oid def"),
    ];
    assert_eq!(check(&worlds), vec![None, None, None, Some("idle")]);
}

#[test]
fn an_unreadable_tree_is_never_unchanged() {
    let mut world = World::stalled();
    world.tree = None;
    assert_eq!(check(&repeat(world, 5)), vec![None; 5]);
}

#[test]
fn a_missing_origin_ref_is_unanswerable_and_publishes_nothing() {
    let world = World::stalled().commits(CommitsReading::Unanswerable {
        reason: "no local origin/HEAD or origin/main ref".to_owned(),
    });
    let mut monitor = WorkerMonitor::new(config());
    let passes = run(&mut monitor, &repeat(world, 5));
    assert!(passes.iter().all(|p| p.report.is_none()));
    assert!(passes[4].note.as_deref().unwrap().contains("unanswerable"));
}

#[test]
fn git_is_asked_at_most_twice_a_pass_and_not_at_all_while_busy() {
    let mut monitor = WorkerMonitor::new(config());
    let mut fake = Fake {
        world: Some(World::stalled().quiet(Some(1))),
        ..Fake::default()
    };
    for _ in 0..3 {
        let clock = fake.clock();
        monitor.pass(&mut fake, &clock);
    }
    assert_eq!((fake.tree_calls, fake.commit_calls), (0, 0));
    assert_eq!(fake.cpu_calls, 3, "one process-table reading per live pass");
    fake.world = Some(World::stalled());
    for pass in 0..4 {
        let (tree, commits) = (fake.tree_calls, fake.commit_calls);
        let clock = fake.clock();
        monitor.pass(&mut fake, &clock);
        assert!(
            (fake.tree_calls - tree) + (fake.commit_calls - commits) <= 2,
            "pass {pass}"
        );
    }
}

// ---- gone and the startup window ----------------------------------------

#[test]
fn a_dead_pid_is_gone_on_one_sample_with_the_seeds_evidence() {
    let mut monitor = WorkerMonitor::new(config());
    let passes = run(
        &mut monitor,
        &[World::stalled().pid(PidReading::Dead(AGENT))],
    );
    let report = passes[0].report.as_ref().unwrap();
    assert_eq!(report.finding, "gone");
    assert_eq!(
        report.evidence,
        "the agent pid 4242 names no live process; the worker's desk is unattended"
    );
}

#[test]
fn the_startup_window_is_never_gone() {
    let not_yet = World::stalled().pid(PidReading::NotRecorded {
        reason: "the pid file does not exist yet".to_owned(),
    });
    let mut monitor = WorkerMonitor::new(config());
    let passes = run(&mut monitor, &repeat(not_yet.clone(), 3));
    assert!(passes.iter().all(|p| p.report.is_none()));
    assert!(
        matches!(&passes[0].verdict, Verdict::Unknown { why } if why.contains("does not exist"))
    );
    // Recorded, then dies: `gone` is published then, and only then.
    let worlds = vec![
        not_yet,
        World::stalled().quiet(Some(0)),
        World::stalled().pid(PidReading::Dead(AGENT)),
    ];
    assert_eq!(check(&worlds), vec![None, None, Some("gone")]);
}

#[test]
fn a_pid_that_dies_between_two_samples_is_gone_not_idle_and_not_cleared() {
    let worlds = vec![
        World::stalled(),
        World::stalled(),
        World::stalled(),
        World::stalled().pid(PidReading::Dead(AGENT)),
        World::stalled().pid(PidReading::Dead(AGENT)),
    ];
    assert_eq!(
        check(&worlds),
        vec![None, None, Some("idle"), Some("gone"), None]
    );
    // Dying mid-pair: the first quiet sample never becomes idle.
    let worlds = vec![
        World::stalled(),
        World::stalled(),
        World::stalled().pid(PidReading::Dead(AGENT)),
    ];
    assert_eq!(check(&worlds), vec![None, None, Some("gone")]);
}

// ---- publishing ----------------------------------------------------------

#[test]
fn idle_is_published_once_and_clear_follows_a_new_transcript_line() {
    let mut worlds = repeat(World::stalled(), 6);
    worlds.push(World::stalled().quiet(Some(2)));
    worlds.push(World::stalled().quiet(Some(32)));
    assert_eq!(
        check(&worlds),
        vec![
            None,
            None,
            Some("idle"),
            None,
            None,
            None,
            Some("clear"),
            None
        ]
    );
}

#[test]
fn the_lines_are_the_seeds_json_with_since_and_measured_at() {
    let mut monitor = WorkerMonitor::new(config());
    let mut worlds = repeat(World::stalled(), 3);
    worlds.push(World::stalled().quiet(Some(0)));
    let passes = run(&mut monitor, &worlds);
    let idle = passes[2].report.as_ref().unwrap();
    // Pass 3 is measured at T0 + 60 s = 10:01:00Z.
    assert_eq!(
        idle.json,
        concat!(
            r#"{"monitor":"WorkerMonitor","branch":"feature/x","worktree":"/tmp/desk","finding":"idle","#,
            r#""since":"2026-09-02T10:01:00Z","evidence":"the agent pid 4242 is alive but its transcript has been silent for over 900s with no child process burning CPU behind it, across two consecutive passes ~30s apart, the tree is unchanged between them, and the branch already carries commits","#,
            r#""measuredAt":"2026-09-02T10:01:00Z"}"#
        )
    );
    assert_eq!(idle.stdout_line(), format!("plot-monitor {}", idle.json));
    let clear = passes[3].report.as_ref().unwrap();
    assert_eq!(clear.finding, "clear");
    assert_eq!(
        clear.evidence,
        "the idle finding no longer holds; the worker is measuring healthy again"
    );
    assert_eq!(clear.since, "2026-09-02T10:01:30Z");
    assert_eq!(clear.measured_at, "2026-09-02T10:01:30Z");
    assert_eq!(monitor.since(), Some("2026-09-02T10:01:30Z"));
}

#[test]
fn branch_and_worktree_are_json_escaped() {
    let mut monitor = WorkerMonitor::new(WorkerConfig {
        branch: "a\"b\\c".to_owned(),
        worktree: "/tmp/x\ny".to_owned(),
        ..config()
    });
    let passes = run(
        &mut monitor,
        &[World::stalled().pid(PidReading::Dead(AGENT))],
    );
    let json = &passes[0].report.as_ref().unwrap().json;
    assert!(
        json.contains(r#""branch":"a\"b\\c","worktree":"/tmp/x\ny""#),
        "{json}"
    );
    assert!(!json.contains('\n'));
}

#[test]
fn non_ascii_is_escaped_as_the_seeds_python_json_dumps_does() {
    // Bytes from `python3 -c 'import json; print(json.dumps(s))'` (ensure_ascii).
    let mut monitor = WorkerMonitor::new(WorkerConfig {
        branch: "feat/café-😀".to_owned(),
        worktree: "/tmp/ü\u{1}\u{7f}\t\"/x".to_owned(),
        ..config()
    });
    let passes = run(
        &mut monitor,
        &[World::stalled().pid(PidReading::Dead(AGENT))],
    );
    let json = &passes[0].report.as_ref().unwrap().json;
    assert!(
        json.contains(
            r#""branch":"feat/caf\u00e9-\ud83d\ude00","worktree":"/tmp/\u00fc\u0001\u007f\t\"/x""#
        ),
        "{json}"
    );
    assert!(json.is_ascii(), "{json}");
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(value["branch"], "feat/café-😀");
}

#[test]
fn one_pass_alone_can_never_publish_idle() {
    // `--once` is one pass on a fresh monitor: whatever the machine says, no `idle`.
    for world in [
        World::stalled(),
        World::stalled().cpu(Some(&[(AGENT, 0)])),
        World::stalled().quiet(Some(u64::MAX)),
    ] {
        assert_eq!(check(&[world]), vec![None]);
    }
}

#[test]
fn a_fractional_interval_reads_as_written_in_the_evidence() {
    let mut monitor = WorkerMonitor::new(WorkerConfig {
        interval: Duration::from_millis(500),
        ..config()
    });
    let passes = run(&mut monitor, &repeat(World::stalled(), 3));
    let evidence = &passes[2].report.as_ref().unwrap().evidence;
    assert!(evidence.contains("~0.5s apart"), "{evidence}");
}

#[test]
fn utc_timestamps_have_the_seeds_format() {
    assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
    assert_eq!(utc_timestamp(T0), "2026-09-02T10:00:00Z");
    assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(utc_timestamp(4_102_444_799), "2099-12-31T23:59:59Z");
    assert_eq!(utc_timestamp(-1), "1969-12-31T23:59:59Z");
    // Past what a timestamp holds (about ±9999 years), the nearest one, not a panic.
    assert_eq!(utc_timestamp(253_402_207_200), "9999-12-30T22:00:00Z");
    assert_eq!(utc_timestamp(i64::MAX), "9999-12-30T22:00:00Z");
    assert_eq!(utc_timestamp(i64::MIN), "-9999-01-02T01:59:59Z");
}
