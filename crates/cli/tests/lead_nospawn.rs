//! A lead pass over 1,000 watch items starts no subprocess (SPEC §9: syscalls,
//! not `test`/`stat`/`ps` forks). Proven, not assumed: the pass runs on a
//! thread fenced by a seccomp filter that makes every process-creating
//! syscall fail, with the real adapter the binary uses (this file includes
//! it), and must still get every answer right.

use bmb_testkit::fence as seccomp_fence;

use std::path::Path;

use bmb_monitor::RealPort;
use bmb_monitor::SystemClock;
use watchdog::lead::{LeadConfig, LeadMonitor, Output, parse_control};

/// A pid that named a process a moment ago and names none now.
// A real process must be started and reaped to get a really dead pid.
#[expect(
    clippy::disallowed_methods,
    reason = "a test starts the real binary and the processes around it itself, not through the product's probes"
)]
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn items(dir: &Path, n: usize) -> Vec<String> {
    let dead = dead_pid();
    let alive = std::process::id();
    (0..n)
        .map(|i| {
            let result = dir.join(format!("r{i}.md"));
            let pid_file = dir.join(format!("p{i}.pid"));
            match i % 4 {
                0 => std::fs::write(&result, "Type: handoff\nStatus: done\n").unwrap(),
                1 => std::fs::write(&pid_file, format!("{dead}\n")).unwrap(),
                2 => std::fs::write(&pid_file, format!("{alive}\n")).unwrap(),
                _ => {} // no pid file yet: the startup window
            }
            format!(
                r#"{{"agent":"a{i}","step":"1","result_path":"{}","pid_file":"{}","timeout_sec":3600,"started_at_epoch":{},"blind_phase":false,"consultant_reporting":"full","watch_paths":["{}"]}}"#,
                result.display(),
                pid_file.display(),
                probes::os::clock::now_epoch(),
                dir.join(format!("w{i}.log")).display()
            )
        })
        .collect()
}

#[test]
fn a_pass_over_1000_items_creates_no_process() {
    let tmp = tempfile::tempdir().unwrap();
    let mut monitor = LeadMonitor::new(LeadConfig {
        idle_stall_sec: 180,
        ack_timeout_sec: 120,
        sweep_interval_sec: None,
        feed_path: tmp.path().join("consultant-feed.md").display().to_string(),
        known_panes: vec![],
    });
    let now = probes::os::clock::now_epoch();
    for item in items(tmp.path(), 1000) {
        monitor.apply(parse_control(&item).unwrap(), now).unwrap();
    }
    let mut port = RealPort::new(None, tmp.path().join("consultant-pane-id"));
    let outputs = std::thread::spawn(move || {
        seccomp_fence::forbid_process_creation_on_this_thread();
        // The fence holds: spawning from this thread fails.
        // (The one place here that tries to start a process, on purpose.)
        #[expect(clippy::disallowed_methods, reason = "a test starts the real binary and the processes around it itself, not through the product's probes")]
        let attempt = std::process::Command::new("true").status();
        assert!(attempt.is_err(), "the seccomp fence let a process start");
        monitor.pass(&mut port, &SystemClock)
    })
    .join()
    .expect("the fenced pass panicked");

    let count = |f: &dyn Fn(&Output) -> bool| outputs.iter().filter(|o| f(o)).count();
    let errors: Vec<&Output> = outputs
        .iter()
        .filter(|o| matches!(o, Output::Error(_)))
        .collect();
    assert!(
        errors.is_empty(),
        "{} errors, the first: {:?}",
        errors.len(),
        errors.first()
    );
    let lead =
        |needle: &'static str| move |o: &Output| matches!(o, Output::Lead(l) if l.contains(needle));
    assert_eq!(count(&lead("state=result_ready")), 250);
    assert_eq!(count(&lead("state=process_died")), 250);
    assert_eq!(
        count(
            &|o| matches!(o, Output::Consultant(c) if c.contains(r#""handoff":{"type":"handoff","status":"done"}"#))
        ),
        250,
        "the 5-line headers were read under the fence too"
    );
    assert_eq!(outputs.len(), 750, "{:?}", &outputs[..5]);
}
