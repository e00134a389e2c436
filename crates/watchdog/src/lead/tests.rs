//! Table tests in the style of promtool's rule tests: a fake machine and a
//! fake clock, a sequence of observations in, the exact lines out.

use std::cell::Cell;
use std::collections::HashMap;

use super::*;

include!("../../tests/support/lead_fake.rs");

/// One row of a table test: at this time, after this setup, exactly these lines.
type Step<'a> = (i64, &'a dyn Fn(&mut Harness), &'a [&'a str]);

/// Runs `steps` against one harness.
fn check(h: &mut Harness, steps: &[Step]) {
    for (t, setup, expected) in steps {
        setup(h);
        let got = h.pass_at(*t);
        assert_eq!(got, *expected, "at t={t}");
    }
}

fn nothing(_: &mut Harness) {}

#[test]
fn result_ready_is_reported_once_to_lead_and_consultant() {
    let mut h = Harness::new();
    h.watch("executor", "3", "");
    h.alive("executor-3", 42);
    check(
        &mut h,
        &[
            (60, &nothing, &[]),
            (
                120,
                &|h| h.m.write("/r/executor-3.md", 10, 5),
                &[
                    "L [MONITOR] agent=executor step=3 state=result_ready file=/r/executor-3.md ts=00:02",
                    r#"C {"event":"agent_complete","step":"3","agent":"executor","result":"/r/executor-3.md","ts":"00:02","source":"monitor"}"#,
                ],
            ),
            (150, &|h| h.m.write("/r/executor-3.md", 99, 9), &[]),
            (180, &|h| h.dead("executor-3", 42), &[]),
        ],
    );
    assert!(
        h.m.head_calls.is_empty(),
        "filtered reporting never reads the head"
    );
}

#[test]
fn process_died_needs_a_dead_pid_and_no_result() {
    let mut h = Harness::new();
    h.watch("tester-claude", "2", "");
    check(
        &mut h,
        &[
            // No pid file yet (the startup window): not a death.
            (30, &nothing, &[]),
            (60, &|h| h.alive("tester-claude-2", 77), &[]),
            (
                90,
                &|h| h.dead("tester-claude-2", 77),
                &["L [MONITOR] agent=tester-claude step=2 state=process_died pid=77 ts=00:01"],
            ),
            (120, &nothing, &[]),
            // The result appearing after the death is still news.
            (
                150,
                &|h| h.m.write("/r/tester-claude-2.md", 1, 1),
                &[
                    "L [MONITOR] agent=tester-claude step=2 state=result_ready file=/r/tester-claude-2.md ts=00:02",
                    r#"C {"event":"agent_complete","step":"2","agent":"tester-claude","result":"/r/tester-claude-2.md","ts":"00:02","source":"monitor"}"#,
                ],
            ),
        ],
    );
}

#[test]
fn a_dead_pid_with_a_result_is_result_ready_not_a_death() {
    let mut h = Harness::new();
    h.watch("writer", "1", "");
    h.dead("writer-1", 5);
    h.m.write("/r/writer-1.md", 3, 3);
    let got = h.pass_at(60);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].contains("state=result_ready"), "{got:?}");
}

#[test]
fn a_garbage_pid_file_is_one_error_naming_the_field_and_not_a_death() {
    let mut h = Harness::new();
    h.watch("writer", "1", "");
    let bad = PidCheck::Invalid("the pid file holds \"-1\", a negative number".into());
    h.m.pids.insert("/r/writer-1.pid".into(), bad);
    let expected = "E lead: agent=writer step=1: field `pid_file`: the pid file holds \"-1\", a negative number";
    assert_eq!(h.pass_at(30), [expected]);
    assert_eq!(h.pass_at(60), Vec::<String>::new(), "said once");
    assert_eq!(h.pass_at(400), Vec::<String>::new(), "never a stall either");
    // Once the pid is recorded and alive, the idle clock (from registration) counts.
    h.alive("writer-1", 9);
    assert_eq!(
        h.pass_at(430)[0],
        "L [MONITOR] agent=writer step=1 state=stalled idle_sec=430 ts=00:07"
    );
}

#[test]
fn a_stall_needs_all_three_conditions() {
    // Each row: (alive?, result?, progress?) at t=200, then whether a stall is reported.
    let rows: [(bool, bool, bool, bool); 6] = [
        (true, false, false, true),
        (false, false, false, false),
        (true, true, false, false),
        (true, false, true, false),
        (false, true, true, false),
        (true, true, true, false),
    ];
    for (alive, result, progress, stalls) in rows {
        let mut h = Harness::new();
        h.watch("analyst", "4", r#","watch_paths":["/w/notes.md"]"#);
        if alive {
            h.alive("analyst-4", 11);
        } else {
            h.m.pids
                .insert("/r/analyst-4.pid".into(), PidCheck::NotRecorded);
        }
        h.m.write("/w/notes.md", 1, 1);
        assert_eq!(h.pass_at(0), Vec::<String>::new());
        if result {
            h.m.write("/r/analyst-4.md", 1, 1);
        }
        if progress {
            h.m.write("/w/notes.md", 2, 2);
        }
        h.pass_at(100);
        let got = h.pass_at(200);
        let stalled = got.iter().any(|l| l.contains("state=stalled"));
        assert_eq!(
            stalled, stalls,
            "alive={alive} result={result} progress={progress}: {got:?}"
        );
    }
}

#[test]
fn stall_reports_idle_sec_and_cpu_when_measured() {
    let mut h = Harness::new();
    h.watch("executor", "3", "");
    h.alive("executor-3", 42);
    h.m.cpu = Some(3);
    check(
        &mut h,
        &[
            (0, &nothing, &[]),
            (179, &nothing, &[]),
            (
                180,
                &nothing,
                &[
                    "L [MONITOR] agent=executor step=3 state=stalled idle_sec=180 cpu_pct=3 ts=00:03",
                    r#"C {"event":"monitor_stall","step":"3","agent":"executor","idle_sec":180,"cpu_pct":3,"ts":"00:03","source":"monitor"}"#,
                ],
            ),
            (210, &nothing, &[]),
        ],
    );
    let mut h = Harness::new();
    h.watch("executor", "3", "");
    h.alive("executor-3", 42);
    assert_eq!(
        h.pass_at(200),
        [
            "L [MONITOR] agent=executor step=3 state=stalled idle_sec=200 ts=00:03",
            r#"C {"event":"monitor_stall","step":"3","agent":"executor","idle_sec":200,"ts":"00:03","source":"monitor"}"#,
        ],
        "cpu_pct is left out when it cannot be measured"
    );
}

#[test]
fn cpu_is_measured_from_halfway_to_the_stall_once_per_idle_period() {
    let mut h = Harness::new();
    h.watch("executor", "3", r#","watch_paths":["/w/a"]"#);
    h.alive("executor-3", 42);
    h.m.cpu = Some(7);
    h.pass_at(89);
    assert!(h.m.cpu_calls.is_empty(), "not before half the idle window");
    h.pass_at(90);
    h.pass_at(120);
    assert_eq!(h.m.cpu_calls, [42], "one start of measurement");
    // Progress restarts the idle period, and with it the measurement.
    h.m.write("/w/a", 1, 1);
    h.pass_at(150);
    h.pass_at(240);
    assert_eq!(h.m.cpu_calls, [42, 42]);
    let got = h.pass_at(330);
    assert_eq!(
        got[0],
        "L [MONITOR] agent=executor step=3 state=stalled idle_sec=180 cpu_pct=7 ts=00:05"
    );
    assert_eq!(h.m.cpu_calls, [42, 42, 42], "the stall report ends it");
}

#[test]
fn the_idle_clock_restarts_on_any_size_or_mtime_change() {
    let mut h = Harness::new();
    h.watch("executor", "3", r#","watch_paths":["/w/a","/w/b"]"#);
    h.alive("executor-3", 42);
    let stall = |idle: u64, ts: &str| {
        vec![
            format!("L [MONITOR] agent=executor step=3 state=stalled idle_sec={idle} ts={ts}"),
            format!(
                r#"C {{"event":"monitor_stall","step":"3","agent":"executor","idle_sec":{idle},"ts":"{ts}","source":"monitor"}}"#
            ),
        ]
    };
    h.pass_at(0);
    h.m.write("/w/a", 1, 100); // appears: a change
    h.pass_at(100);
    h.m.write("/w/a", 1, 200); // mtime only
    h.pass_at(200);
    h.m.write("/w/b", 7, 100); // the other path
    h.pass_at(300);
    assert_eq!(h.pass_at(479), Vec::<String>::new());
    assert_eq!(h.pass_at(480), stall(180, "00:08"));
}

#[test]
fn an_items_own_idle_stall_sec_overrides_the_flag() {
    let mut h = Harness::new();
    h.watch("executor", "3", r#","idle_stall_sec":30"#);
    h.alive("executor-3", 42);
    assert_eq!(h.pass_at(29), Vec::<String>::new());
    let got = h.pass_at(30);
    assert_eq!(
        got[0],
        "L [MONITOR] agent=executor step=3 state=stalled idle_sec=30 ts=00:00"
    );
}

#[test]
fn a_stall_that_ends_and_returns_is_not_reported_twice_in_a_row() {
    let mut h = Harness::new();
    h.watch("executor", "3", r#","watch_paths":["/w/p"]"#);
    h.alive("executor-3", 42);
    assert!(h.pass_at(180)[0].contains("state=stalled idle_sec=180"));
    // Progress, then a new stall with nothing reported between: the seed
    // compares with `last_state`, the last state REPORTED, so it is silent.
    h.m.write("/w/p", 1, 1);
    assert_eq!(h.pass_at(200), Vec::<String>::new());
    assert_eq!(h.pass_at(380), Vec::<String>::new());
    // A result that flickers into existence is reported...
    h.m.write("/r/executor-3.md", 0, 1);
    assert!(h.pass_at(390)[0].contains("state=result_ready"));
    // ...so when it vanishes again, a later stall is a change again.
    h.m.files.remove("/r/executor-3.md");
    assert_eq!(h.pass_at(400), Vec::<String>::new());
    assert_eq!(h.pass_at(579), Vec::<String>::new());
    assert!(h.pass_at(580)[0].contains("state=stalled idle_sec=180"));
}

#[test]
fn timeout_warnings_fire_at_90_and_100_percent_once_each() {
    let mut h = Harness::new();
    h.watch("executor", "3", r#","idle_stall_sec":100000"#);
    h.alive("executor-3", 42);
    check(
        &mut h,
        &[
            (899, &nothing, &[]),
            (
                900,
                &nothing,
                &[
                    "L [MONITOR] agent=executor step=3 state=timeout_imminent elapsed=900/1000s ts=00:15",
                    r#"C {"event":"monitor_timeout_imminent","step":"3","agent":"executor","elapsed_sec":900,"timeout_sec":1000,"ts":"00:15","source":"monitor"}"#,
                ],
            ),
            (950, &nothing, &[]),
            (
                1000,
                &nothing,
                &[
                    "L [MONITOR] agent=executor step=3 state=timeout_exceeded elapsed=1000/1000s ts=00:16",
                ],
            ),
            (1100, &nothing, &[]),
            (5000, &nothing, &[]),
        ],
    );
}

#[test]
fn one_pass_past_both_checkpoints_reports_imminent_then_exceeded_each_once() {
    // A late registration, or a pass interval longer than the last tenth of
    // the timeout: the Consultant hears only of the imminent timeout, so it
    // must come, and first.
    let mut h = Harness::new();
    h.watch("executor", "3", r#","idle_stall_sec":100000"#);
    assert_eq!(
        h.pass_at(1500),
        [
            "L [MONITOR] agent=executor step=3 state=timeout_imminent elapsed=1500/1000s ts=00:25",
            r#"C {"event":"monitor_timeout_imminent","step":"3","agent":"executor","elapsed_sec":1500,"timeout_sec":1000,"ts":"00:25","source":"monitor"}"#,
            "L [MONITOR] agent=executor step=3 state=timeout_exceeded elapsed=1500/1000s ts=00:25",
        ]
    );
    assert_eq!(h.pass_at(1600), Vec::<String>::new());
}

#[test]
fn no_timeout_warning_once_the_result_is_ready() {
    let mut h = Harness::new();
    h.watch("executor", "3", "");
    h.m.write("/r/executor-3.md", 1, 1);
    assert_eq!(h.pass_at(10).len(), 2);
    assert_eq!(h.pass_at(950), Vec::<String>::new());
    assert_eq!(h.pass_at(1050), Vec::<String>::new());
}

#[test]
fn an_unacknowledged_stall_is_repeated_at_most_three_times() {
    let mut h = Harness::new();
    h.watch("executor", "3", r#","idle_stall_sec":60"#);
    h.alive("executor-3", 42);
    assert_eq!(h.pass_at(60).len(), 2);
    let nudge = |n: u32, ts: &str| {
        format!(
            r#"L {{"type":"watchdog","event":"nudge_repeat","original_event":"stalled","agent":"executor","nudge_count":{n},"ts":"{ts}"}}"#
        )
    };
    assert_eq!(h.pass_at(179), Vec::<String>::new());
    assert_eq!(h.pass_at(180), [nudge(1, "00:03")]);
    assert_eq!(h.pass_at(299), Vec::<String>::new());
    assert_eq!(h.pass_at(300), [nudge(2, "00:05")]);
    assert_eq!(h.pass_at(420), [nudge(3, "00:07")]);
    assert_eq!(h.pass_at(540), Vec::<String>::new());
    assert_eq!(h.pass_at(850), Vec::<String>::new());
}

#[test]
fn an_ack_stops_the_repeats_for_all_of_the_agents_steps() {
    let mut h = Harness::new();
    h.watch("executor", "3", r#","idle_stall_sec":60"#);
    h.watch("executor", "4", r#","idle_stall_sec":60"#);
    h.watch("writer", "4", "");
    h.alive("executor-3", 42);
    h.alive("executor-4", 43);
    h.alive("writer-4", 44);
    h.dead("writer-4", 44);
    assert_eq!(h.pass_at(60).len(), 5);
    assert_eq!(h.pass_at(180).len(), 3, "three events, one repeat each");
    h.send(r#"{"ack":"stalled","agent":"executor"}"#).unwrap();
    assert_eq!(
        h.pass_at(300),
        [
            r#"L {"type":"watchdog","event":"nudge_repeat","original_event":"process_died","agent":"writer","nudge_count":2,"ts":"00:05"}"#
        ]
    );
    h.send(r#"{"ack":"process_died","agent":"writer"}"#)
        .unwrap();
    assert_eq!(h.pass_at(420), Vec::<String>::new());
}

#[test]
fn a_stall_that_resolves_is_not_repeated() {
    let mut h = Harness::new();
    h.watch("executor", "3", r#","idle_stall_sec":60"#);
    h.alive("executor-3", 42);
    assert_eq!(h.pass_at(60).len(), 2);
    h.m.write("/r/executor-3.md", 1, 1);
    assert_eq!(h.pass_at(100).len(), 2, "result_ready");
    assert_eq!(h.pass_at(400), Vec::<String>::new());
}

const MARKER: &str = "MARKER-7f3a";

#[test]
fn full_reporting_outside_the_blind_phase_carries_the_handoff_headers() {
    let mut h = Harness::new();
    h.watch("verifier-claude", "6", r#","consultant_reporting":"full""#);
    h.m.handoff(
        "/r/verifier-claude-6.md",
        &[
            "# Handoff",
            "Type: verification",
            &format!("Status: {MARKER}"),
            "",
            "",
            "Body: secret",
        ],
    );
    let got = h.pass_at(60);
    assert_eq!(
        got[1],
        format!(
            r#"C {{"event":"agent_complete","step":"6","agent":"verifier-claude","result":"/r/verifier-claude-6.md","handoff":{{"type":"verification","status":"{MARKER}"}},"ts":"00:01","source":"monitor"}}"#
        )
    );
    assert!(!got.iter().any(|l| l.contains("secret")));
}

#[test]
fn a_watch_item_missing_result_path_changes_nothing_not_even_its_blind_phase() {
    let mut h = Harness::new();
    h.watch("verifier-claude", "6", r#","consultant_reporting":"full""#);
    // The Lead re-sends the item with its run settings but forgets result_path.
    let bad = r#"{"agent":"verifier-claude","step":"6","pid_file":"/r/other.pid","timeout_sec":5,"started_at_epoch":0,"blind_phase":true,"consultant_reporting":"filtered"}"#;
    assert_eq!(
        parse_control(bad),
        Err(ControlError::Missing {
            field: "result_path"
        })
    );
    // So nothing reaches the monitor: it is still out of blind phase, and full.
    h.m.handoff("/r/verifier-claude-6.md", &[&format!("Status: {MARKER}")]);
    let got = h.pass_at(60);
    assert!(got[1].contains(MARKER), "{got:?}");
}

#[test]
fn the_blind_phase_never_reads_the_result_and_never_leaks_it() {
    let mut h = Harness::new();
    h.watch(
        "verifier-claude",
        "6",
        r#","consultant_reporting":"full","blind_phase":true"#,
    );
    h.m.handoff("/r/verifier-claude-6.md", &[&format!("Status: {MARKER}")]);
    let got = h.pass_at(60);
    assert_eq!(
        got,
        [
            "L [MONITOR] agent=verifier-claude step=6 state=result_ready file=/r/verifier-claude-6.md ts=00:01",
            r#"C {"event":"agent_complete","step":"6","agent":"verifier-claude","result":"/r/verifier-claude-6.md","ts":"00:01","source":"monitor"}"#,
        ]
    );
    assert!(
        h.m.head_calls.is_empty(),
        "the result file was opened in blind phase"
    );
}

#[test]
fn a_blind_phase_update_applies_to_later_reports() {
    let mut h = Harness::new();
    h.watch("tester-cross", "5", r#","consultant_reporting":"full""#);
    h.send(r#"{"agent":"tester-cross","step":"5","blind_phase":true}"#)
        .unwrap();
    h.m.handoff("/r/tester-cross-5.md", &[&format!("Status: {MARKER}")]);
    assert!(!h.pass_at(60).iter().any(|l| l.contains(MARKER)));
    assert!(h.m.head_calls.is_empty());

    let mut h = Harness::new();
    h.watch(
        "tester-cross",
        "5",
        r#","consultant_reporting":"full","blind_phase":true"#,
    );
    h.send(r#"{"agent":"tester-cross","step":"5","blind_phase":false}"#)
        .unwrap();
    h.m.handoff("/r/tester-cross-5.md", &[&format!("Status: {MARKER}")]);
    assert!(h.pass_at(60).iter().any(|l| l.contains(MARKER)));
    let err = h
        .send(r#"{"agent":"nobody","step":"5","blind_phase":true}"#)
        .unwrap_err();
    assert_eq!(
        err,
        ApplyError::UnknownItem {
            agent: "nobody".into(),
            step: "5".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "blind-phase update for agent=nobody step=5: no such watch item (fields `agent`, `step`)"
    );
}

#[test]
fn an_unreadable_handoff_is_one_error_and_the_event_goes_out_without_it() {
    let mut h = Harness::new();
    h.watch("writer", "8", r#","consultant_reporting":"full""#);
    h.m.write("/r/writer-8.md", 5, 5);
    let got = h.pass_at(60);
    assert_eq!(
        got,
        [
            "L [MONITOR] agent=writer step=8 state=result_ready file=/r/writer-8.md ts=00:01",
            "E lead: agent=writer step=8 handoff: cannot open /r/writer-8.md",
            r#"C {"event":"agent_complete","step":"8","agent":"writer","result":"/r/writer-8.md","ts":"00:01","source":"monitor"}"#,
        ]
    );
}

#[test]
fn the_head_is_bounded_to_five_lines_and_its_bytes() {
    let head = Head::new((1..=9).map(|i| format!("line {i}")));
    assert_eq!(head.lines().len(), 5);
    let head = Head::new(["x".repeat(5000), "Status: y".into()]);
    assert_eq!(head.lines(), ["x".repeat(Head::MAX_BYTES)]);
    let head = Head::new(["é".repeat(600)]);
    assert!(head.lines()[0].len() <= Head::MAX_BYTES);
    let h = Head::new(["**Type:** handoff", "- status: DONE", "Status: later"].map(String::from))
        .handoff();
    assert_eq!(h.kind.as_deref(), Some("handoff"));
    assert_eq!(h.status.as_deref(), Some("DONE"));
}

#[test]
fn the_feed_heartbeat_reports_mtime_changes_only_whatever_the_blind_phase() {
    let mut h = Harness::new();
    h.watch("writer", "1", r#","blind_phase":true"#);
    let feed = r#"C {"type":"feed_update","source":"monitor","ts":"00:01"}"#;
    check(
        &mut h,
        &[
            (0, &|h| h.m.write(FEED, 10, 100), &[]),
            (30, &nothing, &[]),
            (60, &|h| h.m.write(FEED, 10, 200), &[feed]),
            (90, &nothing, &[]),
            (
                100,
                &|h| {
                    h.m.files.remove(FEED);
                },
                &[],
            ),
            (
                110,
                &|h| h.m.write(FEED, 1, 300),
                &[r#"C {"type":"feed_update","source":"monitor","ts":"00:01"}"#],
            ),
        ],
    );
}

fn pane(id: &str, pid: u32, dead: bool, tree: &[u32]) -> Pane {
    Pane {
        id: id.into(),
        pid,
        dead,
        tree: tree.to_vec(),
    }
}

#[test]
fn the_sweep_reports_dead_and_untracked_panes_once_each() {
    let mut cfg = config();
    cfg.sweep_interval_sec = Some(60);
    cfg.known_panes = vec!["%0".into()];
    let mut h = Harness::with(cfg);
    h.watch("executor", "3", r#","idle_stall_sec":100000"#);
    h.alive("executor-3", 502);
    h.m.consultant_pane = Some("%1".into());
    h.m.panes = vec![
        pane("%0", 100, false, &[100]),
        pane("%1", 200, false, &[200]),
        pane("%2", 300, true, &[]),
        pane("%3", 400, false, &[400, 401]),
        pane("%4", 500, false, &[500, 501, 502]),
    ];
    // The first pass starts the sweep clock; the first sweep is one interval on.
    assert_eq!(h.pass_at(0), Vec::<String>::new());
    assert_eq!(h.m.list_calls, 0);
    assert_eq!(
        h.pass_at(60),
        [
            r#"L {"type":"watchdog","event":"pane_dead","pane":"%2","ts":"00:01"}"#,
            r#"L {"type":"watchdog","event":"untracked_pane","pane":"%3","pid":400,"ts":"00:01"}"#,
        ]
    );
    assert_eq!(h.m.list_calls, 1);
    assert_eq!(h.pass_at(90), Vec::<String>::new());
    assert_eq!(h.m.list_calls, 1, "not before --sweep-interval");
    assert_eq!(
        h.pass_at(120),
        Vec::<String>::new(),
        "reported once per change"
    );
    assert_eq!(h.m.list_calls, 2);
    // %4's agent leaves it: now untracked. %3 gets a watch item: tracked, silent.
    h.m.panes[4] = pane("%4", 500, false, &[500]);
    h.watch("writer", "9", r#","idle_stall_sec":100000"#);
    h.alive("writer-9", 401);
    assert_eq!(
        h.pass_at(180),
        [r#"L {"type":"watchdog","event":"untracked_pane","pane":"%4","pid":500,"ts":"00:03"}"#]
    );
    // The tmux server goes away (the adapter's error, as probes words it):
    // said once, survived, and the sweep resumes.
    h.m.panes_error = Some("no tmux server is running".into());
    let err = "E lead: sweep: no tmux server is running";
    assert_eq!(h.pass_at(240), [err]);
    assert_eq!(h.pass_at(300), Vec::<String>::new());
    h.m.panes_error = None;
    h.m.panes.truncate(3);
    assert_eq!(h.pass_at(360), Vec::<String>::new());
}

#[test]
fn the_first_sweep_leaves_the_lead_one_interval_to_register_its_agents() {
    let mut cfg = config();
    cfg.sweep_interval_sec = Some(60);
    let mut h = Harness::with(cfg);
    h.m.panes = vec![
        pane("%2", 300, false, &[300, 301]),
        pane("%3", 400, false, &[400]),
    ];
    // The monitor starts before the Lead has sent anything.
    assert_eq!(h.pass_at(0), Vec::<String>::new());
    // The Lead registers the agent in %2 shortly after.
    h.watch("executor", "3", r#","idle_stall_sec":100000"#);
    h.alive("executor-3", 301);
    assert_eq!(h.pass_at(30), Vec::<String>::new());
    // Only the pane nobody registered is reported.
    assert_eq!(
        h.pass_at(60),
        [r#"L {"type":"watchdog","event":"untracked_pane","pane":"%3","pid":400,"ts":"00:01"}"#]
    );
}

#[test]
fn an_item_whose_result_is_there_at_its_first_check_still_tracks_its_pane() {
    let mut cfg = config();
    cfg.sweep_interval_sec = Some(60);
    let mut h = Harness::with(cfg);
    h.m.panes = vec![pane("%2", 300, false, &[300, 301])];
    assert_eq!(h.pass_at(0), Vec::<String>::new());
    // Its result is already written, and the agent is still alive in %2.
    h.watch("executor", "3", "");
    h.alive("executor-3", 301);
    h.m.write("/r/executor-3.md", 10, 5);
    let out = h.pass_at(60);
    assert!(
        out.iter().any(|l| l.contains("state=result_ready")),
        "{out:?}"
    );
    assert!(
        !out.iter().any(|l| l.contains("untracked_pane")),
        "the live agent of a finished item is tracked: {out:?}"
    );
}

#[test]
fn a_new_item_is_checked_at_once_and_the_others_keep_their_cadence() {
    let mut h = Harness::new();
    h.watch("executor", "3", "");
    h.alive("executor-3", 42);
    assert_eq!(h.pass_at(0), Vec::<String>::new());
    assert!(!h.monitor.has_unchecked());
    // Both results appear; only the new item is checked before the next pass.
    h.m.write("/r/executor-3.md", 10, 5);
    h.m.write("/r/writer-9.md", 10, 5);
    h.clock.0.set(5);
    h.watch("writer", "9", "");
    assert!(h.monitor.has_unchecked());
    let out = h.monitor.check_new(&mut h.m, &h.clock);
    assert_eq!(
        out,
        [
            Output::Lead(
                "[MONITOR] agent=writer step=9 state=result_ready file=/r/writer-9.md ts=00:00"
                    .into()
            ),
            Output::Consultant(
                r#"{"event":"agent_complete","step":"9","agent":"writer","result":"/r/writer-9.md","ts":"00:00","source":"monitor"}"#
                    .into()
            ),
        ]
    );
    assert!(!h.monitor.has_unchecked());
    assert_eq!(h.monitor.check_new(&mut h.m, &h.clock), []);
    // The next pass reports the older item's result, and not the new one again.
    let out = h.pass_at(30);
    assert_eq!(
        out[0],
        "L [MONITOR] agent=executor step=3 state=result_ready file=/r/executor-3.md ts=00:00"
    );
    assert_eq!(out.len(), 2, "{out:?}");
}

#[test]
fn a_directory_at_the_result_path_is_not_a_result() {
    let mut h = Harness::new();
    h.watch("executor", "3", "");
    h.alive("executor-3", 42);
    h.m.files.insert(
        "/r/executor-3.md".into(),
        Meta::Present {
            size: 4096,
            mtime_ns: 1,
            regular: false,
        },
    );
    assert_eq!(h.pass_at(10), Vec::<String>::new());
    h.m.write("/r/executor-3.md", 10, 5);
    assert_eq!(h.pass_at(20).len(), 2);
}

#[test]
fn without_a_sweep_interval_there_is_no_sweep() {
    let mut h = Harness::new();
    h.m.panes = vec![pane("%2", 300, true, &[])];
    assert_eq!(h.pass_at(0), Vec::<String>::new());
    assert_eq!(h.m.list_calls, 0);
}

#[test]
fn a_stat_error_is_said_once_and_the_item_keeps_its_state() {
    let mut h = Harness::new();
    h.watch("executor", "3", "");
    h.alive("executor-3", 42);
    h.m.stat_errors
        .insert("/r/executor-3.md".into(), "permission denied".into());
    let err = "E lead: agent=executor step=3 result_path: permission denied";
    assert_eq!(h.pass_at(10), [err]);
    assert_eq!(h.pass_at(20), Vec::<String>::new());
    h.m.stat_errors.clear();
    assert_eq!(h.pass_at(30), Vec::<String>::new());
    h.m.stat_errors
        .insert("/r/executor-3.md".into(), "permission denied".into());
    assert_eq!(
        h.pass_at(40),
        [err],
        "a new occurrence after recovery is said again"
    );
}

#[test]
fn re_registering_updates_and_a_new_run_starts_over() {
    let mut h = Harness::new();
    h.watch("executor", "3", "");
    h.alive("executor-3", 42);
    h.dead("executor-3", 42);
    assert_eq!(h.pass_at(10).len(), 1);
    // Same run, new settings: no state lost, nothing re-reported.
    h.watch("executor", "3", r#","blind_phase":true"#);
    assert_eq!(h.pass_at(20), Vec::<String>::new());
    assert_eq!(h.monitor.len(), 1);
    // A new start time is a new run: the death of its process is news again.
    let json = r#"{"agent":"executor","step":"3","result_path":"/r/executor-3.md","pid_file":"/r/executor-3.pid","timeout_sec":1000,"started_at_epoch":15,"blind_phase":false,"consultant_reporting":"filtered"}"#;
    h.send(json).unwrap();
    assert_eq!(
        h.pass_at(30),
        ["L [MONITOR] agent=executor step=3 state=process_died pid=42 ts=00:00"]
    );
}

#[test]
fn shutdown_request_says_shutdown() {
    let mut h = Harness::new();
    assert_eq!(
        h.send(r#"{"type":"shutdown_request"}"#),
        Ok(Applied::Shutdown)
    );
}
