//! The wait between passes, cut short the moment the agent's pid names no
//! live process or a stop is asked for.

use std::time::{Duration, Instant};

use watchdog::worker::PidReading;

use super::ports::PidWatch;

/// How often, between passes, the pid is checked so the monitor ends the
/// moment its agent does (a liveness check is a file read and a kill(0)).
const PID_POLL: Duration = Duration::from_millis(200);

/// Sleep until the next pass, checking the pid as it goes. False when the
/// agent is dead (then one final pass runs).
pub(super) fn wait_for_next_pass(interval: Duration, pid_watch: &mut PidWatch) -> Next {
    let deadline = Instant::now() + interval;
    loop {
        if probes::os::signals::stop_requested() {
            return Next::Stop;
        }
        if matches!(pid_watch.read(), PidReading::Dead(_)) {
            return Next::AgentGone;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Next::Pass;
        }
        std::thread::sleep(left.min(PID_POLL));
    }
}

/// What ends a wait between passes.
pub(super) enum Next {
    Pass,
    /// The agent died: one final pass publishes `gone`.
    AgentGone,
    Stop,
}
