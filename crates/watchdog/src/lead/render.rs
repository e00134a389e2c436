//! The seed's exact wire formats: the Lead line, the Consultant's lifecycle
//! JSON and the watchdog JSON. Fields appear in the seed's order.

use std::fmt;

use serde::Serialize;

/// The seed's `state=` words, the lead monitor's whole vocabulary: a watch
/// item's state changes, and the events a Lead acknowledges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// `result_ready`: the result file is there.
    ResultReady,
    /// `stalled`: alive, no result, no progress for the window.
    Stalled,
    /// `timeout_imminent`: 90% of the timeout has passed.
    TimeoutImminent,
    /// `timeout_exceeded`: the timeout has passed.
    TimeoutExceeded,
    /// `process_died`: the pid file's process is gone with no result.
    ProcessDied,
}

impl State {
    /// Every state, in the seed's order.
    pub const ALL: [State; 5] = [
        State::ResultReady,
        State::Stalled,
        State::TimeoutImminent,
        State::TimeoutExceeded,
        State::ProcessDied,
    ];

    /// The word, exactly as the seed writes it after `state=`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::ResultReady => "result_ready",
            State::Stalled => "stalled",
            State::TimeoutImminent => "timeout_imminent",
            State::TimeoutExceeded => "timeout_exceeded",
            State::ProcessDied => "process_died",
        }
    }

    /// Parses the seed's word (`stalled`, …); anything else is `None`.
    pub fn from_word(word: &str) -> Option<State> {
        State::ALL.into_iter().find(|state| state.as_str() == word)
    }
}

/// The word as a JSON string (`nudge_repeat`'s `original_event`): the same
/// word as [`State::as_str`], worded in one place.
impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A state change of one watch item, in the seed's `state=` vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The result file appeared.
    ResultReady {
        /// Its path.
        file: String,
    },
    /// The agent's process died with no result.
    ProcessDied {
        /// The pid that died.
        pid: u32,
    },
    /// Alive with no result and no progress.
    Stalled {
        /// Seconds without progress.
        idle_sec: u64,
        /// The agent's CPU use over the measurement, where it was taken.
        cpu_pct: Option<u32>,
    },
    /// 90% of the timeout has passed.
    TimeoutImminent {
        /// Seconds since the item started.
        elapsed: u64,
        /// The item's timeout in seconds.
        timeout: u64,
    },
    /// The timeout has passed.
    TimeoutExceeded {
        /// Seconds since the item started.
        elapsed: u64,
        /// The item's timeout in seconds.
        timeout: u64,
    },
}

impl Report {
    /// The state it reports.
    pub fn state(&self) -> State {
        match self {
            Report::ResultReady { .. } => State::ResultReady,
            Report::ProcessDied { .. } => State::ProcessDied,
            Report::Stalled { .. } => State::Stalled,
            Report::TimeoutImminent { .. } => State::TimeoutImminent,
            Report::TimeoutExceeded { .. } => State::TimeoutExceeded,
        }
    }

    fn extra_fields(&self) -> String {
        match self {
            Report::ResultReady { file } => format!("file={}", plain(file)),
            Report::ProcessDied { pid } => format!("pid={pid}"),
            Report::Stalled {
                idle_sec,
                cpu_pct: Some(cpu),
            } => format!("idle_sec={idle_sec} cpu_pct={cpu}"),
            Report::Stalled {
                idle_sec,
                cpu_pct: None,
            } => format!("idle_sec={idle_sec}"),
            Report::TimeoutImminent { elapsed, timeout }
            | Report::TimeoutExceeded { elapsed, timeout } => {
                format!("elapsed={elapsed}/{timeout}s")
            }
        }
    }
}

/// `[MONITOR] agent={name} step={N} state={state} {extra_fields} ts={HH:MM}`.
pub fn lead_line(agent: &str, step: &str, report: &Report, ts: &str) -> String {
    format!(
        "[MONITOR] agent={} step={} state={} {} ts={ts}",
        plain(agent),
        plain(step),
        report.state(),
        report.extra_fields()
    )
}

/// The handoff headers `agent_complete` may carry under `full` reporting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handoff {
    /// The handoff's `type` header, if it has one.
    pub kind: Option<String>,
    /// The handoff's `status` header, if it has one.
    pub status: Option<String>,
}

/// The Consultant's lifecycle events, the seed's wire format: serialised
/// compact, the tag first and the fields in the seed's order, so the bytes
/// are the seed's (the golden tests hold them). Not versioned: the seed's
/// Consultant reads exactly these.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ConsultantEvent<'a> {
    /// The item's result file is there: `agent_complete`.
    AgentComplete {
        /// The plan step.
        step: &'a str,
        /// The agent's name.
        agent: &'a str,
        /// The result file's path.
        result: &'a str,
        /// The handoff headers, only under `full` reporting and no blind phase.
        #[serde(skip_serializing_if = "Option::is_none")]
        handoff: Option<HandoffHeaders<'a>>,
        /// `HH:MM`.
        ts: &'a str,
        /// Always `monitor`.
        source: &'static str,
    },
    /// Alive, no result, no progress for the stall window: `monitor_stall`.
    MonitorStall {
        /// The plan step.
        step: &'a str,
        /// The agent's name.
        agent: &'a str,
        /// Seconds without progress.
        idle_sec: u64,
        /// The agent's CPU use over the measurement, where it was taken.
        #[serde(skip_serializing_if = "Option::is_none")]
        cpu_pct: Option<u32>,
        /// `HH:MM`.
        ts: &'a str,
        /// Always `monitor`.
        source: &'static str,
    },
    /// 90% of the item's timeout has passed: `monitor_timeout_imminent`.
    MonitorTimeoutImminent {
        /// The plan step.
        step: &'a str,
        /// The agent's name.
        agent: &'a str,
        /// Seconds since the item started.
        elapsed_sec: u64,
        /// The item's timeout, in seconds.
        timeout_sec: u64,
        /// `HH:MM`.
        ts: &'a str,
        /// Always `monitor`.
        source: &'static str,
    },
}

/// `agent_complete`'s `handoff` object: each header, `null` when absent.
#[derive(Debug, Serialize)]
pub struct HandoffHeaders<'a> {
    /// The handoff's `type` header.
    #[serde(rename = "type")]
    pub kind: Option<&'a str>,
    /// The handoff's `status` header.
    pub status: Option<&'a str>,
}

/// Every event this monitor writes comes from it.
const SOURCE: &str = "monitor";

impl<'a> ConsultantEvent<'a> {
    /// The Consultant's event for `report`, if the seed defines one:
    /// `agent_complete`, `monitor_stall`, `monitor_timeout_imminent`.
    /// `handoff` is only ever `Some` when the caller established `full` and
    /// no blind phase.
    pub fn of(
        agent: &'a str,
        step: &'a str,
        report: &'a Report,
        handoff: Option<&'a Handoff>,
        ts: &'a str,
    ) -> Option<ConsultantEvent<'a>> {
        Some(match report {
            Report::ResultReady { file } => ConsultantEvent::AgentComplete {
                step,
                agent,
                result: file,
                handoff: handoff.map(|h| HandoffHeaders {
                    kind: h.kind.as_deref(),
                    status: h.status.as_deref(),
                }),
                ts,
                source: SOURCE,
            },
            Report::Stalled { idle_sec, cpu_pct } => ConsultantEvent::MonitorStall {
                step,
                agent,
                idle_sec: *idle_sec,
                cpu_pct: *cpu_pct,
                ts,
                source: SOURCE,
            },
            Report::TimeoutImminent { elapsed, timeout } => {
                ConsultantEvent::MonitorTimeoutImminent {
                    step,
                    agent,
                    elapsed_sec: *elapsed,
                    timeout_sec: *timeout,
                    ts,
                    source: SOURCE,
                }
            }
            Report::ProcessDied { .. } | Report::TimeoutExceeded { .. } => return None,
        })
    }

    /// The event's line, the seed's bytes.
    pub fn to_line(&self) -> String {
        line(self)
    }
}

/// The Consultant's lifecycle event for `report` as its line, if the seed
/// defines one (see [`ConsultantEvent::of`]).
pub fn consultant_event(
    agent: &str,
    step: &str,
    report: &Report,
    handoff: Option<&Handoff>,
    ts: &str,
) -> Option<String> {
    ConsultantEvent::of(agent, step, report, handoff, ts).map(|event| event.to_line())
}

/// The Consultant's heartbeat when the feed file changed, the seed's
/// `{"type":"feed_update","source":"monitor","ts":"HH:MM"}`: the tag first,
/// then the fields in the seed's order.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "feed_update")]
pub struct FeedUpdate<'a> {
    /// Always `monitor`.
    source: &'static str,
    /// `HH:MM`.
    ts: &'a str,
}

impl<'a> FeedUpdate<'a> {
    /// The heartbeat at `ts`.
    pub fn at(ts: &'a str) -> FeedUpdate<'a> {
        FeedUpdate { source: SOURCE, ts }
    }

    /// The event's line, the seed's bytes.
    pub fn to_line(&self) -> String {
        line(self)
    }
}

/// The watchdog's messages to the Lead, the seed's
/// `{"type":"watchdog","event":"…",…}`: `type` first, then `event`, then the
/// fields in the seed's order (the golden tests hold the bytes).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename = "watchdog")]
pub struct Watchdog<'a> {
    /// The event and its fields, written after `type`.
    #[serde(flatten)]
    pub event: WatchdogEvent<'a>,
}

/// What the watchdog tells the Lead: `event` and the fields that follow it.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum WatchdogEvent<'a> {
    /// A pane of the window is dead: `pane_dead`.
    PaneDead {
        /// The pane's tmux id (`%4`).
        pane: &'a str,
        /// `HH:MM`.
        ts: &'a str,
    },
    /// A live pane runs no registered watch item's process: `untracked_pane`.
    UntrackedPane {
        /// The pane's tmux id (`%5`).
        pane: &'a str,
        /// The pane's process.
        pid: u32,
        /// `HH:MM`.
        ts: &'a str,
    },
    /// An event the Lead has not acknowledged, sent again: `nudge_repeat`.
    NudgeRepeat {
        /// The event repeated, in the seed's `state=` words.
        original_event: State,
        /// The agent it is about.
        agent: &'a str,
        /// How many times it has been sent, this one included.
        nudge_count: u32,
        /// `HH:MM`.
        ts: &'a str,
    },
}

impl WatchdogEvent<'_> {
    /// The message's line, the seed's bytes.
    pub fn to_line(self) -> String {
        line(&Watchdog { event: self })
    }
}

/// Every line of JSON this monitor writes, written one way: compact, in the
/// type's field order.
fn line(value: &impl Serialize) -> String {
    // Strings and numbers only: serialising cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// A value on the Lead line: control characters are escaped so a hostile
/// agent name or path cannot forge a second `[MONITOR]` line.
fn plain(s: &str) -> String {
    if s.chars().any(char::is_control) {
        s.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect()
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_lines_match_the_seed_exactly() {
        let cases = [
            (
                Report::ResultReady {
                    file: "/r/3.md".into(),
                },
                "[MONITOR] agent=executor step=3 state=result_ready file=/r/3.md ts=17:42",
            ),
            (
                Report::ProcessDied { pid: 4242 },
                "[MONITOR] agent=executor step=3 state=process_died pid=4242 ts=17:42",
            ),
            (
                Report::Stalled {
                    idle_sec: 181,
                    cpu_pct: Some(0),
                },
                "[MONITOR] agent=executor step=3 state=stalled idle_sec=181 cpu_pct=0 ts=17:42",
            ),
            (
                Report::Stalled {
                    idle_sec: 181,
                    cpu_pct: None,
                },
                "[MONITOR] agent=executor step=3 state=stalled idle_sec=181 ts=17:42",
            ),
            (
                Report::TimeoutImminent {
                    elapsed: 540,
                    timeout: 600,
                },
                "[MONITOR] agent=executor step=3 state=timeout_imminent elapsed=540/600s ts=17:42",
            ),
            (
                Report::TimeoutExceeded {
                    elapsed: 600,
                    timeout: 600,
                },
                "[MONITOR] agent=executor step=3 state=timeout_exceeded elapsed=600/600s ts=17:42",
            ),
        ];
        for (report, line) in cases {
            assert_eq!(lead_line("executor", "3", &report, "17:42"), line);
        }
    }

    #[test]
    fn a_newline_in_a_name_cannot_forge_a_line() {
        let line = lead_line(
            "x\n[MONITOR] agent=y",
            "1",
            &Report::ProcessDied { pid: 1 },
            "00:00",
        );
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with("[MONITOR] agent=x\\n[MONITOR]"), "{line}");
    }

    #[test]
    fn consultant_events_match_the_seed_exactly() {
        let ready = Report::ResultReady {
            file: "/r/3.md".into(),
        };
        assert_eq!(
            consultant_event("executor", "3", &ready, None, "17:42").unwrap(),
            r#"{"event":"agent_complete","step":"3","agent":"executor","result":"/r/3.md","ts":"17:42","source":"monitor"}"#
        );
        let handoff = Handoff {
            kind: Some("handoff".into()),
            status: None,
        };
        assert_eq!(
            consultant_event("executor", "3", &ready, Some(&handoff), "17:42").unwrap(),
            r#"{"event":"agent_complete","step":"3","agent":"executor","result":"/r/3.md","handoff":{"type":"handoff","status":null},"ts":"17:42","source":"monitor"}"#
        );
        let stall = Report::Stalled {
            idle_sec: 200,
            cpu_pct: Some(3),
        };
        assert_eq!(
            consultant_event("writer", "5", &stall, None, "09:05").unwrap(),
            r#"{"event":"monitor_stall","step":"5","agent":"writer","idle_sec":200,"cpu_pct":3,"ts":"09:05","source":"monitor"}"#
        );
        let imminent = Report::TimeoutImminent {
            elapsed: 540,
            timeout: 600,
        };
        assert_eq!(
            consultant_event("writer", "5", &imminent, None, "09:05").unwrap(),
            r#"{"event":"monitor_timeout_imminent","step":"5","agent":"writer","elapsed_sec":540,"timeout_sec":600,"ts":"09:05","source":"monitor"}"#
        );
        assert_eq!(
            consultant_event("w", "5", &Report::ProcessDied { pid: 1 }, None, "09:05"),
            None
        );
    }

    #[test]
    fn state_words_are_the_seeds_and_read_back() {
        let words: Vec<&str> = State::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(
            words,
            [
                "result_ready",
                "stalled",
                "timeout_imminent",
                "timeout_exceeded",
                "process_died"
            ]
        );
        for state in State::ALL {
            assert_eq!(State::from_word(state.as_str()), Some(state));
            assert_eq!(state.to_string(), state.as_str());
        }
        assert_eq!(
            State::from_word("STALLED"),
            None,
            "the session monitor's word"
        );
    }

    #[test]
    fn feed_update_matches_the_seed_exactly() {
        assert_eq!(
            FeedUpdate::at("10:00").to_line(),
            r#"{"type":"feed_update","source":"monitor","ts":"10:00"}"#
        );
    }

    #[test]
    fn pane_dead_matches_the_seed_exactly() {
        let event = WatchdogEvent::PaneDead {
            pane: "%4",
            ts: "10:00",
        };
        assert_eq!(
            event.to_line(),
            r#"{"type":"watchdog","event":"pane_dead","pane":"%4","ts":"10:00"}"#
        );
    }

    #[test]
    fn untracked_pane_matches_the_seed_exactly() {
        let event = WatchdogEvent::UntrackedPane {
            pane: "%5",
            pid: 77,
            ts: "10:00",
        };
        assert_eq!(
            event.to_line(),
            r#"{"type":"watchdog","event":"untracked_pane","pane":"%5","pid":77,"ts":"10:00"}"#
        );
    }

    #[test]
    fn nudge_repeat_matches_the_seed_exactly_for_both_acknowledged_events() {
        for (state, word) in [
            (State::Stalled, "stalled"),
            (State::ProcessDied, "process_died"),
        ] {
            let event = WatchdogEvent::NudgeRepeat {
                original_event: state,
                agent: "executor",
                nudge_count: 2,
                ts: "10:00",
            };
            assert_eq!(
                event.to_line(),
                format!(
                    r#"{{"type":"watchdog","event":"nudge_repeat","original_event":"{word}","agent":"executor","nudge_count":2,"ts":"10:00"}}"#
                )
            );
        }
    }

    #[test]
    fn a_quote_or_newline_in_a_value_is_escaped_as_json_not_written_raw() {
        let event = WatchdogEvent::PaneDead {
            pane: "%4\"\n{",
            ts: "10:00",
        };
        assert_eq!(
            event.to_line(),
            r#"{"type":"watchdog","event":"pane_dead","pane":"%4\"\n{","ts":"10:00"}"#
        );
    }
}
