//! The worker monitor's properties over random sequences of machines: never two identical
//! consecutive reports, `clear` only after a finding, `idle` only on the seed's four conditions.
//! Moved from bmb-watchdog's `worker/tests.rs` so that bmb-watchdog needs no proptest; the fake
//! ports and clock are the ones its table tests use, through the public API.

use std::time::Duration;

use proptest::prelude::*;
use watchdog::worker::{
    CommitsReading, CpuClocks, Pass, PidReading, WorkerConfig, WorkerMonitor, WorkerPort,
};
use watchdog::{Clock, PortError};

include!("../../watchdog/tests/support/worker_fake.rs");

impl World {
    /// Alive, past the window, descendants' clocks frozen, tree `t1`, 2 commits.
    fn stalled() -> World {
        World {
            pid: PidReading::Alive(AGENT),
            quiet: Some(WINDOW + 100),
            cpu: Some(CpuClocks::from([(AGENT, 5), (5000, 70)])),
            tree: Some("oid abc\n? notes.txt".to_owned()),
            commits: CommitsReading::Count(2),
            now: T0,
        }
    }
    fn quiet(mut self, seconds: Option<u64>) -> World {
        self.quiet = seconds;
        self
    }
}

fn world() -> impl Strategy<Value = World> {
    (
        0u8..4,
        prop::option::of(prop_oneof![Just(0u64), Just(WINDOW - 1), Just(WINDOW + 5)]),
        prop::option::of(0u64..3),
        0u8..3,
        0u8..4,
    )
        .prop_map(|(pid, quiet, ticks, tree, commits)| {
            let mut w = World::stalled().quiet(quiet);
            w.pid = match pid {
                0 | 1 => PidReading::Alive(AGENT),
                2 => PidReading::Dead(AGENT),
                _ => PidReading::NotRecorded {
                    reason: "empty".to_owned(),
                },
            };
            w.cpu = ticks.map(|t| CpuClocks::from([(AGENT, 0), (5000, t)]));
            w.tree = (tree != 2).then(|| format!("tree{tree}"));
            w.commits = match commits {
                0 => CommitsReading::Count(0),
                1 => CommitsReading::Unanswerable {
                    reason: "no ref".to_owned(),
                },
                _ => CommitsReading::Count(3),
            };
            w
        })
}

proptest! {
    #[test]
    fn never_two_identical_consecutive_reports_and_clear_only_after_a_finding(
        worlds in prop::collection::vec(world(), 1..40)
    ) {
        let words = check(&worlds);
        let published: Vec<&str> = words.iter().flatten().copied().collect();
        for pair in published.windows(2) {
            prop_assert_ne!(pair[0], pair[1]);
        }
        prop_assert_ne!(published.first().copied(), Some("clear"));
        // `idle` needs this pass and the one before it quiet: never on the first pass.
        prop_assert_ne!(words[0], Some("idle"));
    }

    #[test]
    fn idle_is_only_published_on_the_seeds_four_conditions(
        worlds in prop::collection::vec(world(), 2..40)
    ) {
        let words = check(&worlds);
        for (i, word) in words.iter().enumerate() {
            if *word == Some("idle") {
                let (prev, this) = (&worlds[i - 1], &worlds[i]);
                prop_assert_eq!(&this.pid, &PidReading::Alive(AGENT));
                prop_assert!(this.quiet.unwrap() >= WINDOW && prev.quiet.unwrap() >= WINDOW);
                prop_assert!(this.tree.is_some() && this.tree == prev.tree);
                prop_assert_eq!(&this.commits, &CommitsReading::Count(3));
            }
            if *word == Some("gone") {
                prop_assert!(matches!(worlds[i].pid, PidReading::Dead(_)));
            }
        }
    }
}
