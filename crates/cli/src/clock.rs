//! The system clock behind every monitor's [`watchdog::Clock`]: local time
//! in the system time zone.

/// The machine's clock.
pub struct SystemClock;

impl watchdog::Clock for SystemClock {
    fn now(&self) -> i64 {
        probes::os::clock::now_epoch()
    }

    fn hhmm(&self, epoch: i64) -> String {
        probes::os::clock::local_hhmm(epoch)
    }

    fn hhmmss(&self, epoch: i64) -> String {
        probes::os::clock::local_hhmmss(epoch)
    }
}
