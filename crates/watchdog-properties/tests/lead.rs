//! The lead monitor's properties over random observation sequences: no repeated report, each
//! timeout warning at most once, the blind phase never leaks. Moved from bmb-watchdog's
//! `lead/tests.rs` so that bmb-watchdog needs no proptest; the fake machine and clock are the
//! ones its table tests use, through the public API.

use std::cell::Cell;
use std::collections::HashMap;

use proptest::prelude::*;
use watchdog::lead::{
    Applied, ApplyError, Head, LeadConfig, LeadMonitor, LeadPort, Meta, Output, Pane, PidCheck,
    parse_control,
};
use watchdog::{Clock, PortError};

include!("../../watchdog/tests/support/lead_fake.rs");

const MARKER: &str = "MARKER-7f3a";

// ---- properties over random observation sequences ----

#[derive(Debug, Clone)]
enum Op {
    Wait(i64),
    ResultAppears,
    ResultVanishes,
    ResultGrows,
    WatchPathTouched,
    PidAlive,
    PidDead,
    PidUnrecorded,
    Ack,
    Pass,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1i64..400).prop_map(Op::Wait),
        Just(Op::ResultAppears),
        Just(Op::ResultVanishes),
        Just(Op::ResultGrows),
        Just(Op::WatchPathTouched),
        Just(Op::PidAlive),
        Just(Op::PidDead),
        Just(Op::PidUnrecorded),
        Just(Op::Ack),
        Just(Op::Pass),
    ]
}

/// Runs `ops` against two items, passing after every op; returns every output line.
fn run_ops(ops: &[Op], extra: &str) -> (Vec<String>, Vec<String>) {
    let mut h = Harness::new();
    for agent in ["a", "b"] {
        h.watch(
            agent,
            "1",
            &format!(r#","watch_paths":["/w/{agent}"]{extra}"#),
        );
    }
    let mut t = 0;
    let mut size = 0;
    let mut out = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        // Alternate which item an op touches, so the two drift apart.
        let agent = if n % 2 == 0 { "a" } else { "b" };
        let result = format!("/r/{agent}-1.md");
        match op {
            Op::Wait(s) => t += s,
            Op::ResultAppears => {
                size += 1;
                h.m.handoff(&result, &[&format!("Status: {MARKER}")]);
            }
            Op::ResultVanishes => {
                h.m.files.remove(&result);
            }
            Op::ResultGrows => {
                size += 1;
                if h.m.files.contains_key(&result) {
                    h.m.write(&result, size, size as i128);
                }
            }
            Op::WatchPathTouched => {
                size += 1;
                h.m.write(&format!("/w/{agent}"), size, 1);
            }
            Op::PidAlive => h.alive(&format!("{agent}-1"), 100),
            Op::PidDead => h.dead(&format!("{agent}-1"), 100),
            Op::PidUnrecorded => {
                h.m.pids.remove(&format!("/r/{agent}-1.pid"));
            }
            Op::Ack => {
                h.send(&format!(r#"{{"ack":"stalled","agent":"{agent}"}}"#))
                    .unwrap();
            }
            Op::Pass => {}
        }
        out.extend(h.pass_at(t));
    }
    (out, h.m.head_calls)
}

fn state_of(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("L [MONITOR] agent=")?;
    let agent = rest.split(' ').next()?.to_owned();
    let state = rest.split("state=").nth(1)?.split(' ').next()?.to_owned();
    Some((agent, state))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn no_repeated_report_and_each_timeout_warning_at_most_once(
        ops in proptest::collection::vec(op(), 1..80)
    ) {
        let (out, _) = run_ops(&ops, "");
        let mut last: HashMap<String, String> = HashMap::new();
        let mut warnings: HashMap<(String, String), usize> = HashMap::new();
        for line in &out {
            if let Some((agent, state)) = state_of(line) {
                prop_assert_ne!(last.get(&agent), Some(&state), "{:?}", out);
                last.insert(agent.clone(), state.clone());
                if state.starts_with("timeout_") {
                    *warnings.entry((agent, state)).or_default() += 1;
                }
            }
        }
        for (key, count) in warnings {
            prop_assert!(count <= 1, "{:?} {} times: {:?}", key, count, out);
        }
        for line in out.iter().filter(|l| l.contains("nudge_repeat")) {
            let n: u32 = line.split("\"nudge_count\":").nth(1).unwrap()
                .split(',').next().unwrap().parse().unwrap();
            prop_assert!((1..=3).contains(&n), "{}", line);
        }
    }

    #[test]
    fn blind_phase_never_leaks_and_full_reporting_does_read_headers(
        ops in proptest::collection::vec(op(), 1..80)
    ) {
        let (blind, blind_heads) =
            run_ops(&ops, r#","consultant_reporting":"full","blind_phase":true"#);
        prop_assert!(blind_heads.is_empty());
        for line in blind.iter().filter(|l| l.starts_with("C ")) {
            prop_assert!(!line.contains(MARKER), "{}", line);
        }
        // The same run seen in full: whenever a completion reached the
        // Consultant, the marker did too, so the check above is not vacuous.
        let (full, _) = run_ops(&ops, r#","consultant_reporting":"full""#);
        let completions: Vec<&String> =
            full.iter().filter(|l| l.contains("agent_complete")).collect();
        for line in &completions {
            prop_assert!(line.contains(MARKER), "{}", line);
        }
        let blind_completions = blind.iter().filter(|l| l.contains("agent_complete")).count();
        prop_assert_eq!(blind_completions, completions.len());
    }
}
