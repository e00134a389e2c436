//! The session monitor's fake machine and fake clock, and the `check` table
//! that drives it: a screen per poll in, the exact lines the loop would
//! print and do out.

use std::path::Path;

use bmb_watchdog::session::witness::Witness;
use bmb_watchdog::session::{
    Action, Alert, Foreground, Now, Observation, PollReport, SessionConfig, TargetMonitor,
};
use classify::Work;
use ledger::session::{SessionMemory, SessionRecord};

/// A real capture from `testdata/panes/<agent>/<case>/plain.txt`.
pub(crate) fn agent_capture(agent: &str, case: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/panes")
        .join(agent)
        .join(case)
        .join("plain.txt");
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

pub(crate) fn capture(case: &str) -> String {
    agent_capture("claude", case)
}
pub(crate) fn idle() -> String {
    capture("idle-after-text-answer")
}
pub(crate) fn question() -> String {
    capture("question-permission-bash")
}
pub(crate) fn other_question() -> String {
    capture("question-ask-single")
}
pub(crate) fn working() -> String {
    capture("working-bash-sleep")
}

/// A pane's text, or why it could not be captured.
#[derive(Debug, Clone)]
enum Capture {
    Pane(String),
    Failed(String),
}

/// What the machine shows on one poll: the pane (or why it could not be
/// captured), the probes, and what the pane's processes tell.
#[derive(Debug, Clone)]
pub(crate) struct Screen {
    capture: Capture,
    work: Work,
    progress: Option<u64>,
    witness: Option<Witness>,
    foreground: Option<Foreground>,
    version: Option<String>,
    /// The session's last key time (epoch seconds), as tmux gives it.
    activity: Option<i64>,
    /// When a client last attached to the session (epoch seconds); `None`: never.
    last_attached: Option<i64>,
    /// Whether the pane has the focus; `None`: unknown.
    focused: Option<bool>,
    /// The poll's local time; `None`: unknown.
    now: Option<jiff::ZonedDateTime>,
    /// The pane read (`%N`) and its first process; `None`: tmux did not say.
    pane: Option<(String, u32)>,
}

impl Screen {
    /// `pane` on screen, the work probe unanswered, no progress probe.
    pub(crate) fn pane(pane: &str) -> Screen {
        Screen {
            capture: Capture::Pane(pane.to_string()),
            work: Work::Unknown,
            progress: None,
            witness: None,
            foreground: None,
            version: None,
            activity: None,
            last_attached: None,
            focused: None,
            now: None,
            pane: None,
        }
    }
    /// The capture failed with `error`.
    pub(crate) fn failed(error: &str) -> Screen {
        Screen {
            capture: Capture::Failed(error.to_string()),
            ..Screen::pane("")
        }
    }
    pub(crate) fn work(self, work: Work) -> Screen {
        Screen { work, ..self }
    }
    pub(crate) fn progress(self, progress: u64) -> Screen {
        Screen {
            progress: Some(progress),
            ..self
        }
    }
    pub(crate) fn witness(self, witness: Witness) -> Screen {
        Screen {
            witness: Some(witness),
            ..self
        }
    }
    pub(crate) fn front(self, foreground: &Foreground) -> Screen {
        Screen {
            foreground: Some(foreground.clone()),
            ..self
        }
    }
    /// A key was last pressed in the session at `epoch`.
    pub(crate) fn activity(self, epoch: i64) -> Screen {
        Screen {
            activity: Some(epoch),
            ..self
        }
    }
    /// A client attached to the session at `epoch`, which tmux also makes
    /// the session's activity.
    pub(crate) fn attached(self, epoch: i64) -> Screen {
        Screen {
            activity: Some(epoch),
            last_attached: Some(epoch),
            ..self
        }
    }
    /// The pane has the focus, or another pane of the session has it.
    pub(crate) fn focused(self, focused: bool) -> Screen {
        Screen {
            focused: Some(focused),
            ..self
        }
    }
    /// The poll happens at `now` (`2026-12-01T23:00:00+04:00[Asia/Tbilisi]`).
    pub(crate) fn at(self, now: &str) -> Screen {
        Screen {
            now: Some(now.parse().expect("a zoned time")),
            ..self
        }
    }
    /// Read from pane `id`, whose first process is `pid`.
    pub(crate) fn in_pane(self, id: &str, pid: u32) -> Screen {
        Screen {
            pane: Some((id.to_string(), pid)),
            ..self
        }
    }
    pub(crate) fn version(self, version: &str) -> Screen {
        Screen {
            version: Some(version.to_string()),
            ..self
        }
    }

    pub(crate) fn observation(&self) -> Observation<'_> {
        Observation {
            capture: match &self.capture {
                Capture::Pane(pane) => Ok(pane),
                Capture::Failed(error) => Err(error),
            },
            work: self.work,
            progress: self.progress,
            witness: self.witness.as_ref(),
            foreground: self.foreground.as_ref(),
            cli_version: self.version.as_deref(),
            pane_id: self.pane.as_ref().map(|(id, _)| id.as_str()),
            pane_pid: self.pane.as_ref().map(|&(_, pid)| pid),
            activity: self.activity,
            last_attached: self.last_attached,
            focused: self.focused,
            now: self.now.as_ref().map(|now| Now {
                local: now,
                zones: &zone,
            }),
        }
    }
}

/// The tz database, as the binary reads it.
fn zone(name: &str) -> Option<jiff::tz::TimeZone> {
    jiff::tz::db().get(name).ok()
}

/// A foreground of `command` with or without a child running in front
/// (`None`: its processes were not read).
pub(crate) fn front(command: &str, running_child: Option<bool>) -> Foreground {
    Foreground {
        command: command.to_string(),
        running_child,
        ..Foreground::default()
    }
}

/// What happens to the alerts the monitor asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// The alert command succeeds: its latch is journaled.
    Delivered,
    /// It fails: the monitor is told, and journals what that undoes.
    Fails,
    /// The process dies while the alert runs: the latch is never journaled,
    /// and the monitor restarts from the journal after the poll.
    Crashes,
}

/// The wall clock the loop stamps its lines with: the monitor itself reads
/// none, so time only moves the `HH:MM:SS` at the end of each poll line.
/// Each poll is one 30 s interval after the previous one, the first at 00:00:30.
pub(crate) struct FakeClock {
    seconds: u64,
}

impl FakeClock {
    fn tick(&mut self) -> String {
        self.seconds += 30;
        let s = self.seconds;
        format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60)
    }
}

/// The loop around one monitor, as the CLI runs it: poll, then journal each
/// record, type each nudge and deliver each alert, then print the line.
pub(crate) struct Harness {
    pub monitor: TargetMonitor,
    config: SessionConfig,
    target: String,
    clock: FakeClock,
    /// What the loop persisted: each record, and each delivered alert's latch.
    pub journal: Vec<SessionRecord>,
    pub delivery: Delivery,
    /// The last poll's report and actions, for what its line does not show.
    pub report: Option<PollReport>,
    pub actions: Vec<Action>,
    /// Every alert asked for so far, delivered or not.
    pub alerts: Vec<Alert>,
    /// Every nudge typed so far.
    pub typed: Vec<String>,
}

pub(crate) const TARGET: &str = "host:sess";

impl Harness {
    /// A fresh monitor of `host:sess` with this budget and the default nudge.
    pub(crate) fn new(budget: u32) -> Harness {
        let config = SessionConfig {
            budget,
            ..SessionConfig::default()
        };
        Harness::resumed(config, SessionMemory::default())
    }

    /// A monitor with `config` that resumes from `memory`.
    pub(crate) fn resumed(config: SessionConfig, memory: SessionMemory) -> Harness {
        Harness {
            monitor: TargetMonitor::new(TARGET, config.clone(), memory),
            config,
            target: TARGET.to_string(),
            clock: FakeClock { seconds: 0 },
            journal: Vec::new(),
            delivery: Delivery::Delivered,
            report: None,
            actions: Vec::new(),
            alerts: Vec::new(),
            typed: Vec::new(),
        }
    }

    /// The process dies and starts again: a new monitor from the journal.
    pub(crate) fn restart(&mut self) {
        let memory = SessionMemory::replay(&self.journal);
        self.monitor = TargetMonitor::new(self.target.clone(), self.config.clone(), memory);
    }

    /// One poll of `screen`: the lines it produced, in the loop's order. `E`
    /// is the capture error the loop says (once per change), `S` a nudge
    /// typed, `A` an alert (its state, reason and first line; undelivered
    /// ones end in ` (not delivered)`), and the poll line itself last.
    pub(crate) fn poll(&mut self, screen: &Screen) -> Vec<String> {
        let (report, actions) = self.monitor.poll(screen.observation());
        let mut lines = Vec::new();
        if let Some(error) = &report.error {
            lines.push(format!("E {error}"));
        }
        let mut crashed = false;
        for action in &actions {
            match action {
                Action::Record(record) => self.journal.push(record.clone()),
                Action::Send(text) => {
                    self.typed.push(text.clone());
                    lines.push(format!("S {text}"));
                }
                Action::Alert(alert) => {
                    let first = alert.message.lines().next().unwrap_or("");
                    let mut line = format!("A {} {}: {first}", alert.state, alert.reason);
                    match self.delivery {
                        Delivery::Delivered => self.journal.push(alert.record.clone()),
                        Delivery::Fails => {
                            self.journal.extend(self.monitor.alert_failed(alert));
                            line.push_str(" (not delivered)");
                        }
                        Delivery::Crashes => {
                            crashed = true;
                            line.push_str(" (not delivered)");
                        }
                    }
                    self.alerts.push(alert.clone());
                    lines.push(line);
                }
            }
            if crashed {
                break;
            }
        }
        lines.push(format!("L {}", report.line(&self.clock.tick())));
        self.report = Some(report);
        self.actions = actions;
        if crashed {
            self.restart();
        }
        lines
    }

    /// One poll of `screen`; its lines must be exactly `expected`.
    pub(crate) fn expect<S: AsRef<str>>(&mut self, screen: &Screen, expected: &[S]) {
        let got = self.poll(screen);
        let expected: Vec<&str> = expected.iter().map(AsRef::as_ref).collect();
        assert_eq!(got, expected, "at {}", self.clock.seconds);
    }

    /// The monitor has watched `screen` for one interval before the table
    /// starts (a stop is typed into only once it held still that long): one
    /// poll whose only line says it waits, off the table's clock.
    pub(crate) fn settle(&mut self, screen: &Screen) {
        let lines = self.poll(screen);
        let waits =
            "not nudged yet (a new watcher waits for the screen to hold still one interval)";
        assert!(
            matches!(lines.as_slice(), [line] if line.contains(waits)),
            "the first poll of {screen:?} did not wait: {lines:?}"
        );
        self.clock.seconds -= 30;
    }

    /// The last poll's report.
    pub(crate) fn last(&self) -> &PollReport {
        self.report.as_ref().expect("a poll")
    }
}

/// One row of a table: this screen on the next poll, exactly these lines.
pub(crate) type Step<'a> = (Screen, &'a [&'a str]);

/// Runs `steps` against one harness.
pub(crate) fn check(h: &mut Harness, steps: &[Step]) {
    for (screen, expected) in steps {
        h.expect(screen, expected);
    }
}
