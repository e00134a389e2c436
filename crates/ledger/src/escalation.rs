//! The escalation tracker: reports that need an acknowledgement, and the
//! bounded repeats sent while none comes (the seed's "Lead Nudge Escalation").
//!
//! A pure data structure: the caller passes the time in, so every branch is
//! driven by a test with plain numbers. The event type is the caller's own
//! vocabulary (the lead monitor's `State`), so no word is spelled twice.

/// The seed's cap: "Maximum 3 nudges per event — after 3rd, stop to avoid noise".
pub const MAX_REPEATS: u32 = 3;

/// One report awaiting acknowledgement (the seed's `nudge_tracker` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation<E> {
    /// The reported state, e.g. `stalled` or `process_died`.
    pub event: E,
    /// The agent the report is about.
    pub agent: String,
    /// The step of that agent's work it was at.
    pub step: String,
    /// Repeats sent so far, 0 to [`MAX_REPEATS`].
    pub nudge_count: u32,
    /// When the report or its latest repeat went out (epoch seconds).
    pub last_sent: i64,
    /// Someone acknowledged it: no repeat is sent any more.
    pub acked: bool,
}

/// A repeat that is due now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat<E> {
    /// The state the first report named, repeated as it was.
    pub event: E,
    /// The agent it is about.
    pub agent: String,
    /// The step it was at.
    pub step: String,
    /// 1 for the first repeat, up to [`MAX_REPEATS`].
    pub nudge_count: u32,
}

/// Open escalations, keyed by (event, agent, step).
#[derive(Debug, Clone)]
pub struct EscalationTracker<E> {
    open: Vec<Escalation<E>>,
}

impl<E> Default for EscalationTracker<E> {
    fn default() -> Self {
        EscalationTracker { open: Vec::new() }
    }
}

impl<E: Clone + PartialEq> EscalationTracker<E> {
    /// A tracker with nothing open, as a monitor starts.
    pub fn new() -> Self {
        Self::default()
    }

    /// A report of `event` for (`agent`, `step`) went out at `now`: it now waits
    /// for an acknowledgement. A new report of the same key starts a new event
    /// with a fresh count, because it is a new occurrence (the state changed in between).
    pub fn raise(&mut self, event: E, agent: &str, step: &str, now: i64) {
        self.open
            .retain(|e| !(e.event == event && e.agent == agent && e.step == step));
        self.open.push(Escalation {
            event,
            agent: agent.to_owned(),
            step: step.to_owned(),
            nudge_count: 0,
            last_sent: now,
            acked: false,
        });
    }

    /// `{"ack":EVENT,"agent":AGENT}` closes that event for all of the agent's steps.
    /// Returns how many open events it closed.
    pub fn ack(&mut self, event: E, agent: &str) -> usize {
        let mut closed = 0;
        for e in &mut self.open {
            if e.event == event && e.agent == agent && !e.acked {
                e.acked = true;
                closed += 1;
            }
        }
        self.open.retain(|e| !e.acked);
        closed
    }

    /// The watched item moved on (for example a stall ended in a result): its
    /// earlier report is no longer true, so repeating it would cry wolf.
    pub fn resolve(&mut self, agent: &str, step: &str) {
        self.open.retain(|e| !(e.agent == agent && e.step == step));
    }

    /// The repeats due at `now`: each unacknowledged event whose latest send is
    /// at least `ack_timeout` seconds old, until it has been repeated [`MAX_REPEATS`] times.
    /// An event that has used its repeats is dropped.
    pub fn due(&mut self, now: i64, ack_timeout: i64) -> Vec<Repeat<E>> {
        let mut repeats = Vec::new();
        for e in &mut self.open {
            if e.nudge_count < MAX_REPEATS && now.saturating_sub(e.last_sent) >= ack_timeout {
                e.nudge_count += 1;
                e.last_sent = now;
                repeats.push(Repeat {
                    event: e.event.clone(),
                    agent: e.agent.clone(),
                    step: e.step.clone(),
                    nudge_count: e.nudge_count,
                });
            }
        }
        self.open.retain(|e| e.nudge_count < MAX_REPEATS);
        repeats
    }

    /// Events still waiting for an acknowledgement.
    pub fn open(&self) -> &[Escalation<E>] {
        &self.open
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(repeats: &[Repeat<&str>]) -> Vec<(String, u32)> {
        repeats
            .iter()
            .map(|r| (format!("{}/{}/{}", r.event, r.agent, r.step), r.nudge_count))
            .collect()
    }

    #[test]
    fn repeats_after_the_timeout_at_most_three_times() {
        let mut t = EscalationTracker::new();
        t.raise("stalled", "executor", "3", 1000);
        assert!(t.due(1119, 120).is_empty(), "not yet 120 s");
        assert_eq!(
            counts(&t.due(1120, 120)),
            [("stalled/executor/3".into(), 1)]
        );
        assert!(
            t.due(1200, 120).is_empty(),
            "the clock restarts at each repeat"
        );
        assert_eq!(
            counts(&t.due(1240, 120)),
            [("stalled/executor/3".into(), 2)]
        );
        assert_eq!(
            counts(&t.due(1360, 120)),
            [("stalled/executor/3".into(), 3)]
        );
        for now in [1480, 1600, 10_000] {
            assert!(t.due(now, 120).is_empty(), "a fourth repeat at {now}");
        }
        assert!(t.open().is_empty());
    }

    #[test]
    fn an_ack_closes_the_event_for_all_of_the_agents_steps_only() {
        let mut t = EscalationTracker::new();
        t.raise("stalled", "executor", "3", 0);
        t.raise("stalled", "executor", "4", 0);
        t.raise("process_died", "executor", "5", 0);
        t.raise("stalled", "writer", "3", 0);
        assert_eq!(t.ack("stalled", "executor"), 2);
        assert_eq!(t.ack("stalled", "executor"), 0, "already closed");
        assert_eq!(
            counts(&t.due(120, 120)),
            [
                ("process_died/executor/5".into(), 1),
                ("stalled/writer/3".into(), 1)
            ]
        );
        assert_eq!(t.ack("process_died", "executor"), 1);
        assert_eq!(counts(&t.due(240, 120)), [("stalled/writer/3".into(), 2)]);
    }

    #[test]
    fn an_ack_between_repeats_stops_them() {
        let mut t = EscalationTracker::new();
        t.raise("process_died", "tester-claude", "2", 0);
        assert_eq!(t.due(120, 120).len(), 1);
        t.ack("process_died", "tester-claude");
        assert!(t.due(240, 120).is_empty());
        assert!(t.due(1000, 120).is_empty());
    }

    #[test]
    fn resolving_the_item_or_raising_anew_restarts_the_count() {
        let mut t = EscalationTracker::new();
        t.raise("stalled", "analyst", "1", 0);
        assert_eq!(t.due(120, 120).len(), 1);
        t.resolve("analyst", "1");
        assert!(t.due(1000, 120).is_empty());
        t.raise("stalled", "analyst", "1", 1000);
        t.raise("stalled", "analyst", "1", 1100);
        assert!(
            t.due(1219, 120).is_empty(),
            "the newer report's clock counts"
        );
        assert_eq!(counts(&t.due(1220, 120)), [("stalled/analyst/1".into(), 1)]);
    }
}
