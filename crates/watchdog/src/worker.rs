//! The worker monitor: watches the PROCESS a dispatched agent runs on, and
//! says `gone` or `idle` (and `clear` when one stops holding), nothing else.
//!
//! A port of the seed `plot-worker-monitor.sh`. Its rules live here, each
//! beside the reason it exists; the machine reaches the world only through
//! [`WorkerPort`], so every branch (a pid that dies between two samples, a
//! tree that changes between two readings, a frozen CPU clock, a missing
//! origin ref) is driven from tests with fakes.
//!
//! Vocabulary (kept exactly): findings `gone`, `idle`, `clear`; a pass's
//! verdict is `gone`, `quiet`, `busy` or `unknown`, and only findings are
//! published. A monitor that reports every quiet moment teaches its reader
//! to ignore it.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::Clock;

/// The `monitor` field of every finding.
pub const MONITOR_NAME: &str = "WorkerMonitor";

/// The stdout prefix: the line lands in `.plot-worker.log` beside the
/// agent's own output, where an operator tailing a worker sees it.
pub const STDOUT_PREFIX: &str = "plot-monitor ";

/// What the pid file says. THREE answers: the wrapper starts the monitor
/// before it records the agent's pid, so "not recorded yet" is the startup
/// window and must never read as `gone`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PidReading {
    /// The pid file names a running pid.
    Alive(u32),
    /// The pid file names a pid that is gone.
    Dead(u32),
    /// No pid recorded yet (the startup window): why.
    NotRecorded {
        /// Why there is none.
        reason: String,
    },
}

mod pid;
pub use pid::RememberedPid;

/// CPU clocks (ticks) of the agent's descendants, keyed by pid.
pub type CpuClocks = BTreeMap<u32, u64>;

/// Commits on the branch that touched a file, or why that cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitsReading {
    /// This many commits.
    Count(u64),
    /// The question cannot be answered.
    Unanswerable {
        /// Why.
        reason: String,
    },
}

/// The questions one pass asks of the machine. Each is one seam, so a test
/// can produce states a real machine will not produce on demand.
pub trait WorkerPort {
    /// Read the pid file and ask whether its pid lives.
    fn pid(&mut self) -> PidReading;
    /// Seconds since the agent's newest transcript line; `None` when no
    /// transcript can be read (unknown, never zero).
    fn transcript_quiet_seconds(&mut self) -> Option<u64>;
    /// The CPU clocks of `pid`'s descendants from one process-table scan;
    /// `None` when the table cannot be read.
    fn descendant_cpu(&mut self, pid: u32) -> Option<CpuClocks>;
    /// An opaque string, equal when nothing happened in the tree (HEAD plus
    /// the status list without the monitor's own files). `Err` when unreadable.
    fn tree_fingerprint(&mut self) -> Result<String, crate::PortError>;
    /// Commits since the LOCAL base ref that touched a file.
    fn commits(&mut self) -> CommitsReading;
}

/// Who is being watched and the two numbers that shape the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerConfig {
    /// The branch whose commits count.
    pub branch: String,
    /// The worktree the agent runs in.
    pub worktree: String,
    /// Seconds between passes; appears in the `idle` evidence.
    pub interval: Duration,
    /// The transcript must be quiet this long before the CPU is even asked.
    /// 900 s in the seed: 1.5× the longest quiet stretch ever measured, and a
    /// gate rather than the verdict, because a test suite's silence looks
    /// exactly like a stop.
    pub quiet_seconds: u64,
}

/// What one pass saw, before the two-sample rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The agent's pid is gone.
    Gone {
        /// The pid.
        pid: u32,
    },
    /// Quiet past the window with nothing running under it.
    Quiet {
        /// The agent's pid.
        pid: u32,
    },
    /// Something runs: why it is busy.
    Busy {
        /// What shows it.
        why: String,
    },
    /// The pass could not tell.
    Unknown {
        /// What was missing.
        why: String,
    },
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Gone { pid } => write!(f, "gone (pid {pid} names no live process)"),
            Verdict::Quiet { .. } => write!(
                f,
                "quiet (transcript past the window, no descendant on a core)"
            ),
            Verdict::Busy { why } => write!(f, "busy ({why})"),
            Verdict::Unknown { why } => write!(f, "unknown ({why})"),
        }
    }
}

/// The two findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// The agent's pid died.
    Gone,
    /// The agent went quiet with nothing running under it.
    Idle,
}

impl Finding {
    /// The seed's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Finding::Gone => "gone",
            Finding::Idle => "idle",
        }
    }
}

/// One published line: `gone`, `idle` or `clear`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `gone`, `idle` or `clear`.
    pub finding: &'static str,
    /// When the finding began, UTC.
    pub since: String,
    /// What it was read from.
    pub evidence: String,
    /// When this pass measured it, UTC.
    pub measured_at: String,
    /// The JSON line, fields in the seed's order.
    pub json: String,
}

impl Report {
    /// `plot-monitor {json}`, as the seed prints it.
    pub fn stdout_line(&self) -> String {
        format!("{STDOUT_PREFIX}{}", self.json)
    }
}

/// What a pass did: its verdict (for logs) and the report, if anything changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    /// What the pass read.
    pub verdict: Verdict,
    /// The line to publish, when the finding changed.
    pub report: Option<Report>,
    /// Set when `idle` was refused on the commits condition, for logs.
    pub note: Option<String>,
}

/// The monitor's state: the previous pass's answer, derived rather than
/// recorded. Lose it (restart the monitor) and the next pass rebuilds it, one
/// interval late; nothing is persisted because nothing needs to be.
#[derive(Debug, Clone)]
pub struct WorkerMonitor {
    config: WorkerConfig,
    prev_verdict: Option<Verdict>,
    /// The previous pass's fingerprint, kept only when that pass was quiet
    /// (the only case in which it is compared).
    prev_tree: Option<String>,
    /// The previous pass's descendant CPU clocks and the pid they belong to.
    prev_cpu: Option<(u32, CpuClocks)>,
    published: Option<Finding>,
    since: Option<String>,
}

impl WorkerMonitor {
    /// A monitor that has seen nothing yet.
    pub fn new(config: WorkerConfig) -> Self {
        WorkerMonitor {
            config,
            prev_verdict: None,
            prev_tree: None,
            prev_cpu: None,
            published: None,
            since: None,
        }
    }

    /// The settings it runs with.
    pub fn config(&self) -> &WorkerConfig {
        &self.config
    }

    /// When the finding last changed (the `since` of the last report).
    pub fn since(&self) -> Option<&str> {
        self.since.as_deref()
    }

    /// The finding currently held, if any.
    pub fn published(&self) -> Option<Finding> {
        self.published
    }

    /// One full pass: sample, apply the two-sample rule, publish only on a change.
    pub fn pass(&mut self, ports: &mut impl WorkerPort, clock: &impl Clock) -> Pass {
        let verdict = self.sample(ports);
        let mut note = None;

        let (finding, tree) = match &verdict {
            // ONE SAMPLE IS ENOUGH FOR `gone`, and only for `gone`: a process
            // does not come back, so a second pass would only delay a certain finding.
            Verdict::Gone { .. } => (Some(Finding::Gone), None),
            Verdict::Quiet { .. } => {
                // The fingerprint is only ever compared between two quiet
                // passes, so only a quiet pass asks git for it.
                let tree = ports.tree_fingerprint().ok();
                // THE TWO-SAMPLE RULE: this pass quiet, the previous pass
                // quiet, the tree unchanged between them (an unreadable tree
                // is never "unchanged"), and commits already on the branch.
                let two_quiet = matches!(self.prev_verdict, Some(Verdict::Quiet { .. }))
                    && tree.is_some()
                    && tree == self.prev_tree;
                let finding = if two_quiet {
                    match ports.commits() {
                        CommitsReading::Count(n) if n > 0 => Some(Finding::Idle),
                        // The middle row: quiet with nothing to show may be an
                        // agent thinking about a hard first slice; calling it
                        // a stall is the cry-wolf that costs the word its readers.
                        CommitsReading::Count(_) => {
                            note = Some("no commits that touched a file yet".to_owned());
                            None
                        }
                        // No ref to count against: a failure to observe is
                        // not evidence of something to see.
                        CommitsReading::Unanswerable { reason } => {
                            note = Some(format!("commits unanswerable: {reason}"));
                            None
                        }
                    }
                } else {
                    None
                };
                (finding, tree)
            }
            // `busy` and `unknown` are not findings: silence means healthy.
            Verdict::Busy { .. } | Verdict::Unknown { .. } => (None, None),
        };

        self.prev_verdict = Some(verdict.clone());
        self.prev_tree = tree;

        // PUBLISH ONLY ON A CHANGE: a re-published `idle` every pass would
        // bury a new stall among old ones. Clearing is news too: a board that
        // never hears it keeps a stale entry up after the worker recovered.
        let report = if finding != self.published {
            let now = utc_timestamp(clock.now());
            let report = match (finding, self.published) {
                (Some(found), _) => {
                    let evidence = self.evidence(found, &verdict);
                    Some(self.render(found.word(), evidence, &now))
                }
                (None, Some(held)) => {
                    let evidence = format!(
                        "the {} finding no longer holds; the worker is measuring healthy again",
                        held.word()
                    );
                    Some(self.render("clear", evidence, &now))
                }
                (None, None) => None,
            };
            self.published = finding;
            report
        } else {
            None
        };
        Pass {
            verdict,
            report,
            note,
        }
    }

    /// What this pass sees. THE ORDER IS LOAD-BEARING: a dead pid makes every
    /// other question meaningless, so it is asked first.
    fn sample(&mut self, ports: &mut impl WorkerPort) -> Verdict {
        let pid = match ports.pid() {
            PidReading::Dead(pid) => {
                self.prev_cpu = None;
                return Verdict::Gone { pid };
            }
            // The startup window: not a finding, and NOT `gone`.
            PidReading::NotRecorded { reason } => {
                self.prev_cpu = None;
                return Verdict::Unknown { why: reason };
            }
            PidReading::Alive(pid) => pid,
        };

        // The CPU clocks are read on every live pass (one /proc scan), so
        // that the first pass past the window already has a previous
        // reading to compare against. Without one (this monitor's first live
        // pass) it counts busy: see `descendants_busy` for why, and for the
        // interval it costs.
        let cpu = ports.descendant_cpu(pid);
        let cpu_busy = descendants_busy(self.prev_cpu.as_ref(), pid, cpu.as_ref());
        self.prev_cpu = cpu.map(|clocks| (pid, clocks));

        // THE TRANSCRIPT IS ASKED FIRST: an agent waiting on a model burns
        // no CPU, so a CPU-only rule read the common case as a stall (it
        // ended eleven working agents). No transcript is `unknown`, which is
        // never a finding: the monitor invents no reading it does not have.
        let Some(quiet) = ports.transcript_quiet_seconds() else {
            return Verdict::Unknown {
                why: "no transcript can be read".to_owned(),
            };
        };
        // Inside the window the agent wrote something recently; no CPU
        // sample can overturn that.
        if quiet < self.config.quiet_seconds {
            return Verdict::Busy {
                why: format!("transcript written {quiet}s ago"),
            };
        }
        // PAST THE WINDOW, THE CPU DECIDES, read for what it CAN say: a
        // moving clock proves a child is working (a build, a test suite);
        // a frozen one only agrees with the transcript's silence.
        match cpu_busy {
            Some(why) => Verdict::Busy { why },
            None => Verdict::Quiet { pid },
        }
    }

    fn evidence(&self, finding: Finding, verdict: &Verdict) -> String {
        match (finding, verdict) {
            (Finding::Gone, Verdict::Gone { pid }) => format!(
                "the agent pid {pid} names no live process; the worker's desk is unattended"
            ),
            (Finding::Idle, Verdict::Quiet { pid }) => format!(
                "the agent pid {pid} is alive but its transcript has been silent for over {}s with no child process burning CPU behind it, across two consecutive passes ~{}s apart, the tree is unchanged between them, and the branch already carries commits",
                self.config.quiet_seconds,
                seconds_display(self.config.interval),
            ),
            // A finding is only ever derived from its own verdict.
            (finding, verdict) => format!("{} ({verdict})", finding.word()),
        }
    }

    /// A finding changed: `since` restarts now and is carried until the next change.
    fn render(&mut self, finding: &'static str, evidence: String, now: &str) -> Report {
        self.since = Some(now.to_owned());
        let since = now.to_owned();
        let json = format!(
            "{{\"monitor\":{},\"branch\":{},\"worktree\":{},\"finding\":{},\"since\":{},\"evidence\":{},\"measuredAt\":{}}}",
            json_string(MONITOR_NAME),
            json_string(&self.config.branch),
            json_string(&self.config.worktree),
            json_string(finding),
            json_string(&since),
            json_string(&evidence),
            json_string(now),
        );
        Report {
            finding,
            since,
            evidence,
            measured_at: now.to_owned(),
            json,
        }
    }
}

/// Did any descendant's CPU clock move since the previous pass? `Some(why)`
/// means busy. With no previous reading (first pass, a new pid, or an
/// unreadable table) it counts as busy (issue 5 asks for it: "idle needs two
/// passes anyway"). The true reason: a clock's movement can only be seen
/// between two readings, so one reading is no evidence that the children are
/// still, and a failure to observe is not evidence of stillness. It is not
/// free: the first pass past the window is `busy`, so the first `quiet` pair,
/// and the first `idle`, come one interval later than they otherwise could.
fn descendants_busy(
    prev: Option<&(u32, CpuClocks)>,
    pid: u32,
    now: Option<&CpuClocks>,
) -> Option<String> {
    let Some(now) = now else {
        return Some("the process table cannot be read".to_owned());
    };
    let prev = match prev {
        Some((prev_pid, clocks)) if *prev_pid == pid => clocks,
        _ => return Some("no previous CPU reading to compare against".to_owned()),
    };
    now.iter()
        .find(|(child, ticks)| **ticks > prev.get(child).copied().unwrap_or(0))
        .map(|(child, _)| format!("descendant {child}'s CPU clock advanced"))
}

/// A JSON string exactly as the seed writes one: Python's `json.dumps` with
/// its default `ensure_ascii`. A quote and a backslash get a backslash, the
/// five short escapes (`\n \r \t \b \f`) are kept, and every other character
/// outside printable ASCII (controls, DEL, anything non-ASCII) is a lowercase
/// `\uXXXX`, a surrogate pair beyond the BMP. A drop-in's lines may be
/// compared byte for byte with the bash monitor's.
fn json_string(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    // Writing to a String cannot fail.
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
    out
}

/// `30`, or `0.5` for a fractional interval (as a person wrote it in the env).
fn seconds_display(interval: Duration) -> String {
    if interval.subsec_nanos() == 0 {
        interval.as_secs().to_string()
    } else {
        let text = format!("{:.3}", interval.as_secs_f64());
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// `date -u +%Y-%m-%dT%H:%M:%SZ` for a Unix time. One past what a timestamp
/// holds (about ±9999 years; no clock reads one) is shown as the nearest it holds.
pub fn utc_timestamp(unix_seconds: i64) -> String {
    let at = jiff::Timestamp::from_second(unix_seconds).unwrap_or(if unix_seconds < 0 {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests;
