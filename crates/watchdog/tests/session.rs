//! The session monitor's state machine driven with observations: real
//! Claude Code captures from testdata/ as the panes, numbers as the probes.

use std::path::Path;

use bmb_watchdog as watchdog;
use classify::{State, Work};
use ledger::session::{SessionMemory, SessionRecord};
use proptest::prelude::*;
use watchdog::session::{Action, Foreground, Observation, SessionConfig, TargetMonitor};

/// What the poll line and `--json` say was done.
fn words(done: &[watchdog::session::Done]) -> Vec<String> {
    done.iter().map(ToString::to_string).collect()
}

fn capture(case: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/panes/claude")
        .join(case)
        .join("plain.txt");
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn idle() -> String {
    capture("idle-after-text-answer")
}
fn question() -> String {
    capture("question-permission-bash")
}
fn other_question() -> String {
    capture("question-ask-single")
}
fn working() -> String {
    capture("working-bash-sleep")
}

fn monitor(budget: u32) -> TargetMonitor {
    let config = SessionConfig {
        budget,
        ..SessionConfig::default()
    };
    TargetMonitor::new("host:sess", config, SessionMemory::default())
}

fn observe(pane: &str, work: Work, progress: Option<u64>) -> Observation<'_> {
    Observation {
        capture: Ok(pane),
        work,
        progress,
        witness: None,
        foreground: None,
        cli_version: None,
        pane_id: None,
        pane_pid: None,
    }
}

/// What the loop journals when every alert is delivered: the records, and
/// each delivered alert's latch.
fn delivered(actions: Vec<Action>) -> Vec<SessionRecord> {
    actions
        .into_iter()
        .filter_map(|a| match a {
            Action::Record(record) => Some(record),
            Action::Alert(alert) => Some(alert.record),
            Action::Send(_) => None,
        })
        .collect()
}

fn sends(actions: &[Action]) -> usize {
    actions
        .iter()
        .filter(|a| matches!(a, Action::Send(_)))
        .count()
}

fn alerts(actions: &[Action]) -> Vec<&watchdog::session::Alert> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Alert(alert) => Some(alert),
            _ => None,
        })
        .collect()
}

#[test]
fn a_stalled_pane_is_nudged_budget_times_then_escalated_once() {
    let mut m = monitor(3);
    let pane = idle();
    let mut done = Vec::new();
    let (mut total_sends, mut total_alerts) = (0, Vec::new());
    for _ in 0..6 {
        let (report, actions) = m.poll(observe(&pane, Work::Available(4), Some(10)));
        assert_eq!(report.state, Some(State::Stalled));
        total_sends += sends(&actions);
        total_alerts.extend(alerts(&actions).into_iter().cloned());
        done.push(words(&report.done).join(" · "));
    }
    assert_eq!(total_sends, 3);
    assert_eq!(
        done,
        [
            "nudged (1/3)",
            "nudged (2/3)",
            "nudged (3/3)",
            "not nudged, escalated",
            "",
            ""
        ]
    );
    assert_eq!(total_alerts.len(), 1);
    assert_eq!(total_alerts[0].reason, "escalate_to_human");
    assert!(
        total_alerts[0]
            .message
            .contains("3 nudges produced no progress"),
        "{}",
        total_alerts[0].message
    );
}

#[test]
fn the_nudge_is_recorded_in_the_echo_ledger_before_it_is_sent() {
    let mut m = monitor(5);
    let (_, actions) = m.poll(observe(&idle(), Work::Unknown, None));
    let sent_at = actions
        .iter()
        .position(|a| matches!(a, Action::Send(_)))
        .expect("a nudge");
    let recorded_at = actions
        .iter()
        .position(|a| matches!(a, Action::Record(SessionRecord::Sent { .. })))
        .expect("the nudge is recorded");
    assert!(recorded_at < sent_at, "{actions:?}");
}

#[test]
fn progress_advancing_resets_the_budget_and_says_so() {
    let mut m = monitor(2);
    let pane = idle();
    m.poll(observe(&pane, Work::Available(7), Some(41)));
    let (report, _) = m.poll(observe(&pane, Work::Available(7), Some(41)));
    assert_eq!(words(&report.done), ["nudged (2/2)"]);
    let (report, actions) = m.poll(observe(&pane, Work::Available(6), Some(42)));
    assert_eq!(
        words(&report.done),
        ["nudge budget reset (progress 41 → 42)", "nudged (1/2)"]
    );
    assert_eq!(sends(&actions), 1);
    assert_eq!(
        report.line("17:42:03"),
        "MONITOR · host:sess · STALLED · work=6 · progress=42 · nudges 1/2 · nudge budget reset (progress 41 → 42) · nudged (1/2) · 17:42:03"
    );
}

#[test]
fn a_question_is_escalated_once_verbatim_and_never_answered() {
    let mut m = monitor(5);
    let pane = question();
    let (report, actions) = m.poll(observe(&pane, Work::Available(3), None));
    assert_eq!(report.state, Some(State::Question));
    assert_eq!(
        words(&report.done),
        ["escalated to the operator, NOT answered"]
    );
    let alert = alerts(&actions)[0].clone();
    assert_eq!((alert.state, alert.reason), (State::Question, "question"));
    assert!(
        alert.message.contains("Do you want to proceed?") && alert.message.contains("1. Yes"),
        "{}",
        alert.message
    );
    for _ in 0..5 {
        let (report, actions) = m.poll(observe(&pane, Work::Available(3), None));
        assert!(
            words(&report.done).is_empty() && sends(&actions) == 0 && alerts(&actions).is_empty(),
            "{actions:?}"
        );
    }
    // A different question is a new escalation.
    let (_, actions) = m.poll(observe(&other_question(), Work::Available(3), None));
    assert_eq!(alerts(&actions).len(), 1);
    assert_eq!(sends(&actions), 0);
}

#[test]
fn a_question_is_rearmed_once_the_pane_shows_another_verdict() {
    let mut m = monitor(5);
    let (q, w) = (question(), working());
    assert_eq!(alerts(&m.poll(observe(&q, Work::Unknown, None)).1).len(), 1);
    assert_eq!(alerts(&m.poll(observe(&q, Work::Unknown, None)).1).len(), 0);
    m.poll(observe(&w, Work::Unknown, None));
    assert_eq!(alerts(&m.poll(observe(&q, Work::Unknown, None)).1).len(), 1);
}

#[test]
fn a_blocked_pane_is_escalated_once_with_the_work_number_and_never_nudged() {
    let mut m = monitor(5);
    let pane = idle();
    let (report, actions) = m.poll(observe(&pane, Work::None, None));
    assert_eq!(report.state, Some(State::Blocked));
    assert_eq!(words(&report.done), ["not nudged, escalated"]);
    assert_eq!(sends(&actions), 0);
    let alert = alerts(&actions)[0];
    assert!(
        alert.message.contains("work=0") && alert.message.contains("Last transition:"),
        "{}",
        alert.message
    );
    for _ in 0..3 {
        let (_, actions) = m.poll(observe(&pane, Work::None, None));
        assert!(
            actions
                .iter()
                .all(|a| !matches!(a, Action::Send(_) | Action::Alert(_))),
            "{actions:?}"
        );
    }
}

#[test]
fn a_working_pane_gets_nothing() {
    let mut m = monitor(5);
    let pane = working();
    for _ in 0..4 {
        let (report, actions) = m.poll(observe(&pane, Work::None, Some(1)));
        assert_eq!(report.state, Some(State::Working));
        assert!(
            actions
                .iter()
                .all(|a| matches!(a, Action::Record(SessionRecord::Progress { .. }))),
            "{actions:?}"
        );
    }
}

#[test]
fn a_nudge_that_contains_the_question_hint_never_comes_back_as_a_question() {
    let hint = "Enter to select · ↑/↓ to navigate · then keep going";
    let config = SessionConfig {
        budget: 5,
        nudge_text: hint.to_string(),
        ..SessionConfig::default()
    };
    // The hint was typed as a nudge while the pane still had its input box.
    let memory = SessionMemory::replay(&[SessionRecord::Sent {
        text: hint.to_string(),
    }]);
    let mut m = TargetMonitor::new("sess", config, memory);
    // A bare shell pane now: no input box to hide the echo behind.
    let echoed = format!("$ {hint}\n$ ");
    let (report, actions) = m.poll(observe(&echoed, Work::Available(2), None));
    assert_eq!(report.state, Some(State::Stalled), "{report:?}");
    // No input box, so not typed into: escalated as unreadable, not as a question.
    assert_eq!(sends(&actions), 0);
    let reasons: Vec<&str> = alerts(&actions).iter().map(|a| a.reason).collect();
    assert_eq!(reasons, ["unreadable"]);
}

#[test]
fn a_restarted_monitor_neither_repages_nor_gets_a_fresh_budget() {
    let mut m = monitor(2);
    let mut journal = Vec::new();
    for pane in [question(), idle(), idle()] {
        let (_, actions) = m.poll(observe(&pane, Work::Available(1), None));
        journal.extend(delivered(actions));
    }
    // The idle polls re-armed the question; show it again so it is escalated, then restart.
    let (_, actions) = m.poll(observe(&question(), Work::Available(1), None));
    journal.extend(delivered(actions));
    let config = SessionConfig {
        budget: 2,
        ..SessionConfig::default()
    };
    let mut restarted = TargetMonitor::new("host:sess", config, SessionMemory::replay(&journal));
    let (_, actions) = restarted.poll(observe(&question(), Work::Available(1), None));
    assert!(
        alerts(&actions).is_empty(),
        "re-paged after a restart: {actions:?}"
    );
    let (report, actions) = restarted.poll(observe(&idle(), Work::Available(1), None));
    assert_eq!(
        words(&report.done),
        ["not nudged, escalated"],
        "the budget was spent before the restart"
    );
    assert_eq!(sends(&actions), 0);
}

#[test]
fn failure_text_is_reported_once_per_signal_and_never_cleared_on_resume() {
    let mut m = monitor(5);
    let base = idle();
    let failing = base.replacen("● ", "● Bash(make test)\n  ⎿  Error: Exit code 1\n● ", 1);
    let (report, _) = m.poll(observe(&failing, Work::Unknown, None));
    assert!(
        words(&report.done)
            .iter()
            .any(|d| d.starts_with("new failure (exit-code)")),
        "{report:?}"
    );
    // The turn resumes, then stops again with the same frozen scrollback: no repeat.
    m.poll(observe(&working(), Work::Unknown, None));
    let (report, _) = m.poll(observe(&failing, Work::Unknown, None));
    assert!(
        !words(&report.done)
            .iter()
            .any(|d| d.starts_with("new failure")),
        "{report:?}"
    );
    // New failure text of the same signal gets through on its own.
    let newer = base.replacen("● ", "● Bash(make test)\n  ⎿  Error: Exit code 2\n● ", 1);
    let (report, _) = m.poll(observe(&newer, Work::Unknown, None));
    assert!(
        words(&report.done)
            .iter()
            .any(|d| d.contains("Exit code 2")),
        "{report:?}"
    );
}

#[test]
fn a_capture_error_is_rendered_once_per_change_and_polling_goes_on() {
    let mut m = monitor(5);
    let failed = Observation {
        capture: Err("can't find session: sess"),
        work: Work::Unknown,
        progress: None,
        witness: None,
        foreground: None,
        cli_version: None,
        pane_id: None,
        pane_pid: None,
    };
    let (report, actions) = m.poll(failed);
    assert_eq!(report.state, None);
    assert_eq!(report.error.as_deref(), Some("can't find session: sess"));
    assert!(report.line("00:00:01").starts_with(
        "MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed"
    ));
    assert!(actions.is_empty());
    let (report, _) = m.poll(failed);
    assert_eq!(report.error, None, "the same error is not rendered twice");
    let (report, _) = m.poll(observe(&working(), Work::Unknown, None));
    assert_eq!(report.state, Some(State::Working));
}

#[test]
fn an_unchanged_pane_is_not_reclassified_every_poll() {
    let mut m = monitor(5);
    let pane = working();
    for _ in 0..10 {
        m.poll(observe(&pane, Work::Unknown, None));
    }
    assert_eq!(
        m.classifications, 2,
        "classified on the first poll and re-decided once after 5"
    );
}

#[derive(Debug, Clone, Copy)]
enum Screen {
    Idle,
    Question,
    OtherQuestion,
    Working,
    Gone,
}

proptest! {
    #[test]
    fn over_random_sequences_the_budget_questions_and_events_hold(
        steps in proptest::collection::vec(
            (prop_oneof![Just(Screen::Idle), Just(Screen::Question), Just(Screen::OtherQuestion), Just(Screen::Working), Just(Screen::Gone)],
             0u64..3, prop_oneof![Just(None), (0u64..4).prop_map(Some)]),
            1..40),
        budget in 1u32..4,
    ) {
        let panes = [idle(), question(), other_question(), working()];
        let mut m = monitor(budget);
        let mut nudges_since_progress = 0u32;
        let mut last_progress: Option<u64> = None;
        let mut last_alert: Option<String> = None;
        let mut last_state: Option<State> = None;
        for (screen, work, progress) in steps {
            let pane = match screen {
                Screen::Idle => Some(&panes[0]),
                Screen::Question => Some(&panes[1]),
                Screen::OtherQuestion => Some(&panes[2]),
                Screen::Working => Some(&panes[3]),
                Screen::Gone => None,
            };
            let observation = Observation {
                capture: pane.map(String::as_str).ok_or("no such session"),
                work: Work::parse(&work.to_string()),
                progress,
                witness: None,
                foreground: None,
                cli_version: None,
                pane_id: None,
                pane_pid: None,
            };
            if let (Some(now), Some(before)) = (progress, last_progress) && now > before {
                nudges_since_progress = 0;
            }
            if progress.is_some() { last_progress = progress.max(last_progress); }
            let (report, actions) = m.poll(observation);
            nudges_since_progress += sends(&actions) as u32;
            prop_assert!(nudges_since_progress <= budget, "nudged {} times without progress", nudges_since_progress);
            if report.state == Some(State::Question) {
                prop_assert_eq!(sends(&actions), 0, "a key was sent to a question");
            }
            // An event repeats only after the pane showed another verdict in between.
            if report.state.is_some() && report.state != last_state {
                last_state = report.state;
                last_alert = None;
            }
            for alert in alerts(&actions) {
                prop_assert_ne!(Some(&alert.message), last_alert.as_ref(), "the same alert twice in a row");
                last_alert = Some(alert.message.clone());
            }
        }
    }

    #[test]
    fn the_same_question_is_escalated_at_most_once_until_another_verdict(repeats in 1usize..12) {
        let mut m = monitor(5);
        let pane = question();
        let total: usize = (0..repeats).map(|_| alerts(&m.poll(observe(&pane, Work::Unknown, None)).1).len()).sum();
        prop_assert_eq!(total, 1);
    }
}

fn with_witness<'a>(pane: &'a str, witness: &'a watchdog::witness::Witness) -> Observation<'a> {
    Observation {
        capture: Ok(pane),
        work: Work::Available(3),
        progress: None,
        witness: Some(witness),
        foreground: None,
        cli_version: None,
        pane_id: None,
        pane_pid: None,
    }
}

#[test]
fn a_busy_agent_behind_an_idle_looking_pane_is_working_and_not_nudged() {
    use watchdog::witness::Witness;
    let mut m = monitor(5);
    let pane = idle();
    let (report, actions) = m.poll(with_witness(&pane, &Witness::Busy));
    assert_eq!(
        (report.state, report.pane_state, report.witness),
        (Some(State::Working), Some(State::Stalled), Some("busy"))
    );
    assert_eq!(sends(&actions), 0);
    assert_eq!(
        words(&report.done),
        ["witnesses disagree: the pane reads STALLED, Claude Code says busy, so WORKING"]
    );
    let (report, _) = m.poll(with_witness(&pane, &Witness::Busy));
    assert!(
        words(&report.done).is_empty(),
        "a lasting disagreement is said once: {report:?}"
    );
    assert_eq!(report.disagreements, 2, "but every poll of it is counted");
    let (report, actions) = m.poll(with_witness(&pane, &Witness::Idle));
    assert_eq!(report.state, Some(State::Stalled));
    assert_eq!(sends(&actions), 1);
}

#[test]
fn a_waiting_agent_before_its_dialog_is_drawn_is_a_pending_question_never_nudged() {
    use watchdog::witness::Witness;
    let mut m = monitor(5);
    let waiting = Witness::Waiting("permission prompt".into());
    let (idle_pane, question_pane) = (idle(), question());
    let (report, actions) = m.poll(with_witness(&idle_pane, &waiting));
    assert_eq!(report.state, Some(State::Question));
    assert!(
        words(&report.done)
            .iter()
            .any(|d| d.starts_with("question pending")),
        "{report:?}"
    );
    assert!(
        actions
            .iter()
            .all(|a| !matches!(a, Action::Send(_) | Action::Alert(_))),
        "{actions:?}"
    );
    // Once the dialog is drawn it is escalated, once, and the two agree.
    let (report, actions) = m.poll(with_witness(&question_pane, &waiting));
    assert_eq!(
        words(&report.done),
        ["escalated to the operator, NOT answered"]
    );
    assert_eq!(alerts(&actions).len(), 1);
    assert_eq!(report.disagreements, 1);
}

#[test]
fn an_alert_that_reached_nobody_is_sent_again_next_poll() {
    let mut m = monitor(5);
    let pane = question();
    let (_, actions) = m.poll(observe(&pane, Work::Unknown, None));
    let alert = alerts(&actions)[0].clone();
    let records = m.alert_failed(&alert);
    assert_eq!(
        records,
        [SessionRecord::Rearmed {
            kind: ledger::session::EscalationKind::Question
        }]
    );
    let (report, actions) = m.poll(observe(&pane, Work::Unknown, None));
    assert_eq!(alerts(&actions).len(), 1, "re-sent: {report:?}");
    // Delivered this time: once is enough.
    let (_, actions) = m.poll(observe(&pane, Work::Unknown, None));
    assert!(alerts(&actions).is_empty());
}

#[test]
fn moving_the_cursor_or_ticking_a_box_is_the_same_question() {
    let mut m = monitor(5);
    let pane = question();
    assert_eq!(
        alerts(&m.poll(observe(&pane, Work::Unknown, None)).1).len(),
        1
    );
    let moved = pane
        .replace(" ❯ 1. Yes", "   1. Yes")
        .replace("   3. No", " ❯ 3. No");
    assert_ne!(moved, pane);
    let (report, actions) = m.poll(observe(&moved, Work::Unknown, None));
    assert_eq!(report.state, Some(State::Question));
    assert!(
        alerts(&actions).is_empty(),
        "re-paged for a cursor move: {report:?}"
    );
}

#[test]
fn the_session_file_cannot_keep_a_still_pane_silent_for_ever() {
    use watchdog::session::STILL_PANE_PATIENCE;
    use watchdog::witness::Witness;
    // `busy` over a pane that never changes: after the patience, the pane decides.
    let mut m = monitor(5);
    let pane = idle();
    let mut states = Vec::new();
    let mut nudged = 0;
    for _ in 0..=STILL_PANE_PATIENCE + 1 {
        let (report, actions) = m.poll(with_witness(&pane, &Witness::Busy));
        states.push(report.state.unwrap());
        nudged += sends(&actions);
    }
    assert_eq!(
        &states[..=STILL_PANE_PATIENCE as usize - 1],
        vec![State::Working; STILL_PANE_PATIENCE as usize]
    );
    assert_eq!(states.last(), Some(&State::Stalled));
    assert!(nudged >= 1);
    // `waiting` with no dialog on screen: never nudged, and escalated once the patience runs out.
    let mut m = monitor(5);
    let waiting = Witness::Waiting("permission prompt".into());
    let mut paged = Vec::new();
    for _ in 0..=STILL_PANE_PATIENCE + 2 {
        let (report, actions) = m.poll(with_witness(&pane, &waiting));
        assert_eq!(report.state, Some(State::Question));
        assert_eq!(sends(&actions), 0);
        paged.extend(alerts(&actions).into_iter().cloned());
    }
    assert_eq!(paged.len(), 1, "{paged:?}");
    assert!(
        paged[0].message.contains("Crunched for"),
        "the relay carries what the screen shows: {}",
        paged[0].message
    );
}

#[test]
fn progress_the_probe_could_not_give_is_shown_as_unknown() {
    let mut m = monitor(5);
    let pane = idle();
    let (report, _) = m.poll(observe(&pane, Work::Unknown, Some(41)));
    assert_eq!(report.progress, Some(41));
    let (report, _) = m.poll(observe(&pane, Work::Unknown, None));
    assert_eq!(report.progress, None);
    assert!(report.line("00:00:00").contains(" · progress=? · "));
}

fn agent_capture(agent: &str, case: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/panes")
        .join(agent)
        .join(case)
        .join("plain.txt");
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

#[test]
fn the_cli_last_recognised_in_a_pane_reads_it_while_no_marker_is_on_screen() {
    let mut m = monitor(5);
    let full = agent_capture("aider", "question-run-command");
    let (report, _) = m.poll(observe(&full, Work::Available(2), None));
    assert_eq!(report.state, Some(State::Question), "{report:?}");
    // Mid-reply, the bottom lines are all reply text: still Aider, still printing.
    let mid_reply: String = full.lines().take(24).collect::<Vec<_>>().join("\n");
    let (report, actions) = m.poll(observe(&mid_reply, Work::Available(2), None));
    assert_eq!(
        (report.state, report.rule),
        (Some(State::Working), Some("no-input-line")),
        "{report:?}"
    );
    assert_eq!(sends(&actions), 0);
}

#[test]
fn activity_inferred_from_a_screen_that_never_moves_is_not_believed_for_ever() {
    use watchdog::session::STILL_PANE_PATIENCE;
    // Aider exited to a shell: its last line is no longer its prompt.
    let exited = format!(
        "{}\nuser@host:~/proj$ ",
        agent_capture("aider", "idle-after-text-answer").trim_end()
    );
    let mut m = monitor(5);
    let mut states = Vec::new();
    let mut nudged = 0;
    for _ in 0..=STILL_PANE_PATIENCE {
        let (report, actions) = m.poll(observe(&exited, Work::Available(2), None));
        states.push(report.state.unwrap());
        nudged += sends(&actions);
    }
    assert_eq!(states.first(), Some(&State::Working));
    assert_eq!(states.last(), Some(&State::Stalled), "{states:?}");
    // Its input line is gone, so the stop is escalated, never typed into.
    assert_eq!(nudged, 0);
}

fn observe_with<'a>(
    pane: &'a str,
    work: Work,
    foreground: Option<&'a Foreground>,
    cli_version: Option<&'a str>,
) -> Observation<'a> {
    Observation {
        foreground,
        cli_version,
        ..observe(pane, work, None)
    }
}

fn shell(command: &str, running_child: Option<bool>) -> Foreground {
    Foreground {
        command: command.to_string(),
        running_child,
        ..Foreground::default()
    }
}

/// Runs the polls and returns (nudges typed, alert reasons, last report).
fn run_polls<'a>(
    m: &mut TargetMonitor,
    polls: impl IntoIterator<Item = Observation<'a>>,
) -> (usize, Vec<&'static str>, watchdog::session::PollReport) {
    let (mut typed, mut reasons, mut last) = (0, Vec::new(), None);
    for observation in polls {
        let (report, actions) = m.poll(observation);
        typed += sends(&actions);
        reasons.extend(alerts(&actions).iter().map(|a| a.reason));
        last = Some(report);
    }
    (typed, reasons, last.expect("at least one poll"))
}

/// One poll of a fresh monitor over `pane` (work left) with `front` in the foreground.
fn poll_once_in_front(
    pane: &str,
    front: &Foreground,
) -> (usize, Vec<&'static str>, watchdog::session::PollReport) {
    let mut m = monitor(5);
    run_polls(
        &mut m,
        [observe_with(pane, Work::Available(1), Some(front), None)],
    )
}

#[test]
fn a_shell_in_the_foreground_means_the_agent_exited_whatever_its_last_frame_shows() {
    // Each of the agent's last frames, with an idle bash under it in the foreground.
    for (frame, state_word) in [
        (idle(), "an idle box"),
        (working(), "a running turn"),
        (question(), "a dialog"),
    ] {
        for (shell_name, work, state) in [
            ("bash", Work::Available(3), State::Stalled),
            ("-zsh", Work::None, State::Blocked),
            ("/bin/sh", Work::Unknown, State::Stalled),
        ] {
            let fg = shell(shell_name, Some(false));
            let mut m = monitor(5);
            let polls = (0..4).map(|_| observe_with(&frame, work, Some(&fg), None));
            let (typed, reasons, report) = run_polls(&mut m, polls);
            let what = format!("{state_word} over {shell_name}");
            assert_eq!(typed, 0, "{what}: typed into");
            assert_eq!(reasons, ["agent_exited"], "{what}");
            assert_eq!(report.state, Some(state), "{what}");
            assert_eq!(
                report.refusal,
                Some(watchdog::session::Refusal::AgentExited)
            );
            assert!(!report.typing_safe);
            assert!(
                words(&report.done)
                    .iter()
                    .any(|d| d.contains("the agent exited")),
                "{what}: {report:?}"
            );
            assert_eq!(m.memory().nudges_used, 0, "{what}: budget spent");
        }
    }
}

#[test]
fn a_wrapper_shell_with_the_agent_under_it_is_the_agent_running() {
    // `bash -c claude`: bash is the foreground, the agent is its child.
    let fg = shell("bash", Some(true));
    let mut m = monitor(5);
    let pane = idle();
    let (typed, reasons, report) = run_polls(
        &mut m,
        [observe_with(&pane, Work::Available(1), Some(&fg), None)],
    );
    assert_eq!((typed, reasons.len()), (1, 0));
    assert!(report.typing_safe);
    // A remote shell whose children were not read is not assumed to be a wrapper.
    let unknown = shell("bash", None);
    let (typed, reasons, _) = poll_once_in_front(&pane, &unknown);
    assert_eq!((typed, reasons), (0, vec!["agent_exited"]));
    // Another foreground program (the agent itself, `node`) is no shell.
    let node = shell("node", Some(true));
    let mut m = monitor(5);
    let (typed, _, _) = run_polls(
        &mut m,
        [observe_with(&pane, Work::Available(1), Some(&node), None)],
    );
    assert_eq!(typed, 1);
}

#[test]
fn a_screen_with_no_input_box_is_escalated_once_and_never_typed_into() {
    let less = "NAME\n       less - opposite of more\n\nSYNOPSIS\n       less -?\n:".to_string();
    let dialog = "╭────────────────╮\n│ Something new  │\n│ [Continue]     │\n╰────────────────╯\n  Esc to cancel".to_string();
    for pane in [
        less,
        dialog,
        "$ some-other-agent\n? Pick a model\n  gpt\n".to_string(),
    ] {
        let mut m = monitor(2);
        let polls: Vec<String> = vec![pane.clone(); 8];
        let (typed, reasons, report) = run_polls(
            &mut m,
            polls.iter().map(|p| observe(p, Work::Available(4), None)),
        );
        assert_eq!(typed, 0, "typed into {pane:?}");
        assert_eq!(reasons, ["unreadable"], "{pane:?}");
        assert_eq!(report.state, Some(State::Stalled));
        assert_eq!(report.unrecognised, 8);
        assert!(
            words(&report.done)
                .iter()
                .any(|d| d == "not nudged (no input box recognised)")
        );
        assert_eq!(m.memory().nudges_used, 0);
    }
}

#[test]
fn the_escalation_carries_the_reason_and_the_bottom_lines_verbatim() {
    let pane = "line one\nSave to file: tep of your plan.\n:";
    let mut m = monitor(5);
    let (_, actions) = m.poll(observe(pane, Work::Available(2), None));
    let alert = alerts(&actions)[0].clone();
    assert_eq!(alert.state, State::Stalled);
    assert!(
        alert.message.contains("no input box recognised"),
        "{}",
        alert.message
    );
    assert!(alert.message.contains("NOT typed into"));
    assert!(
        alert
            .message
            .ends_with("line one\nSave to file: tep of your plan.\n:")
    );
}

#[test]
fn the_box_coming_back_rearms_and_a_new_unreadable_screen_is_said_again_as_a_ui_change() {
    let idle = idle();
    let unknown = "A new dialog this profile has never seen\n  Esc to cancel".to_string();
    let mut m = monitor(5);
    let polls = [
        observe_with(&idle, Work::Available(1), None, Some("2.1.332")),
        observe_with(&unknown, Work::Available(1), None, Some("2.1.332")),
        observe_with(&unknown, Work::Available(1), None, Some("2.1.332")),
    ];
    let (typed, reasons, report) = run_polls(&mut m, polls);
    assert_eq!((typed, reasons.clone()), (1, vec!["unreadable"]));
    let (_, actions) = m.poll(observe_with(&unknown, Work::Available(1), None, None));
    assert!(alerts(&actions).is_empty());
    assert!(
        !words(&report.done)
            .iter()
            .any(|d| d.contains("likely UI change")),
        "said once, on the first unreadable poll: {report:?}"
    );
    // The first unreadable poll said it, naming the profile and the version.
    let mut m = monitor(5);
    m.poll(observe(&idle, Work::Available(1), None));
    let (report, actions) = m.poll(observe_with(
        &unknown,
        Work::Available(1),
        None,
        Some("2.1.332"),
    ));
    let said: Vec<String> = words(&report.done)
        .into_iter()
        .filter(|d| d.contains("likely UI change"))
        .collect();
    assert_eq!(said.len(), 1, "{report:?}");
    assert!(
        said[0].contains("claude profile") && said[0].contains("2.1.332"),
        "{said:?}"
    );
    assert!(alerts(&actions)[0].message.contains("Likely UI change"));
    // The box comes back: typed into again; a later unreadable screen is escalated again.
    let (typed, reasons, _) = run_polls(
        &mut m,
        [
            observe(&idle, Work::Available(1), None),
            observe(&unknown, Work::Available(1), None),
        ],
    );
    assert_eq!((typed, reasons), (1, vec!["unreadable"]));
}

#[test]
fn a_codex_stop_with_a_background_terminal_is_nudged_to_check_it() {
    let pane = agent_capture("codex", "idle-background-terminal");
    let mut m = monitor(5);
    let (report, actions) = m.poll(observe(&pane, Work::Available(1), None));
    assert_eq!(report.state, Some(State::Stalled), "{report:?}");
    let sent: Vec<&String> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(text) => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(sent.len(), 1);
    assert!(sent[0].starts_with(watchdog::session::DEFAULT_NUDGE_TEXT));
    assert!(sent[0].contains("check it with /ps"), "{sent:?}");
    // Claude Code's background shells stay WORKING: never nudged.
    let (report, actions) = m.poll(observe(
        &capture("working-bash-sleep"),
        Work::Available(1),
        None,
    ));
    assert_eq!(report.state, Some(State::Working));
    assert_eq!(sends(&actions), 0);
}

#[test]
fn a_renamed_shell_is_known_by_its_process_and_a_relay_is_never_typed_through() {
    let pane = idle();
    // `exec -a agentsh bash`: tmux says `agentsh`, /proc says `bash`.
    let renamed = Foreground {
        command: "agentsh".to_string(),
        process: Some("bash".to_string()),
        running_child: Some(false),
        ..Foreground::default()
    };
    let (typed, reasons, _) = poll_once_in_front(&pane, &renamed);
    assert_eq!((typed, reasons), (0, vec!["agent_exited"]));
    // ssh or a nested tmux in front: the screen behind it cannot be checked.
    for relay in ["ssh", "tmux", "mosh-client"] {
        let fg = shell(relay, Some(true));
        let (typed, reasons, report) = poll_once_in_front(&pane, &fg);
        assert_eq!((typed, reasons), (0, vec!["relay"]), "{relay}");
        assert!(
            words(&report.done)[0].contains(&format!("the pane runs {relay}")),
            "{report:?}"
        );
    }
}

#[test]
fn a_screen_flipping_between_two_refusals_is_escalated_once() {
    let blank = "\n".to_string();
    let reading = shell("bash", Some(true));
    let idle_bash = shell("bash", Some(false));
    let mut m = monitor(5);
    let polls = (0..8).map(|i| {
        let fg = if i % 2 == 0 { &reading } else { &idle_bash };
        observe_with(&blank, Work::Available(1), Some(fg), None)
    });
    let (typed, reasons, _) = run_polls(&mut m, polls);
    assert_eq!(typed, 0);
    assert_eq!(reasons.len(), 1, "{reasons:?}");
}

#[test]
fn another_program_in_front_of_a_recognised_pane_is_no_ui_change() {
    let idle = idle();
    let agent = shell("claude", Some(true));
    let vim = shell("vim", Some(false));
    let unknown = "~\n~\n\"/etc/hostname\" [readonly] 1L, 5B".to_string();
    let mut m = monitor(5);
    m.poll(observe_with(&idle, Work::Available(1), Some(&agent), None));
    let (report, _) = m.poll(observe_with(&unknown, Work::Available(1), Some(&vim), None));
    assert!(
        !words(&report.done).iter().any(|d| d.contains("UI change")),
        "{report:?}"
    );
    // The same program in front, drawing what its profile cannot read: that is one.
    let mut m = monitor(5);
    m.poll(observe_with(&idle, Work::Available(1), Some(&agent), None));
    let (report, _) = m.poll(observe_with(
        &unknown,
        Work::Available(1),
        Some(&agent),
        None,
    ));
    assert!(
        words(&report.done)
            .iter()
            .any(|d| d.contains("likely UI change")),
        "{report:?}"
    );
}

#[test]
fn a_dead_pane_or_one_in_copy_mode_is_never_typed_into() {
    let pane = idle();
    let dead = Foreground {
        command: "python3".to_string(),
        dead: true,
        ..Foreground::default()
    };
    let (typed, reasons, report) = poll_once_in_front(&pane, &dead);
    assert_eq!((typed, reasons), (0, vec!["agent_exited"]));
    assert!(
        words(&report.done)[0].contains("its pane is dead"),
        "{report:?}"
    );
    // Copy mode takes the keys: the budget would burn on nudges that never arrive.
    let copying = Foreground {
        command: "claude".to_string(),
        running_child: Some(true),
        in_mode: true,
        ..Foreground::default()
    };
    let mut m = monitor(5);
    let (typed, reasons, _) = run_polls(
        &mut m,
        (0..3).map(|_| observe_with(&pane, Work::Available(1), Some(&copying), None)),
    );
    assert_eq!((typed, reasons), (0, vec!["pane_in_mode"]));
    assert_eq!(m.memory().nudges_used, 0);
}

#[test]
fn a_crash_while_an_alert_runs_leaves_it_due_and_a_delivered_one_is_never_repeated() {
    let question = question();
    for delivered_before_the_crash in [false, true] {
        let mut m = monitor(5);
        let (_, actions) = m.poll(observe(&question, Work::Available(1), None));
        // What the journal holds when the process dies: the plain records,
        // and an alert's latch only if that alert got through.
        let journal: Vec<SessionRecord> = if delivered_before_the_crash {
            delivered(actions)
        } else {
            actions
                .into_iter()
                .filter_map(|a| match a {
                    Action::Record(record) => Some(record),
                    _ => None,
                })
                .collect()
        };
        let mut restarted = TargetMonitor::new(
            "host:sess",
            SessionConfig::default(),
            SessionMemory::replay(&journal),
        );
        let (_, actions) = restarted.poll(observe(&question, Work::Available(1), None));
        let sent_again = alerts(&actions).len();
        assert_eq!(
            sent_again,
            usize::from(!delivered_before_the_crash),
            "delivered before the crash: {delivered_before_the_crash}"
        );
    }
}

#[test]
fn a_pane_that_cannot_be_read_for_three_polls_is_said_once_and_rearmed_by_a_capture() {
    let failed = |m: &mut TargetMonitor| {
        let (_, actions) = m.poll(Observation {
            capture: Err("no tmux session named `sess`"),
            ..observe("", Work::Unknown, None)
        });
        alerts(&actions)
            .iter()
            .map(|a| a.reason)
            .collect::<Vec<_>>()
    };
    let mut m = monitor(5);
    let said: Vec<Vec<&str>> = (0..6).map(|_| failed(&mut m)).collect();
    let expected: Vec<Vec<&str>> = vec![
        vec![],
        vec![],
        vec!["capture_failed"],
        vec![],
        vec![],
        vec![],
    ];
    assert_eq!(said, expected);
    // A capture that works re-arms it; three more failures say it again.
    m.poll(observe(&idle(), Work::Available(1), None));
    let again: Vec<&str> = (0..3).flat_map(|_| failed(&mut m)).collect();
    assert_eq!(again, ["capture_failed"]);
}

/// One run of a monitor over `screens` (a pane each poll, work left, no
/// progress), crashing after the `crashes`' action counts and restarting
/// from what was journaled, with alerts that fail where `failing` says (per
/// alert, in order). Returns (question alerts delivered, nudges typed).
fn run_with_crashes(
    screens: &[&str],
    crashes: &[usize],
    failing: &[bool],
    budget: u32,
) -> (usize, usize) {
    let config = SessionConfig {
        budget,
        ..SessionConfig::default()
    };
    let mut journal: Vec<SessionRecord> = Vec::new();
    let mut m = TargetMonitor::new("t", config.clone(), SessionMemory::default());
    let (mut delivered, mut typed, mut executed, mut alerts_seen) = (0, 0, 0usize, 0usize);
    for pane in screens {
        let (_, actions) = m.poll(observe(pane, Work::Available(1), None));
        for action in actions {
            if crashes.contains(&executed) {
                // The process dies here: everything not journaled is gone.
                m = TargetMonitor::new("t", config.clone(), SessionMemory::replay(&journal));
                executed += 1;
                break;
            }
            executed += 1;
            match action {
                Action::Record(record) => journal.push(record),
                Action::Send(_) => typed += 1,
                Action::Alert(alert) => {
                    let fails = failing.get(alerts_seen).copied().unwrap_or(false);
                    alerts_seen += 1;
                    if fails {
                        journal.extend(m.alert_failed(&alert));
                    } else {
                        delivered += usize::from(alert.reason == "question");
                        journal.push(alert.record);
                    }
                }
            }
        }
    }
    (delivered, typed)
}

proptest! {
    /// Crash points anywhere between journal writes and actions, alerts
    /// that fail: a question shown throughout is delivered exactly once (never
    /// re-paged once delivered, never skipped while undelivered), and a stall
    /// never gets more nudges than its budget.
    #[test]
    fn a_crash_at_any_point_repeats_nothing_and_loses_nothing(
        crashes in proptest::collection::vec(0usize..40, 0..6),
        failing in proptest::collection::vec(any::<bool>(), 0..6),
        budget in 1u32..4,
    ) {
        let question = question();
        // Enough polls after the last crash and failure for a delivery.
        let screens: Vec<&str> = (0..30).map(|_| question.as_str()).collect();
        let (delivered, typed) = run_with_crashes(&screens, &crashes, &failing, budget);
        prop_assert_eq!(delivered, 1);
        prop_assert_eq!(typed, 0);
        let idle = idle();
        let screens: Vec<&str> = (0..30).map(|_| idle.as_str()).collect();
        let (_, typed) = run_with_crashes(&screens, &crashes, &failing, budget);
        prop_assert!(typed <= budget as usize, "{typed} nudges for a budget of {budget}");
    }
}
