//! What a running session monitor tells the outside: its board (one row per
//! target, one per host) and the counts its Prometheus metrics expose.
//!
//! The loop hands each poll's [`PollReport`] and actions to [`Board::observe`]
//! and ends each cycle with [`Board::cycle_done`]; the binary publishes the
//! board (a file per monitor, `/board.json`, `/metrics`) and `status` reads it
//! back, so nobody captures a pane twice. Every decision about what a report
//! means (when a state began, which `Done` is an action, when a host counts
//! as unreachable, when a board is stale) is made here, where a test drives it.
//!
//! **Architecture Invariant:** nothing here calls the OS or reads a clock:
//! the time arrives as an argument.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::session::target::Target;
use crate::session::{Action, Done, PollReport, Reason};

mod age;
mod prometheus;
mod reading;
mod table;
pub mod wire;

pub use age::age;
pub use prometheus::{BOARD_QUERY, Sample, from_samples};
pub use reading::{Freshness, Reading, Source, freshness};
pub use table::{table, tail};

/// The `host` of a target on this machine's tmux (an ssh alias otherwise).
pub const LOCAL_HOST: &str = "local";

/// Upper bounds, in seconds, of the cycle-duration histogram's buckets (a
/// last `+Inf` bucket follows): a local cycle takes milliseconds, a hung
/// capture its timeout.
pub const CYCLE_BUCKETS: [f64; 10] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// One running monitor's board, as it publishes it after each cycle (its
/// wire form, with a version, is [`wire`]'s).
#[derive(Debug, Clone, PartialEq)]
pub struct Board {
    /// The monitor's process id: a board whose process is gone is stale.
    pub pid: u32,
    /// Epoch seconds when the monitor started.
    pub started: i64,
    /// Epoch seconds of the last completed cycle.
    pub updated: i64,
    /// Seconds between polls.
    pub interval_secs: u64,
    /// How long the cycles took.
    pub cycles: CycleTimes,
    /// One row per watched target, in the order given.
    pub targets: Vec<TargetRow>,
    /// One row per host of those targets.
    pub hosts: Vec<HostRow>,
}

/// How long the cycles took: a histogram over [`CYCLE_BUCKETS`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CycleTimes {
    /// Cycles completed.
    pub count: u64,
    /// Their durations added up.
    pub sum_seconds: f64,
    /// The last cycle's duration.
    pub last_seconds: f64,
    /// Cycles per bucket (not cumulative), one per bound of
    /// [`CYCLE_BUCKETS`] and a last one for longer cycles.
    pub buckets: Vec<u64>,
}

/// One watched target as its monitor last saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetRow {
    /// `session` or `host:session`, as on the MONITOR line.
    pub target: String,
    /// The ssh alias, or [`LOCAL_HOST`].
    pub host: String,
    /// The session name.
    pub session: String,
    /// The agent CLI last recognised in the pane (a profile name).
    pub cli: Option<String>,
    /// The monitor's word (`QUESTION`, …); `None` before the first poll and
    /// while the pane cannot be read.
    pub state: Option<String>,
    /// Epoch seconds since which `state` holds.
    pub since: i64,
    /// Whether the target was polled at least once.
    pub polled: bool,
    /// Nudges used of the budget.
    pub nudges_used: u32,
    /// The nudge budget.
    pub budget: u32,
    /// The verdict's rule and evidence line.
    pub rule: Option<String>,
    /// The verdict's evidence line.
    pub evidence: Option<String>,
    /// Why the pane could not be read this cycle.
    pub error: Option<String>,
    /// The target's host answered this cycle, even if its pane could not be
    /// read (no such session there): the host is reachable.
    #[serde(default)]
    pub host_answered: bool,
    /// What the monitor last did about it, if anything.
    pub last_action: Option<LastAction>,
    /// Its counters.
    pub counts: TargetCounts,
    /// While a usage limit holds the target: until when (epoch seconds).
    #[serde(default)]
    pub held_until: Option<i64>,
    /// The tmux server the target is on (its socket file, as alerts' `server`
    /// label says it): two servers' sessions of one name are two rows a
    /// person tells apart. `None` on a board from before it was said.
    #[serde(default)]
    pub server: Option<String>,
}

/// What the monitor last did about a target, and on what grounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastAction {
    /// The poll line's words for it (`nudged (1/5)`, …).
    pub what: String,
    /// Epoch seconds.
    pub at: i64,
    /// The verdict's rule when it was done.
    pub rule: Option<String>,
    /// The verdict's evidence line when it was done.
    pub evidence: Option<String>,
}

/// A target's counters since the monitor started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetCounts {
    /// Nudges typed.
    pub nudges: u64,
    /// Escalations decided, by their reason (keyed by its `BMB_REASON`
    /// word on the wire). One whose delivery failed is decided again at the
    /// next poll and counted again.
    #[serde(deserialize_with = "known_reasons")]
    pub escalations: BTreeMap<Reason, u64>,
    /// Times the progress probe advanced and the budget started over.
    pub budget_resets: u64,
    /// Polls whose stop showed no input box the profile knows.
    pub unrecognised: u64,
}

/// The escalation counts as written, but for a reason this build does not
/// give (a newer monitor's), which is left out rather than the whole board
/// refused: nothing here shows it.
fn known_reasons<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<Reason, u64>, D::Error> {
    let written = BTreeMap::<String, u64>::deserialize(deserializer)?;
    Ok(written
        .into_iter()
        .filter_map(|(word, count)| Some((Reason::from_word(&word)?, count)))
        .collect())
}

/// One host (an ssh alias or this machine) as the last cycle reached it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRow {
    /// The ssh alias, or [`LOCAL_HOST`].
    pub host: String,
    /// False when no pane of the host could be read in the last cycle and
    /// every one failed the same way (the host's server or its ssh failed,
    /// not one session).
    pub reachable: bool,
    /// The shared error while unreachable.
    pub error: Option<String>,
    /// Epoch seconds since which `reachable` holds.
    pub since: i64,
    /// Captures of its panes that failed.
    pub capture_failures: u64,
    /// Probe runs (work, progress) for its targets that gave no usable answer.
    pub probe_failures: u64,
}

/// One target's poll, as the loop hands it over.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The poll's report.
    pub report: &'a PollReport,
    /// The actions the monitor decided this poll (before they run).
    pub actions: &'a [Action],
    /// The CLI last recognised in the pane ([`crate::session::TargetMonitor::profile`]).
    pub cli: Option<&'a str>,
    /// Why the capture failed, when it did.
    pub capture_error: Option<&'a str>,
    /// Probes (work, progress) that gave no usable answer for this target.
    pub probe_failures: u32,
    /// The host answered the capture (the pane was read, or the host said it
    /// has no such session): whatever failed, it was not the host.
    pub host_answered: bool,
}

impl Board {
    /// A board for `targets`, nothing polled yet.
    pub fn new(pid: u32, now: i64, interval_secs: u64, budget: u32, targets: &[Target]) -> Board {
        let mut hosts: Vec<HostRow> = Vec::new();
        let rows = targets
            .iter()
            .map(|target| {
                let host = target.host.as_deref().unwrap_or(LOCAL_HOST).to_string();
                if !hosts.iter().any(|h| h.host == host) {
                    hosts.push(HostRow {
                        host: host.clone(),
                        reachable: true,
                        error: None,
                        since: now,
                        capture_failures: 0,
                        probe_failures: 0,
                    });
                }
                TargetRow {
                    target: target.to_string(),
                    host,
                    session: target.session.clone(),
                    cli: None,
                    state: None,
                    since: now,
                    polled: false,
                    nudges_used: 0,
                    budget,
                    rule: None,
                    evidence: None,
                    error: None,
                    host_answered: false,
                    last_action: None,
                    counts: TargetCounts::default(),
                    held_until: None,
                    server: None,
                }
            })
            .collect();
        Board {
            pid,
            started: now,
            updated: now,
            interval_secs,
            cycles: CycleTimes {
                count: 0,
                sum_seconds: 0.0,
                last_seconds: 0.0,
                buckets: vec![0; CYCLE_BUCKETS.len() + 1],
            },
            targets: rows,
            hosts,
        }
    }

    /// The board for another list of targets and interval (a reloaded config): a target
    /// that stays keeps its row (its counters, its state and since when),
    /// in the new order; a new one starts unpolled; a host keeps its row
    /// while a target of it stays.
    pub fn retarget(&mut self, targets: &[Target], interval_secs: u64, budget: u32, now: i64) {
        // Staleness is judged against the interval in force.
        self.interval_secs = interval_secs;
        let fresh = Board::new(self.pid, now, interval_secs, budget, targets);
        let mut old = std::mem::take(&mut self.targets);
        self.targets = fresh
            .targets
            .into_iter()
            .map(
                |row| match old.iter().position(|kept| kept.target == row.target) {
                    Some(at) => old.swap_remove(at),
                    None => row,
                },
            )
            .collect();
        let mut old_hosts = std::mem::take(&mut self.hosts);
        self.hosts = fresh
            .hosts
            .into_iter()
            .map(
                |row| match old_hosts.iter().position(|kept| kept.host == row.host) {
                    Some(at) => old_hosts.swap_remove(at),
                    None => row,
                },
            )
            .collect();
    }

    /// What the `index`-th target's poll means for its row and its host's.
    pub fn observe(&mut self, index: usize, observed: Observed<'_>, now: i64) {
        let Some(row) = self.targets.get_mut(index) else {
            return;
        };
        let report = observed.report;
        let state = report.state.map(|s| s.as_str().to_string());
        if !row.polled || state != row.state {
            row.since = now;
        }
        row.polled = true;
        row.state = state;
        row.cli = observed.cli.map(str::to_string);
        row.nudges_used = report.nudges_used;
        row.budget = report.budget;
        row.rule = report.rule.map(str::to_string);
        row.evidence = report.evidence.clone();
        row.error = observed.capture_error.map(str::to_string);
        row.host_answered = observed.host_answered;
        row.counts.unrecognised = report.unrecognised;
        row.held_until = report.held_until_epoch;
        let mut capture_failures = 0;
        let mut acted: Vec<String> = Vec::new();
        for done in &report.done {
            match done {
                Done::Nudged { .. } => row.counts.nudges += 1,
                Done::BudgetReset { .. } => row.counts.budget_resets += 1,
                Done::CaptureFailed => capture_failures += 1,
                _ => {}
            }
            if is_action(done) {
                acted.push(done.to_string());
            }
        }
        if !acted.is_empty() {
            row.last_action = Some(LastAction {
                what: acted.join(" · "),
                at: now,
                rule: row.rule.clone(),
                evidence: row.evidence.clone(),
            });
        }
        for action in observed.actions {
            if let Action::Alert(alert) = action {
                *row.counts.escalations.entry(alert.reason).or_default() += 1;
            }
        }
        let host = row.host.clone();
        if let Some(host) = self.hosts.iter_mut().find(|h| h.host == host) {
            host.capture_failures += capture_failures;
            host.probe_failures += u64::from(observed.probe_failures);
        }
    }

    /// A cycle ended after `seconds`: its time is counted, and each host's
    /// reachability follows from its targets' captures.
    pub fn cycle_done(&mut self, seconds: f64, now: i64) {
        let seconds = if seconds.is_finite() && seconds > 0.0 {
            seconds
        } else {
            0.0
        };
        self.updated = now;
        self.cycles.count += 1;
        self.cycles.sum_seconds += seconds;
        self.cycles.last_seconds = seconds;
        let bucket = CYCLE_BUCKETS
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(CYCLE_BUCKETS.len());
        if let Some(count) = self.cycles.buckets.get_mut(bucket) {
            *count += 1;
        }
        for host in &mut self.hosts {
            let error = host_error(self.targets.iter().filter(|t| t.host == host.host));
            let reachable = error.is_none();
            if reachable != host.reachable {
                host.since = now;
            }
            host.reachable = reachable;
            host.error = error;
        }
    }
}

impl Board {
    /// Each host with why it is unreachable now (`None`: it answered), from
    /// its targets' last polls, as [`Board::cycle_done`] will judge it.
    pub fn host_errors(&self) -> Vec<(String, Option<String>)> {
        self.hosts
            .iter()
            .map(|host| {
                let error = host_error(self.targets.iter().filter(|t| t.host == host.host));
                (host.host.clone(), error)
            })
            .collect()
    }
}

/// A host is unreachable when none of its polled targets' captures got an
/// answer from it and all failed with the same error: a failing ssh or tmux
/// server fails them all alike, while a host that says it has no such
/// session was reached.
fn host_error<'a>(targets: impl Iterator<Item = &'a TargetRow>) -> Option<String> {
    shared_failure(targets.map(|t| (t.host_answered, t.error.as_deref()))).map(str::to_string)
}

/// The one error a host's targets all failed with, none answered: `(host
/// answered, capture error)` per target. `None`: the host answered (or a
/// target of it read, or they failed differently).
pub fn shared_failure<'a>(
    targets: impl Iterator<Item = (bool, Option<&'a str>)>,
) -> Option<&'a str> {
    let mut first = None;
    for (answered, error) in targets {
        let error = error.filter(|_| !answered)?;
        match first {
            None => first = Some(error),
            Some(seen) if seen != error => return None,
            Some(_) => {}
        }
    }
    first
}

/// Whether a `Done` is something the monitor did about the target (shown as
/// its last action), rather than a note about what it read.
pub fn is_action(done: &Done) -> bool {
    match done {
        Done::Nudged { .. }
        | Done::EscalatedQuestion
        | Done::EscalatedBudgetSpent
        | Done::EscalatedBlocked
        | Done::EscalatedUnreadablePane
        | Done::EscalatedUsageLimit
        // The board says a hold once, like the poll line, and keeps it as the last action.
        | Done::Held { .. } => true,
        Done::Refused { escalated, .. } | Done::DraftWaiting { escalated, .. } => *escalated,
        Done::NotYet(_) => false,
        Done::BudgetReset { .. }
        | Done::BudgetRenewed
        | Done::CaptureFailed
        | Done::WitnessesDisagree { .. }
        | Done::PaneDecides { .. }
        | Done::QuestionPending
        | Done::LikelyUiChange { .. }
        | Done::NewFailure { .. } => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Alert, Latch, Reason, Refusal};
    use classify::State;
    use ledger::session::{EscalationKind, SessionRecord};

    fn targets() -> Vec<Target> {
        ["agent", "box1:a", "box1:b"]
            .iter()
            .map(|t| Target::parse(t).unwrap())
            .collect()
    }

    fn report(state: Option<State>, done: Vec<Done>) -> PollReport {
        PollReport {
            done,
            evidence: state.map(|_| " Do you want to proceed?".to_string()),
            ..crate::session::sample_report("agent", state)
        }
    }

    fn seen<'a>(report: &'a PollReport, actions: &'a [Action]) -> Observed<'a> {
        Observed {
            report,
            actions,
            cli: Some("claude"),
            capture_error: None,
            probe_failures: 0,
            host_answered: true,
        }
    }

    fn alert(reason: Reason) -> Action {
        let record = SessionRecord::Escalated {
            kind: EscalationKind::Question,
            key: String::new(),
        };
        Action::Alert(Alert {
            state: State::Question,
            reason,
            message: String::new(),
            latch: Latch::Escalation(EscalationKind::Question),
            record,
        })
    }

    #[test]
    fn a_state_keeps_its_start_while_it_holds_and_restarts_when_it_changes() {
        let mut board = Board::new(7, 100, 1, 5, &targets());
        let working = report(Some(State::Working), vec![]);
        board.observe(0, seen(&working, &[]), 101);
        board.observe(0, seen(&working, &[]), 105);
        assert_eq!(board.targets[0].since, 101);
        assert_eq!(board.targets[0].state.as_deref(), Some("WORKING"));
        let question = report(Some(State::Question), vec![Done::EscalatedQuestion]);
        board.observe(0, seen(&question, &[alert(Reason::Question)]), 110);
        let row = &board.targets[0];
        assert_eq!((row.state.as_deref(), row.since), (Some("QUESTION"), 110));
        assert_eq!(row.counts.escalations[&Reason::Question], 1);
        let last = row.last_action.as_ref().unwrap();
        assert_eq!(last.what, "escalated to the operator, NOT answered");
        assert_eq!(last.rule.as_deref(), Some("question-dialog"));
        assert_eq!(row.cli.as_deref(), Some("claude"));
    }

    #[test]
    fn a_retargeted_board_keeps_the_rows_that_stay_in_the_new_order() {
        let mut board = Board::new(7, 100, 1, 5, &targets());
        let asked = report(Some(State::Question), vec![]);
        board.observe(0, seen(&asked, &[]), 101);
        let kept = board.targets[0].clone();
        let mut next: Vec<Target> = vec![Target::parse("new").unwrap()];
        next.push(Target::parse(&kept.target).unwrap());
        board.retarget(&next, 30, 5, 200);
        assert_eq!(
            board.interval_secs, 30,
            "staleness follows the new interval"
        );
        assert_eq!(board.targets.len(), 2);
        assert_eq!(board.targets[0].target, "new");
        assert!(!board.targets[0].polled);
        assert_eq!(board.targets[1], kept, "the staying row is kept whole");
        assert!(board.hosts.iter().any(|h| h.host == kept.host));
    }

    #[test]
    fn nudges_and_budget_resets_are_counted_and_notes_are_no_action() {
        let mut board = Board::new(7, 100, 1, 5, &targets());
        let nudged = report(
            Some(State::Stalled),
            vec![
                Done::BudgetReset { from: 1, to: 2 },
                Done::Nudged { used: 1, budget: 5 },
            ],
        );
        board.observe(0, seen(&nudged, &[]), 101);
        let noted = report(
            Some(State::Stalled),
            vec![
                Done::QuestionPending,
                Done::Refused {
                    refusal: Refusal::NoInputBox,
                    why: "no input box".into(),
                    escalated: false,
                },
            ],
        );
        board.observe(0, seen(&noted, &[]), 102);
        let row = &board.targets[0];
        assert_eq!((row.counts.nudges, row.counts.budget_resets), (1, 1));
        let last = row.last_action.as_ref().unwrap();
        assert_eq!((last.what.as_str(), last.at), ("nudged (1/5)", 101));
    }

    /// Found by a review: a host's only target naming a session the host
    /// does not have showed the host as down.
    #[test]
    fn a_host_that_says_it_has_no_such_session_is_reachable() {
        let mut board = Board::new(7, 100, 1, 5, &[Target::parse("box9:typo").unwrap()]);
        let failed = report(None, vec![Done::CaptureFailed]);
        let observed = Observed {
            capture_error: Some("no tmux session named `typo` on box9"),
            host_answered: true,
            ..seen(&failed, &[])
        };
        board.observe(0, observed, 101);
        board.cycle_done(0.02, 101);
        assert!(board.hosts[0].reachable, "{:?}", board.hosts);
        let down = Observed {
            capture_error: Some("ssh: connect to host box9 port 22: Connection refused"),
            host_answered: false,
            ..seen(&failed, &[])
        };
        board.observe(0, down, 102);
        board.cycle_done(0.02, 102);
        assert!(!board.hosts[0].reachable, "{:?}", board.hosts);
    }

    #[test]
    fn a_host_is_unreachable_when_all_its_targets_fail_alike_and_back_when_one_reads() {
        let mut board = Board::new(7, 100, 1, 5, &targets());
        let failed = report(None, vec![Done::CaptureFailed]);
        let ok = report(Some(State::Working), vec![]);
        let down = |board: &mut Board, error_b: &str, now| {
            board.observe(0, seen(&ok, &[]), now);
            for (i, error) in [(1, "ssh: connection refused"), (2, error_b)] {
                let observed = Observed {
                    capture_error: Some(error),
                    probe_failures: 1,
                    host_answered: error.starts_with("no tmux session"),
                    ..seen(&failed, &[])
                };
                board.observe(i, observed, now);
            }
            board.cycle_done(0.02, now);
        };
        down(&mut board, "no tmux session named `b` on box1", 101);
        assert!(board.hosts.iter().all(|h| h.reachable), "{:?}", board.hosts);
        down(&mut board, "ssh: connection refused", 102);
        let host = &board.hosts[1];
        assert_eq!(
            (host.host.as_str(), host.reachable, host.since),
            ("box1", false, 102)
        );
        assert_eq!(host.error.as_deref(), Some("ssh: connection refused"));
        assert_eq!((host.capture_failures, host.probe_failures), (4, 4));
        assert!(board.hosts[0].reachable, "the local host read its pane");
        board.observe(1, seen(&ok, &[]), 103);
        board.cycle_done(0.02, 103);
        assert!(board.hosts[1].reachable);
        assert_eq!(board.hosts[1].since, 103);
    }

    #[test]
    fn cycle_times_fall_into_their_buckets() {
        let mut board = Board::new(7, 100, 1, 5, &targets());
        for seconds in [0.005, 0.01, 0.2, 45.0, f64::NAN] {
            board.cycle_done(seconds, 101);
        }
        let cycles = &board.cycles;
        assert_eq!(cycles.count, 5);
        assert_eq!(cycles.buckets, [3, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert!((cycles.sum_seconds - 45.215).abs() < 1e-9);
        assert_eq!(board.updated, 101);
    }

    #[test]
    fn a_board_is_stale_when_its_process_is_gone_or_its_loop_froze() {
        let mut board = Board::new(42, 1000, 10, 5, &targets());
        board.cycle_done(0.1, 1000);
        assert_eq!(freshness(&board, true, 1089), Freshness::Live);
        assert_eq!(
            freshness(&board, true, 1091),
            Freshness::Stale("monitor pid 42 completed no cycle for 1m31s".into())
        );
        assert_eq!(
            freshness(&board, false, 1005),
            Freshness::Gone("monitor pid 42 is gone; last cycle 5s ago".into())
        );
    }

    fn check(sources: &[Source], now: i64, expected: &[&str]) {
        assert_eq!(table(sources, now, None), expected);
    }

    #[test]
    fn a_reason_in_wide_characters_fits_the_terminals_columns_not_its_characters() {
        // A CJK character takes two columns: counted as one, its row wrapped
        // at 80 (found by review, in a real 80x24 pane).
        let mut board = Board::new(42, 100, 1, 5, &targets()[..2]);
        for i in 0..2 {
            let mut polled = report(Some(State::Question), vec![Done::EscalatedQuestion]);
            polled.evidence = Some("请问你要继续吗？这个命令需要批准才能运行，".repeat(3));
            board.observe(i, seen(&polled, &[alert(Reason::Question)]), 101);
        }
        board.cycle_done(0.2, 101);
        let sources = [Source {
            name: "f".into(),
            reading: Reading::Board(Box::new(board), Freshness::Live),
        }];
        let columns = |line: &String| unicode_width::UnicodeWidthStr::width(line.as_str());
        let lines = table(&sources, 160, Some(80));
        assert!(lines.iter().all(|l| columns(l) <= 80), "{lines:#?}");
        assert!(
            lines[2].contains("请问") && lines[2].ends_with('…'),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_summary_too_wide_for_the_terminal_still_counts_the_unreachable_hosts() {
        let mut board = Board::new(42, 100, 1, 5, &targets()[..1]);
        let question = report(Some(State::Question), vec![Done::EscalatedQuestion]);
        board.observe(0, seen(&question, &[alert(Reason::Question)]), 101);
        board.cycle_done(0.5, 101);
        let mut sources = vec![Source {
            name: "board/42.json".into(),
            reading: Reading::Board(Box::new(board), Freshness::Live),
        }];
        for host in ["alpha", "bravo", "charlie", "delta", "echo"] {
            sources.push(Source {
                name: format!("http://watcher-{host}.example:9184"),
                reading: Reading::Unreachable("connection refused".into()),
            });
        }
        // Wide enough: every name, as before.
        let wide = table(&sources, 110, None);
        assert_eq!(
            wide[0],
            "1 target · 1 QUESTION; unreachable: http://watcher-alpha.example:9184, \
             http://watcher-bravo.example:9184, http://watcher-charlie.example:9184, \
             http://watcher-delta.example:9184, http://watcher-echo.example:9184"
        );
        // At 80 columns the cut would hide all but the first: they are counted
        // among the urgent states instead, the names after them as far as they fit.
        let narrow = table(&sources, 110, Some(80));
        assert!(
            narrow[0].starts_with("1 target · 1 QUESTION · 5 unreachable; unreachable: "),
            "{narrow:#?}"
        );
        assert!(narrow[0].chars().count() <= 80, "{narrow:#?}");
    }

    #[test]
    fn the_table_shows_a_summary_then_the_urgent_rows_first() {
        let mut board = Board::new(42, 100, 1, 5, &targets());
        let failed = report(None, vec![Done::CaptureFailed]);
        for i in [1, 2] {
            let observed = Observed {
                capture_error: Some("ssh: connect to host box1 port 22: Connection refused"),
                host_answered: false,
                ..seen(&failed, &[])
            };
            board.observe(i, observed, 102);
        }
        let question = report(Some(State::Question), vec![Done::EscalatedQuestion]);
        board.observe(0, seen(&question, &[alert(Reason::Question)]), 101);
        board.cycle_done(0.5, 102);
        let mut working = Board::new(43, 100, 1, 5, &targets()[..1]);
        let busy = report(Some(State::Working), vec![]);
        working.observe(0, seen(&busy, &[]), 100);
        working.cycle_done(0.1, 100);
        let sources = [
            Source {
                name: "board/43.json".into(),
                reading: Reading::Board(Box::new(working), Freshness::Live),
            },
            Source {
                name: "board/42.json".into(),
                reading: Reading::Board(Box::new(board.clone()), Freshness::Live),
            },
            Source {
                name: "127.0.0.1:9".into(),
                reading: Reading::Unreachable("connection refused".into()),
            },
        ];
        check(
            &sources,
            171,
            &[
                "4 targets · 1 QUESTION · 1 WORKING; unreachable: box1 (2), 127.0.0.1:9",
                "TARGET           CLI     STATE        FOR    NUDGES  LAST ACTION                                          WHY",
                "agent [42.json]  claude  QUESTION     1m10s  0/5     escalated to the operator, NOT answered (1m10s ago)  question-dialog: Do you want to proceed?",
                "box1:* (2)       -       unreachable  1m09s  -       -                                                    ssh: connect to host box1 port 22: Connection refused",
                "127.0.0.1:9 *    -       unreachable  -      -       -                                                    connection refused",
                "agent [43.json]  claude  WORKING      1m11s  0/5     -                                                    question-dialog: Do you want to proceed?",
            ],
        );
        // A frozen monitor's rows are marked stale; a gone one's are said once, in the summary.
        let frozen = [Source {
            name: "board/42.json".into(),
            reading: Reading::Board(
                Box::new(board.clone()),
                Freshness::Stale("monitor pid 42 completed no cycle for 5m00s".into()),
            ),
        }];
        let lines = table(&frozen, 171, None);
        assert_eq!(lines.len(), 5, "{lines:#?}");
        assert!(lines[0].starts_with("3 targets · 3 stale"), "{lines:#?}");
        assert!(
            lines[2..]
                .iter()
                .all(|l| l.contains(" stale ") && l.ends_with("completed no cycle for 5m00s")),
            "{lines:#?}"
        );
        let gone = [Source {
            name: "board/42.json".into(),
            reading: Reading::Board(
                Box::new(board),
                Freshness::Gone("monitor pid 42 is gone".into()),
            ),
        }];
        assert_eq!(
            table(&gone, 171, None),
            [
                "0 targets; not shown: 3 targets of a watcher that is gone (monitor pid 42 is gone)",
                "TARGET  CLI  STATE  FOR  NUDGES  LAST ACTION  WHY",
            ]
        );
    }

    #[test]
    fn at_80_columns_every_row_fits_and_the_why_keeps_its_room() {
        let names: Vec<Target> = (0..30)
            .map(|i| Target::parse(&format!("gpu{}:agent-{i}", i % 3)).unwrap())
            .collect();
        let mut board = Board::new(42, 100, 1, 5, &names);
        for i in 0..30 {
            let mut polled = report(
                Some(if i % 7 == 0 {
                    State::Question
                } else {
                    State::Working
                }),
                if i % 7 == 0 {
                    vec![Done::EscalatedQuestion]
                } else {
                    vec![]
                },
            );
            polled.evidence = Some(format!(
                "{}  Do you want to proceed?{}",
                " ".repeat(8),
                " ".repeat(80)
            ));
            board.observe(i, seen(&polled, &[alert(Reason::Question)]), 101);
        }
        board.cycle_done(0.2, 101);
        let lines = table(
            &[Source {
                name: "f".into(),
                reading: Reading::Board(Box::new(board), Freshness::Live),
            }],
            160,
            Some(80),
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
        assert!(
            lines[1].starts_with("TARGET") && !lines[1].contains("LAST ACTION"),
            "{lines:#?}"
        );
        assert!(
            lines[2].starts_with("gpu0:agent-0 ") && lines[2].contains("QUESTION"),
            "{lines:#?}"
        );
        // The reason, squeezed to one line of words, takes the rest of the row.
        assert!(
            lines[2].contains("  question-dialog: Do you want to")
                && lines[2].ends_with('…')
                && lines[2].chars().count() == 80,
            "{lines:#?}"
        );
        let questions = lines[2..]
            .iter()
            .filter(|l| l.contains(" QUESTION "))
            .count();
        assert_eq!(questions, 5);
        assert!(
            lines[2..7].iter().all(|l| l.contains(" QUESTION ")),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_cell_carries_no_control_character_and_is_cut_to_its_width() {
        let mut board = Board::new(42, 100, 1, 5, &targets()[..1]);
        let mut question = report(Some(State::Question), vec![]);
        question.evidence = Some(format!("\x1b[31mred{}", "x".repeat(200)));
        board.observe(0, seen(&question, &[]), 100);
        let lines = table(
            &[Source {
                name: "f".into(),
                reading: Reading::Board(Box::new(board), Freshness::Live),
            }],
            100,
            None,
        );
        let why = lines[2].split("  ").last().unwrap();
        assert!(why.starts_with("question-dialog: ?[31mred"), "{why}");
        assert!(why.ends_with('…') && why.chars().count() == 90, "{why}");
    }

    #[test]
    fn ages_read_as_a_person_says_them() {
        let ages: Vec<String> = [-3, 0, 59, 60, 185, 3599, 3600, 7380, 86400, 93600]
            .into_iter()
            .map(age)
            .collect();
        assert_eq!(
            ages,
            [
                "0s", "0s", "59s", "1m00s", "3m05s", "59m59s", "1h00m", "2h03m", "1d00h", "1d02h"
            ]
        );
    }

    #[test]
    fn a_board_survives_its_json_form() {
        let mut board = Board::new(42, 100, 1, 5, &targets());
        let question = report(Some(State::Question), vec![Done::EscalatedQuestion]);
        board.observe(0, seen(&question, &[alert(Reason::Question)]), 101);
        board.cycle_done(0.3, 101);
        let text = wire::to_json(&board);
        let back = wire::from_json(&text).unwrap();
        assert_eq!(back, board);
    }
}
