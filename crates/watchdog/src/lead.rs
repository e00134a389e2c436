//! The lead monitor (seed `bmb-monitor.txt`): a metadata watcher that a Lead
//! starts as its child, reporting only state changes of its watch items.
//!
//! **Architecture Invariant:** metadata only, by construction. [`LeadPort`]
//! can stat a path, check a pid file, list panes, and hand back a [`Head`] of
//! at most [`Head::MAX_LINES`] lines and [`Head::MAX_BYTES`] bytes. There is
//! no method that returns more of any file, so no branch here can read a
//! result body, however it is written.
//!
//! The monitor is a plain value: [`LeadMonitor::apply`] takes a control
//! message, [`LeadMonitor::pass`] observes through the port at the time the
//! [`Clock`] gives and returns what to say. The binary owns the loop and the sinks.

pub mod message;
pub mod render;

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use ledger::escalation::EscalationTracker;

use crate::Clock;
use crate::PortError;

pub use message::{AckEvent, Control, ControlError, Reporting, WatchItem, parse_control};
pub use render::{FeedUpdate, Handoff, Report, State, WatchdogEvent};

/// What `stat` says about a path (following symlinks, as `test -f` does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meta {
    /// Nothing is there.
    Missing,
    /// Something is there; `regular` is `test -f`: a regular file, or a
    /// symlink to one. A directory is present but is no result.
    Present {
        /// Bytes, a change of which is progress.
        size: u64,
        /// Modification time in nanoseconds, a change of which is progress.
        mtime_ns: i128,
        /// `test -f` holds.
        regular: bool,
    },
}

/// What a pid file says. Absent or empty is [`PidCheck::NotRecorded`]: the
/// startup window, never a death. A file that holds something that is not a
/// pid (`-1`, `seven`) or cannot be read is [`PidCheck::Invalid`], reported
/// as an error and otherwise treated like "not recorded".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidCheck {
    /// The pid it names runs.
    Alive(u32),
    /// The pid it names is gone: the agent died.
    Dead(u32),
    /// Absent or empty: the startup window.
    NotRecorded,
    /// Not a pid, or unreadable: why.
    Invalid(String),
}

/// At most the first [`Head::MAX_LINES`] lines of a result file, at most
/// [`Head::MAX_BYTES`] bytes in all. The constructor enforces both bounds,
/// whatever an adapter hands it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    lines: Vec<String>,
}

impl Head {
    /// The seed: "You may NOT read beyond line 5 of any file".
    pub const MAX_LINES: usize = 5;
    /// Headers are short; a bound in bytes keeps one giant "line" out too.
    pub const MAX_BYTES: usize = 1024;

    /// The head of a file from its lines, cut to both bounds.
    pub fn new(lines: impl IntoIterator<Item = String>) -> Head {
        let mut budget = Head::MAX_BYTES;
        let mut kept = Vec::new();
        for mut line in lines.into_iter().take(Head::MAX_LINES) {
            if line.len() > budget {
                let cut = (0..=budget)
                    .rev()
                    .find(|&i| line.is_char_boundary(i))
                    .unwrap_or(0);
                line.truncate(cut);
            }
            budget -= line.len();
            kept.push(line);
            if budget == 0 {
                break;
            }
        }
        Head { lines: kept }
    }

    /// The lines kept, at most [`Head::MAX_LINES`].
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The `Type` and `Status` headers: `Type: x`, also as `**Type:** x` or
    /// `- Status: y` (Markdown handoffs), case-insensitive keys.
    pub fn handoff(&self) -> Handoff {
        let mut handoff = Handoff::default();
        for line in &self.lines {
            let line = line.trim_start_matches(['#', '*', '-', '>', ' ', '\t']);
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let key = key.trim_end_matches(['*', ' ']).to_ascii_lowercase();
            let value = value.trim_matches(['*', ' ', '\t']).to_owned();
            match key.as_str() {
                "type" if handoff.kind.is_none() => handoff.kind = Some(value),
                "status" if handoff.status.is_none() => handoff.status = Some(value),
                _ => {}
            }
        }
        handoff
    }
}

/// One pane of the current tmux window, with the pids of its process tree
/// (the pane's own pid and every descendant), all from one observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pane {
    /// The pane's tmux id (`%N`).
    pub id: String,
    /// The pane's first process.
    pub pid: u32,
    /// tmux says its program ended (`#{pane_dead}`).
    pub dead: bool,
    /// The pid and every descendant's, for the sweep's "does this pane hold a registered pid?".
    pub tree: Vec<u32>,
}

/// Everything the lead monitor may ask of the machine.
pub trait LeadPort {
    /// Existence, size and mtime. An error is neither present nor missing.
    fn stat(&mut self, path: &str) -> Result<Meta, PortError>;
    /// Reads a pid file and checks its process.
    fn pid_file(&mut self, path: &str) -> PidCheck;
    /// The first lines of a result file, for its `Type` and `Status` headers.
    fn result_head(&mut self, path: &str) -> Result<Head, PortError>;
    /// CPU percentage of the pid's process tree since the previous call for
    /// the same pid, when it can be measured (auxiliary evidence only). The
    /// monitor calls it once halfway to a stall to start the measurement, and
    /// again when it reports the stall.
    fn cpu_pct(&mut self, pid: u32) -> Option<u32>;
    /// The panes of the monitor's own tmux window.
    fn list_panes(&mut self) -> Result<Vec<Pane>, PortError>;
    /// The Consultant's pane id, from `<bmb-dir>/consultant-pane-id`, if recorded.
    fn consultant_pane(&mut self) -> Option<String>;
}

/// The monitor's settings (the CLI's flags).
#[derive(Debug, Clone)]
pub struct LeadConfig {
    /// Seconds without metadata progress before an alive process counts as stalled.
    pub idle_stall_sec: u64,
    /// Seconds a `stalled` or `process_died` report waits for an ack before a repeat.
    pub ack_timeout_sec: u64,
    /// Seconds between pane sweeps; `None` turns the sweep off.
    pub sweep_interval_sec: Option<u64>,
    /// `<bmb-dir>/consultant-feed.md`: only its mtime is ever looked at.
    pub feed_path: String,
    /// Panes the sweep never reports: the Lead's own, and any given on the command line.
    pub known_panes: Vec<String>,
}

/// What the monitor has to say, for the binary to route to its sinks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A `[MONITOR]` line or a watchdog JSON message, for the Lead.
    Lead(String),
    /// A lifecycle JSON event, for the Consultant.
    Consultant(String),
    /// One line for stderr: something went wrong and was survived.
    Error(String),
}

/// After a control message: go on, or exit 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Read the next message.
    Continue,
    /// A `shutdown` message: stop watching and exit 0.
    Shutdown,
}

/// Why a well-formed control message could not be applied; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplyError {
    /// A blind-phase update for an (agent, step) that was never registered.
    UnknownItem {
        /// The agent the update named.
        agent: String,
        /// The step the update named.
        step: String,
    },
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::UnknownItem { agent, step } => write!(
                f,
                "blind-phase update for agent={agent} step={step}: no such watch item (fields `agent`, `step`)"
            ),
        }
    }
}

impl std::error::Error for ApplyError {}

/// An item's condition as one pass found it, with the pid that died.
#[derive(Debug, Clone, Copy)]
struct Found {
    condition: Condition,
    /// The pid the pid file named, when it is dead.
    died_pid: Option<u32>,
}

/// The observed condition of an item. `Running` is never reported: it is the
/// absence of news.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Condition {
    Running,
    ResultReady,
    ProcessDied,
    Stalled,
}

impl Condition {
    fn state(self) -> Option<State> {
        match self {
            Condition::Running => None,
            Condition::ResultReady => Some(State::ResultReady),
            Condition::ProcessDied => Some(State::ProcessDied),
            Condition::Stalled => Some(State::Stalled),
        }
    }
}

/// The seed's per-item state: `last_size`/`last_mtime` (as the fingerprint of
/// every watched path), `last_state`, `timeout_warned_90`, `timeout_warned_100`.
#[derive(Debug, Clone)]
struct Tracked {
    item: WatchItem,
    /// The idle clock: registration, or the latest metadata change.
    idle_since: i64,
    /// The result file's metadata at the last answered stat.
    last_result: Option<Meta>,
    /// The watch paths' metadata at the last live pass.
    fingerprint: Option<Vec<Option<Meta>>>,
    /// The condition seen on the previous pass.
    condition: Condition,
    /// The last state REPORTED; a state is never reported twice in a row.
    last_state: Option<State>,
    timeout_warned_90: bool,
    timeout_warned_100: bool,
    /// The pid last seen alive, for the sweep's "is this pane tracked?".
    last_pid: Option<u32>,
    /// The idle period (by its start) for which a CPU measurement was started.
    cpu_primed_for: Option<i64>,
    /// False until the item's first check: a new item is checked promptly
    /// ([`LeadMonitor::check_new`]), not a whole interval after it arrived.
    checked: bool,
}

impl Tracked {
    fn new(item: WatchItem, now: i64) -> Tracked {
        Tracked {
            item,
            idle_since: now,
            last_result: None,
            fingerprint: None,
            condition: Condition::Running,
            last_state: None,
            timeout_warned_90: false,
            timeout_warned_100: false,
            last_pid: None,
            cpu_primed_for: None,
            checked: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PaneState {
    Tracked,
    Dead,
    Untracked,
}

/// The lead monitor's whole state.
#[derive(Debug)]
pub struct LeadMonitor {
    config: LeadConfig,
    items: Vec<Tracked>,
    index: HashMap<(String, String), usize>,
    escalations: EscalationTracker<State>,
    /// `None` until the feed is first observed; then its mtime, if it exists.
    feed_mtime: Option<Option<i128>>,
    last_sweep: Option<i64>,
    panes: HashMap<String, PaneState>,
    /// The last error reported per source, so each is said once per change.
    errors: HashMap<String, String>,
}

impl LeadMonitor {
    /// A monitor watching nothing yet, with its settings.
    pub fn new(config: LeadConfig) -> LeadMonitor {
        LeadMonitor {
            config,
            items: Vec::new(),
            index: HashMap::new(),
            escalations: EscalationTracker::new(),
            feed_mtime: None,
            last_sweep: None,
            panes: HashMap::new(),
            errors: HashMap::new(),
        }
    }

    /// How many watch items are registered.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no item is watched (the loop then only reads control messages).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// True when an item (new, or re-registered as a new run) has not been
    /// checked yet: the binary then calls [`LeadMonitor::check_new`] at once.
    pub fn has_unchecked(&self) -> bool {
        self.items.iter().any(|t| !t.checked)
    }

    /// Checks only the items that were never checked, so a registration is
    /// answered promptly (a result already there is reported now, not an
    /// interval later) without changing the pass cadence of the others.
    /// The repeats, the feed and the sweep stay with [`LeadMonitor::pass`].
    pub fn check_new(&mut self, port: &mut impl LeadPort, clock: &impl Clock) -> Vec<Output> {
        let now = clock.now();
        let ts = clock.hhmm(now);
        let mut out = Vec::new();
        for i in 0..self.items.len() {
            if !self.items[i].checked {
                self.check_item(i, port, now, &ts, &mut out);
            }
        }
        out
    }

    /// Applies one control message received at `now`. An error names what is
    /// wrong, and nothing has changed.
    pub fn apply(&mut self, control: Control, now: i64) -> Result<Applied, ApplyError> {
        match control {
            Control::Shutdown => return Ok(Applied::Shutdown),
            Control::Watch(item) => self.register(item, now),
            Control::BlindPhase {
                agent,
                step,
                blind_phase,
            } => {
                let key = (agent, step);
                let Some(&i) = self.index.get(&key) else {
                    let (agent, step) = key;
                    return Err(ApplyError::UnknownItem { agent, step });
                };
                self.items[i].item.blind_phase = blind_phase;
            }
            Control::Ack { event, agent } => {
                self.escalations.ack(event.state(), &agent);
            }
        }
        Ok(Applied::Continue)
    }

    /// A new item starts its idle clock now. The same `agent` and `step` again
    /// updates the item; if it now names another run (result path, pid file or
    /// start time changed), its history starts over.
    fn register(&mut self, item: WatchItem, now: i64) {
        let key = (item.agent.clone(), item.step.clone());
        match self.index.get(&key) {
            Some(&i) => {
                let old = &self.items[i].item;
                let new_run = old.result_path != item.result_path
                    || old.pid_file != item.pid_file
                    || old.started_at_epoch != item.started_at_epoch;
                if new_run {
                    self.escalations.resolve(&item.agent, &item.step);
                    self.items[i] = Tracked::new(item, now);
                } else {
                    let tracked = &mut self.items[i];
                    if tracked.item.timeout_sec != item.timeout_sec {
                        tracked.timeout_warned_90 = false;
                        tracked.timeout_warned_100 = false;
                    }
                    if tracked.item.watch_paths != item.watch_paths {
                        tracked.fingerprint = None;
                    }
                    tracked.item = item;
                }
            }
            None => {
                self.index.insert(key, self.items.len());
                self.items.push(Tracked::new(item, now));
            }
        }
    }

    /// One monitoring pass: every item in registration order, then the
    /// repeats that are due, the feed heartbeat, and the sweep when due.
    pub fn pass(&mut self, port: &mut impl LeadPort, clock: &impl Clock) -> Vec<Output> {
        let now = clock.now();
        let ts = clock.hhmm(now);
        let mut out = Vec::new();
        for i in 0..self.items.len() {
            self.check_item(i, port, now, &ts, &mut out);
        }
        for repeat in self.escalations.due(
            now,
            i64::try_from(self.config.ack_timeout_sec).unwrap_or(i64::MAX),
        ) {
            let event = WatchdogEvent::NudgeRepeat {
                original_event: repeat.event,
                agent: &repeat.agent,
                nudge_count: repeat.nudge_count,
                ts: &ts,
            };
            out.push(Output::Lead(event.to_line()));
        }
        self.check_feed(port, &ts, &mut out);
        if let Some(interval) = self.config.sweep_interval_sec {
            // The first sweep comes one sweep interval after the first pass,
            // not at startup. The Lead starts its monitor and then registers
            // its agents; a sweep at t=0 would call every agent pane
            // `untracked_pane` before the Lead had a chance to register it,
            // a false alarm on every start. One interval is the grace any
            // pane gets anyway (a pane opened just after a sweep waits as
            // long), and a pane that stays unregistered is still reported.
            let due = match self.last_sweep {
                None => {
                    self.last_sweep = Some(now);
                    false
                }
                Some(last) => now.saturating_sub(last) >= interval as i64,
            };
            if due {
                self.last_sweep = Some(now);
                self.sweep(port, &ts, &mut out);
            }
        }
        out
    }

    /// One item's pass, in the seed's order: its result file, then (with no
    /// result) its process and its progress, the change of condition
    /// reported, then its timeout checkpoints.
    fn check_item(
        &mut self,
        i: usize,
        port: &mut impl LeadPort,
        now: i64,
        ts: &str,
        out: &mut Vec<Output>,
    ) {
        self.items[i].checked = true;
        let result_meta = self.check_result(i, port, now, out);
        let found = self.condition_of(i, result_meta, port, now, out);
        self.report_change(i, found, port, now, ts, out);
        self.check_timeouts(i, found.condition, port, now, ts, out);
    }

    /// Step 1, the result file: `test -f`, a regular file (or a symlink to one).
    /// Its own size and mtime count as progress on every pass, so one that
    /// appears and vanishes between two live passes is seen. `None`: the
    /// stat could not answer (said as an error).
    fn check_result(
        &mut self,
        i: usize,
        port: &mut impl LeadPort,
        now: i64,
        out: &mut Vec<Output>,
    ) -> Option<Meta> {
        let result = port.stat(&self.items[i].item.result_path);
        let result_meta = self.observed_item(i, "result_path", result, out);
        let tracked = &mut self.items[i];
        if result_meta.is_some() {
            if tracked
                .last_result
                .is_some_and(|last| Some(last) != result_meta)
            {
                tracked.idle_since = now;
            }
            tracked.last_result = result_meta;
        }
        result_meta
    }

    /// Step 2, the item's condition from its result and, only while there is no
    /// result, its process's liveness.
    fn condition_of(
        &mut self,
        i: usize,
        result_meta: Option<Meta>,
        port: &mut impl LeadPort,
        now: i64,
        out: &mut Vec<Output>,
    ) -> Found {
        let condition = match result_meta {
            Some(Meta::Present { regular: true, .. }) => {
                // The sweep asks "does this pane hold a registered pid?": an
                // item whose result was there from its first pass must still
                // record its pid, or its live pane reads as untracked.
                if self.items[i].last_pid.is_none()
                    && let PidCheck::Alive(pid) = port.pid_file(&self.items[i].item.pid_file)
                {
                    self.items[i].last_pid = Some(pid);
                }
                Condition::ResultReady
            }
            // An unanswerable stat is no news: the item keeps its condition.
            None => self.items[i].condition,
            // A directory (or any non-regular file) is not a result: as missing.
            Some(Meta::Missing) | Some(Meta::Present { regular: false, .. }) => {
                return self.liveness(i, port, now, out);
            }
        };
        Found {
            condition,
            died_pid: None,
        }
    }

    /// With no result: the pid file says whether the agent died, runs, or
    /// has not recorded itself yet (an unreadable one is said as an error).
    fn liveness(
        &mut self,
        i: usize,
        port: &mut impl LeadPort,
        now: i64,
        out: &mut Vec<Output>,
    ) -> Found {
        let check = port.pid_file(&self.items[i].item.pid_file);
        if let PidCheck::Invalid(why) = &check {
            let key = self.item_key(i, "pid_file");
            let label = self.item_key(i, "");
            let msg = format!("lead: {}: field `pid_file`: {why}", label.trim_end());
            self.note_error(key, msg, out);
        } else if !self.errors.is_empty() {
            let key = self.item_key(i, "pid_file");
            self.errors.remove(&key);
        }
        let (condition, died_pid) = match check {
            PidCheck::Dead(pid) => (Condition::ProcessDied, Some(pid)),
            PidCheck::Alive(pid) => (self.stall_or_running(i, pid, port, now, out), None),
            PidCheck::NotRecorded | PidCheck::Invalid(_) => (Condition::Running, None),
        };
        Found {
            condition,
            died_pid,
        }
    }

    /// Step 3: a stall needs all three: alive, no result, and no metadata
    /// progress for idle_stall_sec. The watch paths only matter here, so
    /// only a live item pays for their stats.
    fn stall_or_running(
        &mut self,
        i: usize,
        pid: u32,
        port: &mut impl LeadPort,
        now: i64,
        out: &mut Vec<Output>,
    ) -> Condition {
        self.track_progress(i, port, now, out);
        let tracked = &mut self.items[i];
        tracked.last_pid = Some(pid);
        let idle_stall = tracked
            .item
            .idle_stall_sec
            .unwrap_or(self.config.idle_stall_sec);
        let idle = now.saturating_sub(tracked.idle_since);
        if idle >= idle_stall as i64 {
            return Condition::Stalled;
        }
        // Halfway to a stall: start the CPU measurement the stall report will carry.
        if idle.saturating_mul(2) >= idle_stall as i64
            && tracked.cpu_primed_for != Some(tracked.idle_since)
        {
            tracked.cpu_primed_for = Some(tracked.idle_since);
            let _ = port.cpu_pct(pid);
        }
        Condition::Running
    }

    /// A change of condition: the earlier report resolved (repeating it
    /// would cry wolf), and the new state reported once, a stall or a death
    /// raised for escalation.
    fn report_change(
        &mut self,
        i: usize,
        found: Found,
        port: &mut impl LeadPort,
        now: i64,
        ts: &str,
        out: &mut Vec<Output>,
    ) {
        let condition = found.condition;
        let tracked = &mut self.items[i];
        let previous = tracked.condition;
        tracked.condition = condition;
        if condition != previous {
            let item = &self.items[i].item;
            self.escalations.resolve(&item.agent, &item.step);
        }
        let tracked = &mut self.items[i];
        let Some(state) = condition.state() else {
            return;
        };
        if tracked.last_state == Some(state) || condition == previous {
            return;
        }
        tracked.last_state = Some(state);
        let report = match condition {
            Condition::ResultReady => Report::ResultReady {
                file: tracked.item.result_path.clone(),
            },
            Condition::ProcessDied => Report::ProcessDied {
                pid: found.died_pid.unwrap_or(0),
            },
            _ => {
                let pid = tracked.last_pid.unwrap_or(0);
                let idle_sec = now.saturating_sub(tracked.idle_since).max(0) as u64;
                Report::Stalled {
                    idle_sec,
                    cpu_pct: port.cpu_pct(pid),
                }
            }
        };
        if matches!(condition, Condition::Stalled | Condition::ProcessDied) {
            let item = &self.items[i].item;
            self.escalations.raise(state, &item.agent, &item.step, now);
        }
        self.report(i, report, port, ts, out);
    }

    /// Step 4, timeout checkpoints, once each and in order, while the agent is
    /// still at work. One pass can cross both (a 9 s timeout, passes at 8 s
    /// and 9 s): the Consultant, told only of the imminent one, must hear
    /// it before the exceeded one, never instead of it.
    fn check_timeouts(
        &mut self,
        i: usize,
        condition: Condition,
        port: &mut impl LeadPort,
        now: i64,
        ts: &str,
        out: &mut Vec<Output>,
    ) {
        if !matches!(condition, Condition::Running | Condition::Stalled) {
            return;
        }
        let tracked = &mut self.items[i];
        let mut reports = Vec::new();
        let timeout = tracked.item.timeout_sec;
        let elapsed = now.saturating_sub(tracked.item.started_at_epoch).max(0) as u64;
        if elapsed.saturating_mul(10) >= timeout.saturating_mul(9) && !tracked.timeout_warned_90 {
            tracked.timeout_warned_90 = true;
            reports.push(Report::TimeoutImminent { elapsed, timeout });
        }
        if elapsed >= timeout && !tracked.timeout_warned_100 {
            tracked.timeout_warned_100 = true;
            reports.push(Report::TimeoutExceeded { elapsed, timeout });
        }
        for report in reports {
            self.items[i].last_state = Some(report.state());
            self.report(i, report, port, ts, out);
        }
    }

    /// The seed's `last_size`/`last_mtime` for every watch path: any change
    /// restarts the idle clock.
    fn track_progress(
        &mut self,
        i: usize,
        port: &mut impl LeadPort,
        now: i64,
        out: &mut Vec<Output>,
    ) {
        let mut fingerprint = Vec::with_capacity(self.items[i].item.watch_paths.len());
        for p in 0..self.items[i].item.watch_paths.len() {
            let meta = port.stat(&self.items[i].item.watch_paths[p]);
            let what = format!("watch_paths {}", self.items[i].item.watch_paths[p]);
            fingerprint.push(self.observed_item(i, &what, meta, out));
        }
        let tracked = &mut self.items[i];
        if tracked
            .fingerprint
            .as_ref()
            .is_some_and(|previous| *previous != fingerprint)
        {
            tracked.idle_since = now;
        }
        tracked.fingerprint = Some(fingerprint);
    }

    /// `agent=NAME step=N WHAT`: an item's error key and message prefix.
    fn item_key(&self, i: usize, what: &str) -> String {
        let item = &self.items[i].item;
        format!("agent={} step={} {what}", item.agent, item.step)
    }

    /// [`LeadMonitor::observed`] for an item; the key is only built when needed.
    fn observed_item(
        &mut self,
        i: usize,
        what: &str,
        meta: Result<Meta, PortError>,
        out: &mut Vec<Output>,
    ) -> Option<Meta> {
        if meta.is_ok() && self.errors.is_empty() {
            return meta.ok();
        }
        let key = self.item_key(i, what);
        self.observed(key, meta, out)
    }

    /// A stat answer, or `None` with its error said once.
    fn observed(
        &mut self,
        key: String,
        meta: Result<Meta, PortError>,
        out: &mut Vec<Output>,
    ) -> Option<Meta> {
        match meta {
            Ok(meta) => {
                self.errors.remove(&key);
                Some(meta)
            }
            Err(why) => {
                let msg = format!("lead: {key}: {why}");
                self.note_error(key, msg, out);
                None
            }
        }
    }

    /// The Lead line, and the Consultant's event if the seed has one.
    fn report(
        &mut self,
        i: usize,
        report: Report,
        port: &mut impl LeadPort,
        ts: &str,
        out: &mut Vec<Output>,
    ) {
        let item = &self.items[i].item;
        out.push(Output::Lead(render::lead_line(
            &item.agent,
            &item.step,
            &report,
            ts,
        )));
        // Blind phase: the result file is not even opened, so nothing from it can leak.
        let handoff = match (&report, item.consultant_reporting, item.blind_phase) {
            (Report::ResultReady { file }, Reporting::Full, false) => {
                let key = format!("agent={} step={} handoff", item.agent, item.step);
                match port.result_head(file) {
                    Ok(head) => {
                        self.errors.remove(&key);
                        Some(head.handoff())
                    }
                    Err(why) => {
                        self.note_error(key.clone(), format!("lead: {key}: {why}"), out);
                        None
                    }
                }
            }
            _ => None,
        };
        let item = &self.items[i].item;
        if let Some(event) =
            render::consultant_event(&item.agent, &item.step, &report, handoff.as_ref(), ts)
        {
            out.push(Output::Consultant(event));
        }
    }

    /// The Consultant feed heartbeat: an mtime change is news; the content is never read.
    fn check_feed(&mut self, port: &mut impl LeadPort, ts: &str, out: &mut Vec<Output>) {
        let path = self.config.feed_path.clone();
        let Some(meta) = self.observed(format!("feed {path}"), port.stat(&path), out) else {
            return;
        };
        let mtime = match meta {
            Meta::Present { mtime_ns, .. } => Some(mtime_ns),
            Meta::Missing => None,
        };
        if let Some(previous) = self.feed_mtime
            && previous != mtime
            && mtime.is_some()
        {
            out.push(Output::Consultant(FeedUpdate::at(ts).to_line()));
        }
        self.feed_mtime = Some(mtime);
    }

    /// The watchdog sweep of the current window. Never kills a pane.
    fn sweep(&mut self, port: &mut impl LeadPort, ts: &str, out: &mut Vec<Output>) {
        let panes = match port.list_panes() {
            Ok(panes) => {
                self.errors.remove("sweep");
                panes
            }
            Err(why) => {
                self.note_error("sweep".to_owned(), format!("lead: sweep: {why}"), out);
                return;
            }
        };
        let mut known: BTreeSet<String> = self.config.known_panes.iter().cloned().collect();
        known.extend(port.consultant_pane());
        let registered: BTreeSet<u32> = self.items.iter().filter_map(|t| t.last_pid).collect();
        let mut seen = HashMap::new();
        for pane in panes.iter().filter(|p| !known.contains(&p.id)) {
            let state = if pane.dead {
                PaneState::Dead
            } else if pane.tree.iter().any(|pid| registered.contains(pid)) {
                PaneState::Tracked
            } else {
                PaneState::Untracked
            };
            if self.panes.get(&pane.id) != Some(&state) {
                match state {
                    PaneState::Dead => {
                        let event = WatchdogEvent::PaneDead { pane: &pane.id, ts };
                        out.push(Output::Lead(event.to_line()));
                    }
                    PaneState::Untracked => {
                        let event = WatchdogEvent::UntrackedPane {
                            pane: &pane.id,
                            pid: pane.pid,
                            ts,
                        };
                        out.push(Output::Lead(event.to_line()));
                    }
                    PaneState::Tracked => {}
                }
            }
            seen.insert(pane.id.clone(), state);
        }
        self.panes = seen;
    }

    /// Says `msg` unless it is what this source said last time.
    fn note_error(&mut self, key: String, msg: String, out: &mut Vec<Output>) {
        if self.errors.get(&key) != Some(&msg) {
            out.push(Output::Error(msg.clone()));
            self.errors.insert(key, msg);
        }
    }
}

#[cfg(test)]
mod tests;
