//! The fleet's view of `watch`: each cycle's [`Board`] (decided in
//! `watchdog::session::board`), published three ways: a file per monitor under
//! `$XDG_STATE_HOME/bmb-monitor/board/<pid>.json` (replaced atomically each
//! cycle, removed on exit) that `status` reads, and, with `--metrics-listen`,
//! `/board.json` and `/metrics` (the Prometheus text format) from a listener
//! thread ([`super::serve`]).
//!
//! The poll never waits for a reader: it swaps a finished snapshot into a
//! slot behind a lock held for one pointer copy, and a scrape encodes its own
//! copy of that snapshot with the lock released.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use classify::State;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use watchdog::Clock;
use watchdog::session::board::{Board, CYCLE_BUCKETS, Observed};
use watchdog::session::target::Target;

use crate::clock::SystemClock;
use crate::output::say;

/// One cycle's board and its JSON form, shared with the listener.
#[derive(Debug)]
pub(crate) struct Published {
    pub(crate) board: Board,
    pub(crate) json: String,
    /// The operator's figures beside the board ([`Operations`]).
    pub(crate) operations: Operations,
}

/// The slot the poll fills and the listener reads.
pub(crate) type Slot = Arc<Mutex<Arc<Published>>>;

/// The board of a running `watch` and where it goes.
pub(super) struct Fleet {
    board: Board,
    slot: Slot,
    /// `<state>/board/<pid>.json`, `None` when its folder cannot be made.
    file: Option<PathBuf>,
    file_error: Option<String>,
    cycle_started: Option<Instant>,
    /// Deliveries and reloads, published with the board.
    pub(super) operations: Operations,
    /// The tmux server's name for alerts, on every row but `own_servers`'.
    server: String,
    /// The targets on a server of their own (`socket_path` in their
    /// `[[targets]]` table), with that server's name.
    pub(super) own_servers: Vec<(Target, String)>,
}

/// Every row of `board` is on `server`, but the `own` ones on theirs.
fn label_servers(board: &mut Board, server: &str, own: &[(Target, String)]) {
    for row in &mut board.targets {
        let mine = own
            .iter()
            .find(|(target, _)| target.to_string() == row.target)
            .map_or(server, |(_, name)| name.as_str());
        row.server = Some(mine.to_string());
    }
}

impl Fleet {
    /// `server`: the tmux server's name for alerts (its socket file), which
    /// each row carries so two servers' same-named sessions are told apart.
    pub(super) fn new(
        targets: &[Target],
        interval: u64,
        budget: u32,
        state_dir: &Path,
        server: String,
    ) -> Fleet {
        let mut board = Board::new(
            std::process::id(),
            SystemClock.now(),
            interval,
            budget,
            targets,
        );
        label_servers(&mut board, &server, &[]);
        let dir = state_dir.join("board");
        let file = match probes::fs::folder::ensure_private_under(state_dir, &dir) {
            Ok(()) => Some(dir.join(format!("{}.json", std::process::id()))),
            Err(err) => {
                say(format_args!(
                    "bmb-monitor: watch: the board folder: {err}; `bmb-monitor status` will not see this monitor"
                ));
                None
            }
        };
        let operations = Operations::started(SystemClock.now());
        let slot = Arc::new(Mutex::new(Arc::new(Published {
            json: board_json(&board),
            board: board.clone(),
            operations: operations.clone(),
        })));
        Fleet {
            board,
            slot,
            file,
            file_error: None,
            cycle_started: None,
            operations,
            server,
            own_servers: Vec::new(),
        }
    }

    /// After a reload: the rows of `targets`, the staying ones kept.
    pub(super) fn retarget(&mut self, targets: &[Target], interval: u64, budget: u32) {
        self.board
            .retarget(targets, interval, budget, SystemClock.now());
        label_servers(&mut self.board, &self.server, &self.own_servers);
    }

    /// The listener's handle on each cycle's snapshot.
    pub(super) fn slot(&self) -> Slot {
        Arc::clone(&self.slot)
    }

    pub(super) fn cycle_started(&mut self) {
        self.cycle_started = Some(Instant::now());
    }

    pub(super) fn observe(&mut self, index: usize, observed: Observed<'_>) {
        self.board.observe(index, observed, SystemClock.now());
    }

    /// Each host with why it is unreachable this cycle (`None`: it answered).
    pub(super) fn host_errors(&self) -> Vec<(String, Option<String>)> {
        self.board.host_errors()
    }

    /// The cycle is over: its time is counted and the board published.
    pub(super) fn cycle_done(&mut self) {
        let seconds = self
            .cycle_started
            .take()
            .map_or(0.0, |started| started.elapsed().as_secs_f64());
        self.board.cycle_done(seconds, SystemClock.now());
        self.publish();
    }

    /// The board as it stands, to its file and to the listener's slot (after
    /// a cycle, and after a reload changed its targets or its interval).
    pub(super) fn publish(&mut self) {
        let published = Arc::new(Published {
            json: board_json(&self.board),
            board: self.board.clone(),
            operations: self.operations.clone(),
        });
        self.write_file(&published.json);
        // One pointer swap under the lock; a scrape in progress keeps its own copy.
        match self.slot.lock() {
            Ok(mut slot) => *slot = published,
            Err(poisoned) => *poisoned.into_inner() = published,
        }
    }

    /// Replaces the board file whole (a temporary file renamed over it), so
    /// a reader never sees half of one; a failure is said once per change.
    fn write_file(&mut self, json: &str) {
        let Some(path) = &self.file else { return };
        let result = (|| -> std::io::Result<()> {
            let dir = path.parent().unwrap_or(Path::new("."));
            let mut temp = tempfile::NamedTempFile::new_in(dir)?;
            std::io::Write::write_all(&mut temp, json.as_bytes())?;
            temp.persist(path).map_err(|e| e.error)?;
            Ok(())
        })();
        // The OS's reason alone: tempfile's message names the temporary
        // file, a new name each time, and the error is said once per change.
        let error = result.err().map(|e| match e.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code).to_string(),
            None => e.kind().to_string(),
        });
        if let Some(error) = &error
            && self.file_error.as_ref() != Some(error)
        {
            say(format_args!(
                "bmb-monitor: watch: cannot write the board {}: {error}",
                path.display()
            ));
        }
        self.file_error = error;
    }
}

impl Drop for Fleet {
    /// A monitor that ends takes its board with it (one killed outright
    /// leaves it behind, and `status` shows it stale).
    fn drop(&mut self) {
        if let Some(path) = &self.file {
            let _ = std::fs::remove_file(path);
        }
    }
}

pub(crate) fn board_json(board: &Board) -> String {
    watchdog::session::board::wire::to_json(board)
}

/// The Prometheus text exposition of one snapshot, `now` being the scrape's
/// time (seconds in state are counted to it).
pub(crate) fn exposition(published: Arc<Published>, now: i64) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(OperatorCollector {
        operations: published.operations.clone(),
        usage: probes::os::own::usage(),
    }));
    registry.register_collector(Box::new(BoardCollector { published, now }));
    let mut text = String::new();
    if let Err(err) = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry) {
        // Writing into a String cannot fail; said rather than assumed.
        return format!("# bmb-monitor: the metrics could not be encoded: {err}\n");
    }
    text
}

/// A per-target metric: its name, help, value and type.
type TargetMetric = (
    &'static str,
    &'static str,
    fn(&watchdog::session::board::TargetRow) -> u64,
    MetricType,
);
/// A per-host counter: its name, help and value.
type HostMetric = (
    &'static str,
    &'static str,
    fn(&watchdog::session::board::HostRow) -> u64,
);

/// Renders a board snapshot as metrics at scrape time: every series comes
/// from the snapshot, so a target's old `cli` or a vanished target leaves no
/// series behind, while the state gauge keeps one series per state (1 for
/// the current one, 0 for the others), as Prometheus practice has it.
#[derive(Debug)]
struct BoardCollector {
    published: Arc<Published>,
    now: i64,
}

impl Collector for BoardCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let board = &self.published.board;
        {
            let mut metric = encoder.encode_descriptor(
                "bmb_watch_target_state",
                "1 for the target's current state, 0 for the others (all 0 while its pane cannot be read)",
                None,
                MetricType::Gauge,
            )?;
            for row in board.targets.iter().filter(|row| row.polled) {
                for state in State::ALL {
                    let labels = [
                        ("target", row.target.as_str()),
                        ("host", row.host.as_str()),
                        ("session", row.session.as_str()),
                        ("server", row.server.as_deref().unwrap_or("")),
                        ("cli", row.cli.as_deref().unwrap_or("")),
                        ("state", state.as_str()),
                    ];
                    let value = i64::from(row.state.as_deref() == Some(state.as_str()));
                    metric.encode_family(&labels)?.encode_gauge(&value)?;
                }
            }
        }
        {
            let mut metric = encoder.encode_descriptor(
                "bmb_watch_target_state_seconds",
                "Seconds the target has been in its current state (or unreadable)",
                None,
                MetricType::Gauge,
            )?;
            for row in board.targets.iter().filter(|row| row.polled) {
                let labels = [
                    ("target", row.target.as_str()),
                    ("host", row.host.as_str()),
                    ("session", row.session.as_str()),
                    ("server", row.server.as_deref().unwrap_or("")),
                    ("cli", row.cli.as_deref().unwrap_or("")),
                ];
                let seconds = self.now.saturating_sub(row.since).max(0);
                metric.encode_family(&labels)?.encode_gauge(&seconds)?;
            }
        }
        let per_target: [TargetMetric; 5] = [
            (
                "bmb_watch_target_held_until",
                "While a usage limit holds the target: the epoch second it resets (0: not held)",
                |row| {
                    row.held_until
                        .and_then(|at| u64::try_from(at).ok())
                        .unwrap_or(0)
                },
                MetricType::Gauge,
            ),
            (
                "bmb_watch_target_nudges_used",
                "Nudges used of the budget since the last progress",
                |row| u64::from(row.nudges_used),
                MetricType::Gauge,
            ),
            (
                "bmb_watch_nudges",
                "Nudges typed into the target",
                |row| row.counts.nudges,
                MetricType::Counter,
            ),
            (
                "bmb_watch_budget_resets",
                "Nudge budget resets (the progress probe advanced)",
                |row| row.counts.budget_resets,
                MetricType::Counter,
            ),
            (
                "bmb_watch_unrecognised_screens",
                "Polls whose stop showed no input box the profile knows",
                |row| row.counts.unrecognised,
                MetricType::Counter,
            ),
        ];
        for (name, help, value, kind) in per_target {
            let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
            for row in &board.targets {
                let labels = [
                    ("target", row.target.as_str()),
                    ("host", row.host.as_str()),
                    ("session", row.session.as_str()),
                    ("server", row.server.as_deref().unwrap_or("")),
                ];
                let mut family = metric.encode_family(&labels)?;
                match kind {
                    MetricType::Counter => {
                        family.encode_counter::<NoLabelSet, _, u64>(&value(row), None)?
                    }
                    _ => family.encode_gauge(&value(row))?,
                }
            }
        }
        {
            let mut metric = encoder.encode_descriptor(
                "bmb_watch_escalations",
                "Escalations decided, by reason (one whose delivery failed is decided again next poll)",
                None,
                MetricType::Counter,
            )?;
            for row in &board.targets {
                for (reason, count) in &row.counts.escalations {
                    let labels = [
                        ("target", row.target.as_str()),
                        ("host", row.host.as_str()),
                        ("session", row.session.as_str()),
                        ("server", row.server.as_deref().unwrap_or("")),
                        ("reason", reason.word()),
                    ];
                    metric
                        .encode_family(&labels)?
                        .encode_counter::<NoLabelSet, _, u64>(count, None)?;
                }
            }
        }
        {
            let mut metric = encoder.encode_descriptor(
                "bmb_watch_host_up",
                "1 when a pane of the host was read in the last cycle, 0 when every capture there failed alike",
                None,
                MetricType::Gauge,
            )?;
            for host in &board.hosts {
                let value = i64::from(host.reachable);
                metric
                    .encode_family(&[("host", host.host.as_str())])?
                    .encode_gauge(&value)?;
            }
        }
        let per_host: [HostMetric; 2] = [
            (
                "bmb_watch_capture_failures",
                "Pane captures that failed, per host",
                |host| host.capture_failures,
            ),
            (
                "bmb_watch_probe_failures",
                "Work or progress probes that gave no usable answer, per host of the target",
                |host| host.probe_failures,
            ),
        ];
        for (name, help, value) in per_host {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for host in &board.hosts {
                metric
                    .encode_family(&[("host", host.host.as_str())])?
                    .encode_counter::<NoLabelSet, _, u64>(&value(host), None)?;
            }
        }
        {
            let unit = prometheus_client::registry::Unit::Seconds;
            let mut metric = encoder.encode_descriptor(
                "bmb_watch_cycle_duration",
                "How long one poll cycle over every target took",
                Some(&unit),
                MetricType::Histogram,
            )?;
            let cycles = &board.cycles;
            let buckets: Vec<(f64, u64)> = CYCLE_BUCKETS
                .iter()
                .copied()
                .chain([f64::INFINITY])
                .zip(cycles.buckets.iter().copied())
                .collect();
            metric.encode_histogram::<NoLabelSet>(
                cycles.sum_seconds,
                cycles.count,
                &buckets,
                None,
            )?;
        }
        // The watcher's own liveness, for the shipped rules' `BmbMonitorStale`
        // (issue 21): a loop that froze still answers scrapes.
        for (name, help, value) in [
            (
                "bmb_watch_last_cycle_timestamp",
                "When the last poll cycle ended (epoch seconds; the start until one has)",
                board.updated,
            ),
            (
                "bmb_watch_interval",
                "Seconds between polls",
                i64::try_from(board.interval_secs).unwrap_or(i64::MAX),
            ),
        ] {
            let unit = prometheus_client::registry::Unit::Seconds;
            let mut metric =
                encoder.encode_descriptor(name, help, Some(&unit), MetricType::Gauge)?;
            metric.encode_gauge(&value)?;
        }
        Ok(())
    }
}

// ---- The operator's metrics (issue 21): the process, the build, alert
// deliveries and reloads. One block, apart from the board's. ----

/// What an operator watches beside the fleet: failed deliveries per sink
/// and the config's last reload, kept by the loop and published with each
/// snapshot.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Operations {
    /// Alert deliveries that failed, per sink: `alert_cmd` (a run that did
    /// not exit 0), `stderr` (the funnel without one, when it could not be
    /// written), `alertmanager` (a request that got no 2xx).
    pub(crate) delivery_failures: std::collections::BTreeMap<&'static str, u64>,
    /// Whether the last reload (SIGHUP) applied; true until one fails.
    pub(crate) reload_successful: bool,
    /// When the settings in force were applied (the start or the last
    /// reload that applied), epoch seconds.
    pub(crate) reload_success_at: i64,
    /// Probe runs per (kind, where they ran: `monitor` or `host`).
    pub(crate) probes: std::collections::BTreeMap<(&'static str, &'static str), ProbeCost>,
}

/// What one kind of probe cost in one place since the start.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProbeCost {
    pub(crate) runs: u64,
    /// Wall-clock seconds of the runs on this machine, summed (a run on a
    /// host is timed by no clock here).
    pub(crate) seconds: f64,
}

impl Operations {
    pub(crate) fn started(now: i64) -> Operations {
        Operations {
            delivery_failures: ["alert_cmd", "alertmanager", "stderr"]
                .into_iter()
                .map(|sink| (sink, 0))
                .collect(),
            reload_successful: true,
            reload_success_at: now,
            probes: [
                ("progress", "host"),
                ("progress", "monitor"),
                ("work", "host"),
                ("work", "monitor"),
            ]
            .into_iter()
            .map(|key| (key, ProbeCost::default()))
            .collect(),
        }
    }

    /// One probe run of `kind` (on `runs_on`: `monitor` or `host`), and how
    /// long it took when this machine ran it.
    pub(super) fn probe_ran(
        &mut self,
        kind: super::probe_kind::Kind,
        runs_on: &'static str,
        took: Option<std::time::Duration>,
    ) {
        let cost = self.probes.entry((kind.as_str(), runs_on)).or_default();
        cost.runs += 1;
        cost.seconds += took.map_or(0.0, |t| t.as_secs_f64());
    }
}

impl Fleet {
    /// A reload that applied (`true`) or was refused, published at once.
    pub(super) fn reloaded(&mut self, applied: bool) {
        self.operations.reload_successful = applied;
        if applied {
            self.operations.reload_success_at = SystemClock.now();
        }
        self.publish();
    }
}

/// The process collector's series under their Prometheus names, the build
/// and the [`Operations`], read at scrape time (the process figures from
/// `/proc/self`: a scrape sees this very moment).
#[derive(Debug)]
struct OperatorCollector {
    operations: Operations,
    usage: Option<probes::os::own::Usage>,
}

impl Collector for OperatorCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(usage) = &self.usage {
            encoder
                .encode_descriptor(
                    "process_cpu_seconds",
                    "Total user and system CPU time spent in seconds",
                    None,
                    MetricType::Counter,
                )?
                .encode_counter::<NoLabelSet, _, u64>(&usage.cpu_seconds, None)?;
            let gauges: [(&str, &str, f64); 4] = [
                (
                    "process_resident_memory_bytes",
                    "Resident memory size in bytes",
                    usage.resident_bytes as f64,
                ),
                (
                    "process_virtual_memory_bytes",
                    "Virtual memory size in bytes",
                    usage.virtual_bytes as f64,
                ),
                (
                    "process_open_fds",
                    "Number of open file descriptors",
                    usage.open_fds as f64,
                ),
                (
                    "process_start_time_seconds",
                    "Start time of the process since unix epoch in seconds",
                    usage.start_time_seconds,
                ),
            ];
            for (name, help, value) in gauges {
                encoder
                    .encode_descriptor(name, help, None, MetricType::Gauge)?
                    .encode_gauge(&value)?;
            }
            if let Some(max) = usage.max_fds {
                encoder
                    .encode_descriptor(
                        "process_max_fds",
                        "Maximum number of open file descriptors",
                        None,
                        MetricType::Gauge,
                    )?
                    .encode_gauge(&max)?;
            }
        }
        {
            let mut metric = encoder.encode_descriptor(
                "bmb_build_info",
                "Always 1; the running build's version as a label",
                None,
                MetricType::Gauge,
            )?;
            metric
                .encode_family(&[("version", env!("CARGO_PKG_VERSION"))])?
                .encode_gauge(&1i64)?;
        }
        {
            let mut metric = encoder.encode_descriptor(
                "bmb_alert_delivery_failures",
                "Alert deliveries that failed, per sink (an alert_cmd run that did not exit 0, \
                 stderr when it could not be written, an Alertmanager request without a 2xx); \
                 each is tried again next poll",
                None,
                MetricType::Counter,
            )?;
            for (sink, count) in &self.operations.delivery_failures {
                metric
                    .encode_family(&[("sink", *sink)])?
                    .encode_counter::<NoLabelSet, _, u64>(count, None)?;
            }
        }
        {
            let mut metric = encoder.encode_descriptor(
                "bmb_watch_probe_runs",
                "Work and progress probe runs, per kind and where they ran (monitor: a process \
                 on this machine; host: inside the cycle's one request to the target's ssh host)",
                None,
                MetricType::Counter,
            )?;
            for ((kind, runs_on), cost) in &self.operations.probes {
                metric
                    .encode_family(&[("kind", *kind), ("runs_on", *runs_on)])?
                    .encode_counter::<NoLabelSet, _, u64>(&cost.runs, None)?;
            }
        }
        {
            let unit = prometheus_client::registry::Unit::Seconds;
            let mut metric = encoder.encode_descriptor(
                "bmb_watch_probe",
                "Wall-clock seconds of the probe runs on this machine, summed per kind \
                 (side-by-side runs each count)",
                Some(&unit),
                MetricType::Counter,
            )?;
            for ((kind, runs_on), cost) in &self.operations.probes {
                if *runs_on == "monitor" {
                    metric
                        .encode_family(&[("kind", *kind)])?
                        .encode_counter::<NoLabelSet, _, f64>(&cost.seconds, None)?;
                }
            }
        }
        encoder
            .encode_descriptor(
                "bmb_config_last_reload_successful",
                "Whether the last config reload (SIGHUP) applied: 1, or 0 when it was refused",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&i64::from(self.operations.reload_successful))?;
        encoder
            .encode_descriptor(
                "bmb_config_last_reload_success_timestamp_seconds",
                "When the settings in force were applied (the start or the last reload that applied)",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&self.operations.reload_success_at)?;
        Ok(())
    }
}

// ---- The end of the operator's metrics. ----

#[cfg(test)]
mod tests {
    use super::*;
    use watchdog::session::{Done, PollReport};

    fn published(board: &Board) -> Arc<Published> {
        Arc::new(Published {
            board: board.clone(),
            json: board_json(board),
            operations: Operations::started(1000),
        })
    }

    #[test]
    fn the_exposition_names_each_metric_with_its_labels_and_one_series_per_state() {
        let targets = [
            Target::parse("agent").unwrap(),
            Target::parse("box1:b").unwrap(),
        ];
        let mut board = Board::new(9, 1000, 1, 5, &targets);
        label_servers(&mut board, "/tmp/tmux-0/a", &[]);
        let report = PollReport {
            state: Some(State::Question),
            done: vec![Done::EscalatedQuestion],
            rule: Some("question-dialog"),
            evidence: Some("Do you want to proceed?".into()),
            pane_state: Some(State::Question),
            unrecognised: 2,
            ..PollReport::unread("agent".into(), 5)
        };
        let observed = Observed {
            report: &report,
            actions: &[],
            cli: Some("claude"),
            capture_error: None,
            probe_failures: 1,
            host_answered: true,
        };
        board.observe(0, observed, 1001);
        board.cycle_done(0.2, 1001);
        let text = exposition(published(&board), 1031);
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        let agent =
            r#"target="agent",host="local",session="agent",server="/tmp/tmux-0/a",cli="claude""#;
        for expected in [
            format!(r#"bmb_watch_target_state{{{agent},state="QUESTION"}} 1"#),
            format!(r#"bmb_watch_target_state{{{agent},state="WORKING"}} 0"#),
            format!(r#"bmb_watch_target_state_seconds{{{agent}}} 30"#),
            r#"bmb_watch_unrecognised_screens_total{target="agent",host="local",session="agent",server="/tmp/tmux-0/a"} 2"#.into(),
            r#"bmb_watch_nudges_total{target="box1:b",host="box1",session="b",server="/tmp/tmux-0/a"} 0"#.into(),
            r#"bmb_watch_probe_failures_total{host="local"} 1"#.into(),
            r#"bmb_watch_host_up{host="box1"} 1"#.into(),
            r#"bmb_watch_cycle_duration_seconds_bucket{le="0.25"} 1"#.into(),
            "bmb_watch_cycle_duration_seconds_count 1".into(),
        ] {
            assert!(lines.contains(&expected.as_str()), "{expected} in\n{text}");
        }
        let states = lines
            .iter()
            .filter(|l| l.starts_with("bmb_watch_target_state{"))
            .count();
        assert_eq!(states, 4, "a target not yet polled has no state series");
        assert!(text.contains("# TYPE bmb_watch_escalations_total counter"));
    }
}
