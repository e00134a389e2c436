//! The one clock every monitor reads, a port like the others: the binary
//! gives the system's, a test a fake one it moves by hand.

/// Time as a monitor sees it.
pub trait Clock {
    /// Seconds since the Unix epoch.
    fn now(&self) -> i64;
    /// `epoch` as local `HH:MM`, the seeds' `ts=`.
    fn hhmm(&self, epoch: i64) -> String;
    /// `epoch` as local `HH:MM:SS`, the session monitor's poll lines.
    fn hhmmss(&self, epoch: i64) -> String;
}
