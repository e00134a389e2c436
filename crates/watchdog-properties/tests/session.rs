//! The session monitor's properties over random sequences: the nudge budget, no key sent to a
//! question, no alert twice in a row, and a crash at any point repeating nothing and losing
//! nothing. Moved from bmb-watchdog's `tests/session.rs` so that bmb-watchdog needs no proptest;
//! they share that file's harness (`tests/support`, the real agent captures as panes).

// The harness names the crate as its own tests do.
extern crate watchdog as bmb_watchdog;

#[path = "../../watchdog/tests/support/mod.rs"]
#[expect(
    dead_code,
    reason = "the harness of bmb-watchdog's table tests; these properties use part of it"
)]
mod support;

use classify::{State, Work};
use ledger::session::{SessionMemory, SessionRecord};
use proptest::prelude::*;
use support::{Harness, Screen, idle, other_question, question, working};
use watchdog::session::{Action, Reason, SessionConfig};

#[derive(Debug, Clone, Copy)]
enum Shown {
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
            (prop_oneof![Just(Shown::Idle), Just(Shown::Question), Just(Shown::OtherQuestion), Just(Shown::Working), Just(Shown::Gone)],
             0u64..3, prop_oneof![Just(None), (0u64..4).prop_map(Some)]),
            1..40),
        budget in 1u32..4,
    ) {
        let panes = [idle(), question(), other_question(), working()];
        let mut h = Harness::new(budget);
        let mut nudges_since_progress = 0u32;
        let mut last_progress: Option<u64> = None;
        let mut last_alert: Option<(&'static str, String)> = None;
        let mut last_state: Option<State> = None;
        let mut was_read = true;
        for (shown, work, progress) in steps {
            let screen = match shown {
                Shown::Idle => Screen::pane(&panes[0]),
                Shown::Question => Screen::pane(&panes[1]),
                Shown::OtherQuestion => Screen::pane(&panes[2]),
                Shown::Working => Screen::pane(&panes[3]),
                Shown::Gone => Screen::failed("no such session"),
            };
            let screen = screen.work(Work::parse(&work.to_string()));
            let screen = match progress {
                Some(progress) => screen.progress(progress),
                None => screen,
            };
            if let (Some(now), Some(before)) = (progress, last_progress) && now > before {
                nudges_since_progress = 0;
            }
            if progress.is_some() { last_progress = progress.max(last_progress); }
            let alerts_before = h.alerts.len();
            let typed_before = h.typed.len();
            h.poll(&screen);
            let typed = h.typed.len() - typed_before;
            nudges_since_progress += typed as u32;
            prop_assert!(nudges_since_progress <= budget, "nudged {} times without progress", nudges_since_progress);
            let state = h.last().state;
            if state == Some(State::Question) {
                prop_assert_eq!(typed, 0, "a key was sent to a question");
            }
            // An event repeats only after the pane showed another verdict in between.
            if state.is_some() && state != last_state {
                last_state = state;
                last_alert = None;
            }
            // A capture that works re-arms the unreadable-pane alert, whatever
            // the pane then shows: three more failures say it again.
            if state.is_some() && !was_read
                && last_alert.as_ref().is_some_and(|(reason, _)| *reason == "capture_failed")
            {
                last_alert = None;
            }
            was_read = state.is_some();
            for alert in &h.alerts[alerts_before..] {
                let said = (alert.reason.word(), alert.message.clone());
                prop_assert_ne!(Some(&said), last_alert.as_ref(), "the same alert twice in a row");
                last_alert = Some(said);
            }
        }
    }

    #[test]
    fn the_same_question_is_escalated_at_most_once_until_another_verdict(repeats in 1usize..12) {
        let mut h = Harness::new(5);
        let asked = Screen::pane(&question());
        for _ in 0..repeats {
            h.poll(&asked);
        }
        prop_assert_eq!(h.alerts.len(), 1);
    }
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
    let restart = |journal: &[SessionRecord]| {
        watchdog::session::TargetMonitor::new("t", config.clone(), SessionMemory::replay(journal))
    };
    let mut m = restart(&journal);
    let (mut delivered, mut typed, mut executed, mut alerts_seen) = (0, 0, 0usize, 0usize);
    for pane in screens {
        let screen = Screen::pane(pane).work(Work::Available(1));
        let (_, actions) = m.poll(screen.observation());
        for action in actions {
            if crashes.contains(&executed) {
                // The process dies here: everything not journaled is gone.
                m = restart(&journal);
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
                        delivered += usize::from(alert.reason == Reason::Question);
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
