//! The board read back from Prometheus (`status --prometheus URL`): a fleet
//! of watchers, one per host, each scraped by one Prometheus, is one board
//! without an aggregator of our own. Each scraped watcher (its `instance`)
//! is a source; one whose last scrape failed (`up == 0`) is an unreachable
//! row. What the metrics do not carry (the budget, the last action, the
//! verdict's evidence) is left out of the rows.

use std::collections::BTreeMap;

use super::{Board, CycleTimes, Freshness, HostRow, Reading, Source, TargetCounts, TargetRow};

/// The series `status --prometheus` asks for, in one instant query.
pub const BOARD_QUERY: &str = "{__name__=~\"bmb_watch_target_state|bmb_watch_target_state_seconds|bmb_watch_target_nudges_used|bmb_watch_host_up\"}";

/// One series of an instant query's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Its labels, `__name__` among them.
    pub labels: BTreeMap<String, String>,
    /// The sample's value.
    pub value: f64,
}

impl Sample {
    fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }
}

/// The boards `samples` (the answer to [`BOARD_QUERY`]) describe, one per
/// `instance`, in the instances' order; then, from `up` (the answer to
/// `up`), each instance of the same jobs whose last scrape failed, as an
/// unreachable source. No bmb series at all: the `up` of the jobs whose name
/// holds `bmb`.
pub fn from_samples(samples: &[Sample], up: &[Sample], now: i64) -> Vec<Source> {
    let mut boards: BTreeMap<String, Board> = BTreeMap::new();
    let mut jobs: Vec<&str> = Vec::new();
    // The state series first: they make the rows.
    let mut by_name: Vec<&Sample> = samples.iter().collect();
    by_name.sort_by_key(|s| s.label("__name__") != "bmb_watch_target_state");
    for sample in by_name {
        let instance = sample.label("instance").to_string();
        if !jobs.contains(&sample.label("job")) {
            jobs.push(sample.label("job"));
        }
        let board = boards.entry(instance).or_insert_with(|| empty_board(now));
        let host = sample.label("host");
        match sample.label("__name__") {
            "bmb_watch_host_up" => {
                let reachable = sample.value >= 1.0;
                board.hosts.push(HostRow {
                    host: host.to_string(),
                    reachable,
                    error: (!reachable).then(|| {
                        "bmb_watch_host_up is 0: every capture on it failed alike".to_string()
                    }),
                    since: now,
                    capture_failures: 0,
                    probe_failures: 0,
                });
            }
            name => {
                let target = sample.label("target");
                let server = sample.label("server");
                let row =
                    match board.targets.iter_mut().position(|t| {
                        t.target == target && t.server.as_deref().unwrap_or("") == server
                    }) {
                        Some(at) => &mut board.targets[at],
                        None => {
                            board.targets.push(row(sample, now));
                            board.targets.last_mut().expect("just pushed")
                        }
                    };
                match name {
                    "bmb_watch_target_state" if sample.value >= 1.0 => {
                        row.state = Some(sample.label("state").to_string());
                        row.error = None;
                    }
                    "bmb_watch_target_state_seconds" if sample.value.is_finite() => {
                        row.since = now - sample.value.max(0.0) as i64;
                    }
                    "bmb_watch_target_nudges_used" if sample.value.is_finite() => {
                        row.nudges_used = sample.value.max(0.0) as u32;
                    }
                    _ => {}
                }
            }
        }
    }
    for board in boards.values_mut() {
        board
            .targets
            .sort_by(|a, b| (&a.target, &a.server).cmp(&(&b.target, &b.server)));
        // A host down since its targets went unread.
        for host in board.hosts.iter_mut().filter(|h| !h.reachable) {
            if let Some(since) = board
                .targets
                .iter()
                .filter(|t| t.host == host.host)
                .map(|t| t.since)
                .min()
            {
                host.since = since;
            }
        }
    }
    let mut sources: Vec<Source> = boards
        .into_iter()
        .map(|(instance, board)| Source {
            name: instance,
            reading: Reading::Board(Box::new(board), Freshness::Live),
        })
        .collect();
    for sample in up {
        let job = sample.label("job");
        let ours = if jobs.is_empty() {
            job.contains("bmb")
        } else {
            jobs.contains(&job)
        };
        if ours && sample.value < 1.0 {
            let instance = sample.label("instance");
            sources.retain(|s| s.name != instance);
            sources.push(Source {
                name: instance.to_string(),
                reading: Reading::Unreachable(format!(
                    "Prometheus's last scrape of it failed (up == 0, job {job})"
                )),
            });
        }
    }
    sources
}

fn empty_board(now: i64) -> Board {
    Board {
        pid: 0,
        started: now,
        updated: now,
        interval_secs: 0,
        cycles: CycleTimes {
            count: 0,
            sum_seconds: 0.0,
            last_seconds: 0.0,
            buckets: Vec::new(),
        },
        targets: Vec::new(),
        hosts: Vec::new(),
    }
}

fn row(sample: &Sample, now: i64) -> TargetRow {
    let cli = sample.label("cli");
    TargetRow {
        target: sample.label("target").to_string(),
        host: sample.label("host").to_string(),
        session: sample.label("session").to_string(),
        cli: (!cli.is_empty()).then(|| cli.to_string()),
        state: None,
        since: now,
        polled: true,
        nudges_used: 0,
        // Not among the metrics: shown as the nudges used alone.
        budget: 0,
        rule: None,
        evidence: None,
        // Until a state series says 1: every one 0 is a pane that could not be read.
        error: Some("no state (every state series is 0)".to_string()),
        host_answered: true,
        last_action: None,
        counts: TargetCounts::default(),
        held_until: None,
        server: Some(sample.label("server"))
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(labels: &[(&str, &str)], value: f64) -> Sample {
        Sample {
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
        }
    }

    #[test]
    fn two_servers_sessions_of_one_name_are_two_rows_each_with_its_server() {
        let mut samples = Vec::new();
        for (server, state) in [("/tmp/tmux-0/a", "QUESTION"), ("/tmp/tmux-0/b", "WORKING")] {
            samples.push(sample(
                &[
                    ("job", "bmb"),
                    ("instance", "box:9184"),
                    ("__name__", "bmb_watch_target_state"),
                    ("target", "agent"),
                    ("host", "local"),
                    ("session", "agent"),
                    ("server", server),
                    ("state", state),
                ],
                1.0,
            ));
        }
        let sources = from_samples(&samples, &[], 1000);
        let Reading::Board(board, _) = &sources[0].reading else {
            panic!("{sources:#?}")
        };
        let rows: Vec<(Option<&str>, Option<&str>)> = board
            .targets
            .iter()
            .map(|t| (t.server.as_deref(), t.state.as_deref()))
            .collect();
        assert_eq!(
            rows,
            [
                (Some("/tmp/tmux-0/a"), Some("QUESTION")),
                (Some("/tmp/tmux-0/b"), Some("WORKING"))
            ]
        );
        let table = crate::session::board::table(&sources, 1000, None).join("\n");
        assert!(
            table.contains("agent [a]") && table.contains("agent [b]"),
            "{table}"
        );
    }

    #[test]
    fn one_session_name_on_two_watchers_machines_is_two_rows_each_with_its_instance() {
        // A watcher per host, each watching its own `agent` on its own
        // machine's default server: the same target, host and server
        // labels, told apart only by the instance that serves them.
        let mut samples = Vec::new();
        for (instance, state) in [("gpu1:9184", "QUESTION"), ("gpu2:9184", "WORKING")] {
            samples.push(sample(
                &[
                    ("job", "bmb"),
                    ("instance", instance),
                    ("__name__", "bmb_watch_target_state"),
                    ("target", "agent"),
                    ("host", "local"),
                    ("session", "agent"),
                    ("server", "/tmp/tmux-1000/default"),
                    ("state", state),
                ],
                1.0,
            ));
        }
        let sources = from_samples(&samples, &[], 1000);
        assert_eq!(sources.len(), 2, "{sources:#?}");
        let table = crate::session::board::table(&sources, 1000, Some(80));
        let row = |state: &str| {
            table
                .iter()
                .find(|line| line.starts_with("agent") && line.contains(state))
                .cloned()
                .unwrap_or_default()
        };
        assert!(
            row("QUESTION").starts_with("agent [gpu1:9184] ")
                && row("WORKING").starts_with("agent [gpu2:9184] "),
            "{}",
            table.join("\n")
        );
    }

    #[test]
    fn each_instance_is_a_board_and_a_failed_scrape_an_unreachable_row() {
        let base = [("job", "bmb"), ("instance", "gpu1:9184")];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut labels = base.to_vec();
            labels.extend_from_slice(extra);
            labels
        };
        let target = [
            ("target", "gpu1:a"),
            ("host", "gpu1"),
            ("session", "a"),
            ("cli", "codex"),
        ];
        let mut samples = Vec::new();
        for (state, value) in [("QUESTION", 1.0), ("WORKING", 0.0)] {
            let mut labels = with(&target);
            labels.extend([("__name__", "bmb_watch_target_state"), ("state", state)]);
            samples.push(sample(&labels, value));
        }
        let mut labels = with(&target);
        labels.push(("__name__", "bmb_watch_target_state_seconds"));
        samples.insert(0, sample(&labels, 65.0));
        let mut labels = with(&target);
        labels.push(("__name__", "bmb_watch_target_nudges_used"));
        samples.push(sample(&labels, 2.0));
        let up = [
            sample(&[("job", "bmb"), ("instance", "gpu1:9184")], 1.0),
            sample(&[("job", "bmb"), ("instance", "gpu2:9184")], 0.0),
            sample(&[("job", "node"), ("instance", "gpu2:9100")], 0.0),
        ];
        let sources = from_samples(&samples, &up, 1000);
        assert_eq!(sources.len(), 2, "{sources:#?}");
        let Reading::Board(board, _) = &sources[0].reading else {
            panic!("{sources:#?}")
        };
        let row = &board.targets[0];
        assert_eq!(
            (
                row.state.as_deref(),
                row.since,
                row.nudges_used,
                row.cli.as_deref()
            ),
            (Some("QUESTION"), 935, 2, Some("codex"))
        );
        assert_eq!(row.error, None);
        assert_eq!(sources[1].name, "gpu2:9184");
        assert!(
            matches!(&sources[1].reading, Reading::Unreachable(why) if why.contains("up == 0"))
        );
    }
}
