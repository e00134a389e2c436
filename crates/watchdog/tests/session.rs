//! The session monitor's state machine as tables, in the style of the lead
//! and worker monitors' tests: a screen per poll over a fake machine (real
//! agent captures from testdata/ as the panes, numbers as the probes) and a
//! fake clock, and the exact lines the loop prints and does, in order.

mod support;

use bmb_watchdog as watchdog;
use classify::{State, Work};
use ledger::session::{EscalationKind, SessionMemory, SessionRecord};
use support::{
    Delivery, Harness, Screen, agent_capture, capture, check, front, idle, other_question,
    question, working,
};
use watchdog::session::witness::Witness;
use watchdog::session::{
    Action, DEFAULT_NUDGE_TEXT, Done, Foreground, Refusal, STILL_PANE_PATIENCE, SessionConfig,
};

/// The default nudge, typed.
const NUDGE: &str = "S Please continue with the next step of your plan.";
/// A question relayed to the operator.
const ASKED: &str = "A QUESTION question: QUESTION on host:sess: the agent is waiting for a human. It was NOT answered.";

#[test]
fn a_stalled_pane_is_nudged_budget_times_then_escalated_once() {
    let mut h = Harness::new(3);
    let stalled = Screen::pane(&idle()).work(Work::Available(4)).progress(10);
    h.settle(&stalled);
    check(
        &mut h,
        &[
            (
                stalled.clone(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=4 · progress=10 · nudges 1/3 · nudged (1/3) · 00:00:30",
                ],
            ),
            (
                stalled.clone(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=4 · progress=10 · nudges 2/3 · nudged (2/3) · 00:01:00",
                ],
            ),
            (
                stalled.clone(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=4 · progress=10 · nudges 3/3 · nudged (3/3) · 00:01:30",
                ],
            ),
            (
                stalled.clone(),
                &[
                    "A STALLED escalate_to_human: escalate_to_human: host:sess is STALLED and 3 nudges produced no progress (progress=10, work=4). Nudging has stopped; this needs a human.",
                    "L MONITOR · host:sess · STALLED · work=4 · progress=10 · nudges 3/3 · not nudged, escalated · 00:02:00",
                ],
            ),
            (
                stalled.clone(),
                &["L MONITOR · host:sess · STALLED · work=4 · progress=10 · nudges 3/3 · 00:02:30"],
            ),
            (
                stalled,
                &["L MONITOR · host:sess · STALLED · work=4 · progress=10 · nudges 3/3 · 00:03:00"],
            ),
        ],
    );
}

#[test]
fn the_same_stop_screen_in_another_pane_has_not_held_still() {
    // A restarted tmux server, or a new window: the very screen the last stop
    // showed, now in another pane (or the same id with another first
    // process), is a new stop that waits one interval; in the pane it was
    // seen in, across a restart too, it held still.
    let waits = "not nudged yet (a new watcher waits for the screen to hold still one interval)";
    let stalled = |id: &str, pid: u32| {
        Screen::pane(&idle())
            .work(Work::Available(4))
            .activity(100)
            .in_pane(id, pid)
    };
    let mut h = Harness::new(5);
    h.settle(&stalled("%0", 10));
    assert_eq!(h.poll(&stalled("%0", 10))[0], NUDGE);
    h.restart();
    assert_eq!(
        h.poll(&stalled("%0", 10))[0],
        NUDGE,
        "the same pane held still across a restart"
    );
    for (id, pid) in [("%1", 20), ("%1", 21)] {
        h.restart();
        let lines = h.poll(&stalled(id, pid));
        assert!(
            matches!(lines.as_slice(), [line] if line.contains(waits)),
            "{id} (pid {pid}) after a restart: {lines:?}"
        );
        assert_eq!(h.poll(&stalled(id, pid))[0], NUDGE);
    }
    // And while the monitor runs: the pane changes under it.
    let lines = h.poll(&stalled("%2", 30));
    assert!(
        matches!(lines.as_slice(), [line] if line.contains("not nudged yet")),
        "a new pane mid-run: {lines:?}"
    );
    assert_eq!(h.poll(&stalled("%2", 30))[0], NUDGE);
}

#[test]
fn the_nudge_is_recorded_in_the_echo_ledger_before_it_is_sent() {
    let mut h = Harness::new(5);
    h.settle(&Screen::pane(&idle()));
    check(
        &mut h,
        &[(
            Screen::pane(&idle()),
            &[
                NUDGE,
                "L MONITOR · host:sess · STALLED · work=? · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
            ],
        )],
    );
    let sent_at = h
        .actions
        .iter()
        .position(|a| matches!(a, Action::Send(_)))
        .expect("a nudge");
    let recorded_at = h
        .actions
        .iter()
        .position(|a| matches!(a, Action::Record(SessionRecord::Sent { .. })))
        .expect("the nudge is recorded");
    assert!(recorded_at < sent_at, "{:?}", h.actions);
}

#[test]
fn progress_advancing_resets_the_budget_and_says_so() {
    let mut h = Harness::new(2);
    let before = Screen::pane(&idle()).work(Work::Available(7)).progress(41);
    h.settle(&before);
    check(
        &mut h,
        &[
            (
                before.clone(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=7 · progress=41 · nudges 1/2 · nudged (1/2) · 00:00:30",
                ],
            ),
            (
                before,
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=7 · progress=41 · nudges 2/2 · nudged (2/2) · 00:01:00",
                ],
            ),
            (
                Screen::pane(&idle()).work(Work::Available(6)).progress(42),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=6 · progress=42 · nudges 1/2 · nudge budget reset (progress 41 → 42) · nudged (1/2) · 00:01:30",
                ],
            ),
        ],
    );
    assert_eq!(
        h.last().done,
        [
            Done::BudgetReset { from: 41, to: 42 },
            Done::Nudged { used: 1, budget: 2 }
        ]
    );
}

#[test]
fn a_question_is_escalated_once_verbatim_and_never_answered() {
    let mut h = Harness::new(5);
    let asked = Screen::pane(&question()).work(Work::Available(3));
    check(
        &mut h,
        &[
            (
                asked.clone(),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:00:30",
                ],
            ),
            (
                asked.clone(),
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:01:00"],
            ),
            (
                asked.clone(),
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:01:30"],
            ),
            (
                asked.clone(),
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:02:00"],
            ),
            (
                asked.clone(),
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:02:30"],
            ),
            (
                asked,
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:03:00"],
            ),
            // A different question is a new escalation.
            (
                Screen::pane(&other_question()).work(Work::Available(3)),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:03:30",
                ],
            ),
        ],
    );
    let relayed = &h.alerts[0].message;
    assert!(
        relayed.contains("Do you want to proceed?") && relayed.contains("1. Yes"),
        "{relayed}"
    );
}

#[test]
fn a_question_is_rearmed_once_the_pane_shows_another_verdict() {
    let mut h = Harness::new(5);
    let (asked, busy) = (Screen::pane(&question()), Screen::pane(&working()));
    check(
        &mut h,
        &[
            (
                asked.clone(),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:00:30",
                ],
            ),
            (
                asked.clone(),
                &["L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · 00:01:00"],
            ),
            (
                busy,
                &["L MONITOR · host:sess · WORKING · work=? · progress=? · nudges 0/5 · 00:01:30"],
            ),
            (
                asked,
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:02:00",
                ],
            ),
        ],
    );
}

#[test]
fn a_blocked_pane_is_escalated_once_with_the_work_number_and_never_nudged() {
    let mut h = Harness::new(5);
    let done = Screen::pane(&idle()).work(Work::None);
    check(
        &mut h,
        &[
            (
                done.clone(),
                &[
                    "A BLOCKED blocked: BLOCKED on host:sess: the agent stopped and the work probe says nothing is left (work=0). It was not nudged. Last transition: ● The project has two files: README.md describes it and app.py defines greet(name), which returns a greeting. Running",
                    "L MONITOR · host:sess · BLOCKED · work=0 · progress=? · nudges 0/5 · not nudged, escalated · 00:00:30",
                ],
            ),
            (
                done.clone(),
                &["L MONITOR · host:sess · BLOCKED · work=0 · progress=? · nudges 0/5 · 00:01:00"],
            ),
            (
                done.clone(),
                &["L MONITOR · host:sess · BLOCKED · work=0 · progress=? · nudges 0/5 · 00:01:30"],
            ),
            (
                done,
                &["L MONITOR · host:sess · BLOCKED · work=0 · progress=? · nudges 0/5 · 00:02:00"],
            ),
        ],
    );
}

#[test]
fn a_working_pane_gets_nothing() {
    let mut h = Harness::new(5);
    let busy = Screen::pane(&working()).work(Work::None).progress(1);
    check(
        &mut h,
        &[
            (
                busy.clone(),
                &["L MONITOR · host:sess · WORKING · work=0 · progress=1 · nudges 0/5 · 00:00:30"],
            ),
            (
                busy.clone(),
                &["L MONITOR · host:sess · WORKING · work=0 · progress=1 · nudges 0/5 · 00:01:00"],
            ),
            (
                busy.clone(),
                &["L MONITOR · host:sess · WORKING · work=0 · progress=1 · nudges 0/5 · 00:01:30"],
            ),
            (
                busy,
                &["L MONITOR · host:sess · WORKING · work=0 · progress=1 · nudges 0/5 · 00:02:00"],
            ),
        ],
    );
    // Nothing but the progress probe's first reading was recorded.
    assert_eq!(h.journal, [SessionRecord::Progress { value: 1 }]);
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
    let mut h = Harness::resumed(config, memory);
    // A bare shell pane now: no input box to hide the echo behind. Not typed
    // into: escalated as unreadable, not as a question.
    let echoed = format!("$ {hint}\n$ ");
    check(
        &mut h,
        &[(
            Screen::pane(&echoed).work(Work::Available(2)),
            &[
                "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=2. This needs a human.",
                "L MONITOR · host:sess · STALLED · work=2 · progress=? · nudges 0/5 · not nudged (no input box recognised), escalated · 00:00:30",
            ],
        )],
    );
}

#[test]
fn a_restarted_monitor_neither_repages_nor_gets_a_fresh_budget() {
    let mut h = Harness::new(2);
    let (asked, stopped) = (
        Screen::pane(&question()).work(Work::Available(1)),
        Screen::pane(&idle()).work(Work::Available(1)),
    );
    // The idle polls re-arm the question; shown again, it is escalated.
    check(
        &mut h,
        &[
            (
                asked.clone(),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=1 · progress=? · nudges 0/2 · escalated to the operator, NOT answered · 00:00:30",
                ],
            ),
            (
                stopped.clone(),
                &[
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/2 · not nudged yet (the screen changed since the last poll) · 00:01:00",
                ],
            ),
            (
                stopped.clone(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/2 · nudged (1/2) · 00:01:30",
                ],
            ),
            (
                stopped.clone(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 2/2 · nudged (2/2) · 00:02:00",
                ],
            ),
            (
                asked.clone(),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=1 · progress=? · nudges 2/2 · escalated to the operator, NOT answered · 00:02:30",
                ],
            ),
        ],
    );
    h.restart();
    // Not re-paged after the restart, and the budget was spent before it.
    check(
        &mut h,
        &[
            (
                asked,
                &["L MONITOR · host:sess · QUESTION · work=1 · progress=? · nudges 2/2 · 00:03:00"],
            ),
            (
                stopped,
                &[
                    "A STALLED escalate_to_human: escalate_to_human: host:sess is STALLED and 2 nudges produced no progress (progress=?, work=1). Nudging has stopped; this needs a human.",
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 2/2 · not nudged, escalated · 00:03:30",
                ],
            ),
        ],
    );
}

#[test]
fn failure_text_is_reported_once_per_signal_and_never_cleared_on_resume() {
    let mut h = Harness::new(5);
    let base = idle();
    let failing = base.replacen("● ", "● Bash(make test)\n  ⎿  Error: Exit code 1\n● ", 1);
    let newer = base.replacen("● ", "● Bash(make test)\n  ⎿  Error: Exit code 2\n● ", 1);
    // Each screen is new, so none is typed into (a stop waits to hold still one interval).
    check(
        &mut h,
        &[
            (
                Screen::pane(&failing),
                &[
                    "A STALLED failure: new failure on host:sess (exit-code): ⎿  Error: Exit code 1",
                    "L MONITOR · host:sess · STALLED · work=? · progress=? · nudges 0/5 · not nudged yet (a new watcher waits for the screen to hold still one interval) · new failure (exit-code): ⎿  Error: Exit code 1 · 00:00:30",
                ],
            ),
            // The turn resumes, then stops again with the same frozen
            // scrollback: no repeat.
            (
                Screen::pane(&working()),
                &["L MONITOR · host:sess · WORKING · work=? · progress=? · nudges 0/5 · 00:01:00"],
            ),
            (
                Screen::pane(&failing),
                &[
                    "L MONITOR · host:sess · STALLED · work=? · progress=? · nudges 0/5 · not nudged yet (the screen changed since the last poll) · 00:01:30",
                ],
            ),
            // New failure text of the same signal gets through on its own
            // (and the stop, its box unchanged, held still: nudged).
            (
                Screen::pane(&newer),
                &[
                    NUDGE,
                    "A STALLED failure: new failure on host:sess (exit-code): ⎿  Error: Exit code 2",
                    "L MONITOR · host:sess · STALLED · work=? · progress=? · nudges 1/5 · nudged (1/5) · new failure (exit-code): ⎿  Error: Exit code 2 · 00:02:00",
                ],
            ),
        ],
    );
}

#[test]
fn a_capture_error_is_rendered_once_per_change_and_polling_goes_on() {
    let mut h = Harness::new(5);
    let failed = Screen::failed("no tmux session named `sess` on host");
    check(
        &mut h,
        &[(
            failed.clone(),
            &[
                "E no tmux session named `sess` on host",
                "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:00:30",
            ],
        )],
    );
    assert!(h.actions.is_empty(), "{:?}", h.actions);
    // The same error is not rendered twice.
    check(
        &mut h,
        &[
            (
                failed,
                &[
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:01:00",
                ],
            ),
            (
                Screen::pane(&working()),
                &["L MONITOR · host:sess · WORKING · work=? · progress=? · nudges 0/5 · 00:01:30"],
            ),
        ],
    );
}

#[test]
fn an_unchanged_pane_is_not_reclassified_every_poll() {
    let mut h = Harness::new(5);
    let busy = Screen::pane(&working());
    for _ in 0..10 {
        h.poll(&busy);
    }
    assert_eq!(
        h.monitor.classifications, 2,
        "classified on the first poll and re-decided once after 5"
    );
}

#[test]
fn a_busy_agent_behind_an_idle_looking_pane_is_working_and_not_nudged() {
    let mut h = Harness::new(5);
    let pane = Screen::pane(&idle()).work(Work::Available(3));
    check(
        &mut h,
        &[(
            pane.clone().witness(Witness::Busy),
            &[
                "L MONITOR · host:sess · WORKING · work=3 · progress=? · nudges 0/5 · witnesses disagree: the pane reads STALLED, Claude Code says busy, so WORKING · 00:00:30",
            ],
        )],
    );
    let report = h.last();
    assert_eq!(
        (report.state, report.pane_state, report.witness),
        (Some(State::Working), Some(State::Stalled), Some("busy"))
    );
    // A lasting disagreement is said once, but every poll of it is counted.
    check(
        &mut h,
        &[(
            pane.clone().witness(Witness::Busy),
            &["L MONITOR · host:sess · WORKING · work=3 · progress=? · nudges 0/5 · 00:01:00"],
        )],
    );
    assert_eq!(h.last().disagreements, 2);
    check(
        &mut h,
        &[(
            pane.witness(Witness::Idle),
            &[
                NUDGE,
                "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:01:30",
            ],
        )],
    );
}

#[test]
fn a_waiting_agent_before_its_dialog_is_drawn_is_a_pending_question_never_nudged() {
    let mut h = Harness::new(5);
    let waiting = Witness::Waiting("permission prompt".into());
    check(
        &mut h,
        &[
            (
                Screen::pane(&idle())
                    .work(Work::Available(3))
                    .witness(waiting.clone()),
                &[
                    "L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · witnesses disagree: the pane reads STALLED, Claude Code says waiting, so QUESTION · question pending (the dialog is not on screen yet), not nudged · 00:00:30",
                ],
            ),
            // Once the dialog is drawn it is escalated, once, and the two agree.
            (
                Screen::pane(&question())
                    .work(Work::Available(3))
                    .witness(waiting),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:01:00",
                ],
            ),
        ],
    );
    assert_eq!(h.last().disagreements, 1);
}

#[test]
fn an_alert_that_reached_nobody_is_sent_again_next_poll() {
    let mut h = Harness::new(5);
    let asked = Screen::pane(&question());
    h.delivery = Delivery::Fails;
    check(
        &mut h,
        &[(
            asked.clone(),
            &[
                "A QUESTION question: QUESTION on host:sess: the agent is waiting for a human. It was NOT answered. (not delivered)",
                "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:00:30",
            ],
        )],
    );
    // What the failed delivery undid is journaled: the question is due again.
    assert_eq!(
        h.journal,
        [SessionRecord::Rearmed {
            kind: EscalationKind::Question
        }]
    );
    // Delivered this time: once is enough.
    h.delivery = Delivery::Delivered;
    check(
        &mut h,
        &[
            (
                asked.clone(),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:01:00",
                ],
            ),
            (
                asked,
                &["L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · 00:01:30"],
            ),
        ],
    );
}

#[test]
fn moving_the_cursor_or_ticking_a_box_is_the_same_question() {
    let mut h = Harness::new(5);
    let pane = question();
    let moved = pane
        .replace(" ❯ 1. Yes", "   1. Yes")
        .replace("   3. No", " ❯ 3. No");
    assert_ne!(moved, pane);
    check(
        &mut h,
        &[
            (
                Screen::pane(&pane),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:00:30",
                ],
            ),
            (
                Screen::pane(&moved),
                &["L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · 00:01:00"],
            ),
        ],
    );
}

#[test]
fn the_session_file_cannot_keep_a_still_pane_silent_for_ever() {
    assert_eq!(
        STILL_PANE_PATIENCE, 3,
        "the tables below are written for it"
    );
    // `busy` over a pane that never changes: after the patience, the pane decides.
    let mut h = Harness::new(5);
    let busy = Screen::pane(&idle()).witness(Witness::Busy);
    check(
        &mut h,
        &[
            (
                busy.clone(),
                &[
                    "L MONITOR · host:sess · WORKING · work=? · progress=? · nudges 0/5 · witnesses disagree: the pane reads STALLED, Claude Code says busy, so WORKING · 00:00:30",
                ],
            ),
            (
                busy.clone(),
                &["L MONITOR · host:sess · WORKING · work=? · progress=? · nudges 0/5 · 00:01:00"],
            ),
            (
                busy.clone(),
                &["L MONITOR · host:sess · WORKING · work=? · progress=? · nudges 0/5 · 00:01:30"],
            ),
            (
                busy.clone(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=? · progress=? · nudges 1/5 · Claude Code still says busy but the pane has not changed in 3 polls: the pane decides · nudged (1/5) · 00:02:00",
                ],
            ),
            (
                busy,
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=? · progress=? · nudges 2/5 · nudged (2/5) · 00:02:30",
                ],
            ),
        ],
    );
    // `waiting` with no dialog on screen: never nudged, and escalated once
    // the patience runs out, relaying what the screen shows.
    let mut h = Harness::new(5);
    let waiting = Screen::pane(&idle()).witness(Witness::Waiting("permission prompt".into()));
    check(
        &mut h,
        &[
            (
                waiting.clone(),
                &[
                    "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · witnesses disagree: the pane reads STALLED, Claude Code says waiting, so QUESTION · question pending (the dialog is not on screen yet), not nudged · 00:00:30",
                ],
            ),
            (
                waiting.clone(),
                &[
                    "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · question pending (the dialog is not on screen yet), not nudged · 00:01:00",
                ],
            ),
            (
                waiting.clone(),
                &[
                    "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · question pending (the dialog is not on screen yet), not nudged · 00:01:30",
                ],
            ),
            (
                waiting.clone(),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:02:00",
                ],
            ),
            (
                waiting.clone(),
                &["L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · 00:02:30"],
            ),
            (
                waiting,
                &["L MONITOR · host:sess · QUESTION · work=? · progress=? · nudges 0/5 · 00:03:00"],
            ),
        ],
    );
    assert!(
        h.alerts[0].message.contains("Crunched for"),
        "the relay carries what the screen shows: {}",
        h.alerts[0].message
    );
}

/// A dialog taller than the pane (its key line cut off below it) shows no
/// question and no input box; Claude Code's session file says `waiting`. It
/// stays a QUESTION for as long as that holds, is escalated once at once with
/// the screen's bottom lines, and is never nudged; with a box on screen the
/// patience above still applies.
#[test]
fn a_waiting_agent_whose_dialog_is_taller_than_the_pane_is_a_question_at_once() {
    let mut h = Harness::new(5);
    let cut_off = Screen::pane(&capture(
        "question-dialog-taller-than-pane-v2.1.332-auto-60x15",
    ))
    .work(Work::Available(3))
    .witness(Witness::Waiting("dialog open".into()));
    check(
        &mut h,
        &[
            (
                cut_off.clone(),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · witnesses disagree: the pane reads STALLED, Claude Code says waiting, so QUESTION · escalated to the operator, NOT answered · 00:00:30",
                ],
            ),
            (
                cut_off.clone(),
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:01:00"],
            ),
            (
                cut_off.clone(),
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:01:30"],
            ),
            (
                cut_off.clone(),
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:02:00"],
            ),
            (
                cut_off,
                &["L MONITOR · host:sess · QUESTION · work=3 · progress=? · nudges 0/5 · 00:02:30"],
            ),
        ],
    );
    assert_eq!(h.alerts.len(), 1, "escalated once");
    assert!(
        h.alerts[0]
            .message
            .contains("Auto mode can't check actions in this session"),
        "the relay carries what the screen shows: {}",
        h.alerts[0].message
    );
    assert_eq!(h.last().refusal, None, "a question, not a refused stop");
}

#[test]
fn progress_the_probe_could_not_give_is_shown_as_unknown() {
    let mut h = Harness::new(5);
    h.settle(&Screen::pane(&idle()).progress(41));
    check(
        &mut h,
        &[
            (
                Screen::pane(&idle()).progress(41),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=? · progress=41 · nudges 1/5 · nudged (1/5) · 00:00:30",
                ],
            ),
            (
                Screen::pane(&idle()),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=? · progress=? · nudges 2/5 · nudged (2/5) · 00:01:00",
                ],
            ),
        ],
    );
    assert_eq!(h.last().progress, None);
}

#[test]
fn the_cli_last_recognised_in_a_pane_reads_it_while_no_marker_is_on_screen() {
    let mut h = Harness::new(5);
    let full = agent_capture("aider", "question-run-command");
    // Mid-reply, the bottom lines are all reply text: still Aider, still printing.
    let mid_reply: String = full.lines().take(24).collect::<Vec<_>>().join("\n");
    check(
        &mut h,
        &[
            (
                Screen::pane(&full).work(Work::Available(2)),
                &[
                    ASKED,
                    "L MONITOR · host:sess · QUESTION · work=2 · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:00:30",
                ],
            ),
            (
                Screen::pane(&mid_reply).work(Work::Available(2)),
                &["L MONITOR · host:sess · WORKING · work=2 · progress=? · nudges 0/5 · 00:01:00"],
            ),
        ],
    );
    assert_eq!(h.last().rule, Some("no-input-line"));
}

#[test]
fn activity_inferred_from_a_screen_that_never_moves_is_not_believed_for_ever() {
    // Aider exited to a shell: its last line is no longer its prompt. Its
    // input line is gone, so the stop is escalated, never typed into.
    let exited = format!(
        "{}\nuser@host:~/proj$ ",
        agent_capture("aider", "idle-after-text-answer").trim_end()
    );
    let mut h = Harness::new(5);
    let screen = Screen::pane(&exited).work(Work::Available(2));
    check(
        &mut h,
        &[
            (
                screen.clone(),
                &["L MONITOR · host:sess · WORKING · work=2 · progress=? · nudges 0/5 · 00:00:30"],
            ),
            (
                screen.clone(),
                &["L MONITOR · host:sess · WORKING · work=2 · progress=? · nudges 0/5 · 00:01:00"],
            ),
            (
                screen.clone(),
                &["L MONITOR · host:sess · WORKING · work=2 · progress=? · nudges 0/5 · 00:01:30"],
            ),
            (
                screen,
                &[
                    "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=2. This needs a human.",
                    "L MONITOR · host:sess · STALLED · work=2 · progress=? · nudges 0/5 · not nudged (no input box recognised), escalated · 00:02:00",
                ],
            ),
        ],
    );
}

#[test]
fn a_shell_in_the_foreground_means_the_agent_exited_whatever_its_last_frame_shows() {
    // Each of the agent's last frames, with an idle shell under it in the foreground.
    for frame in [idle(), working(), question()] {
        for (shell, name, work, state) in [
            ("bash", "bash", Work::Available(3), "STALLED"),
            ("-zsh", "zsh", Work::None, "BLOCKED"),
            ("/bin/sh", "sh", Work::Unknown, "STALLED"),
        ] {
            let mut h = Harness::new(5);
            let screen = Screen::pane(&frame)
                .work(work)
                .front(&front(shell, Some(false)));
            let why = format!(
                "the agent exited: a shell ({name}) is in the foreground with nothing running under it"
            );
            let head = format!(
                "L MONITOR · host:sess · {state} · work={} · progress=? · nudges 0/5 · not nudged ({why})",
                work.display()
            );
            h.expect(
                &screen,
                &[
                    format!(
                        "A {state} agent_exited: {state} on host:sess: {why}, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work={}. This needs a human.",
                        work.display()
                    ),
                    format!("{head}, escalated · 00:00:30"),
                ],
            );
            for t in ["00:01:00", "00:01:30", "00:02:00"] {
                h.expect(&screen, &[format!("{head} · {t}")]);
            }
            assert_eq!(h.last().refusal, Some(Refusal::AgentExited));
            assert!(!h.last().typing_safe);
        }
    }
}

#[test]
fn a_wrapper_shell_with_the_agent_under_it_is_the_agent_running() {
    let pane = Screen::pane(&idle()).work(Work::Available(1));
    // `bash -c claude`: bash is the foreground, the agent is its child.
    let mut h = Harness::new(5);
    h.settle(&pane.clone().front(&front("bash", Some(true))));
    check(
        &mut h,
        &[(
            pane.clone().front(&front("bash", Some(true))),
            &[
                NUDGE,
                "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
            ],
        )],
    );
    assert!(h.last().typing_safe);
    // A remote shell whose children were not read is not assumed to be a wrapper.
    let mut h = Harness::new(5);
    check(
        &mut h,
        &[(
            pane.clone().front(&front("bash", None)),
            &[
                "A STALLED agent_exited: STALLED on host:sess: the agent exited: a shell (bash) is in the foreground with nothing running under it, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.",
                "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged (the agent exited: a shell (bash) is in the foreground with nothing running under it), escalated · 00:00:30",
            ],
        )],
    );
    // Another foreground program (the agent itself, `node`) is no shell.
    let mut h = Harness::new(5);
    h.settle(&pane.clone().front(&front("node", Some(true))));
    check(
        &mut h,
        &[(
            pane.front(&front("node", Some(true))),
            &[
                NUDGE,
                "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
            ],
        )],
    );
}

#[test]
fn a_screen_with_no_input_box_is_escalated_once_and_never_typed_into() {
    let less = "NAME\n       less - opposite of more\n\nSYNOPSIS\n       less -?\n:";
    let dialog = "╭────────────────╮\n│ Something new  │\n│ [Continue]     │\n╰────────────────╯\n  Esc to cancel";
    let other = "$ some-other-agent\n? Pick a model\n  gpt\n";
    for pane in [less, dialog, other] {
        let mut h = Harness::new(2);
        let screen = Screen::pane(pane).work(Work::Available(4));
        let head = "L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 0/2 · not nudged (no input box recognised)";
        h.expect(
            &screen,
            &[
                "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=4. This needs a human.".to_string(),
                format!("{head}, escalated · 00:00:30"),
            ],
        );
        for t in [
            "00:01:00", "00:01:30", "00:02:00", "00:02:30", "00:03:00", "00:03:30", "00:04:00",
        ] {
            h.expect(&screen, &[format!("{head} · {t}")]);
        }
        assert_eq!(h.last().unrecognised, 8, "{pane:?}");
    }
}

#[test]
fn the_escalation_carries_the_reason_and_the_bottom_lines_verbatim() {
    let pane = "line one\nSave to file: tep of your plan.\n:";
    let mut h = Harness::new(5);
    check(
        &mut h,
        &[(
            Screen::pane(pane).work(Work::Available(2)),
            &[
                "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=2. This needs a human.",
                "L MONITOR · host:sess · STALLED · work=2 · progress=? · nudges 0/5 · not nudged (no input box recognised), escalated · 00:00:30",
            ],
        )],
    );
    assert!(
        h.alerts[0].message.ends_with(
            "\n\nThe bottom of the screen:\nline one\nSave to file: tep of your plan.\n:"
        ),
        "{}",
        h.alerts[0].message
    );
}

#[test]
fn the_box_coming_back_rearms_and_a_new_unreadable_screen_is_said_again_as_a_ui_change() {
    let unknown = "A new dialog this profile has never seen\n  Esc to cancel";
    let (shown, gone) = (
        Screen::pane(&idle()).work(Work::Available(1)),
        Screen::pane(unknown).work(Work::Available(1)),
    );
    // Said once, on the first unreadable poll, naming the profile and the version.
    let mut h = Harness::new(5);
    h.settle(&shown.clone().version("2.1.332"));
    check(
        &mut h,
        &[
            (
                shown.clone().version("2.1.332"),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
                ],
            ),
            (
                gone.clone().version("2.1.332"),
                &[
                    "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.",
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · likely UI change: the claude profile read this pane's input box before and cannot now (version 2.1.332) · not nudged (no input box recognised), escalated · 00:01:00",
                ],
            ),
            (
                gone.clone().version("2.1.332"),
                &[
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · not nudged (no input box recognised) · 00:01:30",
                ],
            ),
            (
                gone.clone(),
                &[
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · not nudged (no input box recognised) · 00:02:00",
                ],
            ),
        ],
    );
    assert!(h.alerts[0].message.contains(
        "\nLikely UI change: the claude profile recognised this pane's input box before. The CLI reports version 2.1.332."
    ));
    // The box comes back: typed into again; a later unreadable screen is escalated again.
    check(
        &mut h,
        &[
            (
                shown,
                &[
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · not nudged yet (the screen changed since the last poll) · 00:02:30",
                ],
            ),
            (
                gone,
                &[
                    "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.",
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · not nudged (no input box recognised), escalated · 00:03:00",
                ],
            ),
        ],
    );
}

#[test]
fn a_codex_stop_with_a_background_terminal_is_nudged_to_check_it() {
    let mut h = Harness::new(5);
    h.settle(
        &Screen::pane(&agent_capture("codex", "idle-background-terminal")).work(Work::Available(1)),
    );
    check(
        &mut h,
        &[
            (
                Screen::pane(&agent_capture("codex", "idle-background-terminal"))
                    .work(Work::Available(1)),
                &[
                    "S Please continue with the next step of your plan. Note: a background terminal is still running: check it with /ps.",
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
                ],
            ),
            // Claude Code's background shells stay WORKING: never nudged.
            (
                Screen::pane(&capture("working-bash-sleep")).work(Work::Available(1)),
                &["L MONITOR · host:sess · WORKING · work=1 · progress=? · nudges 1/5 · 00:01:00"],
            ),
        ],
    );
    assert!(h.typed[0].starts_with(DEFAULT_NUDGE_TEXT), "{:?}", h.typed);
}

#[test]
fn a_renamed_shell_is_known_by_its_process_and_a_relay_is_never_typed_through() {
    let pane = Screen::pane(&idle()).work(Work::Available(1));
    // `exec -a agentsh bash`: tmux says `agentsh`, /proc says `bash`.
    let renamed = Foreground {
        command: "agentsh".to_string(),
        process: Some("bash".to_string()),
        running_child: Some(false),
        ..Foreground::default()
    };
    let mut h = Harness::new(5);
    check(
        &mut h,
        &[(
            pane.clone().front(&renamed),
            &[
                "A STALLED agent_exited: STALLED on host:sess: the agent exited: a shell (bash) is in the foreground with nothing running under it, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.",
                "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged (the agent exited: a shell (bash) is in the foreground with nothing running under it), escalated · 00:00:30",
            ],
        )],
    );
    // ssh or a nested tmux in front: the screen behind it cannot be checked.
    for relay in ["ssh", "tmux", "mosh-client"] {
        let mut h = Harness::new(5);
        let why = format!(
            "the pane runs {relay}, which relays a terminal this monitor cannot check (watch that session itself)"
        );
        h.expect(
            &pane.clone().front(&front(relay, Some(true))),
            &[
                format!(
                    "A STALLED relay: STALLED on host:sess: {why}, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human."
                ),
                format!(
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged ({why}), escalated · 00:00:30"
                ),
            ],
        );
    }
}

#[test]
fn a_screen_flipping_between_two_refusals_is_escalated_once() {
    let blank = Screen::pane("\n").work(Work::Available(1));
    let (reading, idle_bash) = (front("bash", Some(true)), front("bash", Some(false)));
    let head = "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged";
    let unreadable = "(no input box recognised)";
    let exited =
        "(the agent exited: a shell (bash) is in the foreground with nothing running under it)";
    let mut h = Harness::new(5);
    h.expect(
        &blank.clone().front(&reading),
        &[
            "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.".to_string(),
            format!("{head} {unreadable}, escalated · 00:00:30"),
        ],
    );
    for (fg, why, t) in [
        (&idle_bash, exited, "00:01:00"),
        (&reading, unreadable, "00:01:30"),
        (&idle_bash, exited, "00:02:00"),
        (&reading, unreadable, "00:02:30"),
        (&idle_bash, exited, "00:03:00"),
        (&reading, unreadable, "00:03:30"),
        (&idle_bash, exited, "00:04:00"),
    ] {
        h.expect(&blank.clone().front(fg), &[format!("{head} {why} · {t}")]);
    }
}

#[test]
fn another_program_in_front_of_a_recognised_pane_is_no_ui_change() {
    let shown = Screen::pane(&idle()).work(Work::Available(1));
    let unknown =
        Screen::pane("~\n~\n\"/etc/hostname\" [readonly] 1L, 5B").work(Work::Available(1));
    let (agent, vim) = (front("claude", Some(true)), front("vim", Some(false)));
    let mut h = Harness::new(5);
    h.settle(&shown.clone().front(&agent));
    check(
        &mut h,
        &[
            (
                shown.clone().front(&agent),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
                ],
            ),
            (
                unknown.clone().front(&vim),
                &[
                    "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.",
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · not nudged (no input box recognised), escalated · 00:01:00",
                ],
            ),
        ],
    );
    // The same program in front, drawing what its profile cannot read: that is one.
    let mut h = Harness::new(5);
    h.settle(&shown.clone().front(&agent));
    check(
        &mut h,
        &[
            (
                shown.front(&agent),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
                ],
            ),
            (
                unknown.front(&agent),
                &[
                    "A STALLED unreadable: STALLED on host:sess: no input box recognised, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.",
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 1/5 · likely UI change: the claude profile read this pane's input box before and cannot now · not nudged (no input box recognised), escalated · 00:01:00",
                ],
            ),
        ],
    );
}

#[test]
fn a_dead_pane_or_one_in_copy_mode_is_never_typed_into() {
    let pane = Screen::pane(&idle()).work(Work::Available(1));
    let dead = Foreground {
        command: "python3".to_string(),
        dead: true,
        ..Foreground::default()
    };
    let mut h = Harness::new(5);
    check(
        &mut h,
        &[(
            pane.clone().front(&dead),
            &[
                "A STALLED agent_exited: STALLED on host:sess: the agent exited: the pane's program (python3) ended and its pane is dead, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.",
                "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged (the agent exited: the pane's program (python3) ended and its pane is dead), escalated · 00:00:30",
            ],
        )],
    );
    // Copy mode takes the keys: the budget would burn on nudges that never arrive.
    let copying = Foreground {
        command: "claude".to_string(),
        running_child: Some(true),
        in_mode: true,
        ..Foreground::default()
    };
    let mut h = Harness::new(5);
    let copying = pane.front(&copying);
    check(
        &mut h,
        &[
            (
                copying.clone(),
                &[
                    "A STALLED pane_in_mode: STALLED on host:sess: the pane is in a tmux mode (copy mode): keys would go to the mode, not the agent, so it was NOT typed into (a keystroke could answer a dialog or run as a command). work=1. This needs a human.",
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged (the pane is in a tmux mode (copy mode): keys would go to the mode, not the agent), escalated · 00:00:30",
                ],
            ),
            (
                copying.clone(),
                &[
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged (the pane is in a tmux mode (copy mode): keys would go to the mode, not the agent) · 00:01:00",
                ],
            ),
            (
                copying,
                &[
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged (the pane is in a tmux mode (copy mode): keys would go to the mode, not the agent) · 00:01:30",
                ],
            ),
        ],
    );
}

#[test]
fn a_crash_while_an_alert_runs_leaves_it_due_and_a_delivered_one_is_never_repeated() {
    let asked = Screen::pane(&question()).work(Work::Available(1));
    // The process dies while the alert runs: its latch was never journaled,
    // so the restarted monitor sends it again.
    let mut h = Harness::new(5);
    h.delivery = Delivery::Crashes;
    check(
        &mut h,
        &[(
            asked.clone(),
            &[
                "A QUESTION question: QUESTION on host:sess: the agent is waiting for a human. It was NOT answered. (not delivered)",
                "L MONITOR · host:sess · QUESTION · work=1 · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:00:30",
            ],
        )],
    );
    h.delivery = Delivery::Delivered;
    check(
        &mut h,
        &[(
            asked.clone(),
            &[
                ASKED,
                "L MONITOR · host:sess · QUESTION · work=1 · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:01:00",
            ],
        )],
    );
    // Delivered before the crash: never repeated.
    let mut h = Harness::new(5);
    check(
        &mut h,
        &[(
            asked.clone(),
            &[
                ASKED,
                "L MONITOR · host:sess · QUESTION · work=1 · progress=? · nudges 0/5 · escalated to the operator, NOT answered · 00:00:30",
            ],
        )],
    );
    h.restart();
    check(
        &mut h,
        &[(
            asked,
            &["L MONITOR · host:sess · QUESTION · work=1 · progress=? · nudges 0/5 · 00:01:00"],
        )],
    );
}

#[test]
fn a_pane_that_cannot_be_read_for_three_polls_is_said_once_and_rearmed_by_a_capture() {
    let failed = Screen::failed("no tmux session named `sess` on host");
    let mut h = Harness::new(5);
    check(
        &mut h,
        &[
            (
                failed.clone(),
                &[
                    "E no tmux session named `sess` on host",
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:00:30",
                ],
            ),
            (
                failed.clone(),
                &[
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:01:00",
                ],
            ),
            (
                failed.clone(),
                &[
                    "A STALLED capture_failed: host:sess cannot be read: 3 polls in a row failed to capture its pane, so nothing watches it. The last error: no tmux session named `sess` on host",
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · escalated: the pane cannot be read · 00:01:30",
                ],
            ),
            (
                failed.clone(),
                &[
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:02:00",
                ],
            ),
            (
                failed.clone(),
                &[
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:02:30",
                ],
            ),
            (
                failed.clone(),
                &[
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:03:00",
                ],
            ),
            // A capture that works re-arms it (a screen seen for the first
            // time waits one interval); three more failures say it again.
            (
                Screen::pane(&idle()).work(Work::Available(1)),
                &[
                    "L MONITOR · host:sess · STALLED · work=1 · progress=? · nudges 0/5 · not nudged yet (a new watcher waits for the screen to hold still one interval) · 00:03:30",
                ],
            ),
            (
                failed.clone(),
                &[
                    "E no tmux session named `sess` on host",
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:04:00",
                ],
            ),
            (
                failed.clone(),
                &[
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · 00:04:30",
                ],
            ),
            (
                failed,
                &[
                    "A STALLED capture_failed: host:sess cannot be read: 3 polls in a row failed to capture its pane, so nothing watches it. The last error: no tmux session named `sess` on host",
                    "L MONITOR · host:sess · ? · work=? · progress=? · nudges 0/5 · capture failed · escalated: the pane cannot be read · 00:05:00",
                ],
            ),
        ],
    );
}

/// At first sight a target is searched for its agent's pane unless its
/// active pane shows one: a screen a profile knows, no shell in front.
#[test]
fn an_agent_is_a_recognised_screen_without_a_shell_in_front() {
    let profiles = watchdog::session::builtin_profiles();
    let shows = |text: &str, command: Option<&str>| {
        watchdog::session::shows_an_agent(text, command, &profiles)
    };
    let claude = support::capture("working-bash-sleep");
    assert!(shows(&claude, Some("claude")));
    assert!(shows(&claude, None), "no command known: the screen decides");
    assert!(
        !shows(&claude, Some("bash")),
        "its last frame above a prompt"
    );
    assert!(
        !shows("$ ls\nCargo.toml\n$ ", Some("node")),
        "no profile knows it"
    );
}

#[test]
fn a_new_config_keeps_the_memory_and_a_forced_profile_reads_the_pane_whatever_its_markers_say() {
    let mut h = Harness::new(2);
    let stalled = Screen::pane(&idle()).work(Work::Available(4));
    let nudged = |used: u32, budget: u32, time: &str| {
        format!(
            "L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges {used}/{budget} · nudged ({used}/{budget}) · {time}"
        )
    };
    h.settle(&stalled);
    h.expect(&stalled, &[NUDGE.to_string(), nudged(1, 2, "00:00:30")]);
    // A reloaded config file raises the budget: the nudge already spent stays spent.
    h.monitor.set_config(SessionConfig {
        budget: 3,
        ..SessionConfig::default()
    });
    h.expect(&stalled, &[NUDGE.to_string(), nudged(2, 3, "00:01:00")]);
    // Then it forces Aider's profile on this pane, which shows Claude Code:
    // read as Aider, whose prompt line is not there, it is still printing.
    h.monitor.set_config(SessionConfig {
        budget: 3,
        profile: Some("aider".to_string()),
        ..SessionConfig::default()
    });
    h.expect(
        &stalled,
        &["L MONITOR · host:sess · WORKING · work=4 · progress=? · nudges 2/3 · 00:01:30"],
    );
    assert_eq!(h.last().rule, Some("no-input-line"));
}

/// Found by two reviews: while a Claude Code permission dialog was the only
/// screen seen, no profile's markers were on it and the alerts' and the
/// metrics' `cli` label was empty. Claude Code's own session file names the
/// agent; an absent one says nothing.
#[test]
fn claude_codes_session_file_names_the_cli_when_no_profile_has_read_the_pane() {
    let config = SessionConfig::default();
    let mut monitor = watchdog::session::TargetMonitor::new("t", config, SessionMemory::default());
    let dialog = support::question();
    let absent = Screen::pane(&dialog).witness(Witness::Absent("no session file".into()));
    monitor.poll(absent.observation());
    let seen = monitor.profile().map(str::to_string);
    assert_ne!(
        seen.as_deref(),
        Some("claude"),
        "an absent file is no evidence"
    );
    let waiting = Screen::pane(&dialog).witness(Witness::Waiting("permission prompt".into()));
    monitor.poll(waiting.observation());
    assert_eq!(monitor.profile(), Some("claude"));
}

/// The idle screen with `text` typed into its box (Enter never pressed).
fn with_draft(text: &str) -> String {
    idle().replacen("❯\u{a0}", &format!("❯\u{a0}{text}"), 1)
}

#[test]
fn a_draft_in_the_box_is_never_typed_over_and_is_escalated_once_it_stays() {
    let mut h = Harness::new(5);
    let draft =
        Screen::pane(&with_draft("please refactor the parser so that")).work(Work::Available(3));
    let emptied = Screen::pane(&idle()).work(Work::Available(3));
    check(
        &mut h,
        &[
            (
                draft.clone(),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not nudged yet (a new watcher waits for the screen to hold still one interval) · 00:00:30",
                ],
            ),
            (
                draft.clone(),
                &[
                    "A STALLED draft: STALLED on host:sess: not typed into: a draft is waiting in the box. Nothing was typed (work=3); this needs a human: send it or empty the box, and the stop is nudged once it holds still.",
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not typed into: a draft is waiting in the box, escalated · 00:01:00",
                ],
            ),
            (
                draft.clone(),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not typed into: a draft is waiting in the box · 00:01:30",
                ],
            ),
            // The person empties the box: it moved, so it waits one more interval.
            (
                emptied.clone(),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not nudged yet (the screen changed since the last poll) · 00:02:00",
                ],
            ),
            (
                emptied,
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:02:30",
                ],
            ),
            // A new draft later is a new escalation (the empty box re-armed it).
            (
                draft.clone(),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · not nudged yet (the screen changed since the last poll) · 00:03:00",
                ],
            ),
        ],
    );
    assert!(
        h.alerts[0]
            .message
            .ends_with("The draft:\nplease refactor the parser so that")
    );
    assert_eq!(h.typed.len(), 1);
    h.expect(
        &draft,
        &[
            "A STALLED draft: STALLED on host:sess: not typed into: a draft is waiting in the box. Nothing was typed (work=3); this needs a human: send it or empty the box, and the stop is nudged once it holds still.",
            "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · not typed into: a draft is waiting in the box, escalated · 00:03:30",
        ],
    );
    assert_eq!(h.last().deferred, Some("draft"));
    assert!(!h.last().typing_safe);
}

#[test]
fn our_own_unsent_nudge_in_the_box_never_gets_a_second_copy() {
    let mut h = Harness::new(5);
    let stopped = Screen::pane(&idle()).work(Work::Available(3));
    h.settle(&stopped);
    h.expect(
        &stopped,
        &[NUDGE, "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30"],
    );
    // The text arrived but its Enter did not: our nudge sits in the box.
    let unsent = Screen::pane(&with_draft(DEFAULT_NUDGE_TEXT)).work(Work::Available(3));
    h.poll(&unsent);
    let lines = h.poll(&unsent);
    assert_eq!(
        lines.last().map(String::as_str),
        Some(
            "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · not typed into: the box holds this monitor's own nudge, not sent, escalated · 00:01:30"
        )
    );
    assert_eq!(h.typed.len(), 1, "a second copy was typed");
}

#[test]
fn a_key_pressed_since_the_last_poll_means_no_typing_this_poll() {
    let mut h = Harness::new(5);
    let at = |second: u32| format!("2026-12-01T12:00:{second:02}+00:00[UTC]");
    let stopped = || Screen::pane(&idle()).work(Work::Available(3));
    // Polls at :00, :10, :20 and :30; tmux's last key time is in whole seconds.
    let t0 = 1_764_590_400; // 2026-12-01T12:00:00Z
    check(
        &mut h,
        &[
            (
                stopped().at(&at(0)).activity(t0 - 100),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not nudged yet (a new watcher waits for the screen to hold still one interval) · 00:00:30",
                ],
            ),
            // A key at :05 (a cursor move: the screen did not change).
            (
                stopped().at(&at(10)).activity(t0 + 5),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not nudged yet (a key was pressed in the session since the last poll) · 00:01:00",
                ],
            ),
            // A key in the very second of the last poll may have come after it.
            (
                stopped().at(&at(20)).activity(t0 + 10),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not nudged yet (a key was pressed in the session since the last poll) · 00:01:30",
                ],
            ),
            (
                stopped().at(&at(30)).activity(t0 + 10),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:02:00",
                ],
            ),
        ],
    );
    assert_eq!(h.last().deferred, None);
}

/// Claude Code's idle screen after its usage limit stopped it.
fn at_limit(line: &str) -> String {
    let mut lines: Vec<String> = idle().lines().map(str::to_string).collect();
    let prompt = lines
        .iter()
        .position(|l| l.starts_with("❯\u{a0}"))
        .expect("the box");
    lines.insert(prompt - 1, format!("  ⎿  {line}"));
    lines.join("\n")
}

#[test]
fn a_usage_limit_is_held_until_its_reset_then_nudged_once_then_escalated() {
    let mut h = Harness::new(5);
    let limit = at_limit("You've hit your session limit · resets 4:20pm (Asia/Tbilisi)");
    let screen = |now: &str| Screen::pane(&limit).work(Work::Available(3)).at(now);
    // Tbilisi is UTC+4: the reset is 12:20 UTC; the monitor's clock is in London.
    let london = |hm: &str| format!("2026-12-01T{hm}:00+00:00[Europe/London]");
    check(
        &mut h,
        &[
            (
                screen(&london("02:00")),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · held until 12:20 (usage limit) · 00:00:30",
                ],
            ),
            // Hours of polls: no key, no page, nothing said again.
            (
                screen(&london("06:00")),
                &["L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · 00:01:00"],
            ),
            (
                screen(&london("12:20")),
                &["L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · 00:01:30"],
            ),
            // The reset and its margin passed: one nudge.
            (
                screen(&london("12:21")),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:02:00",
                ],
            ),
            // Still at its limit after that nudge: escalated once, never nudged again.
            (
                screen(&london("12:22")),
                &[
                    "A STALLED usage_limit: STALLED on host:sess: a usage limit stopped the agent and it is still on screen after the reset at 12:20 and one nudge, so it was not nudged (work=3). This needs a human.",
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · usage limit: not nudged, escalated · 00:02:30",
                ],
            ),
            (
                screen(&london("12:23")),
                &["L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · 00:03:00"],
            ),
        ],
    );
    assert_eq!(h.typed.len(), 1);
}

#[test]
fn a_held_limit_says_its_hold_in_the_report_and_a_reset_it_cannot_read_is_escalated() {
    let mut h = Harness::new(5);
    let held = Screen::pane(&at_limit(
        "You've hit your weekly limit · resets 3am (Europe/London)",
    ))
    .work(Work::Available(3))
    .at("2026-12-01T23:00:00+00:00[Europe/London]");
    h.poll(&held);
    assert_eq!(h.last().held_until.as_deref(), Some("Dec 2 03:00"));
    assert_eq!(h.last().deferred, Some("usage_limit"));
    assert!(!h.last().typing_safe);
    // A zone the tz database does not know: escalated once, never nudged.
    let mut h = Harness::new(5);
    let unknown = Screen::pane(&at_limit(
        "You've hit your session limit · resets 4:20pm (Mars/Olympus)",
    ))
    .work(Work::Available(3))
    .at("2026-12-01T12:00:00+00:00[UTC]");
    check(
        &mut h,
        &[
            (
                unknown.clone(),
                &[
                    "A STALLED usage_limit: STALLED on host:sess: a usage limit stopped the agent and its reset time cannot be read, so it was not nudged (work=3). This needs a human.",
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · usage limit: not nudged, escalated · 00:00:30",
                ],
            ),
            (
                unknown,
                &["L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · 00:01:00"],
            ),
        ],
    );
    assert!(h.typed.is_empty());
}

#[test]
fn a_clock_ticking_in_the_status_bar_does_not_keep_a_stop_from_holding_still() {
    let mut h = Harness::new(5);
    let at = |clock: &str| {
        Screen::pane(&format!("{}\n  12:00:{clock} · $0.42", idle().trim_end()))
            .work(Work::Available(3))
    };
    check(
        &mut h,
        &[
            (
                at("01"),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not nudged yet (a new watcher waits for the screen to hold still one interval) · 00:00:30",
                ],
            ),
            (
                at("31"),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:01:00",
                ],
            ),
        ],
    );
}

/// Found by a review: the limit screen outlives its reset (Claude Code's own
/// continue did not fire, or was cancelled), so a watcher started after it
/// read the passed clock time as tomorrow's and held a day. A reset that
/// passed less than half a day ago has passed: nudged once.
#[test]
fn a_limit_screen_that_outlived_its_reset_is_nudged_not_held_until_tomorrow() {
    let mut h = Harness::new(5);
    let limit = at_limit("You've hit your 5-hour limit · resets 9:01pm (UTC)");
    let screen = |now: &str| Screen::pane(&limit).work(Work::Available(3)).at(now);
    h.settle(&screen("2026-12-01T21:06:00+00:00[UTC]"));
    h.expect(
        &screen("2026-12-01T21:06:30+00:00[UTC]"),
        &[
            NUDGE,
            "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
        ],
    );
}

/// Found by a review: a wait (`try again in 1 minute.`) was counted from each
/// poll, so the hold slid forward for ever and was said every poll. It counts
/// from when the limit was first seen, across a restart too.
#[test]
fn a_wait_counts_from_when_the_limit_was_first_seen() {
    let mut h = Harness::new(5);
    let codex = agent_capture("codex", "usage-limit-try-again-at")
        .replace("try again at 2:35 AM.", "try again in 2 minutes.");
    let screen = |now: &str| Screen::pane(&codex).work(Work::Available(3)).at(now);
    let utc = |hms: &str| format!("2026-12-01T{hms}+00:00[UTC]");
    check(
        &mut h,
        &[
            (
                screen(&utc("10:00:00")),
                &[
                    "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · held until 10:02 (usage limit) · 00:00:30",
                ],
            ),
            (
                screen(&utc("10:01:00")),
                &["L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · 00:01:00"],
            ),
        ],
    );
    // A restart reads the same line as the same reset, not two minutes from now.
    h.restart();
    h.expect(
        &screen(&utc("10:02:30")),
        &["L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · held until 10:02 (usage limit) · 00:01:30"],
    );
    h.expect(
        &screen(&utc("10:03:00")),
        &[
            NUDGE,
            "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:02:00",
        ],
    );
}

/// Found by a review: a line redrawn in the transcript every poll kept a
/// stop from ever holding still, so it was never nudged nor escalated. What
/// must hold still is the stop and its box.
#[test]
fn a_transcript_line_redrawn_every_poll_does_not_keep_a_stop_from_holding_still() {
    let mut h = Harness::new(5);
    let at = |tick: u32| Screen::pane(&format!("[{tick}]\n{}", idle())).work(Work::Available(3));
    h.settle(&at(1));
    h.expect(
        &at(2),
        &[
            NUDGE,
            "L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · nudged (1/5) · 00:00:30",
        ],
    );
}

/// Found by a second review: a whole turn that ran between two polls left
/// the same verdict and the same empty box, and its new stop was nudged at
/// once. The newest lines above the box changed: it waits one interval.
#[test]
fn a_turn_that_ran_between_two_polls_is_a_new_stop_that_waits() {
    let mut h = Harness::new(5);
    let before = Screen::pane(&idle()).work(Work::Available(3));
    let after_a_turn = Screen::pane(&at_limit_free_turn()).work(Work::Available(3));
    h.settle(&before);
    h.expect(
        &after_a_turn,
        &["L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 0/5 · not nudged yet (the screen changed since the last poll) · 00:00:30"],
    );
}

/// The idle screen after one more short turn (`say ok`, `ok`), drawn above its box.
fn at_limit_free_turn() -> String {
    let mut lines: Vec<String> = idle().lines().map(str::to_string).collect();
    let prompt = lines
        .iter()
        .position(|l| l.starts_with("❯\u{a0}"))
        .expect("the box");
    for (i, line) in ["❯ say ok", "", "● ok", "", "✻ Crunched for 0s"]
        .iter()
        .enumerate()
    {
        lines.insert(prompt - 1 + i, line.to_string());
    }
    lines.join("\n")
}

/// A limit that went off screen is over: the same words later (`resets
/// 3:33am` the next day, `try again in 2 minutes` again) are a new limit,
/// held again, not "still on screen after its reset".
#[test]
fn a_limit_off_screen_is_over_and_the_same_words_later_are_a_new_hold() {
    let mut h = Harness::new(5);
    let codex = agent_capture("codex", "usage-limit-try-again-at")
        .replace("try again at 2:35 AM.", "try again in 2 minutes.");
    let limited = |hms: &str| {
        Screen::pane(&codex)
            .work(Work::Available(3))
            .at(&format!("2026-12-01T{hms}+00:00[UTC]"))
    };
    h.poll(&limited("10:00:00"));
    let lines = h.poll(&limited("10:03:00"));
    assert_eq!(lines.first().map(String::as_str), Some(NUDGE), "{lines:?}");
    h.poll(&Screen::pane(&working()).at("2026-12-01T10:04:00+00:00[UTC]"));
    h.expect(
        &limited("10:10:00"),
        &["L MONITOR · host:sess · STALLED · work=3 · progress=? · nudges 1/5 · held until 10:12 (usage limit) · 00:02:00"],
    );
    assert!(h.alerts.is_empty(), "{:?}", h.alerts);
}

/// A key counts unless the pane had no focus both at the last poll and now:
/// a person working in another pane types there, while one who was in the
/// agent's pane at either poll may have typed into it.
#[test]
fn a_key_counts_unless_the_pane_had_no_focus_at_both_polls() {
    let t0 = 1_764_590_400;
    let at = |second: u32| format!("2026-12-01T12:00:{second:02}+00:00[UTC]");
    let stopped = || Screen::pane(&idle()).work(Work::Available(3));
    let mut h = Harness::new(5);
    h.poll(&stopped().at(&at(0)).activity(t0 - 100).focused(false));
    // Keys in another pane, the agent's never focused: nudged.
    let lines = h.poll(&stopped().at(&at(10)).activity(t0 + 5).focused(false));
    assert_eq!(lines.first().map(String::as_str), Some(NUDGE), "{lines:?}");
    let mut h = Harness::new(5);
    h.poll(&stopped().at(&at(0)).activity(t0 - 100).focused(true));
    // Focused at the last poll, not now: the keys may have gone into its box.
    let lines = h.poll(&stopped().at(&at(10)).activity(t0 + 5).focused(false));
    assert!(
        lines[0].contains("a key was pressed in the session"),
        "{lines:?}"
    );
}

/// Issue 21: a spent budget without a progress probe never ended. Its
/// escalation was held for 40 minutes after the pane worked again, and the
/// pane was never nudged again. The episode ends when the pane works again
/// (the alert resolves; the next stop is escalated again, not nudged), and a
/// person's key in the session starts a new budget.
#[test]
fn a_spent_budget_ends_when_the_pane_works_again_and_a_key_starts_a_new_one() {
    let mut h = Harness::new(2);
    let stalled = || Screen::pane(&idle()).work(Work::Available(4)).activity(100);
    let spent = "A STALLED escalate_to_human: escalate_to_human: host:sess is STALLED and 2 nudges produced no progress (progress=?, work=4). Nudging has stopped; this needs a human.";
    h.settle(&stalled());
    check(
        &mut h,
        &[
            (
                stalled(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 1/2 · nudged (1/2) · 00:00:30",
                ],
            ),
            (
                stalled(),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 2/2 · nudged (2/2) · 00:01:00",
                ],
            ),
            (
                stalled(),
                &[
                    spent,
                    "L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 2/2 · not nudged, escalated · 00:01:30",
                ],
            ),
            (
                stalled(),
                &["L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 2/2 · 00:02:00"],
            ),
        ],
    );
    assert!(
        h.monitor
            .memory()
            .escalated
            .contains_key(&EscalationKind::BudgetSpent)
    );
    // The pane works again: the escalation is over (its alert resolves)...
    h.expect(
        &Screen::pane(&working())
            .work(Work::Available(4))
            .activity(100),
        &["L MONITOR · host:sess · WORKING · work=4 · progress=? · nudges 2/2 · 00:02:30"],
    );
    assert!(
        !h.monitor
            .memory()
            .escalated
            .contains_key(&EscalationKind::BudgetSpent),
        "{:?}",
        h.monitor.memory()
    );
    // ...but no nudge bought a new budget: the next stop is a new episode, escalated.
    check(
        &mut h,
        &[(
            stalled(),
            &[
                spent,
                "L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 2/2 · not nudged, escalated · 00:03:00",
            ],
        )],
    );
    // A person who only attaches to look (tmux moves the session's activity
    // to the attach's time): no key, no new budget, still escalated.
    h.expect(
        &stalled().attached(150),
        &["L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 2/2 · 00:03:30"],
    );
    assert_eq!(h.monitor.memory().nudges_used, 2);
    // A person's key in the session: a new budget, and the nudge waits for them.
    check(
        &mut h,
        &[
            (
                stalled().activity(200),
                &[
                    "L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 0/2 · nudge budget renewed (a key was pressed in the session) · not nudged yet (a key was pressed in the session since the last poll) · 00:04:00",
                ],
            ),
            (
                stalled().activity(200),
                &[
                    NUDGE,
                    "L MONITOR · host:sess · STALLED · work=4 · progress=? · nudges 1/2 · nudged (1/2) · 00:04:30",
                ],
            ),
        ],
    );
    // Kept across a restart: the journal replays the new budget.
    h.restart();
    assert_eq!(h.monitor.memory().nudges_used, 1);
    assert!(
        !h.monitor
            .memory()
            .escalated
            .contains_key(&EscalationKind::BudgetSpent)
    );
}
