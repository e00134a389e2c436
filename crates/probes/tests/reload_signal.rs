//! SIGHUP becomes the reload request instead of ending the process, and
//! wakes the loop's sleep. Its own test binary: a signal sent to the
//! process reaches whichever test binary's handlers are installed.

use std::time::Duration;

use bmb_probes as probes;
use probes::os::signals::{self, Wake};
use rustix::process::{Signal, getpid, kill_process};

#[test]
fn sighup_wakes_the_sleep_once_as_a_reload_and_a_stop_wins_over_it() {
    signals::install_reload_handler();
    signals::install_reload_handler(); // idempotent: one handler, not two
    assert!(!signals::take_reload_request());
    assert_eq!(
        signals::sleep_unless_stopped_or_reloaded(Duration::from_millis(10)),
        Wake::Elapsed
    );

    // Sent while the loop sleeps: it wakes (a ten-minute sleep would fail the test's time).
    let sender = std::thread::spawn(|| kill_process(getpid(), Signal::HUP).unwrap());
    assert_eq!(
        signals::sleep_unless_stopped_or_reloaded(Duration::from_secs(600)),
        Wake::Reload
    );
    sender.join().unwrap();
    // Taken: the next sleep runs its course.
    assert_eq!(
        signals::sleep_unless_stopped_or_reloaded(Duration::from_millis(10)),
        Wake::Elapsed
    );

    // A reload and a stop both pending: the loop stops.
    signals::install_stop_handler();
    kill_process(getpid(), Signal::HUP).unwrap();
    kill_process(getpid(), Signal::TERM).unwrap();
    // A process-directed signal lands on whichever thread takes it, maybe
    // after kill(2) returned: wait until both are pending (CI once saw the
    // sleep start between the two).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !(signals::stop_requested() && signals::reload_pending()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the signals never landed"
        );
        std::thread::yield_now();
    }
    assert_eq!(
        signals::sleep_unless_stopped_or_reloaded(Duration::from_secs(600)),
        Wake::Stop
    );
}
