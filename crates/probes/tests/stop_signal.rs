//! SIGTERM and SIGINT become the stop flag instead of ending the process.
//! Its own test binary: once the flag is up, every run in the process ends
//! at once, which would fail the unit tests beside it.

use std::time::{Duration, Instant};

use bmb_probes as probes;
use probes::os::signals;
use probes::run::{Invocation, Limits, Outcome, run};
use rustix::process::{Signal, getpid, kill_process};

#[test]
fn sigterm_raises_the_stop_flag_and_ends_a_running_probe_at_once() {
    signals::install_stop_handler();
    signals::install_stop_handler(); // idempotent: one handler, not two
    assert!(!signals::stop_requested());
    assert!(signals::sleep_unless_stopped(Duration::from_millis(10)));

    kill_process(getpid(), Signal::TERM).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !signals::stop_requested() {
        assert!(Instant::now() < deadline, "the flag never went up");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Still here: the handler took the signal. A second one (SIGINT) too.
    kill_process(getpid(), Signal::INT).unwrap();
    assert!(!signals::sleep_unless_stopped(Duration::from_secs(30)));

    let started = Instant::now();
    let outcome = run(
        &Invocation::new("sleep").arg("30"),
        &Limits::with_timeout(Duration::from_secs(60)),
    );
    assert!(
        matches!(outcome, Outcome::TimedOut { stopping: true, .. }),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // Clean-up still runs to its end while the process stops.
    let cleanup = run(
        &Invocation::shell("echo cleaned"),
        &Limits::default().for_cleanup(),
    );
    assert_eq!(
        cleanup.success_stdout().map(|out| out.text()).as_deref(),
        Some("cleaned\n")
    );
}
