//! What the session monitor remembers per target: what it typed (the echo
//! ledger), how many nudges it spent since progress last advanced, what it
//! already escalated, and the failure text it already reported.
//!
//! Every change is one [`SessionRecord`], appended as one JSON line before the
//! action it records is taken (a nudge is recorded before it is sent, seed
//! defect 1), and replayed on start, so a restarted monitor neither re-pages a
//! question nor gets a fresh nudge budget.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

/// How many sent texts the echo ledger keeps: older nudges have scrolled away.
pub const ECHO_LEDGER_CAP: usize = 32;

/// One change to a target's memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionRecord {
    /// Text about to be typed into the pane.
    Sent {
        /// The exact text, for the echo ledger.
        text: String,
    },
    /// A nudge was spent: `used` of the budget since progress last advanced.
    Nudged {
        /// Nudges spent so far, this one included.
        used: u32,
    },
    /// The progress probe advanced; the budget starts over.
    BudgetReset {
        /// The reading before.
        from: u64,
        /// The reading now.
        to: u64,
    },
    /// The progress probe's first reading, or one that did not advance.
    Progress {
        /// The reading.
        value: u64,
    },
    /// A person pressed a key in the session: a new budget starts (nudges
    /// used back to 0, a spent budget's escalation re-armed), the progress
    /// reading kept.
    BudgetRenewed,
    /// An escalation was sent; `key` names what it was about, so it is sent once.
    Escalated {
        /// What it was about.
        kind: EscalationKind,
        /// Which occurrence of that kind (a dialog's text, a reason).
        key: String,
    },
    /// The pane showed another verdict: an escalation of this kind may be sent again.
    Rearmed {
        /// The kind whose latch is released.
        kind: EscalationKind,
    },
    /// Failure text reported for one signal; never cleared on resume (seed defect 3).
    FailureReported {
        /// The failure signal's name (`exit-code`, …).
        signal: String,
        /// The line reported.
        text: String,
    },
    /// The report of a failure never reached anyone (its alert failed): it is due again.
    FailureRetracted {
        /// The failure signal's name.
        signal: String,
    },
    /// The pane (`%N`) the agent was last seen in, and that pane's first
    /// process, read from then on while the pane belongs to the session and
    /// still has that process (a restarted tmux server reuses pane ids),
    /// whichever pane is active.
    AgentPane {
        /// The pane's tmux id (`%N`).
        pane: String,
        /// The pane's first process then (absent in journals from before it was kept).
        #[serde(default)]
        pid: Option<u32>,
    },
    /// The agent left that pane (it exited there): the session's active pane
    /// is read again.
    AgentPaneForgotten,
    /// A stop's screen (a hash of its text) and the session's last key time,
    /// as a poll saw them: a restarted monitor that sees the same screen and
    /// no key since knows it held still, as a running one would.
    StopSeen {
        /// A hash of the stop's screen text.
        hash: u64,
        /// The session's last key time then (epoch seconds), when tmux gave one.
        #[serde(default)]
        activity: Option<i64>,
    },
    /// A usage limit's line (its fingerprint) and the reset it was read as
    /// when first seen (epoch seconds), and whether the reset's one nudge was
    /// typed: a wait (`try again in 5 hours`) counts from when it was seen,
    /// not from every poll, and a restart neither re-anchors nor re-nudges.
    LimitSeen {
        /// The limit line's fingerprint.
        line: String,
        /// When it resets (epoch seconds), as read when first seen.
        reset: i64,
        /// The one nudge after the reset was typed.
        #[serde(default)]
        nudged: bool,
    },
    /// The usage limit is off screen: the next one is read afresh, even if
    /// it prints the same words (`resets 3:33am` a day later).
    LimitGone,
}

/// What an escalation was about. One latch per kind (seed defect 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EscalationKind {
    /// A QUESTION was relayed to a human.
    Question,
    /// A BLOCKED stop was reported.
    Blocked,
    /// The nudge budget ran out without progress: `escalate_to_human`.
    BudgetSpent,
    /// A stop that could not be typed into (no input box recognised, or the
    /// agent exited); the key says which.
    Unreadable,
    /// The pane could not be captured for several polls in a row.
    CaptureFailed,
    /// A draft (a person's, or our own unsent nudge) stayed in the box of a
    /// stop that would have been nudged: not typed into.
    Draft,
    /// A usage limit stopped the agent, and either its reset could not be
    /// read or it was still on screen after the reset's one nudge.
    UsageLimit,
}

/// A target's memory, as replayed from its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionMemory {
    /// The newest texts we typed into the pane, oldest first.
    pub sent: VecDeque<String>,
    /// Nudges spent since progress last advanced.
    pub nudges_used: u32,
    /// The progress probe's last reading.
    pub progress: Option<u64>,
    /// What is currently escalated, by kind.
    pub escalated: BTreeMap<EscalationKind, String>,
    /// The failure text last reported, per signal.
    pub failures: BTreeMap<String, String>,
    /// The pane the agent was last seen in, and its first process.
    pub agent_pane: Option<(String, Option<u32>)>,
    /// The last stop's screen hash and the session's last key time then.
    pub stop_seen: Option<(u64, Option<i64>)>,
    /// The usage limit in force: its line's fingerprint, its reset, whether nudged after it.
    pub limit_seen: Option<(String, i64, bool)>,
}

impl SessionMemory {
    /// Replays records in order.
    pub fn replay<'a>(records: impl IntoIterator<Item = &'a SessionRecord>) -> SessionMemory {
        let mut memory = SessionMemory::default();
        for record in records {
            memory.apply(record);
        }
        memory
    }

    /// Applies one record; the monitor calls this for every record it writes.
    pub fn apply(&mut self, record: &SessionRecord) {
        match record {
            SessionRecord::Sent { text } => {
                if !text.trim().is_empty() {
                    self.sent.push_back(text.clone());
                    while self.sent.len() > ECHO_LEDGER_CAP {
                        self.sent.pop_front();
                    }
                }
            }
            SessionRecord::Nudged { used } => self.nudges_used = *used,
            SessionRecord::BudgetReset { to, .. } => {
                self.nudges_used = 0;
                self.progress = Some(*to);
                self.escalated.remove(&EscalationKind::BudgetSpent);
            }
            SessionRecord::Progress { value } => self.progress = Some(*value),
            SessionRecord::BudgetRenewed => {
                self.nudges_used = 0;
                self.escalated.remove(&EscalationKind::BudgetSpent);
            }
            SessionRecord::Escalated { kind, key } => {
                self.escalated.insert(*kind, key.clone());
            }
            SessionRecord::Rearmed { kind } => {
                self.escalated.remove(kind);
            }
            SessionRecord::FailureReported { signal, text } => {
                self.failures.insert(signal.clone(), text.clone());
            }
            SessionRecord::FailureRetracted { signal } => {
                self.failures.remove(signal);
            }
            SessionRecord::AgentPane { pane, pid } => self.agent_pane = Some((pane.clone(), *pid)),
            SessionRecord::AgentPaneForgotten => self.agent_pane = None,
            SessionRecord::StopSeen { hash, activity } => self.stop_seen = Some((*hash, *activity)),
            SessionRecord::LimitSeen {
                line,
                reset,
                nudged,
            } => self.limit_seen = Some((line.clone(), *reset, *nudged)),
            SessionRecord::LimitGone => self.limit_seen = None,
        }
    }
}

impl SessionMemory {
    /// The fewest records that replay to this memory: what a journal is
    /// compacted to, so replay stays bounded however long a monitor runs.
    pub fn compacted(&self) -> Vec<SessionRecord> {
        let mut records: Vec<SessionRecord> = self
            .sent
            .iter()
            .map(|text| SessionRecord::Sent { text: text.clone() })
            .collect();
        if let Some(value) = self.progress {
            records.push(SessionRecord::Progress { value });
        }
        if self.nudges_used > 0 {
            records.push(SessionRecord::Nudged {
                used: self.nudges_used,
            });
        }
        records.extend(
            self.escalated
                .iter()
                .map(|(kind, key)| SessionRecord::Escalated {
                    kind: *kind,
                    key: key.clone(),
                }),
        );
        records.extend(
            self.failures
                .iter()
                .map(|(signal, text)| SessionRecord::FailureReported {
                    signal: signal.clone(),
                    text: text.clone(),
                }),
        );
        if let Some((pane, pid)) = &self.agent_pane {
            records.push(SessionRecord::AgentPane {
                pane: pane.clone(),
                pid: *pid,
            });
        }
        if let Some((hash, activity)) = self.stop_seen {
            records.push(SessionRecord::StopSeen { hash, activity });
        }
        if let Some((line, reset, nudged)) = &self.limit_seen {
            records.push(SessionRecord::LimitSeen {
                line: line.clone(),
                reset: *reset,
                nudged: *nudged,
            });
        }
        records
    }
}

/// Parses a journal's lines. A line that does not parse (a torn last write, a
/// hand edit) is skipped and reported; the rest still count.
pub fn parse_records(text: &str) -> (Vec<SessionRecord>, Vec<String>) {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(record) => records.push(record),
            Err(err) => errors.push(format!("line {}: {err}", index + 1)),
        }
    }
    (records, errors)
}

/// One record as a journal line (no newline inside: JSON escapes it).
pub fn record_line(record: &SessionRecord) -> String {
    // Serialising a plain enum of strings and integers cannot fail.
    serde_json::to_string(record).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn any_record() -> impl Strategy<Value = SessionRecord> {
        let kind = prop_oneof![
            Just(EscalationKind::Question),
            Just(EscalationKind::Blocked),
            Just(EscalationKind::BudgetSpent),
            Just(EscalationKind::Unreadable),
            Just(EscalationKind::CaptureFailed),
            Just(EscalationKind::Draft),
            Just(EscalationKind::UsageLimit),
        ];
        let text = "[a-c ]{0,3}";
        prop_oneof![
            text.prop_map(|text| SessionRecord::Sent { text }),
            (0u32..7).prop_map(|used| SessionRecord::Nudged { used }),
            (0u64..5, 0u64..5).prop_map(|(from, to)| SessionRecord::BudgetReset { from, to }),
            (0u64..5).prop_map(|value| SessionRecord::Progress { value }),
            Just(SessionRecord::BudgetRenewed),
            (kind.clone(), text).prop_map(|(kind, key)| SessionRecord::Escalated { kind, key }),
            kind.prop_map(|kind| SessionRecord::Rearmed { kind }),
            ("[xy]", text)
                .prop_map(|(signal, text)| SessionRecord::FailureReported { signal, text }),
            "[xy]".prop_map(|signal| SessionRecord::FailureRetracted { signal }),
            ("%[0-3]", proptest::option::of(1u32..4))
                .prop_map(|(pane, pid)| SessionRecord::AgentPane { pane, pid }),
            Just(SessionRecord::AgentPaneForgotten),
        ]
    }

    proptest! {
        /// However long the journal, its compacted form replays to the same memory.
        #[test]
        fn a_compacted_journal_replays_to_the_same_memory(
            records in proptest::collection::vec(any_record(), 0..200)
        ) {
            let memory = SessionMemory::replay(&records);
            let compacted = memory.compacted();
            prop_assert!(compacted.len() <= ECHO_LEDGER_CAP + 5 + 5 + 2 + 1 + 1);
            prop_assert_eq!(SessionMemory::replay(&compacted), memory);
        }
    }

    #[test]
    fn records_round_trip_through_journal_lines() {
        let records = vec![
            SessionRecord::Sent {
                text: "keep going\nplease".into(),
            },
            SessionRecord::Nudged { used: 1 },
            SessionRecord::BudgetReset { from: 41, to: 42 },
            SessionRecord::Escalated {
                kind: EscalationKind::Question,
                key: "abc".into(),
            },
            SessionRecord::Rearmed {
                kind: EscalationKind::Question,
            },
            SessionRecord::FailureReported {
                signal: "exit-code".into(),
                text: "Exit code 1".into(),
            },
        ];
        let text: String = records.iter().map(|r| record_line(r) + "\n").collect();
        assert_eq!(text.lines().count(), records.len());
        assert_eq!(parse_records(&text), (records, Vec::new()));
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_named() {
        let text = format!(
            "{}\n{{\"record\":\"nud",
            record_line(&SessionRecord::Nudged { used: 3 })
        );
        let (records, errors) = parse_records(&text);
        assert_eq!(records, [SessionRecord::Nudged { used: 3 }]);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("line 2:"), "{errors:?}");
    }

    #[test]
    fn replay_restores_budget_escalations_failures_and_echo() {
        let records = [
            SessionRecord::Progress { value: 41 },
            SessionRecord::Sent {
                text: "nudge".into(),
            },
            SessionRecord::Nudged { used: 1 },
            SessionRecord::Sent {
                text: "nudge".into(),
            },
            SessionRecord::Nudged { used: 2 },
            SessionRecord::Escalated {
                kind: EscalationKind::Question,
                key: "q1".into(),
            },
            SessionRecord::FailureReported {
                signal: "is-red".into(),
                text: "step 3 is RED.".into(),
            },
        ];
        let memory = SessionMemory::replay(&records);
        assert_eq!(memory.nudges_used, 2);
        assert_eq!(memory.progress, Some(41));
        assert_eq!(memory.sent.len(), 2);
        assert_eq!(
            memory
                .escalated
                .get(&EscalationKind::Question)
                .map(String::as_str),
            Some("q1")
        );
        assert_eq!(
            memory.failures.get("is-red").map(String::as_str),
            Some("step 3 is RED.")
        );
    }

    #[test]
    fn a_budget_reset_clears_the_spent_escalation_and_the_count() {
        let records = [
            SessionRecord::Nudged { used: 5 },
            SessionRecord::Escalated {
                kind: EscalationKind::BudgetSpent,
                key: "5".into(),
            },
            SessionRecord::BudgetReset { from: 41, to: 42 },
        ];
        let memory = SessionMemory::replay(&records);
        assert_eq!(memory.nudges_used, 0);
        assert!(memory.escalated.is_empty());
    }

    #[test]
    fn the_echo_ledger_keeps_the_newest_texts_and_never_a_blank_one() {
        let mut memory = SessionMemory::default();
        memory.apply(&SessionRecord::Sent { text: "  ".into() });
        for i in 0..ECHO_LEDGER_CAP + 5 {
            memory.apply(&SessionRecord::Sent {
                text: format!("nudge {i}"),
            });
        }
        assert_eq!(memory.sent.len(), ECHO_LEDGER_CAP);
        assert_eq!(memory.sent.front().map(String::as_str), Some("nudge 5"));
    }
}
