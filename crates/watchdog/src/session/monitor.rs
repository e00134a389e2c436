//! The session monitor (seed `omega-session-monitor.txt`) for one target, as
//! a state machine: an observation in (the captured pane, the work and
//! progress probes), a poll report and actions out. The loop that captures,
//! persists, sends and alerts lives in the CLI; everything decided lives here.
//!
//! WORKING: nothing. QUESTION: escalate once per distinct question, verbatim,
//! never a key. STALLED: nudge, the budget bound to progress. BLOCKED:
//! escalate once with the work number and the last transition, never nudge.

use std::collections::hash_map::DefaultHasher;
use std::fmt;
use std::hash::{Hash, Hasher};

use classify::{BoxText, Context, Echo, Profiles, State, UsageLimit, Verdict, Work};
use jiff::Timestamp;
use ledger::session::{EscalationKind, SessionMemory, SessionRecord};

use super::foreground::refusal_of;
use super::witness::{Witness, combine};
use super::{
    Action, Alert, CAPTURE_FAILURE_PATIENCE, Done, Foreground, Latch, PollReport, RESET_MARGIN,
    Reason, Refusal, STILL_PANE_PATIENCE, SessionConfig, Wait, builtin_profiles,
};

/// One poll's readings for one target.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    /// The pane, or why it could not be captured.
    pub capture: Result<&'a str, &'a str>,
    /// The work probe's reading.
    pub work: Work,
    /// The progress probe's reading; `None` when absent or unreadable.
    pub progress: Option<u64>,
    /// The agent's own account of its state, where one was found (`crate::session::witness`).
    pub witness: Option<&'a Witness>,
    /// What runs in the foreground of the pane's terminal, where it could be read.
    pub foreground: Option<&'a Foreground>,
    /// The agent CLI's version, where its own files give it (Claude Code's session file).
    pub cli_version: Option<&'a str>,
    /// The pane that was read (`%N`) and its first process, where tmux said.
    pub pane_id: Option<&'a str>,
    /// The pane's first process, where tmux said.
    pub pane_pid: Option<u32>,
    /// When a key was last pressed in the pane's session (epoch seconds,
    /// tmux's `#{session_activity}`), where tmux said: a person at the
    /// keyboard since the last poll means no typing this poll.
    pub activity: Option<i64>,
    /// When a client last attached to the session (epoch seconds, tmux's
    /// `#{session_last_attached}`), where tmux said. tmux moves the
    /// session's activity on an attach too: an activity equal to it is a
    /// person arriving (or a viewer attaching), which holds the typing as a
    /// key does, but is no key, so it renews no budget.
    pub last_attached: Option<i64>,
    /// Whether the pane has the focus (the active pane of its session's
    /// current window: where an attached client's keys go); `None`: unknown,
    /// read as focused. A key counts unless the pane had no focus both at the
    /// last poll and now (a person working in another pane).
    pub focused: Option<bool>,
    /// The time of this poll, for what the screen says about time (a usage
    /// limit's reset). `None`: unknown, so no reset can be read.
    pub now: Option<Now<'a>>,
}

/// The time of a poll, and the time zone database as a port (the monitor
/// reads no file): a usage limit's `resets 4:20pm (Asia/Tbilisi)` needs both.
#[derive(Clone, Copy)]
pub struct Now<'a> {
    /// The local time, in this machine's zone (what a CLI prints without a zone name).
    pub local: &'a jiff::ZonedDateTime,
    /// A time zone by its tz database name (`Asia/Tbilisi`), if there is one.
    pub zones: &'a dyn Fn(&str) -> Option<jiff::tz::TimeZone>,
}

impl fmt::Debug for Now<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Now")
            .field("local", self.local)
            .finish_non_exhaustive()
    }
}

/// The session monitor's state for one target.
#[derive(Debug)]
pub struct TargetMonitor {
    target: String,
    config: SessionConfig,
    memory: SessionMemory,
    echo: Echo,
    last_hash: Option<u64>,
    last_work: Work,
    last_verdict: Option<Verdict>,
    polls_since_classify: u32,
    last_error: Option<String>,
    /// How many times the pane was classified (the rest reused a verdict).
    pub classifications: u64,
    /// Polls where the pane and the second witness disagreed.
    pub disagreements: u64,
    /// The disagreement last said, so a lasting one is said once.
    last_disagreement: Option<(State, &'static str)>,
    /// Consecutive polls that captured the same pane text.
    unchanged_polls: u32,
    /// The agent CLI last recognised in this pane.
    profile: Option<String>,
    /// Claude Code's own session file was found for this pane's process:
    /// the agent is Claude Code, whatever its screen shows.
    witnessed_claude: bool,
    /// Polls whose stop showed no input box the profile knows.
    pub unrecognised: u64,
    /// Polls in a row whose capture failed.
    failed_captures: u32,
    /// The foreground program (tmux's name for it) the last time this pane's
    /// input box was recognised: a screen not recognised later with the same
    /// program in front is likely a UI change (said once).
    box_seen: Option<Option<String>>,
    ui_change_said: bool,
    /// The profiles the pane is read with (the built-ins, or the user's too).
    profiles: std::sync::Arc<Profiles>,
    /// The screen as last seen, its ink left out (a redrawn cursor is no
    /// change), and polls in a row it held still: a nudge waits for one.
    still_hash: Option<u64>,
    still_polls: u32,
    /// The pane (`%N`, first process) that screen was read from: the same
    /// screen in another pane (a restarted server's, a new window) is a new
    /// stop, not one that held still.
    still_pane: Option<(String, Option<u32>)>,
    /// The session's last key time and this monitor's last poll (epoch
    /// seconds), as the previous poll saw them.
    last_activity: Option<i64>,
    last_poll_at: Option<i64>,
    /// Whether the pane had the focus at the last poll.
    last_focused: bool,
    /// The usage-limit reset last said as held.
    held_said: Option<Timestamp>,
}

impl TargetMonitor {
    /// A monitor that resumes from `memory` (replayed from its journal).
    pub fn new(
        target: impl Into<String>,
        config: SessionConfig,
        memory: SessionMemory,
    ) -> TargetMonitor {
        let echo = Echo::new(&memory.sent);
        let still_pane = memory.agent_pane.clone();
        // A stop seen before a restart: the same screen now held still since.
        let (still_hash, last_activity) = memory
            .stop_seen
            .map_or((None, None), |(hash, activity)| (Some(hash), activity));
        TargetMonitor {
            target: target.into(),
            config,
            memory,
            echo,
            last_hash: None,
            last_work: Work::Unknown,
            last_verdict: None,
            polls_since_classify: 0,
            last_error: None,
            classifications: 0,
            disagreements: 0,
            last_disagreement: None,
            unchanged_polls: 0,
            profile: None,
            witnessed_claude: false,
            unrecognised: 0,
            failed_captures: 0,
            box_seen: None,
            ui_change_said: false,
            profiles: builtin_profiles(),
            still_pane,
            still_hash,
            still_polls: 0,
            last_activity,
            last_poll_at: None,
            last_focused: true,
            held_said: None,
        }
    }

    /// What the monitor remembers (replayed from and journalled to its ledger).
    pub fn memory(&self) -> &SessionMemory {
        &self.memory
    }

    /// The agent CLI's profile that last recognised this pane, if one did;
    /// else `claude` when Claude Code's own session file names the pane's
    /// process (its permission dialog carries no profile's markers), for
    /// the alerts' and the metrics' `cli` label.
    pub fn profile(&self) -> Option<&str> {
        self.profile
            .as_deref()
            .or(self.witnessed_claude.then_some("claude"))
    }

    /// A pane that cannot be read for [`CAPTURE_FAILURE_PATIENCE`] polls in a
    /// row is watched by nobody: said once through the funnel, re-armed by
    /// the next capture that works (a silence nothing bounds is the one
    /// failure the seed forbids).
    fn on_capture_failing(&mut self, error: &str, actions: &mut Vec<Action>, done: &mut Vec<Done>) {
        let patient = self.failed_captures < CAPTURE_FAILURE_PATIENCE;
        if patient
            || self
                .memory
                .escalated
                .contains_key(&EscalationKind::CaptureFailed)
        {
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::CaptureFailed,
            key: String::new(),
        };
        self.memory.apply(&latch_record);
        let message = format!(
            "{} cannot be read: {} polls in a row failed to capture its pane, so nothing watches it. \
             The last error: {error}",
            self.target, self.failed_captures
        );
        actions.push(Action::Alert(Alert {
            state: State::Stalled,
            reason: Reason::CaptureFailed,
            message,
            latch: Latch::Escalation(EscalationKind::CaptureFailed),
            record: latch_record,
        }));
        done.push(Done::EscalatedUnreadablePane);
    }

    /// Reads the pane with these profiles from the next poll on (the user's
    /// profile folder changed); the pane is classified afresh.
    pub fn set_profiles(&mut self, profiles: std::sync::Arc<Profiles>) {
        self.profiles = profiles;
        self.last_hash = None;
        self.last_verdict = None;
    }

    /// Runs with `config` from the next poll on (a reloaded config file
    /// changed the budget, the nudge or the profile): what the monitor
    /// remembers (nudges used, what was escalated, the echo ledger) stays,
    /// and the pane is classified afresh.
    pub fn set_config(&mut self, config: SessionConfig) {
        self.config = config;
        self.last_hash = None;
        self.last_verdict = None;
    }

    /// Whether `pane`'s box holds `text` and nothing else, or still nothing
    /// (the CLI has not drawn it yet): a nudge just typed, checked before its
    /// Enter. Anything else there (a person's key joined it) and the Enter
    /// must not be pressed.
    pub fn box_holds_only(&self, pane: &str, text: &str) -> bool {
        let profiles = &*self.profiles;
        let profile = self
            .forced_profile()
            .or_else(|| self.profile.as_deref().and_then(|name| profiles.get(name)));
        // No echo: our own text then reads as what it is, a draft in the box.
        let context = Context::new(profiles).with_profile(profile);
        let verdict = classify::classify_with(pane, Work::Available(1), &context);
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        match &verdict.box_text {
            BoxText::Draft(typed) => words(typed) == words(text),
            BoxText::Empty | BoxText::Placeholder | BoxText::OwnText => true,
        }
    }

    /// The profile the config forces on this pane, when one in force has its name.
    fn forced_profile(&self) -> Option<&classify::Profile> {
        self.config
            .profile
            .as_deref()
            .and_then(|name| self.profiles.get(name))
    }

    /// An alert that could not be delivered did not reach anyone: undo its
    /// latch so the next poll sends it again. Returns the records to persist.
    pub fn alert_failed(&mut self, alert: &Alert) -> Vec<SessionRecord> {
        let record = match &alert.latch {
            Latch::Escalation(kind) => SessionRecord::Rearmed { kind: *kind },
            Latch::Failure(signal) => SessionRecord::FailureRetracted {
                signal: signal.clone(),
            },
        };
        self.memory.apply(&record);
        vec![record]
    }

    /// Decides one poll, in named steps: the pane read (or its failure
    /// said), judged with the second witness and the foreground, what the
    /// monitor remembers of it kept, then the state acted on: nothing for
    /// WORKING, the question relayed, the stop nudged, held or escalated.
    pub fn poll(&mut self, observation: Observation<'_>) -> (PollReport, Vec<Action>) {
        if let Some(witness) = observation.witness {
            self.witnessed_claude = !matches!(witness, Witness::Absent(_));
        }
        let mut actions = Vec::new();
        let mut done = Vec::new();
        self.track_progress(observation.progress, &mut actions, &mut done);
        let mut report = self.blank_report(observation);
        let key_pressed = self.key_pressed(observation);
        let attach_only =
            observation.activity.is_some() && observation.activity == observation.last_attached;
        self.renew_budget(key_pressed && !attach_only, &mut actions, &mut done);
        let Some(pane) = self.read_capture(observation, &mut report, &mut actions, &mut done)
        else {
            report.done = done;
            return (report, actions);
        };
        let judged = self.judge(pane, observation, key_pressed, &mut done);
        self.track_agent_pane(&judged, observation, &mut report, &mut actions);
        self.report_verdict(&judged, &mut report);
        self.keep_stop_memory(&judged, observation.activity, &mut actions);
        match &judged.refused {
            Some((refusal, why)) => {
                self.on_refused(
                    &judged,
                    (*refusal, why),
                    observation,
                    &mut actions,
                    &mut done,
                );
            }
            None => self.act_on(&judged, observation, &mut report, &mut actions, &mut done),
        }
        if self.polls_since_classify == 0 {
            self.report_new_failures(pane, &mut actions, &mut done);
        }
        report.nudges_used = self.memory.nudges_used;
        report.disagreements = self.disagreements;
        report.done = done;
        (report, actions)
    }

    /// The poll's report before the pane is read: what the probes said.
    fn blank_report(&self, observation: Observation<'_>) -> PollReport {
        PollReport {
            target: self.target.clone(),
            state: None,
            work: observation.work,
            // What the probe said this poll: `?` when it said nothing usable.
            progress: observation.progress,
            nudges_used: self.memory.nudges_used,
            budget: self.config.budget,
            done: Vec::new(),
            rule: None,
            evidence: None,
            error: None,
            pane_state: None,
            witness: observation.witness.map(Witness::word),
            disagreements: self.disagreements,
            typing_safe: false,
            refusal: None,
            unrecognised: self.unrecognised,
            agent_seen: false,
            deferred: None,
            held_until: None,
            held_until_epoch: None,
        }
    }

    /// The pane's text, or `None` when it could not be captured: the failure
    /// is said (its error in full once per change, the loop goes on) and,
    /// past [`CAPTURE_FAILURE_PATIENCE`], escalated; a capture that works
    /// re-arms that escalation.
    fn read_capture<'o>(
        &mut self,
        observation: Observation<'o>,
        report: &mut PollReport,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) -> Option<&'o str> {
        match observation.capture {
            Ok(pane) => {
                self.last_error = None;
                self.failed_captures = 0;
                if self
                    .memory
                    .escalated
                    .contains_key(&EscalationKind::CaptureFailed)
                {
                    let record = SessionRecord::Rearmed {
                        kind: EscalationKind::CaptureFailed,
                    };
                    self.record(record, actions);
                }
                Some(pane)
            }
            Err(error) => {
                if self.last_error.as_deref() != Some(error) {
                    report.error = Some(error.to_string());
                    self.last_error = Some(error.to_string());
                }
                done.push(Done::CaptureFailed);
                self.failed_captures += 1;
                self.on_capture_failing(error, actions, done);
                None
            }
        }
    }

    /// The pane's verdict and the state taken from it: the second witness
    /// heard, an exited agent read as a stop, and why a stop must not be
    /// typed into, if it must not.
    fn judge<'o>(
        &mut self,
        pane: &'o str,
        observation: Observation<'o>,
        key_pressed: bool,
        done: &mut Vec<Done>,
    ) -> Judged<'o> {
        let verdict = self.verdict(pane, observation.work);
        self.forget_stillness_of_another_pane(observation);
        self.track_stillness(pane, &verdict);
        let mut state = self.second_witness(verdict.state, observation.witness, done);
        let exited = observation.foreground.and_then(Foreground::gone);
        if exited.is_some() {
            // Whatever the last frame shows (a spinner, a dialog), nothing
            // runs there any more: it is a stop, and the work probe says which.
            state = observation.work.stop().0;
        }
        let stop = matches!(state, State::Stalled | State::Blocked);
        // The agent is not (or no longer) what this pane shows.
        let elsewhere =
            exited.is_some() || observation.foreground.and_then(Foreground::relay).is_some();
        let refused = stop
            .then(|| refusal_of(&verdict, observation.foreground, exited))
            .flatten();
        Judged {
            pane,
            verdict,
            state,
            stop,
            elsewhere,
            refused,
            key_pressed,
            // Borrowed: a poll that changes nothing allocates nothing for it.
            front: observation.foreground.map(|f| f.command.as_str()),
        }
    }

    /// Whether this pane's input box was last read with `front` in the
    /// foreground (the same program, so an unreadable box is a UI change).
    fn box_seen_with(&self, front: Option<&str>) -> bool {
        self.box_seen.as_ref().map(|s| s.as_deref()) == Some(front)
    }

    /// Where the agent is: the program in front when its input box was
    /// read, the count of stops with no box the profile knows, and the pane
    /// the agent was seen in (forgotten once it left that pane).
    fn track_agent_pane(
        &mut self,
        judged: &Judged<'_>,
        observation: Observation<'_>,
        report: &mut PollReport,
        actions: &mut Vec<Action>,
    ) {
        let refusal = judged.refusal();
        if judged.verdict.input_box && refusal.is_none() && !self.box_seen_with(judged.front) {
            self.box_seen = Some(judged.front.map(str::to_string));
        }
        if refusal == Some(Refusal::NoInputBox) {
            self.unrecognised += 1;
        }
        report.typing_safe = judged.stop && refusal.is_none();
        report.agent_seen = judged.verdict.input_box && !judged.elsewhere;
        let remembered = self
            .memory
            .agent_pane
            .as_ref()
            .map(|(pane, _)| pane.as_str());
        if let Some(pane) = observation.pane_id {
            let here = (pane.to_string(), observation.pane_pid);
            if report.agent_seen && self.memory.agent_pane.as_ref() != Some(&here) {
                let (pane, pid) = here;
                self.record(SessionRecord::AgentPane { pane, pid }, actions);
            } else if remembered == Some(pane)
                && matches!(refusal, Some(Refusal::AgentExited | Refusal::Relay))
            {
                // The agent left the pane it was seen in: read the session's
                // active pane again from the next poll (once this is said).
                self.record(SessionRecord::AgentPaneForgotten, actions);
            }
        }
    }

    /// The verdict's fields of the report: the state taken and the pane's
    /// own, the rule and evidence line, and why a stop was refused.
    fn report_verdict(&self, judged: &Judged<'_>, report: &mut PollReport) {
        report.refusal = judged.refusal();
        report.unrecognised = self.unrecognised;
        report.state = Some(judged.state);
        report.pane_state = Some(judged.verdict.state);
        report.rule = Some(judged.verdict.rule.name());
        report.evidence = judged.verdict.evidence.as_ref().map(|e| e.text.clone());
    }

    /// What outlives the poll: escalations re-armed by another verdict, a
    /// usage limit gone from the screen, and a stop's screen journalled.
    fn keep_stop_memory(
        &mut self,
        judged: &Judged<'_>,
        activity: Option<i64>,
        actions: &mut Vec<Action>,
    ) {
        let verdict = &judged.verdict;
        self.rearm(judged.state, judged.refusal(), verdict, actions);
        // A limit off screen (the CLI continued, or another verdict) is over.
        let limit_shown = judged.stop && verdict.usage_limit.is_some();
        if !limit_shown && self.memory.limit_seen.is_some() {
            self.record(SessionRecord::LimitGone, actions);
        }
        // The pane's own stop too (a witness's `busy` over it): a working
        // pane, which changes every poll, writes nothing.
        if judged.stop || matches!(verdict.state, State::Stalled | State::Blocked) {
            self.remember_stop(activity, actions);
        }
    }

    /// The seed's rule for the state of a stop nothing refused (or of a
    /// pane that is no stop): WORKING nothing, QUESTION relayed once,
    /// STALLED nudged within the budget, BLOCKED escalated once.
    fn act_on(
        &mut self,
        judged: &Judged<'_>,
        observation: Observation<'_>,
        report: &mut PollReport,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let verdict = &judged.verdict;
        match judged.state {
            State::Working => {}
            State::Question if verdict.state != State::Question => {
                if self.unchanged_polls < STILL_PANE_PATIENCE && !waiting_without_a_box(verdict) {
                    // The agent waits for a human but the dialog is not drawn
                    // yet: never nudged, escalated once its text can be relayed.
                    done.push(Done::QuestionPending);
                } else {
                    // Still no readable dialog: relay what the screen shows.
                    let shown = Verdict {
                        dialog: bottom_lines(judged.pane, 15),
                        ..verdict.clone()
                    };
                    self.on_question(&shown, actions, done);
                }
            }
            State::Question => self.on_question(verdict, actions, done),
            State::Stalled => {
                let wait = judged
                    .key_pressed
                    .then_some(Wait::KeyPressed)
                    .or(self.unsettled());
                self.on_stalled(observation, (verdict, wait), report, actions, done);
                if report.deferred.is_some() {
                    report.typing_safe = false;
                }
            }
            State::Blocked => self.on_blocked(judged.pane, observation.work, actions, done),
        }
    }

    /// Combines the pane verdict with the agent's own account (see
    /// `crate::session::witness` for the rule), counts disagreements, and says a new
    /// one once.
    fn second_witness(
        &mut self,
        pane: State,
        witness: Option<&Witness>,
        done: &mut Vec<Done>,
    ) -> State {
        let Some(witness) = witness else { return pane };
        let combined = combine(pane, witness);
        if !combined.disagree {
            self.last_disagreement = None;
            return combined.state;
        }
        self.disagreements += 1;
        // The file overrules a stop only while the pane moves or for a few
        // polls: a turn that runs changes the screen, and a silence that
        // nothing bounds is the one failure the seed forbids.
        // A `waiting` agent stays a QUESTION (never nudged: a nudge could land
        // in a dialog the pane reader cannot see); it is escalated once the
        // patience runs out, with what the screen shows.
        let patient = self.unchanged_polls < STILL_PANE_PATIENCE;
        let busy_overrule = combined.overruled && combined.state == State::Working;
        let state = if busy_overrule && !patient {
            pane
        } else {
            combined.state
        };
        let pair = (pane, witness.word());
        if self.last_disagreement != Some(pair) {
            self.last_disagreement = Some(pair);
            done.push(Done::WitnessesDisagree {
                pane,
                witness: witness.word(),
                so: (state != pane).then_some(state),
            });
        } else if busy_overrule && self.unchanged_polls == STILL_PANE_PATIENCE {
            done.push(Done::PaneDecides {
                witness: witness.word(),
            });
        }
        state
    }

    /// The pane's verdict. Activity inferred from the transcript's shape, on
    /// a screen that has not moved for a while, is not activity: a turn that
    /// runs changes the screen, so the pane is then read as a stop.
    fn verdict(&mut self, pane: &str, work: Work) -> Verdict {
        let mut verdict = self.classify_pane(pane, work);
        if verdict.rule.infers_activity() && self.unchanged_polls >= STILL_PANE_PATIENCE {
            (verdict.state, verdict.rule) = work.stop();
        }
        verdict
    }

    /// Classifies only a pane that changed, or one not re-decided for a while.
    fn classify_pane(&mut self, pane: &str, work: Work) -> Verdict {
        let mut hasher = DefaultHasher::new();
        pane.hash(&mut hasher);
        let hash = hasher.finish();
        self.unchanged_polls = if self.last_hash == Some(hash) {
            self.unchanged_polls + 1
        } else {
            0
        };
        let fresh = self.last_hash == Some(hash)
            && self.last_work == work
            && self.polls_since_classify + 1 < self.config.reclassify_every;
        if let (true, Some(verdict)) = (fresh, &self.last_verdict) {
            self.polls_since_classify += 1;
            return verdict.clone();
        }
        // The profile that last recognised this pane stays in force while no
        // profile's markers are on screen (a long reply fills the bottom lines).
        // A profile the config forces is read with whatever the screen shows.
        let profiles = &*self.profiles;
        let forced = self
            .config
            .profile
            .as_deref()
            .and_then(|name| profiles.get(name));
        let detected = forced.or_else(|| classify::detect_profile(pane, profiles));
        if let Some(profile) = detected {
            self.profile = Some(profile.name.clone());
        }
        let profile =
            detected.or_else(|| self.profile.as_deref().and_then(|name| profiles.get(name)));
        let context = Context::new(profiles)
            .with_profile(profile)
            .with_echo(&self.echo);
        let verdict = classify::classify_with(pane, work, &context);
        self.classifications += 1;
        self.last_hash = Some(hash);
        self.last_work = work;
        self.last_verdict = Some(verdict.clone());
        self.polls_since_classify = 0;
        verdict
    }

    fn record(&mut self, record: SessionRecord, actions: &mut Vec<Action>) {
        self.memory.apply(&record);
        if let SessionRecord::Sent { text } = &record {
            self.echo.record(text);
        }
        actions.push(Action::Record(record));
    }

    /// Progress advancing resets the nudge budget, and says so.
    fn track_progress(
        &mut self,
        progress: Option<u64>,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let Some(now) = progress else { return };
        match self.memory.progress {
            Some(before) if now > before => {
                self.record(
                    SessionRecord::BudgetReset {
                        from: before,
                        to: now,
                    },
                    actions,
                );
                done.push(Done::BudgetReset {
                    from: before,
                    to: now,
                });
            }
            // Progress is a high-water mark: a reading that went backwards (a
            // flapping or restarted probe) must not buy a fresh budget.
            Some(_) => {}
            None => self.record(SessionRecord::Progress { value: now }, actions),
        }
    }

    /// A person's key in the session (the shared keyboard) ends the episode
    /// the budget counted: someone is at the pane, and what the agent does
    /// next is a new story, with a new budget.
    fn renew_budget(&mut self, key_pressed: bool, actions: &mut Vec<Action>, done: &mut Vec<Done>) {
        let spent = self
            .memory
            .escalated
            .contains_key(&EscalationKind::BudgetSpent);
        if key_pressed && (self.memory.nudges_used > 0 || spent) {
            self.record(SessionRecord::BudgetRenewed, actions);
            done.push(Done::BudgetRenewed);
        }
    }

    /// An escalation may be sent again once the pane shows another verdict
    /// (for a refused stop: another verdict, or a stop that can be typed into).
    fn rearm(
        &mut self,
        state: State,
        refusal: Option<Refusal>,
        verdict: &Verdict,
        actions: &mut Vec<Action>,
    ) {
        let stop = matches!(state, State::Stalled | State::Blocked);
        for (kind, held) in [
            (EscalationKind::Question, state == State::Question),
            (EscalationKind::Blocked, state == State::Blocked),
            // A spent budget's episode ends when the pane works again: its
            // alert resolves (the budget stays spent until progress or a
            // person's key, so the next stop is escalated, not nudged).
            (EscalationKind::BudgetSpent, state != State::Working),
            (EscalationKind::Unreadable, refusal.is_some()),
            (EscalationKind::Draft, stop && !verdict.box_text.is_empty()),
            (
                EscalationKind::UsageLimit,
                stop && verdict.usage_limit.is_some(),
            ),
        ] {
            if !held && self.memory.escalated.contains_key(&kind) {
                self.record(SessionRecord::Rearmed { kind }, actions);
            }
        }
    }

    /// A stop that must not be typed into: never nudged, escalated once (one
    /// latch whatever the reason, so a screen that flips between two reasons
    /// is not paged twice) with the screen's bottom lines verbatim (the sink
    /// sanitises them). The state word stays the work probe's, as the seed has it.
    fn on_refused(
        &mut self,
        judged: &Judged<'_>,
        (refusal, why): (Refusal, &str),
        observation: Observation<'_>,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let (verdict, pane) = (&judged.verdict, judged.pane);
        // A screen the profile read before, unreadable now while the
        // same program is in front: the CLI changed how it draws.
        let ui_change = refusal == Refusal::NoInputBox && self.box_seen_with(judged.front);
        let ui_change = ui_change && !self.ui_change_said;
        if ui_change {
            self.ui_change_said = true;
            done.push(Done::LikelyUiChange {
                profile: verdict.profile.clone(),
                version: observation.cli_version.map(str::to_string),
            });
        }
        let key = REFUSED_KEY.to_string();
        if self
            .memory
            .escalated
            .contains_key(&EscalationKind::Unreadable)
        {
            done.push(Done::Refused {
                refusal,
                why: why.to_string(),
                escalated: false,
            });
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::Unreadable,
            key,
        };
        self.memory.apply(&latch_record);
        let state = observation.work.stop().0;
        let mut message = format!(
            "{state} on {}: {why}, so it was NOT typed into (a keystroke could answer a dialog or run as a command). \
             work={}. This needs a human.",
            self.target,
            observation.work.display()
        );
        if ui_change {
            message.push_str(&format!(
                "\nLikely UI change: the {} profile recognised this pane's input box before.",
                verdict.profile
            ));
            if let Some(version) = observation.cli_version {
                message.push_str(&format!(" The CLI reports version {version}."));
            }
        }
        message.push_str("\n\nThe bottom of the screen:\n");
        message.push_str(&bottom_lines(pane, 15).join("\n"));
        actions.push(Action::Alert(Alert {
            state,
            reason: Reason::Refused(refusal),
            message,
            latch: Latch::Escalation(EscalationKind::Unreadable),
            record: latch_record,
        }));
        done.push(Done::Refused {
            refusal,
            why: why.to_string(),
            escalated: true,
        });
    }

    fn on_question(&mut self, verdict: &Verdict, actions: &mut Vec<Action>, done: &mut Vec<Done>) {
        let dialog = verdict.dialog.join("\n");
        let key = fingerprint(&question_text(&dialog));
        if self.memory.escalated.get(&EscalationKind::Question) == Some(&key) {
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::Question,
            key,
        };
        self.memory.apply(&latch_record);
        let message = format!(
            "QUESTION on {}: the agent is waiting for a human. It was NOT answered.\n\n{}",
            self.target,
            dialog.trim_matches('\n')
        );
        actions.push(Action::Alert(Alert {
            state: State::Question,
            reason: Reason::Question,
            message,
            latch: Latch::Escalation(EscalationKind::Question),
            record: latch_record,
        }));
        done.push(Done::EscalatedQuestion);
    }

    /// A stop with work left: held while a usage limit has not reset,
    /// nudged within the budget once nobody is at the keyboard and the
    /// screen held still, never typed over a draft; escalated once the
    /// budget is spent. The verdict's `note` is what its profile says the
    /// nudge should add (Codex's background terminal: check it with /ps).
    fn on_stalled(
        &mut self,
        observation: Observation<'_>,
        (verdict, wait): (&Verdict, Option<Wait>),
        report: &mut PollReport,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let mut reset_due = None;
        if let Some(limit) = &verdict.usage_limit {
            match self.on_usage_limit(limit, observation, report, actions, done) {
                LimitHold::Handled => return,
                LimitHold::ResetPassed(at) => reset_due = Some(at),
            }
        }
        let budget = self.config.budget;
        if self.memory.nudges_used < budget {
            if let Some(wait) = wait {
                report.deferred = Some(wait.word());
                done.push(Done::NotYet(wait));
                return;
            }
            if !verdict.box_text.is_empty() {
                report.deferred = Some("draft");
                self.on_draft(&verdict.box_text, observation.work, actions, done);
                return;
            }
            let used = self.memory.nudges_used + 1;
            let text = match verdict.note.as_deref() {
                Some(note) => format!("{} Note: {note}.", self.config.nudge_text),
                None => self.config.nudge_text.clone(),
            };
            // Into the echo ledger BEFORE it is sent, so it can never come back as a signal.
            self.record(SessionRecord::Sent { text: text.clone() }, actions);
            self.record(SessionRecord::Nudged { used }, actions);
            actions.push(Action::Send(text));
            done.push(Done::Nudged { used, budget });
            if let (Some(at), Some((line, _, _))) = (reset_due, &self.memory.limit_seen) {
                let record = SessionRecord::LimitSeen {
                    line: line.clone(),
                    reset: at.as_second(),
                    nudged: true,
                };
                self.record(record, actions);
            }
            return;
        }
        if self
            .memory
            .escalated
            .contains_key(&EscalationKind::BudgetSpent)
        {
            return;
        }
        let key = budget.to_string();
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::BudgetSpent,
            key,
        };
        self.memory.apply(&latch_record);
        let progress = observation
            .progress
            .or(self.memory.progress)
            .map_or("?".to_string(), |p| p.to_string());
        let message = format!(
            "escalate_to_human: {} is STALLED and {budget} nudges produced no progress (progress={progress}, work={}). \
             Nudging has stopped; this needs a human.",
            self.target,
            observation.work.display()
        );
        actions.push(Action::Alert(Alert {
            state: State::Stalled,
            reason: Reason::BudgetSpent,
            message,
            latch: Latch::Escalation(EscalationKind::BudgetSpent),
            record: latch_record,
        }));
        done.push(Done::EscalatedBudgetSpent);
    }

    /// A draft that held still in the box of a stop due a nudge: never typed
    /// over (the person's words and ours would be sent as one), escalated
    /// once with the draft quoted; our own unsent nudge never gets a second copy.
    fn on_draft(
        &mut self,
        box_text: &BoxText,
        work: Work,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        let own = matches!(box_text, BoxText::OwnText);
        if self.memory.escalated.contains_key(&EscalationKind::Draft) {
            done.push(Done::DraftWaiting {
                own,
                escalated: false,
            });
            return;
        }
        let mut message = format!(
            "STALLED on {}: not typed into: {}. Nothing was typed (work={}); this needs a human: \
             send it or empty the box, and the stop is nudged once it holds still.",
            self.target,
            match own {
                false => "a draft is waiting in the box",
                true => "the box holds this monitor's own nudge, typed but not sent",
            },
            work.display()
        );
        if let BoxText::Draft(draft) = box_text {
            message.push_str("\n\nThe draft:\n");
            message.push_str(draft);
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::Draft,
            key: fingerprint(&message),
        };
        self.memory.apply(&latch_record);
        actions.push(Action::Alert(Alert {
            state: State::Stalled,
            reason: Reason::Draft,
            message,
            latch: Latch::Escalation(EscalationKind::Draft),
            record: latch_record,
        }));
        done.push(Done::DraftWaiting {
            own,
            escalated: true,
        });
    }

    /// A stop its CLI says a usage limit caused. Until the reset (plus
    /// [`RESET_MARGIN`]) it is held: no nudge, no escalation, said once per
    /// reset. After it, one nudge (the caller's, within the budget); the
    /// limit still on screen after that nudge, or a reset that cannot be
    /// read, is escalated once and never nudged.
    fn on_usage_limit(
        &mut self,
        limit: &UsageLimit,
        observation: Observation<'_>,
        report: &mut PollReport,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) -> LimitHold {
        let now = observation.now;
        let line = fingerprint(&limit.line);
        let anchored = match &self.memory.limit_seen {
            Some((seen, reset, nudged)) if *seen == line => Some((*reset, *nudged)),
            _ => None,
        };
        // Read once, when first seen: a wait counts from then, not from each poll.
        let at = match anchored {
            Some((reset, _)) => Timestamp::from_second(reset).ok(),
            None => limit.reset.as_deref().zip(now).and_then(|(phrase, now)| {
                crate::session::usage_limit::reset_at(phrase, now.local, now.zones)
            }),
        };
        if let (Some(at), None) = (at, anchored) {
            let record = SessionRecord::LimitSeen {
                line: line.clone(),
                reset: at.as_second(),
                nudged: false,
            };
            self.record(record, actions);
        }
        let (Some(at), Some(now)) = (at, now) else {
            let why = match limit.reset {
                Some(_) => "its reset time cannot be read",
                None => "the screen gives no reset time",
            };
            self.escalate_usage_limit(limit, why, observation.work, actions, done);
            return LimitHold::Handled;
        };
        if now.local.timestamp() < at + RESET_MARGIN {
            let until = crate::session::usage_limit::hhmm(at, now.local);
            if self.held_said != Some(at) {
                self.held_said = Some(at);
                done.push(Done::Held {
                    until: until.clone(),
                });
            }
            report.deferred = Some("usage_limit");
            report.held_until = Some(until);
            report.held_until_epoch = Some(at.as_second());
            return LimitHold::Handled;
        }
        if anchored.is_some_and(|(_, nudged)| nudged) {
            let why = format!(
                "it is still on screen after the reset at {} and one nudge",
                crate::session::usage_limit::hhmm(at, now.local)
            );
            self.escalate_usage_limit(limit, &why, observation.work, actions, done);
            return LimitHold::Handled;
        }
        LimitHold::ResetPassed(at)
    }

    fn escalate_usage_limit(
        &mut self,
        limit: &UsageLimit,
        why: &str,
        work: Work,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        if self
            .memory
            .escalated
            .contains_key(&EscalationKind::UsageLimit)
        {
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::UsageLimit,
            key: fingerprint(&limit.line),
        };
        self.memory.apply(&latch_record);
        let message = format!(
            "STALLED on {}: a usage limit stopped the agent and {why}, so it was not nudged (work={}). \
             This needs a human.\n\n{}",
            self.target,
            work.display(),
            limit.line.trim()
        );
        actions.push(Action::Alert(Alert {
            state: State::Stalled,
            reason: Reason::UsageLimit,
            message,
            latch: Latch::Escalation(EscalationKind::UsageLimit),
            record: latch_record,
        }));
        done.push(Done::EscalatedUsageLimit);
    }

    /// Whether a key was pressed in the session since the last poll: its
    /// last key time moved, or is no older than the last poll's second
    /// (tmux counts whole seconds, so a key in that second may be after it).
    fn key_pressed(&mut self, observation: Observation<'_>) -> bool {
        let now = observation.now.map(|now| now.local.timestamp().as_second());
        let focused = observation.focused.unwrap_or(true);
        let was_focused = std::mem::replace(&mut self.last_focused, focused);
        let pressed = match (observation.activity, self.last_activity) {
            (Some(activity), Some(before)) => {
                activity != before || self.last_poll_at.is_some_and(|at| activity >= at)
            }
            _ => false,
        } && (focused || was_focused);
        self.last_activity = observation.activity.or(self.last_activity);
        self.last_poll_at = now.or(self.last_poll_at);
        pressed
    }

    /// Journals a stop's screen when it changed, so a restarted monitor
    /// knows whether it held still meanwhile (a working pane, which changes
    /// every poll, writes nothing).
    fn remember_stop(&mut self, activity: Option<i64>, actions: &mut Vec<Action>) {
        let Some(hash) = self.still_hash else { return };
        let seen = (hash, activity.or(self.last_activity));
        if self.memory.stop_seen != Some(seen) {
            let (hash, activity) = seen;
            self.record(SessionRecord::StopSeen { hash, activity }, actions);
        }
    }

    /// The screen now read comes from another pane than the one the last
    /// (or the journal's) stop was seen in: that stop's hash says nothing
    /// of this pane. A first process tmux did not say matches any.
    fn forget_stillness_of_another_pane(&mut self, observation: Observation<'_>) {
        let Some(id) = observation.pane_id else {
            return;
        };
        if let Some((pane, pid)) = &mut self.still_pane {
            let same_pid = match (*pid, observation.pane_pid) {
                (Some(before), Some(now)) => before == now,
                _ => true,
            };
            if pane != id || !same_pid {
                self.still_hash = None;
                self.still_polls = 0;
            }
            // The same pane every poll: nothing allocated.
            if pane != id {
                id.clone_into(pane);
            }
            *pid = observation.pane_pid;
        } else {
            self.still_pane = Some((id.to_string(), observation.pane_pid));
        }
    }

    /// Counts the polls the stop held still: the same verdict, its box (from
    /// its top rule to its closing one) and the few newest lines above it the
    /// same text, its ink left out. A person typing changes the box, a key that changes nothing
    /// there moves the session's activity; what else moves on screen (a
    /// clock in the status bar, a line redrawn in the transcript) is no one
    /// at the keyboard, and must not keep a stop from ever holding still.
    /// A screen with no box the profile knows counts whole.
    fn track_stillness(&mut self, pane: &str, verdict: &Verdict) {
        let mut hasher = DefaultHasher::new();
        match verdict.region.kind {
            classify::RegionKind::InputBox => {
                let first = verdict.region.first.min(pane.len());
                let last = verdict.region.last.min(pane.len());
                let end = pane[last..].find('\n').map_or(pane.len(), |i| last + i);
                let boxed = pane.get(first.min(end)..end).unwrap_or(pane);
                plain_hash(boxed).hash(&mut hasher);
                // The newest lines above the box too: a turn that ran between
                // two polls left its reply and turn end there.
                let above = pane.get(..first).unwrap_or("").lines().rev();
                for line in above.filter(|l| !l.trim().is_empty()).take(NEWEST_LINES) {
                    plain_hash(line).hash(&mut hasher);
                }
            }
            _ => plain_hash(pane).hash(&mut hasher),
        }
        (verdict.state, verdict.rule.name()).hash(&mut hasher);
        let hash = hasher.finish();
        self.still_polls = match self.still_hash == Some(hash) {
            true => self.still_polls + 1,
            false => 0,
        };
        self.still_hash = Some(hash);
    }

    /// Why the stop has not held still for a whole interval, if it has not.
    fn unsettled(&self) -> Option<Wait> {
        match (self.still_polls, self.classifications) {
            (0, 0..=1) => Some(Wait::NewWatcher),
            (0, _) => Some(Wait::ScreenMoved),
            _ => None,
        }
    }

    fn on_blocked(
        &mut self,
        pane: &str,
        work: Work,
        actions: &mut Vec<Action>,
        done: &mut Vec<Done>,
    ) {
        if self.memory.escalated.contains_key(&EscalationKind::Blocked) {
            return;
        }
        let latch_record = SessionRecord::Escalated {
            kind: EscalationKind::Blocked,
            key: work.display(),
        };
        self.memory.apply(&latch_record);
        let context = Context::new(&self.profiles)
            .with_profile(self.forced_profile())
            .with_echo(&self.echo);
        let transition = classify::signals(pane, &context).transition;
        let last =
            transition.map_or_else(|| "none shown".to_string(), |t| t.text.trim().to_string());
        let message = format!(
            "BLOCKED on {}: the agent stopped and the work probe says nothing is left (work={}). \
             It was not nudged. Last transition: {last}",
            self.target,
            work.display()
        );
        actions.push(Action::Alert(Alert {
            state: State::Blocked,
            reason: Reason::Blocked,
            message,
            latch: Latch::Escalation(EscalationKind::Blocked),
            record: latch_record,
        }));
        done.push(Done::EscalatedBlocked);
    }

    /// New failure text, one latch per signal, never cleared on resume.
    fn report_new_failures(&mut self, pane: &str, actions: &mut Vec<Action>, done: &mut Vec<Done>) {
        let context = Context::new(&self.profiles)
            .with_profile(self.forced_profile())
            .with_echo(&self.echo);
        let failures = classify::signals(pane, &context).failures;
        for failure in failures {
            let signal = failure.kind.name().to_string();
            let text = failure.evidence.text.trim().to_string();
            if self.memory.failures.get(&signal) == Some(&text) {
                continue;
            }
            let latch_record = SessionRecord::FailureReported {
                signal: signal.clone(),
                text: text.clone(),
            };
            self.memory.apply(&latch_record);
            let state = self
                .last_verdict
                .as_ref()
                .map_or(State::Stalled, |v| v.state);
            let message = format!("new failure on {} ({signal}): {text}", self.target);
            actions.push(Action::Alert(Alert {
                state,
                reason: Reason::Failure,
                message,
                latch: Latch::Failure(signal.clone()),
                record: latch_record,
            }));
            done.push(Done::NewFailure {
                kind: failure.kind,
                text,
            });
        }
    }
}

/// One poll's pane as judged: its verdict, the state taken, and whether
/// and why a stop must not be typed into.
struct Judged<'o> {
    /// The pane's text as captured.
    pane: &'o str,
    /// The pane's own verdict, before the second witness.
    verdict: Verdict,
    /// The state taken: the verdict, the second witness heard, an exited
    /// agent read as a stop.
    state: State,
    /// Whether `state` is a stop (STALLED or BLOCKED).
    stop: bool,
    /// The agent is not (or no longer) what this pane shows.
    elsewhere: bool,
    /// Why a stop must not be typed into, and the words for it.
    refused: Option<(Refusal, String)>,
    /// A key was pressed in the session since the last poll.
    key_pressed: bool,
    /// The program in front (tmux's name for it), where tmux said.
    front: Option<&'o str>,
}

impl Judged<'_> {
    /// Why the stop is refused, without the words.
    fn refusal(&self) -> Option<Refusal> {
        self.refused.as_ref().map(|(refusal, _)| *refusal)
    }
}

/// How many non-blank lines above the box count for whether a stop held
/// still: where a turn that ran between two polls leaves its end.
const NEWEST_LINES: usize = 3;

/// What a usage limit leaves the nudge to do.
enum LimitHold {
    /// Held, or escalated: nothing is typed this poll.
    Handled,
    /// The reset (this one) has passed: its one nudge is due.
    ResetPassed(Timestamp),
}

/// A hash of the text a pane shows, its SGR and other CSI sequences left
/// out, so the same screen redrawn in other ink hashes the same.
///
/// Each character kept is hashed as `char::hash` hashes it (its `u32`, one
/// `write_u32`), but fed to the hasher in blocks: SipHash is a streaming
/// hash, so the value is the one a `write_u32` per character gives (the
/// journal's `stop_seen` hashes outlive the process), at a fraction of the
/// cost of a call per character (every pane, every poll).
fn plain_hash(pane: &str) -> u64 {
    const BLOCK: usize = 256;
    let mut hasher = DefaultHasher::new();
    let mut block = [0u8; BLOCK * 4];
    let mut filled = 0;
    let mut chars = pane.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            continue;
        }
        block[filled..filled + 4].copy_from_slice(&u32::from(c).to_ne_bytes());
        filled += 4;
        if filled == block.len() {
            hasher.write(&block);
            filled = 0;
        }
    }
    if filled > 0 {
        hasher.write(&block[..filled]);
    }
    hasher.finish()
}

/// The agent's `waiting` overruled a stop whose screen shows no input box the
/// profile knows: a dialog is up that the pane reader cannot read (one taller
/// than the pane, its key line cut off). Nothing on screen will change until a
/// human answers it, so it is relayed at once with what the screen shows, not
/// after [`STILL_PANE_PATIENCE`] polls, and stays a QUESTION while that holds.
/// With the box on screen the dialog may not be drawn yet: the patience holds.
fn waiting_without_a_box(verdict: &Verdict) -> bool {
    !verdict.input_box
}

/// The one key of a refused stop's escalation, whatever its reason.
const REFUSED_KEY: &str = "refused";

/// The last `count` non-blank lines of a pane, top to bottom.
fn bottom_lines(pane: &str, count: usize) -> Vec<String> {
    let mut lines: Vec<String> = pane
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(count)
        .map(|l| l.trim_end().to_string())
        .collect();
    lines.reverse();
    lines
}

/// A question's text without what moves while a human looks at it: the
/// selection cursor, check marks and radio dots. Moving the cursor or ticking
/// a box is the same question, escalated once.
fn question_text(dialog: &str) -> String {
    const MOVING: &[char] = &[
        '❯', '›', '>', '●', '○', '◯', '◉', '☐', '☒', '✔', '✓', '✗', '■', '□', '◼', '◻',
    ];
    dialog
        .lines()
        .map(|line| {
            let line = line
                .replace("[ ]", "")
                .replace("[x]", "")
                .replace("[X]", "")
                .replace("[✔]", "");
            line.chars()
                .filter(|c| !MOVING.contains(c))
                .collect::<String>()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A stable key for a text (FNV-1a, so it survives a restart and a
/// rebuild): a question's, or a target's too long for a file name.
pub fn fingerprint(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.trim().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`plain_hash`] as it was, a `char::hash` per character kept.
    fn plain_hash_per_char(pane: &str) -> u64 {
        let mut hasher = DefaultHasher::new();
        let mut chars = pane.chars();
        while let Some(c) = chars.next() {
            if c == '\u{1b}' {
                if chars.next() == Some('[') {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                continue;
            }
            c.hash(&mut hasher);
        }
        hasher.finish()
    }

    /// The blocks give the value a hash per character gave, so the hashes
    /// journalled before (`stop_seen`) still match the same screen.
    #[test]
    fn the_plain_hash_fed_in_blocks_is_the_hash_fed_per_character() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/panes");
        let mut screens = vec![
            String::new(),
            "a".to_string(),
            "\u{1b}".to_string(),
            "\u{1b}[".to_string(),
            "x\u{1b}é\u{1b}[1;31mred\u{1b}[0m ✻ Working…".to_string(),
            "é".repeat(255),
            "é".repeat(256),
            "é".repeat(257),
            "ab".repeat(1000),
        ];
        for cli in std::fs::read_dir(&root).unwrap().flatten() {
            for case in std::fs::read_dir(cli.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                for form in ["ansi.txt", "plain.txt"] {
                    if let Ok(text) = std::fs::read_to_string(case.path().join(form)) {
                        screens.push(text);
                    }
                }
            }
        }
        assert!(screens.len() > 40, "the captures under {}", root.display());
        for screen in &screens {
            assert_eq!(
                plain_hash(screen),
                plain_hash_per_char(screen),
                "{screen:?}"
            );
        }
        assert_ne!(plain_hash("a"), plain_hash("b"));
    }
}
