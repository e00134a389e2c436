//! The session monitor's escalations as alerts an alert manager holds
//! (Alertmanager's model): an alert fires from the escalation until the
//! verdict moves on, is re-sent while it fires (an alert manager forgets one
//! that is not re-sent before its end time), and is resolved by sending it
//! once more with its end time set to now. One [`AlertBook`] per target; the
//! HTTP client that delivers its postings lives in the binary.
//!
//! Pure: the time comes in as an argument, and nothing here calls the OS.

use std::collections::BTreeMap;
use std::time::Duration;

use classify::State;
use jiff::{SignedDuration, Timestamp};
use ledger::session::{EscalationKind, SessionMemory};

use serde::{Deserialize, Serialize};

use crate::session::{Alert, CAPTURE_FAILURE_PATIENCE, Latch, PollReport, Reason, Refusal};

/// The name of an alert whose cause has no [`Reason`] (an escalation kind
/// added later without one): still delivered, under a name that says what it is.
pub const UNNAMED_ALERT: &str = "BmbEscalation";

/// The labels every alert of one target carries besides its name and CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetLabels {
    /// The target as given (`session` or `host:session`).
    pub target: String,
    /// The ssh alias, or this machine's name for a local target.
    pub host: String,
    /// The session name.
    pub session: String,
    /// The tmux server, by the socket file its monitor's state folder is
    /// keyed by: the same session name on two servers is two alerts.
    pub server: String,
}

/// How long each sending of a firing alert holds, at least: hours, so a
/// watcher that is merely gone (killed, restarting, its machine rebooting)
/// never lets Alertmanager resolve a question still on screen. Only the
/// watcher resolves an alert, explicitly, when the verdict moves on; its own
/// absence is paged by the shipped Prometheus rules (`BmbMonitorDown`).
pub const HOLD: Duration = Duration::from_secs(6 * 3600);

/// How often a firing alert is re-sent and how long each sending holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// A firing alert is sent again once this long has passed since it was delivered.
    pub repost_every: Duration,
    /// Each sending's end time is this far ahead: a monitor that dies leaves
    /// its alerts firing this long at most.
    pub hold: Duration,
}

impl Timing {
    /// Re-sent every poll, but not more often than once a minute; each
    /// sending holds [`HOLD`] (or three re-sendings, past a two-hour
    /// interval), refreshed well inside it.
    pub fn for_interval(interval: Duration) -> Timing {
        Timing::refreshed_every(interval.max(Duration::from_secs(60)))
    }

    /// Re-sent every `refresh`, each sending holding [`HOLD`] or three
    /// re-sendings, whichever is longer.
    pub fn refreshed_every(refresh: Duration) -> Timing {
        Timing {
            repost_every: refresh,
            hold: HOLD.max(refresh.saturating_mul(3)),
        }
    }
}

/// What fires, one alert per cause: an escalation kind's latch, or a failure signal.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Cause {
    Escalation(EscalationKind),
    Failure(String),
}

impl Cause {
    fn of(latch: &Latch) -> Cause {
        match latch {
            Latch::Escalation(kind) => Cause::Escalation(*kind),
            Latch::Failure(signal) => Cause::Failure(signal.clone()),
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    id: u64,
    name: &'static str,
    cli: String,
    /// The escalation's message, unsanitised (the sink cleans it for its medium).
    message: String,
    starts_at: Timestamp,
    /// The verdict when it was raised: a failure alert fires while it holds.
    state: Option<State>,
    /// When it was last delivered; `None`: due now.
    delivered: Option<Timestamp>,
    /// Raised (or raised again) in the poll being settled.
    raised_now: bool,
}

/// One alert to send: every label, the message, and its times. A resolved
/// alert is sent once more with `ends_at` at the moment it was resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posting {
    id: u64,
    /// In this order: `alertname`, `target`, `host`, `session`, `cli`, `server`.
    pub labels: Vec<(&'static str, String)>,
    /// The escalation's message, unsanitised.
    pub message: String,
    /// When the alert began firing.
    pub starts_at: Timestamp,
    /// When an alert manager lets it go unless it is sent again (now, for a resolution).
    pub ends_at: Timestamp,
    /// Whether this posting resolves the alert.
    pub resolved: bool,
}

/// One target's alerts: the ones firing, and the resolutions not yet delivered.
#[derive(Debug)]
pub struct AlertBook {
    labels: TargetLabels,
    timing: Timing,
    firing: BTreeMap<Cause, Entry>,
    /// Kept for re-sending while the alert manager cannot be reached, one per
    /// set of labels (a later one supersedes it), so bounded by the names.
    resolved: Vec<(Entry, Timestamp)>,
    next_id: u64,
    /// What fires (or how it is told) changed since [`Self::take_changed`].
    changed: bool,
}

impl AlertBook {
    /// A book for one target's alerts, nothing firing.
    pub fn new(labels: TargetLabels, timing: Timing) -> AlertBook {
        AlertBook {
            labels,
            timing,
            firing: BTreeMap::new(),
            resolved: Vec::new(),
            next_id: 0,
            changed: false,
        }
    }

    /// The labels every alert of this book carries.
    pub fn labels(&self) -> &TargetLabels {
        &self.labels
    }

    /// The firing alerts, as kept across a restart.
    pub fn kept(&self) -> Vec<Kept> {
        self.firing
            .iter()
            .map(|(cause, entry)| Kept::of(cause, entry))
            .collect()
    }

    /// A restarted watcher's alerts that were firing when the last one
    /// stopped: they fire again with the same labels, message and start
    /// (due at once), and [`Self::settle`] resolves the ones whose verdict
    /// moved on meanwhile. An entry this build has no name for is dropped.
    pub fn restore(&mut self, kept: &[Kept]) {
        for kept in kept {
            let Some((cause, name, starts_at)) = kept.parts() else {
                continue;
            };
            self.next_id += 1;
            let entry = Entry {
                id: self.next_id,
                name,
                cli: kept.cli.clone(),
                message: kept.message.clone(),
                starts_at,
                state: kept
                    .state
                    .as_deref()
                    .and_then(|word| State::ALL.into_iter().find(|s| s.as_str() == word)),
                delivered: None,
                raised_now: false,
            };
            self.firing.insert(cause, entry);
        }
    }

    /// Whether what fires changed since the last call (an alert raised,
    /// told afresh or resolved): the keeper writes it down then.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Another cadence (a reloaded interval): every firing alert is due
    /// again at once, so its `endsAt` follows the new hold before the old
    /// one runs out under a longer interval.
    pub fn set_timing(&mut self, timing: Timing) {
        if timing == self.timing {
            return;
        }
        self.timing = timing;
        for entry in self.firing.values_mut() {
            entry.delivered = None;
        }
    }

    /// The monitor escalated `alert` this poll (whether or not the alert
    /// command took it: a failed one is raised again next poll, and the
    /// alert stays firing meanwhile). `cli`: the pane's profile, if known.
    pub fn raise(&mut self, alert: &Alert, cli: Option<&str>, now: Timestamp) {
        let cause = Cause::of(&alert.latch);
        let name = alert.reason.alert_name();
        if let Some(entry) = self.firing.get_mut(&cause) {
            entry.raised_now = true;
            if entry.message != alert.message || entry.name != name {
                self.changed = true;
                // Another question in the same dialog slot, or another reason
                // for the same refusal: the same alert, told afresh.
                entry.message = alert.message.clone();
                entry.name = name;
                entry.state = Some(alert.state);
                entry.delivered = None;
            }
            return;
        }
        // The alert fires again: its resolution, if not delivered yet, is moot.
        self.forget_resolution(name, &cli_label(cli));
        let entry = self.entry(name, cli, alert.message.clone(), Some(alert.state), now);
        self.firing.insert(cause, entry);
        self.changed = true;
    }

    /// Drops an undelivered resolution of the alert with these labels.
    fn forget_resolution(&mut self, name: &str, cli: &str) {
        self.resolved
            .retain(|(entry, _)| !(entry.name == name && entry.cli == cli));
    }

    fn entry(
        &mut self,
        name: &'static str,
        cli: Option<&str>,
        message: String,
        state: Option<State>,
        now: Timestamp,
    ) -> Entry {
        self.next_id += 1;
        Entry {
            id: self.next_id,
            name,
            cli: cli_label(cli),
            message,
            starts_at: now,
            state,
            delivered: None,
            raised_now: true,
        }
    }

    /// After a poll's actions: an escalation whose latch the monitor cleared
    /// (the verdict moved on) is resolved, a failure when the verdict is no
    /// longer the one it was raised under; an escalation the monitor holds
    /// that no alert carries (it was sent before a restart) fires from now,
    /// told from this poll's report.
    pub fn settle(
        &mut self,
        report: &PollReport,
        memory: &SessionMemory,
        cli: Option<&str>,
        now: Timestamp,
    ) {
        let held = |cause: &Cause, entry: &Entry| match cause {
            Cause::Escalation(kind) => memory.escalated.contains_key(kind),
            // A failed capture says nothing about the verdict.
            Cause::Failure(_) => report.state.is_none() || report.state == entry.state,
        };
        let ended: Vec<Cause> = self
            .firing
            .iter()
            .filter(|(cause, entry)| !entry.raised_now && !held(cause, entry))
            .map(|(cause, _)| cause.clone())
            .collect();
        for cause in ended {
            if let Some(entry) = self.firing.remove(&cause) {
                self.forget_resolution(entry.name, &entry.cli);
                self.resolved.push((entry, now));
                self.changed = true;
            }
        }
        for kind in memory.escalated.keys() {
            let cause = Cause::Escalation(*kind);
            // A failed capture tells nothing of the screen (which refusal, which
            // evidence): a held escalation is told from the next readable one.
            let untold = report.state.is_none() && *kind != EscalationKind::CaptureFailed;
            if self.firing.contains_key(&cause) || untold {
                continue;
            }
            let name = reason_held(*kind, report.refusal).map_or(UNNAMED_ALERT, Reason::alert_name);
            let message = adopted_message(&self.labels.target, report);
            let entry = self.entry(name, cli, message, report.state, now);
            self.firing.insert(cause, entry);
            self.changed = true;
        }
        for entry in self.firing.values_mut() {
            entry.raised_now = false;
        }
    }

    /// What to send now: the resolutions not yet delivered (first, so an
    /// alert manager reads an end before a new start of the same labels),
    /// then every firing alert never delivered or due for re-sending.
    pub fn due(&self, now: Timestamp) -> Vec<Posting> {
        let repost = signed(self.timing.repost_every);
        let hold = signed(self.timing.hold);
        let resolved = self
            .resolved
            .iter()
            .map(|(entry, at)| self.posting(entry, *at, true));
        let firing = self
            .firing
            .values()
            .filter(|entry| {
                entry
                    .delivered
                    .is_none_or(|at| now.duration_since(at) >= repost)
            })
            .map(|entry| self.posting(entry, now.saturating_add(hold).unwrap_or(now), false));
        resolved.chain(firing).collect()
    }

    fn posting(&self, entry: &Entry, ends_at: Timestamp, resolved: bool) -> Posting {
        Posting {
            id: entry.id,
            labels: vec![
                ("alertname", entry.name.to_string()),
                ("target", self.labels.target.clone()),
                ("host", self.labels.host.clone()),
                ("session", self.labels.session.clone()),
                ("cli", entry.cli.clone()),
                ("server", self.labels.server.clone()),
            ],
            message: entry.message.clone(),
            starts_at: entry.starts_at,
            ends_at,
            resolved,
        }
    }

    /// The alert manager took `postings` (from [`Self::due`]) at `now`:
    /// resolutions are done with, firing alerts wait for their re-sending.
    /// Postings it did not take are simply due again.
    pub fn delivered(&mut self, postings: &[Posting], now: Timestamp) {
        for posting in postings {
            if posting.resolved {
                self.resolved.retain(|(entry, _)| entry.id != posting.id);
            } else if let Some(entry) = self.firing.values_mut().find(|e| e.id == posting.id) {
                entry.delivered = Some(now);
            }
        }
    }

    /// The target is no longer watched (a reload removed it, or the monitor
    /// stops for good): every firing alert is resolved now.
    pub fn resolve_all(&mut self, now: Timestamp) {
        for entry in std::mem::take(&mut self.firing).into_values() {
            self.changed = true;
            self.forget_resolution(entry.name, &entry.cli);
            self.resolved.push((entry, now));
        }
    }

    /// Whether nothing fires and nothing waits to be sent.
    pub fn is_idle(&self) -> bool {
        self.firing.is_empty() && self.resolved.is_empty()
    }

    /// The names of the alerts firing, for a caller that shows them.
    pub fn firing(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.firing.values().map(|entry| entry.name)
    }
}

/// A firing alert as the state folder keeps it, so a restarted watcher
/// re-posts what still fires under the same labels and `startsAt`:
/// Alertmanager then sees the same alert, not a new page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// The escalation that fires it; `None` for a failure signal's alert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<EscalationKind>,
    /// The failure signal that fires it, for a `BmbNewFailure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The alert name it was posted under.
    pub alertname: String,
    /// Its `cli` label.
    pub cli: String,
    /// The message it was posted with.
    pub message: String,
    /// RFC 3339, as posted.
    pub starts_at: String,
    /// The verdict it was raised under (a failure fires while it holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

impl Kept {
    fn of(cause: &Cause, entry: &Entry) -> Kept {
        let (escalation, failure) = match cause {
            Cause::Escalation(kind) => (Some(*kind), None),
            Cause::Failure(signal) => (None, Some(signal.clone())),
        };
        Kept {
            escalation,
            failure,
            alertname: entry.name.to_string(),
            cli: entry.cli.clone(),
            message: entry.message.clone(),
            starts_at: entry.starts_at.to_string(),
            state: entry.state.map(|s| s.as_str().to_string()),
        }
    }

    /// Its cause, its name as this build spells it, and its start; `None`
    /// for one this build cannot read back.
    fn parts(&self) -> Option<(Cause, &'static str, Timestamp)> {
        let cause = match (&self.escalation, &self.failure) {
            (Some(kind), None) => Cause::Escalation(*kind),
            (None, Some(signal)) => Cause::Failure(signal.clone()),
            _ => return None,
        };
        let name = known_name(&self.alertname)?;
        let starts_at = self.starts_at.parse::<Timestamp>().ok()?;
        Some((cause, name, starts_at))
    }
}

/// The alert name of an unreachable host.
pub const HOST_UNREACHABLE: &str = "BmbHostUnreachable";

/// A name this build posts, as its own `'static` spelling.
fn known_name(name: &str) -> Option<&'static str> {
    Reason::ALL
        .iter()
        .map(|reason| reason.alert_name())
        .chain([UNNAMED_ALERT])
        .find(|known| *known == name)
}

/// One host's outage as the host book keeps it across a restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptHost {
    /// The message it was posted with.
    pub message: String,
    /// RFC 3339, as posted.
    pub starts_at: String,
}

#[derive(Debug, Clone)]
struct HostEntry {
    id: u64,
    message: String,
    starts_at: Timestamp,
    delivered: Option<Timestamp>,
}

/// One alert per unreachable host (`BmbHostUnreachable`, labels `alertname`
/// and `host`), so an outage is one page: the shipped Alertmanager example
/// inhibits the per-target alerts of the same `host` under it. It fires once
/// the host has been unreachable for [`CAPTURE_FAILURE_PATIENCE`] cycles in
/// a row (as a pane's `BmbCaptureFailing` does), and resolves the first
/// cycle the host answers again.
#[derive(Debug)]
pub struct HostBook {
    timing: Timing,
    /// Unreachable cycles in a row, per host (the `host` label's value).
    down: BTreeMap<String, u32>,
    firing: BTreeMap<String, HostEntry>,
    resolved: Vec<(String, HostEntry, Timestamp)>,
    next_id: u64,
    /// The hosts whose alert fired or resolved since [`Self::take_changed`].
    changed: std::collections::BTreeSet<String>,
}

impl HostBook {
    /// A book for hosts' outages, none yet.
    pub fn new(timing: Timing) -> HostBook {
        HostBook {
            timing,
            down: BTreeMap::new(),
            firing: BTreeMap::new(),
            resolved: Vec::new(),
            next_id: 0,
            changed: std::collections::BTreeSet::new(),
        }
    }

    /// Another cadence: every firing host alert is due again at once.
    pub fn set_timing(&mut self, timing: Timing) {
        if timing == self.timing {
            return;
        }
        self.timing = timing;
        for entry in self.firing.values_mut() {
            entry.delivered = None;
        }
    }

    /// A completed cycle's hosts: each with why it is unreachable, or `None`
    /// when it answered. A host not listed is no longer watched: its alert
    /// is resolved.
    pub fn observe<'a>(
        &mut self,
        hosts: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
        now: Timestamp,
    ) {
        let mut seen = Vec::new();
        for (host, error) in hosts {
            seen.push(host.to_string());
            let Some(error) = error else {
                self.down.remove(host);
                self.resolve(host, now);
                continue;
            };
            let down = self.down.entry(host.to_string()).or_default();
            *down = down.saturating_add(1);
            let down = *down;
            if down >= CAPTURE_FAILURE_PATIENCE && !self.firing.contains_key(host) {
                self.next_id += 1;
                let entry = HostEntry {
                    id: self.next_id,
                    message: format!(
                        "{host} is unreachable: none of its panes could be read for {down} cycles in a row, \
                         all failing alike, so nothing watches them. The error: {error}"
                    ),
                    starts_at: now,
                    delivered: None,
                };
                self.resolved.retain(|(h, _, _)| h != host);
                self.firing.insert(host.to_string(), entry);
                self.changed.insert(host.to_string());
            }
        }
        let gone: Vec<String> = self
            .firing
            .keys()
            .filter(|host| !seen.contains(host))
            .cloned()
            .collect();
        for host in gone {
            self.down.remove(&host);
            self.resolve(&host, now);
        }
    }

    fn resolve(&mut self, host: &str, now: Timestamp) {
        if let Some(entry) = self.firing.remove(host) {
            self.resolved.retain(|(h, _, _)| h != host);
            self.resolved.push((host.to_string(), entry, now));
            self.changed.insert(host.to_string());
        }
    }

    /// What to send now: resolutions first, then firing alerts due.
    pub fn due(&self, now: Timestamp) -> Vec<Posting> {
        let repost = signed(self.timing.repost_every);
        let hold = signed(self.timing.hold);
        let resolved = self
            .resolved
            .iter()
            .map(|(host, entry, at)| host_posting(host, entry, *at, true));
        let firing = self
            .firing
            .iter()
            .filter(|(_, entry)| {
                entry
                    .delivered
                    .is_none_or(|at| now.duration_since(at) >= repost)
            })
            .map(|(host, entry)| {
                host_posting(host, entry, now.saturating_add(hold).unwrap_or(now), false)
            });
        resolved.chain(firing).collect()
    }

    /// Alertmanager took `postings` (from [`Self::due`]) at `now`.
    pub fn delivered(&mut self, postings: &[Posting], now: Timestamp) {
        for posting in postings {
            if posting.resolved {
                self.resolved.retain(|(_, entry, _)| entry.id != posting.id);
            } else if let Some(entry) = self.firing.values_mut().find(|e| e.id == posting.id) {
                entry.delivered = Some(now);
            }
        }
    }

    /// The hosts whose alert fires now.
    pub fn firing(&self) -> impl Iterator<Item = &str> + '_ {
        self.firing.keys().map(String::as_str)
    }

    /// `host`'s alert, if it fires, as kept across a restart.
    pub fn kept(&self, host: &str) -> Option<KeptHost> {
        self.firing.get(host).map(|entry| KeptHost {
            message: entry.message.clone(),
            starts_at: entry.starts_at.to_string(),
        })
    }

    /// A restarted watcher's alert for `host`, unless one fires already:
    /// firing again at once, under the same start; the first cycle that
    /// reaches the host resolves it.
    pub fn restore(&mut self, host: &str, kept: &KeptHost) {
        if self.firing.contains_key(host) {
            return;
        }
        let Ok(starts_at) = kept.starts_at.parse::<Timestamp>() else {
            return;
        };
        self.next_id += 1;
        let entry = HostEntry {
            id: self.next_id,
            message: kept.message.clone(),
            starts_at,
            delivered: None,
        };
        self.down.insert(host.to_string(), CAPTURE_FAILURE_PATIENCE);
        self.firing.insert(host.to_string(), entry);
    }

    /// The hosts whose alert fired or resolved since the last call.
    pub fn take_changed(&mut self) -> std::collections::BTreeSet<String> {
        std::mem::take(&mut self.changed)
    }
}

fn host_posting(host: &str, entry: &HostEntry, ends_at: Timestamp, resolved: bool) -> Posting {
    Posting {
        id: entry.id,
        labels: vec![
            ("alertname", HOST_UNREACHABLE.to_string()),
            ("host", host.to_string()),
        ],
        message: entry.message.clone(),
        starts_at: entry.starts_at,
        ends_at,
        resolved,
    }
}

/// The `cli` label: the pane's profile, `unknown` before one recognised it
/// (an empty label value is no label to an alert manager).
fn cli_label(cli: Option<&str>) -> String {
    cli.filter(|cli| !cli.is_empty())
        .unwrap_or("unknown")
        .to_string()
}

/// The reason of an escalation the monitor holds, as its report shows it
/// now; `None` for a kind this build has no reason for.
fn reason_held(kind: EscalationKind, refusal: Option<Refusal>) -> Option<Reason> {
    Some(match kind {
        EscalationKind::Question => Reason::Question,
        EscalationKind::Blocked => Reason::Blocked,
        EscalationKind::BudgetSpent => Reason::BudgetSpent,
        EscalationKind::Unreadable => Reason::Refused(refusal.unwrap_or(Refusal::NoInputBox)),
        EscalationKind::CaptureFailed => Reason::CaptureFailed,
        EscalationKind::Draft => Reason::Draft,
        EscalationKind::UsageLimit => Reason::UsageLimit,
        _ => return None,
    })
}

/// The message of an escalation sent before this monitor started: what the
/// pane shows now, with the rule and evidence line that read it.
fn adopted_message(target: &str, report: &PollReport) -> String {
    let state = report.state.map_or("?", State::as_str);
    let mut message = format!(
        "{state} on {target}: escalated before this monitor restarted (the alert command had the full message)."
    );
    if let Some(rule) = report.rule {
        message.push_str(&format!(" Rule: {rule}."));
    }
    if let Some(evidence) = &report.evidence {
        message.push_str(&format!("\n\nEvidence: {evidence}"));
    }
    message
}

fn signed(duration: Duration) -> SignedDuration {
    SignedDuration::try_from(duration).unwrap_or(SignedDuration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify::Work;
    use ledger::session::SessionRecord;

    const T0: i64 = 1_800_000_000;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(T0 + secs).unwrap()
    }

    fn book() -> AlertBook {
        AlertBook::new(
            TargetLabels {
                target: "box:agent".into(),
                host: "box".into(),
                session: "agent".into(),
                server: "/tmp/tmux-1000/default".into(),
            },
            Timing {
                repost_every: Duration::from_secs(60),
                hold: Duration::from_secs(180),
            },
        )
    }

    fn report(state: Option<State>) -> PollReport {
        PollReport {
            work: Work::Available(3),
            rule: state.map(|_| "dialog"),
            ..crate::session::sample_report("box:agent", state)
        }
    }

    fn alert(reason: Reason, latch: Latch, state: State, message: &str) -> Alert {
        Alert {
            state,
            reason,
            message: message.into(),
            latch,
            record: SessionRecord::Progress { value: 0 },
        }
    }

    fn question(message: &str) -> Alert {
        alert(
            Reason::Question,
            Latch::Escalation(EscalationKind::Question),
            State::Question,
            message,
        )
    }

    fn memory(kinds: &[EscalationKind]) -> SessionMemory {
        let mut memory = SessionMemory::default();
        for kind in kinds {
            memory.apply(&SessionRecord::Escalated {
                kind: *kind,
                key: "k".into(),
            });
        }
        memory
    }

    /// What is due, as `(alertname, resolved, starts, ends)` in seconds from T0.
    fn due(book: &AlertBook, now: i64) -> Vec<(String, bool, i64, i64)> {
        book.due(at(now))
            .into_iter()
            .map(|p| {
                (
                    p.labels[0].1.clone(),
                    p.resolved,
                    p.starts_at.as_second() - T0,
                    p.ends_at.as_second() - T0,
                )
            })
            .collect()
    }

    fn deliver(book: &mut AlertBook, now: i64) {
        let postings = book.due(at(now));
        book.delivered(&postings, at(now));
    }

    #[test]
    fn a_question_fires_with_every_label_until_the_verdict_moves_on_then_resolves_once() {
        let mut book = book();
        book.raise(
            &question("QUESTION on box:agent\n\nProceed?"),
            Some("claude"),
            at(0),
        );
        let mem = memory(&[EscalationKind::Question]);
        book.settle(&report(Some(State::Question)), &mem, Some("claude"), at(0));
        let postings = book.due(at(0));
        assert_eq!(postings.len(), 1);
        assert_eq!(
            postings[0].labels,
            [
                ("alertname", "BmbQuestion".to_string()),
                ("target", "box:agent".to_string()),
                ("host", "box".to_string()),
                ("session", "agent".to_string()),
                ("cli", "claude".to_string()),
                ("server", "/tmp/tmux-1000/default".to_string()),
            ]
        );
        assert_eq!(postings[0].message, "QUESTION on box:agent\n\nProceed?");
        assert_eq!(due(&book, 0), [("BmbQuestion".into(), false, 0, 180)]);
        book.delivered(&postings, at(0));
        // Still firing: nothing due until the re-sending, then again with a later end.
        book.settle(&report(Some(State::Question)), &mem, Some("claude"), at(30));
        assert_eq!(due(&book, 30), []);
        book.settle(&report(Some(State::Question)), &mem, Some("claude"), at(60));
        assert_eq!(due(&book, 60), [("BmbQuestion".into(), false, 0, 240)]);
        deliver(&mut book, 60);
        // The verdict moved on: the monitor re-armed the latch.
        book.settle(&report(Some(State::Working)), &memory(&[]), None, at(70));
        assert_eq!(due(&book, 70), [("BmbQuestion".into(), true, 0, 70)]);
        assert_eq!(book.firing().count(), 0);
        deliver(&mut book, 70);
        assert_eq!(due(&book, 71), [], "a resolution is sent once delivered");
    }

    #[test]
    fn undelivered_alerts_and_resolutions_stay_due_until_delivered() {
        let mut book = book();
        book.raise(&question("Q"), None, at(0));
        let mem = memory(&[EscalationKind::Question]);
        book.settle(&report(Some(State::Question)), &mem, None, at(0));
        assert_eq!(due(&book, 0).len(), 1);
        // Not delivered (the alert manager is down): due at every poll.
        book.settle(&report(Some(State::Question)), &mem, None, at(1));
        assert_eq!(due(&book, 1), [("BmbQuestion".into(), false, 0, 181)]);
        book.settle(&report(Some(State::Working)), &memory(&[]), None, at(2));
        book.settle(&report(Some(State::Working)), &memory(&[]), None, at(3));
        assert_eq!(due(&book, 3), [("BmbQuestion".into(), true, 0, 2)]);
        deliver(&mut book, 4);
        assert_eq!(due(&book, 5), []);
    }

    #[test]
    fn an_alert_the_command_failed_to_take_keeps_firing_while_it_is_raised_again() {
        let mut book = book();
        for poll in 0..3 {
            // Raised each poll; the failed alert command re-arms the latch.
            book.raise(&question("Q"), None, at(poll));
            book.settle(&report(Some(State::Question)), &memory(&[]), None, at(poll));
            assert_eq!(
                due(&book, poll),
                [("BmbQuestion".into(), false, 0, poll + 180)],
                "poll {poll}"
            );
        }
    }

    #[test]
    fn a_new_question_in_a_firing_alert_is_told_at_once_under_the_same_start() {
        let mut book = book();
        let mem = memory(&[EscalationKind::Question]);
        book.raise(&question("first"), None, at(0));
        book.settle(&report(Some(State::Question)), &mem, None, at(0));
        deliver(&mut book, 0);
        book.raise(&question("second"), None, at(5));
        book.settle(&report(Some(State::Question)), &mem, None, at(5));
        let postings = book.due(at(5));
        assert_eq!(postings.len(), 1);
        assert_eq!(postings[0].message, "second");
        assert_eq!(postings[0].starts_at, at(0));
        // The same question again changes nothing.
        book.delivered(&postings, at(5));
        book.raise(&question("second"), None, at(6));
        book.settle(&report(Some(State::Question)), &mem, None, at(6));
        assert_eq!(due(&book, 6), []);
    }

    #[test]
    fn a_failure_fires_while_its_verdict_holds_and_a_failed_capture_does_not_end_it() {
        let mut book = book();
        let failure = alert(
            Reason::Failure,
            Latch::Failure("exit-code".into()),
            State::Stalled,
            "new failure on box:agent (exit-code): Error: Exit code 2",
        );
        book.raise(&failure, Some("claude"), at(0));
        book.settle(&report(Some(State::Stalled)), &memory(&[]), None, at(0));
        assert_eq!(due(&book, 0), [("BmbNewFailure".into(), false, 0, 180)]);
        deliver(&mut book, 0);
        book.settle(&report(None), &memory(&[]), None, at(1));
        book.settle(&report(Some(State::Stalled)), &memory(&[]), None, at(2));
        assert_eq!(due(&book, 2), []);
        book.settle(&report(Some(State::Working)), &memory(&[]), None, at(3));
        assert_eq!(due(&book, 3), [("BmbNewFailure".into(), true, 0, 3)]);
    }

    #[test]
    fn an_escalation_held_from_before_a_restart_fires_told_from_the_report() {
        let mut book = book();
        let mut now = report(Some(State::Stalled));
        now.refusal = Some(Refusal::AgentExited);
        now.rule = Some("work-probe");
        now.evidence = Some("$ ".into());
        book.settle(
            &now,
            &memory(&[EscalationKind::Unreadable]),
            Some("claude"),
            at(0),
        );
        let postings = book.due(at(0));
        assert_eq!(postings.len(), 1);
        assert_eq!(postings[0].labels[0].1, "BmbAgentGone");
        assert_eq!(postings[0].labels[4].1, "claude");
        assert!(
            postings[0]
                .message
                .starts_with("STALLED on box:agent: escalated before")
                && postings[0].message.contains("Rule: work-probe.")
                && postings[0].message.ends_with("Evidence: $ "),
            "{}",
            postings[0].message
        );
    }

    #[test]
    fn an_escalation_held_from_before_a_restart_waits_for_a_readable_screen() {
        let mut book = book();
        let mem = memory(&[EscalationKind::Unreadable, EscalationKind::CaptureFailed]);
        book.settle(&report(None), &mem, None, at(0));
        assert_eq!(due(&book, 0), [("BmbCaptureFailing".into(), false, 0, 180)]);
    }

    #[test]
    fn an_alert_that_fires_again_before_its_resolution_was_delivered_just_fires() {
        let mut book = book();
        let mem = memory(&[EscalationKind::Blocked]);
        let blocked = alert(
            Reason::Blocked,
            Latch::Escalation(EscalationKind::Blocked),
            State::Blocked,
            "BLOCKED",
        );
        book.raise(&blocked, None, at(0));
        book.settle(&report(Some(State::Blocked)), &mem, None, at(0));
        book.settle(&report(Some(State::Working)), &memory(&[]), None, at(1));
        book.raise(&blocked, None, at(2));
        book.settle(&report(Some(State::Blocked)), &mem, None, at(2));
        assert_eq!(due(&book, 2), [("BmbBlocked".into(), false, 2, 182)]);
    }

    #[test]
    fn resolutions_waiting_for_an_unreachable_alert_manager_are_one_per_alert() {
        let mut book = book();
        for poll in 0..100 {
            book.raise(&question(&format!("Q{poll}")), None, at(2 * poll));
            book.settle(
                &report(Some(State::Question)),
                &memory(&[EscalationKind::Question]),
                None,
                at(2 * poll),
            );
            book.settle(
                &report(Some(State::Working)),
                &memory(&[]),
                None,
                at(2 * poll + 1),
            );
        }
        assert_eq!(due(&book, 1000), [("BmbQuestion".into(), true, 198, 199)]);
    }

    #[test]
    fn a_target_no_longer_watched_resolves_everything_then_is_idle() {
        let mut book = book();
        let mem = memory(&[EscalationKind::Question, EscalationKind::BudgetSpent]);
        book.settle(&report(Some(State::Question)), &mem, None, at(0));
        assert_eq!(book.firing().count(), 2);
        deliver(&mut book, 0);
        book.resolve_all(at(5));
        assert_eq!(
            due(&book, 5),
            [
                ("BmbQuestion".into(), true, 0, 5),
                ("BmbBudgetSpent".into(), true, 0, 5)
            ]
        );
        assert!(!book.is_idle());
        deliver(&mut book, 5);
        assert!(book.is_idle());
    }

    /// Found by a review: a reload from a 1 s to a 300 s interval kept the
    /// 3 min hold while re-sending every 5 min, so Alertmanager resolved a
    /// question still on screen, then it fired again.
    #[test]
    fn a_new_interval_re_sends_the_firing_alerts_at_once_with_the_new_hold() {
        let mut book = book();
        book.raise(&question("QUESTION on box:agent"), Some("claude"), at(0));
        let mem = memory(&[EscalationKind::Question]);
        book.settle(&report(Some(State::Question)), &mem, Some("claude"), at(0));
        deliver(&mut book, 0);
        book.set_timing(Timing {
            repost_every: Duration::from_secs(60),
            hold: Duration::from_secs(180),
        });
        assert!(due(&book, 10).is_empty(), "the same timing changes nothing");
        book.set_timing(Timing::for_interval(Duration::from_secs(3 * 3600)));
        assert_eq!(
            due(&book, 10),
            [("BmbQuestion".into(), false, 0, 10 + 9 * 3600)]
        );
    }

    #[test]
    fn timing_resends_every_poll_but_at_most_once_a_minute_each_holding_hours() {
        assert_eq!(
            Timing::for_interval(Duration::from_secs(1)),
            Timing {
                repost_every: Duration::from_secs(60),
                hold: HOLD,
            }
        );
        assert_eq!(
            Timing::for_interval(Duration::from_secs(300)),
            Timing {
                repost_every: Duration::from_secs(300),
                hold: HOLD,
            }
        );
        assert_eq!(
            Timing::for_interval(Duration::from_secs(3 * 3600)).hold,
            Duration::from_secs(9 * 3600)
        );
        assert!(HOLD >= Duration::from_secs(3600));
    }

    /// Issue 21: a watcher killed for longer than the old 3-minute hold let
    /// Alertmanager resolve every question still on screen, and the
    /// restarted one paged them all again under new starts (and, before its
    /// profile was read again, a new `cli` label). What fired is kept and
    /// re-posted as it was.
    #[test]
    fn a_restarted_book_re_posts_what_fired_with_the_same_labels_and_start() {
        let mut book = book();
        book.raise(
            &question("QUESTION on box:agent\n\nProceed?"),
            Some("claude"),
            at(0),
        );
        let mem = memory(&[EscalationKind::Question, EscalationKind::BudgetSpent]);
        book.settle(&report(Some(State::Question)), &mem, Some("claude"), at(0));
        assert!(book.take_changed());
        deliver(&mut book, 0);
        book.settle(&report(Some(State::Question)), &mem, Some("claude"), at(30));
        assert!(
            !book.take_changed(),
            "a poll that changes nothing writes nothing"
        );
        let before = book.due(at(600));
        let text = serde_json::to_string(&book.kept()).unwrap();
        let kept: Vec<Kept> = serde_json::from_str(&text).unwrap();

        let mut restarted = self::book();
        restarted.restore(&kept);
        // The new monitor has not read the profile yet: the label is kept anyway.
        restarted.settle(&report(Some(State::Question)), &mem, None, at(900));
        let after = restarted.due(at(900));
        let view = |postings: &[Posting]| -> Vec<_> {
            postings
                .iter()
                .map(|p| (p.labels.clone(), p.message.clone(), p.starts_at, p.resolved))
                .collect()
        };
        assert_eq!(after.len(), 2);
        assert_eq!(view(&after), view(&before));
        // Its verdict moved on while no watcher ran: resolved at once.
        let mut moved = self::book();
        moved.restore(&kept);
        moved.settle(
            &report(Some(State::Working)),
            &memory(&[EscalationKind::BudgetSpent]),
            None,
            at(900),
        );
        assert_eq!(
            due(&moved, 900),
            [
                ("BmbQuestion".into(), true, 0, 900),
                ("BmbBudgetSpent".into(), false, 0, 900 + 180)
            ]
        );
        // A name this build does not post is dropped, not guessed.
        let mut odd = kept[0].clone();
        odd.alertname = "BmbSomethingElse".into();
        let mut dropped = self::book();
        dropped.restore(&[odd]);
        assert!(dropped.is_idle());
    }

    type HostDue = (Vec<(&'static str, String)>, bool, i64, i64);

    fn host_due(book: &HostBook, now: i64) -> Vec<HostDue> {
        book.due(at(now))
            .into_iter()
            .map(|p| {
                (
                    p.labels,
                    p.resolved,
                    p.starts_at.as_second() - T0,
                    p.ends_at.as_second() - T0,
                )
            })
            .collect()
    }

    #[test]
    fn an_unreachable_host_is_one_alert_after_three_cycles_resolved_when_it_answers() {
        let timing = Timing {
            repost_every: Duration::from_secs(60),
            hold: Duration::from_secs(180),
        };
        let mut book = HostBook::new(timing);
        let refused = Some("ssh: connect to host box port 22: Connection refused");
        for cycle in 0..2 {
            book.observe([("box", refused), ("other", None)], at(cycle));
            assert!(host_due(&book, cycle).is_empty(), "cycle {cycle}");
        }
        book.observe([("box", refused), ("other", None)], at(2));
        let labels = vec![
            ("alertname", "BmbHostUnreachable".to_string()),
            ("host", "box".to_string()),
        ];
        assert_eq!(host_due(&book, 2), [(labels.clone(), false, 2, 182)]);
        let postings = book.due(at(2));
        assert!(
            postings[0].message.contains("Connection refused"),
            "{:?}",
            postings[0]
        );
        book.delivered(&postings, at(2));
        book.observe([("box", refused), ("other", None)], at(3));
        assert!(
            host_due(&book, 3).is_empty(),
            "delivered: due at the re-sending"
        );
        assert_eq!(book.firing().collect::<Vec<_>>(), ["box"]);
        // Kept across a restart: the same start.
        let mut restarted = HostBook::new(timing);
        assert_eq!(book.take_changed().into_iter().collect::<Vec<_>>(), ["box"]);
        assert!(book.kept("other").is_none());
        restarted.restore("box", &book.kept("box").unwrap());
        assert_eq!(host_due(&restarted, 50), [(labels.clone(), false, 2, 230)]);
        // The host answers: resolved once.
        book.observe([("box", None), ("other", None)], at(4));
        assert_eq!(host_due(&book, 4), [(labels.clone(), true, 2, 4)]);
        let postings = book.due(at(4));
        book.delivered(&postings, at(4));
        assert!(host_due(&book, 5).is_empty());
        // A host no longer watched is resolved too.
        restarted.observe([("other", None)], at(60));
        assert_eq!(host_due(&restarted, 60), [(labels, true, 2, 60)]);
    }
}
